"""The intervals a researcher reads (simengine.statistics): they never leave their metric's domain,
they cover the true mean at least 93% of the time at nominal 95% on the shapes GridWeb's metrics
have, and the shaky ones say so (issue 13, "Statistics that cannot mislead")."""
from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pytest

import simengine
from simengine.results import Metric
from simengine.statistics import MIN_REPLICATIONS, domain, shaky, stored_shaky, within_domain

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("name, expected", [
    ("mean_wait", (0, math.inf)), ("p95_wait", (0, math.inf)), ("mean_response", (0, math.inf)),
    ("mean_slowdown", (1, math.inf)), ("mean_bounded_slowdown", (1, math.inf)), ("utilisation", (0, 1)),
    ("utilisation.das-vu", (0, 1)), ("makespan", (0, math.inf)), ("throughput", (0, math.inf)),
    ("jobs_measured", (0, math.inf)), ("lost_work", (0, math.inf)), ("reservation_vs_cbf", (0, math.inf)),
    ("utilisation_pct", (0, 100)), ("waste_pct", (0, math.inf)),
    # (issue 36: these had no lower bound, or measured loads none above 1, by the words of their names)
    ("processor_wasted_time", (0, 1)), ("mean_placement_time", (0, math.inf)), ("mean_ftt", (0, math.inf)),
    ("mean_job_spread", (0, 1)), ("rr_medium_local", (0, math.inf)), ("global_load", (0, 1)),
    ("background_load", (0, 1)), ("offered_global_load", (0, math.inf)), ("mean_start_delay", (-math.inf, math.inf)),
    ("stretches_pct", (0, 100)), ("cross_slice", (0, math.inf)),
])
def test_domains(name, expected):
    assert domain(name) == expected


def every_example_metric() -> dict[str, set[str]]:
    """The metrics the example scenarios' runs give (every model family), with where they came from."""
    import json

    import yaml

    import simengine
    from simengine.scenario import load_scenario
    from tests.conftest import ROOT

    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "examples").glob("*.yaml")) + sorted((ROOT / "examples").glob("*.json")):
        spec = yaml.safe_load(path.read_text()) if path.suffix == ".yaml" else json.loads(path.read_text())
        spec.setdefault("run", {})["replications"] = 2
        for name in simengine.run(load_scenario(spec, base_dir=path.parent)).metrics:
            found.setdefault(name.split(".")[0], set()).add(path.name)
    return found


def test_every_metric_a_model_gives_has_its_domain_declared():
    """One declaration per metric (statistics.DOMAINS), for every metric of every model family:
    the examples cover them all (a metric missing here would get no bound)."""
    from gridweb.runs.compare import METRICS
    from simengine.results import USER_METRICS
    from simengine.statistics import DOMAINS

    found = every_example_metric()
    families = set().union(*found.values())
    assert {"ballier-4x32.yaml", "cao-scojo-rars.yaml", "klein-evolving.yaml", "koala-w30.yaml",
            "zikos-random.yaml", "das2-replay.yaml", "reservations-preemption.yaml"} <= families
    undeclared = {name: sorted(where) for name, where in found.items() if name not in DOMAINS}
    assert not undeclared
    assert not [m for m in list(METRICS) + list(USER_METRICS) if m not in DOMAINS]


def test_an_interval_is_cut_to_the_domain_and_keeps_its_inside():
    assert within_domain("mean_wait", -854.3, 6635) == (0.0, 6635)
    assert within_domain("mean_slowdown", 0.0499, 9.878) == (1.0, 9.878)
    assert within_domain("utilisation", 0.93, 1.04) == (0.93, 1.0)
    assert within_domain("reservation_vs_cbf", -3.0, 2.0) == (0.0, 2.0)
    assert within_domain("mean_start_delay", -3.0, 2.0) == (-3.0, 2.0)


def test_the_issues_three_replication_sweep_point_reads_right_and_is_flagged():
    # waits of three replications of a heavily loaded cluster: the t interval reaches far below 0
    m = Metric.from_values("mean_wait", [120.0, 310.0, 8200.0])
    assert m.ci_low == 0.0 and m.ci_high > m.mean
    assert m.half_width > m.mean  # the precision is still reported as the t interval's
    assert "only 3 replications" in m.shaky
    s = Metric.from_values("mean_slowdown", [1.02, 1.1, 19.0])
    assert s.ci_low == 1.0 and "only 3 replications" in s.shaky
    assert m.as_dict()["shaky"] == m.shaky


def test_shaky_reasons():
    assert shaky(1, 10.0, None) == "1 replication: no interval"
    assert "only 4 replications" in shaky(4, 10.0, 1.0)
    assert shaky(MIN_REPLICATIONS, 10.0, 4.9) is None
    assert shaky(30, 10.0, 5.1) == "wide: the half-width is 51% of the mean"
    assert shaky(30, None, 5.1) is None  # no value, nothing to distrust
    # as stored in a summary (values kept) or a sweep's table (a count)
    assert "only 2" in stored_shaky({"mean": 3.0, "half_width": 0.1, "values": [2.9, None, 3.1]})
    assert stored_shaky({"mean": 3.0, "half_width": 0.1}, replications=12) is None
    assert stored_shaky({"mean": 3.0, "half_width": 0.1}) is None  # an older sweep table: not known


# ---- coverage ------------------------------------------------------------------------------------

def coverage(draw, truth: float, name: str, replications: int, datasets: int, rng) -> float:
    """Share of ``datasets`` sets of ``replications`` values whose interval holds ``truth``."""
    hit = 0
    for _ in range(datasets):
        m = Metric.from_values(name, list(draw(rng, replications)))
        hit += m.ci_low <= truth <= m.ci_high
    return hit / datasets


# Replication values of the shapes GridWeb's metrics have: a mean over a replication's jobs of
# skewed per-job values (waits: many zeros and a long tail; slowdowns: 1 plus a long tail),
# and utilisations close to 1.
SIGMA, JOBS = 1.5, 2000
LOGNORMAL_MEAN = math.exp(SIGMA ** 2 / 2)


def mean_wait(rng, r):
    waited = rng.random((r, JOBS)) < 0.4
    return (waited * rng.lognormal(0.0, SIGMA, (r, JOBS)) * 100).mean(axis=1)


def mean_slowdown(rng, r):
    return 1.0 + rng.lognormal(0.0, SIGMA, (r, JOBS)).mean(axis=1)


def utilisation(rng, r):
    return rng.beta(180, 12, r)


SHAPES = [("mean_wait", mean_wait, 0.4 * LOGNORMAL_MEAN * 100), ("mean_slowdown", mean_slowdown, 1 + LOGNORMAL_MEAN),
          ("utilisation", utilisation, 180 / 192)]


@pytest.mark.parametrize("replications", [MIN_REPLICATIONS, 10, 30])
@pytest.mark.parametrize("name, draw, truth", SHAPES, ids=[s[0] for s in SHAPES])
def test_coverage_of_the_job_metric_shapes(name, draw, truth, replications):
    got = coverage(draw, truth, name, replications, 2000, np.random.default_rng(replications))
    assert got >= 0.93, f"{name}, {replications} replications: {got:.1%}"


@pytest.mark.slow
def test_coverage_on_gridweb_replications_of_a_busy_cluster():
    # 600 replications of an M/M/4 cluster at load 0.85 (500 completions after 100 warm-up ones):
    # the mean of all of them stands for the truth; 120 sets of 5 and 60 of 10 replications.
    doc = simengine.load_scenario(EXAMPLES / "mmc-erlang.json").model_dump(mode="json")
    doc = copy.deepcopy(doc)
    doc["run"].update({"replications": 600, "keep_jobs": "first", "stop": {"completions": 600},
                       "warmup": {"completions": 100}})
    values = np.array(simengine.run(doc).metrics["mean_wait"].values)
    truth = values.mean()
    for r in (5, 10):
        sets = values.reshape(-1, r)
        hits = [m.ci_low <= truth <= m.ci_high for m in (Metric.from_values("mean_wait", list(s)) for s in sets)]
        assert np.mean(hits) >= 0.9, (r, np.mean(hits))  # 120 or 60 sets: 2 standard errors below 95%
        assert all(Metric.from_values("mean_wait", list(s)).ci_low >= 0 for s in sets)


# ---- every example ---------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("path", sorted(p.name for p in EXAMPLES.glob("*.y*ml")) + ["mmc-erlang.json"])
def test_every_examples_values_and_intervals_lie_in_their_metrics_domains(path):
    scenario = simengine.load_scenario(EXAMPLES / path)
    doc = scenario.model_dump(mode="json")
    doc["run"]["replications"] = 3
    result = simengine.run(simengine.load_scenario(doc, base_dir=str(EXAMPLES)))
    for name, m in result.metrics.items():
        lo, hi = domain(name)
        values = [v for v in m.values if not math.isnan(v)]
        assert all(lo - 1e-9 <= v <= hi + 1e-9 for v in values), (name, values)
        if m.ci_low is not None:
            assert lo <= m.ci_low <= m.mean <= m.ci_high <= hi, (name, m)
        assert m.shaky is not None  # 3 replications


def test_a_paired_difference_covers_the_true_difference_and_is_narrower_than_side_by_side():
    """Common random numbers: each replication's workload moves both runs alike (a shared
    component); the paired interval holds the true difference at >= 93% over 1,000 simulated
    pairs of runs and is far narrower than the two runs' own intervals."""
    from simengine.statistics import paired_difference, t_half_width

    rng = np.random.default_rng(17)
    covered, narrower = 0, 0
    for _ in range(1000):
        workload = rng.lognormal(7, 0.6, 10)  # what each replication's jobs make of the wait
        a = workload * 1.00 + rng.normal(0, 20, 10)
        b = workload * 0.95 + rng.normal(0, 20, 10)
        true = -0.05 * np.exp(7 + 0.6 ** 2 / 2)
        p = paired_difference(a, b)
        covered += p["ci_low"] <= true <= p["ci_high"]
        narrower += p["half_width"] < 0.5 * (t_half_width(a) + t_half_width(b))
    assert covered >= 930 and narrower >= 950


def test_a_paired_difference_says_what_it_shows():
    from simengine.statistics import paired_difference

    assert paired_difference([10, 12, 11, 13, 12], [8, 10, 9, 11, 10])["verdict"] == "lower"
    assert paired_difference([10, 12, 11, 13, 12], [12, 14, 13, 15, 14])["verdict"] == "higher"
    same = paired_difference([10, 12, 11, 13, 12], [11, 11, 12, 12, 12])
    assert same["verdict"] == "no difference shown" and same["ci_low"] < 0 < same["ci_high"]
    assert paired_difference([1, 2, 3], [2, 3, 5])["shaky"].startswith("only 3 pairs")
    assert paired_difference([1.0, None, 3.0], [2.0, 5.0, None]) is None  # one pair left


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 9, 19, 20, 29, 30, 99, 120, 999, 10_000])
def test_the_t_quantile_is_scipys(df):
    """statistics.t_quantile (pure Python, so a run need not import scipy.special) against
    scipy's Student t quantile, over the probabilities intervals and tests use."""
    from scipy.special import stdtrit
    from simengine.statistics import t_quantile
    for p in (0.5, 0.6, 0.9, 0.95, 0.975, 0.99, 0.995, 0.9995, 0.025, 0.1):
        assert t_quantile(df, p) == pytest.approx(float(stdtrit(df, p)), rel=1e-9, abs=1e-12), p


def test_the_t_quantile_refuses_what_it_cannot_compute():
    from simengine.statistics import t_quantile
    for df, p in ((0, 0.9), (3, 1.0), (3, 0.0)):
        with pytest.raises(ValueError, match="df >= 1 and 0 < p < 1"):
            t_quantile(df, p)


def test_the_sectioning_interval_of_a_95th_percentile_covers_it():
    """One replication's p95 interval (statistics.batch_quantile_half_width, centred on the p95 of
    all the values) on independent exponential values, whose 95th percentile is -ln(0.05) x mean:
    covered close to 95% of the time (500 sets of 4,000 values: 20 batches of 200)."""
    from simengine.statistics import batch_quantile_half_width

    rng = np.random.default_rng(5)
    truth = -math.log(0.05) * 100.0
    covered = 0
    for _ in range(500):
        v = rng.exponential(100.0, 4000)
        half = batch_quantile_half_width(v, 95)
        covered += abs(np.percentile(v, 95) - truth) <= half
    assert 0.92 <= covered / 500 <= 0.98, covered / 500
    assert batch_quantile_half_width(np.ones(3999), 95) is None  # (fewer than 200 per batch)


def test_a_one_replication_run_gives_its_p95_wait_an_interval_and_flags_it():
    import simengine

    result = simengine.run({
        "platform": {"clusters": [{"name": "c", "processors": 4, "scheduler": {"name": "fcfs"}}]},
        "workload": {"streams": [{"kind": "synthetic", "name": "s", "target": "c", "count": 6000,
                                  "arrival": {"target_load": 0.8}, "size": {"kind": "constant", "value": 1},
                                  "runtime": {"kind": "exponential", "mean": 100}}]},
        "run": {"seed": 2, "replications": 1}})
    p95 = result.metrics["p95_wait"]
    assert p95.ci_low is not None and 0 <= p95.ci_low < p95.mean < p95.ci_high and p95.shaky


def test_the_slices_of_a_window_add_up_to_its_busy_time():
    from simengine.results import slice_busy

    starts = np.array([-5.0, 0.0, 3.0, 9.5, 12.0])
    ends = np.array([2.0, 10.0, 3.5, 11.0, 20.0])  # clipped to [0, 10]: 2, 10, 0.5, 0.5, 0
    weights = np.array([1.0, 2.0, 4.0, 1.0, 3.0])
    slices = np.zeros(4)
    slice_busy(starts, ends, weights, 0.0, 10.0, slices)
    # slices of 2.5: [0, 2.5) holds 2 x 1 + 2.5 x 2; [2.5, 5) 2.5 x 2 + 0.5 x 4; [5, 7.5) 2.5 x 2; [7.5, 10) 2.5 x 2 + 0.5
    assert slices.tolist() == pytest.approx([7.0, 7.0, 5.0, 5.5])
    assert slices.sum() == pytest.approx(2 * 1 + 10 * 2 + 0.5 * 4 + 0.5 * 1)


def _one_replication(seed: int, **cluster) -> dict:
    return {"platform": {"clusters": [{"name": "c", "processors": 4, **cluster}]},
            "workload": {"streams": [{"kind": "synthetic", "name": "s", "target": "c", "count": 4000,
                                      "arrival": {"target_load": 0.8}, "size": {"kind": "constant", "value": 1},
                                      "runtime": {"kind": "exponential", "mean": 100}}]},
            "run": {"seed": seed, "replications": 1}}


def test_a_one_replication_utilisation_interval_covers_the_offered_load():
    """An M/M/4 queue at load 0.8 is busy 80% of the time in the long run (every job runs: the
    utilisation is lambda E[S] / c). One replication's batch-means interval (20 slices of its window,
    statistics.slice_means_half_width) covers it in most of 40 runs; correlated slices make it a
    little narrow, which the shaky flag says."""
    import simengine

    covered = 0
    for seed in range(40):
        u = simengine.run(_one_replication(seed, scheduler={"name": "fcfs"})).metrics["utilisation"]
        assert u.ci_low is not None and 0 <= u.ci_low <= u.mean <= u.ci_high <= 1 and "batch-means" in u.shaky
        covered += u.ci_low <= 0.8 <= u.ci_high
    assert covered >= 30, covered


def test_the_event_driven_cluster_gives_its_one_replication_utilisation_an_interval_too():
    import simengine

    spec = _one_replication(3, scheduler={"name": "easy"})
    spec["reservations"] = [{"name": "r", "cluster": "c", "processors": 2, "start": 1000, "end": 1500}]
    result = simengine.run(spec)
    u = result.metrics["utilisation"]
    assert u.ci_low is not None and u.ci_low < u.mean < u.ci_high and u.shaky
    # with replications it is their t interval, as before
    spec["run"]["replications"] = 3
    assert simengine.run(spec).metrics["utilisation"].batch_half is None
