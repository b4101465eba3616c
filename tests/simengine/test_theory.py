"""Science checks: GridWeb's simulated means against closed-form queueing theory.

Every expected value is computed here from its formula and the model's parameters
(nothing is copied from a table), and compared with the 95% confidence interval
GridWeb reports over independent replications. Each check also bounds the CI's
half-width, so a wide (uninformative) interval cannot pass by default.

* M/M/c -- Erlang C: probability of waiting and mean wait Wq = C(c, a) / (c mu - lambda).
* M/G/1 -- Pollaczek-Khinchine with bounded-Pareto demands: Wq = lambda E[S^2] / (2 (1 - rho)).
* Zikos & Karatza's 4-site grid (MODELS.md section 5): utilisation = lambda E[S] / 80.

Also: utilisation = rho, mean response = Wq + E[S], and Little's law Lq = lambda Wq with Lq
measured as a *time* average from the job table (independent of the per-job metrics).
Seeds are fixed, so every run is reproducible; docs/validation.md lists the numbers.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import simengine
from simengine.distributions import BoundedPareto
from simengine.results import Metric
from simengine.workload import STATUS_COMPLETED

# ---- closed forms --------------------------------------------------------------------------


def erlang_c(c: int, a: float) -> float:
    """Probability that an arrival waits in M/M/c with offered load a = lambda / mu (< c)."""
    rho = a / c
    idle_terms = sum(a**k / math.factorial(k) for k in range(c))
    busy_term = a**c / math.factorial(c) / (1.0 - rho)
    return busy_term / (idle_terms + busy_term)


def mmc_mean_wait(c: int, lam: float, mu: float) -> float:
    """Mean time in queue of M/M/c (FCFS): Wq = C(c, a) / (c mu - lambda)."""
    return erlang_c(c, lam / mu) / (c * mu - lam)


def bounded_pareto_moment(alpha: float, low: float, high: float, k: int) -> float:
    """E[X^k] of BP(alpha, L, H), density alpha L^alpha x^(-alpha-1) / (1 - (L/H)^alpha) on [L, H]."""
    norm = alpha * low**alpha / (1.0 - (low / high) ** alpha)
    if k == alpha:
        return norm * math.log(high / low)
    return norm * (high ** (k - alpha) - low ** (k - alpha)) / (k - alpha)


def pollaczek_khinchine_wait(lam: float, es: float, es2: float) -> float:
    """Mean time in queue of M/G/1 (FCFS): Wq = lambda E[S^2] / (2 (1 - rho)), rho = lambda E[S]."""
    rho = lam * es
    assert rho < 1
    return lam * es2 / (2.0 * (1.0 - rho))


# ---- helpers -------------------------------------------------------------------------------


def single_cluster(processors: int, scheduler: str, rate: float, runtime: dict, *, seed: int,
                   replications: int, completions: int, warmup: int) -> dict:
    """One cluster, one Poisson stream of one-processor jobs."""
    return {
        "name": f"theory check on {processors} processors ({scheduler})",
        "platform": {"clusters": [{"name": "servers", "processors": processors,
                                   "scheduler": {"name": scheduler}}]},
        "workload": {"streams": [{
            "kind": "synthetic", "name": "jobs", "target": "servers", "arrival": {"rate": rate},
            "size": {"kind": "constant", "value": 1}, "runtime": runtime}]},
        "run": {"seed": seed, "replications": replications, "stop": {"completions": completions},
                "warmup": {"completions": warmup}},
    }


def assert_covers(metric: Metric, expected: float, max_relative_half_width: float) -> None:
    """``expected`` lies in the metric's 95% CI, and the CI is tight enough to mean something."""
    assert metric.ci_low is not None, f"{metric.name}: no confidence interval"
    assert metric.ci_low <= expected <= metric.ci_high, (
        f"{metric.name}: analytic {expected:.6g} outside the 95% CI [{metric.ci_low:.6g}, {metric.ci_high:.6g}] "
        f"(mean {metric.mean:.6g})")
    assert metric.half_width <= max_relative_half_width * expected, (
        f"{metric.name}: CI half-width {metric.half_width:.4g} is more than "
        f"{max_relative_half_width:.0%} of {expected:.6g}: the check would be vacuous")


def assert_utilisation(metric: Metric, rho: float) -> None:
    """Measured utilisation within 1% of rho (and a CI narrower than that).

    Not "rho in the 95% CI": the engine's utilisation equals the load the sampled jobs
    actually offer (see the M/G/1 test), and with heavy-tailed demands the sampled mean
    demand of a few million jobs is itself 0.1-0.2% off its expectation now and then.
    """
    assert abs(metric.mean - rho) <= 0.01 * rho, f"utilisation {metric.mean:.5f}, rho {rho:.5f}"
    assert metric.half_width <= 0.01 * rho


def per_replication(result, statistic) -> Metric:
    """A Metric of ``statistic(jobs_of_one_replication)`` over the replications."""
    jobs = result.jobs
    rep = jobs["replication"]
    assert np.all(np.diff(rep) >= 0)  # the job table holds the replications one after the other
    bounds = np.searchsorted(rep, np.arange(rep.max() + 2))
    values = [statistic({k: v[a:b] for k, v in jobs.items()}) for a, b in zip(bounds[:-1], bounds[1:])]
    return Metric.from_values(statistic.__name__, values)


def probability_of_waiting(jobs) -> float:
    """Fraction of the measured jobs that waited at all."""
    measured = ~jobs["warmup"] & (jobs["status"] == STATUS_COMPLETED)
    return float((jobs["wait"][measured] > 0).mean())


def offered_work_rate(jobs) -> float:
    """Work (processor-seconds) of the jobs submitted in the measurement window, per second."""
    done = jobs["status"] == STATUS_COMPLETED
    t_stop = float(jobs["end"][done].max())
    t_warm = float(jobs["end"][done & jobs["warmup"]].max())
    inside = (jobs["submit"] >= t_warm) & (jobs["submit"] <= t_stop)
    return float((jobs["runtime"] * jobs["processors"])[inside].sum() / (t_stop - t_warm))


def time_average_queue_length(jobs) -> float:
    """Mean number of queued jobs over the measurement window [end of warm-up, stop], as a time average.

    Computed from the submit and start columns alone: every job (warm-up, measured or still
    queued at the stop) contributes the part of its queueing interval inside the window.
    """
    done = jobs["status"] == STATUS_COMPLETED
    t_stop = float(jobs["end"][done].max())
    t_warm = float(jobs["end"][done & jobs["warmup"]].max())
    left_queue = np.where(np.isnan(jobs["start"]), t_stop, jobs["start"])
    inside = np.clip(left_queue, t_warm, t_stop) - np.clip(jobs["submit"], t_warm, t_stop)
    return float(inside.sum() / (t_stop - t_warm))


# ---- M/M/c: Erlang C -----------------------------------------------------------------------

# (scheduler, c, rho, seed, replications, completions, warm-up). With one-processor jobs and
# exact estimates EASY and conservative backfilling never find a hole, and LWR (join the
# processor with least remaining work) starts every job when a central FCFS queue would:
# all four local policies are M/M/c FCFS queues here.
MMC_CASES = [
    ("fcfs", 8, 0.75, 101, 30, 80_000, 2_000),
    ("fcfs", 1, 0.75, 102, 30, 100_000, 5_000),
    ("fcfs", 4, 0.90, 103, 30, 100_000, 5_000),
    ("easy", 8, 0.75, 104, 30, 80_000, 2_000),
    ("conservative", 8, 0.75, 105, 30, 80_000, 2_000),
    ("lwr", 8, 0.75, 106, 30, 80_000, 2_000),
]


@pytest.mark.parametrize("scheduler, c, rho, seed, replications, completions, warmup", MMC_CASES,
                         ids=[f"{s}-M/M/{c}-rho{rho}" for s, c, rho, *_ in MMC_CASES])
def test_mmc_matches_erlang_c(scheduler, c, rho, seed, replications, completions, warmup):
    mu = 1.0  # exponential service, mean 1 s
    lam = rho * c * mu
    result = simengine.run(single_cluster(c, scheduler, lam, {"kind": "exponential", "mean": 1.0 / mu},
                                          seed=seed, replications=replications, completions=completions,
                                          warmup=warmup))
    m = result.metrics
    assert min(m["jobs_measured"].values) >= completions - warmup - c

    wq = mmc_mean_wait(c, lam, mu)
    assert_covers(m["mean_wait"], wq, 0.05)
    assert_covers(m["mean_response"], wq + 1.0 / mu, 0.05)
    assert_covers(per_replication(result, probability_of_waiting), erlang_c(c, lam / mu), 0.05)
    # Little's law for the queue, measured as a time average: Lq = lambda Wq
    assert_covers(per_replication(result, time_average_queue_length), lam * wq, 0.05)
    assert_utilisation(m["utilisation"], rho)


# ---- M/G/1: Pollaczek-Khinchine with bounded-Pareto demands --------------------------------

# (scheduler, alpha, rho, seed, replications, completions, warm-up). LWR on one processor is
# FCFS. The demands are BP(alpha, L, H = 100) with mean 1 (Zikos & Karatza), L solved by the
# distribution; heavy tails converge slowly, so the runs are long.
MG1_CASES = [
    pytest.param("fcfs", 1.5, 0.5, 201, 30, 200_000, 5_000, id="fcfs-BP1.5-rho0.5"),
    pytest.param("lwr", 1.5, 0.5, 202, 30, 200_000, 5_000, id="lwr-BP1.5-rho0.5"),
    pytest.param("lwr", 1.5, 0.7, 203, 30, 300_000, 10_000, id="lwr-BP1.5-rho0.7", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("scheduler, alpha, rho, seed, replications, completions, warmup", MG1_CASES)
def test_mg1_bounded_pareto_matches_pollaczek_khinchine(scheduler, alpha, rho, seed, replications,
                                                        completions, warmup):
    runtime = {"kind": "bounded_pareto", "alpha": alpha, "high": 100.0, "mean": 1.0}
    dist = BoundedPareto.model_validate(runtime)
    es = bounded_pareto_moment(alpha, dist.low, dist.high, 1)
    es2 = bounded_pareto_moment(alpha, dist.low, dist.high, 2)
    assert es == pytest.approx(1.0, rel=1e-9)  # the solved L gives the requested mean
    lam = rho / es
    result = simengine.run(single_cluster(1, scheduler, lam, runtime, seed=seed, replications=replications,
                                          completions=completions, warmup=warmup))
    m = result.metrics

    wq = pollaczek_khinchine_wait(lam, es, es2)
    assert_covers(m["mean_wait"], wq, 0.10)
    assert_covers(m["mean_response"], wq + es, 0.10)
    assert_covers(per_replication(result, time_average_queue_length), lam * wq, 0.10)
    assert_utilisation(m["utilisation"], rho)
    # the processor is busy exactly as much as the sampled jobs ask (up to the window's edges)
    offered = per_replication(result, offered_work_rate)
    assert np.allclose(offered.values, m["utilisation"].values, rtol=1e-3)


# ---- Zikos & Karatza: utilisation of the 4-site grid under Random allocation ----------------

@pytest.mark.parametrize("mean_interarrival, seed", [(0.028, 301), (0.014, 302)])
def test_zikos_random_utilisation(mean_interarrival, seed):
    runtime = {"kind": "bounded_pareto", "alpha": 1.5, "high": 100.0, "mean": 1.0}
    scenario = {
        "name": "Zikos Random",
        "platform": {"preset": "grid-4site-zikos"},
        "workload": {"streams": [{
            "kind": "synthetic", "name": "grid-jobs", "target": "grid",
            "arrival": {"mean_interarrival": mean_interarrival},
            "size": {"kind": "constant", "value": 1}, "runtime": runtime}]},
        "grid": {"site_allocation": {"name": "random", "params": {"weights": "processors"}}},
        # the paper's run length (80,000 completions, 5,000 warm-up), 10 replications instead of 100:
        # with shorter runs the spread of the sampled work alone exceeds the 0.01 tolerance
        "run": {"seed": seed, "replications": 10, "stop": {"completions": 80_000},
                "warmup": {"completions": 5_000}},
    }
    result = simengine.run(scenario)
    processors = result.cluster_processors
    assert processors == [8, 16, 24, 32]
    es = BoundedPareto.model_validate(runtime).mean()
    rho = (1.0 / mean_interarrival) * es / sum(processors)

    u = result.metrics["utilisation"]
    assert abs(u.mean - rho) <= 0.01, f"utilisation {u.mean:.4f}, lambda E[S] / 80 = {rho:.4f}"
    assert u.ci_low <= rho <= u.ci_high
    # Random sends site k a share c_k / 80 of the jobs, so every site carries the same load
    for name in result.cluster_names:
        site = result.metrics[f"utilisation.{name}"]
        assert abs(site.mean - rho) <= 0.03, f"{name}: utilisation {site.mean:.4f}, expected {rho:.4f}"


def test_one_long_replication_gets_a_batch_means_interval_that_holds_erlang_c():
    # One replication, no replications to compare: the job-mean metrics get a batch-means
    # interval (simengine.statistics: 20 batches of the measured jobs, warm-up left out). On a
    # long M/M/4 run at load 0.75 it holds the formula's mean wait and response.
    c, rho, mu = 4, 0.75, 1.0
    lam = rho * c * mu
    result = simengine.run(single_cluster(c, "fcfs", lam, {"kind": "exponential", "mean": 1.0}, seed=107,
                                          replications=1, completions=400_000, warmup=5_000))
    wq = mmc_mean_wait(c, lam, mu)
    wait, response = result.metrics["mean_wait"], result.metrics["mean_response"]
    assert wait.ci_low <= wq <= wait.ci_high, (wait, wq)
    assert response.ci_low <= wq + 1 / mu <= response.ci_high, (response, wq + 1 / mu)
    assert wait.half_width < 0.1 * wait.mean and "batch-means" in wait.shaky
    # the utilisation, a time average: batch means over 20 slices of the window, holding rho
    u = result.metrics["utilisation"]
    assert u.ci_low <= rho <= u.ci_high and "batch-means" in u.shaky, (u, rho)
