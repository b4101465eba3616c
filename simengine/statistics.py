"""The confidence intervals a researcher reads, and when to distrust them (docs/output.md, Metrics).

Every metric of a Result is a mean over replications with a 95% interval: Student's t interval
of the replications' values, **intersected with the metric's domain** (waits ≥ 0, slowdowns ≥ 1,
utilisations and rates in [0, 1]; :data:`DOMAINS`). The intersection keeps the coverage: the
true mean lies in the domain, so whenever the t interval holds it, so does its part inside the
domain; it only removes values the metric cannot take (a 3-replication wait interval no longer
starts at -854 s). ``tests/simengine/test_statistics.py`` measures the coverage on simulated
replication values of the shapes GridWeb's metrics have.

An interval is **shaky** (:func:`shaky`, shown beside it in the CLI and on every page) when it
comes from fewer than ``MIN_REPLICATIONS`` replications or its half-width is more than
``WIDE`` times the mean: the t interval's coverage then rests on assumptions a few skewed values
cannot support, or the interval says little. One place decides both, for the engine and the site.
"""
from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

#: fewer replications than this give a shaky interval
MIN_REPLICATIONS = 5
#: a one-replication run's job-mean metrics get a batch-means interval: its measured jobs in
#: arrival order, cut into this many equal batches (the remainder after the last left out) ...
BATCHES = 20
#: ... when every batch holds at least this many jobs
MIN_BATCH = 10
#: the metrics that are a mean over the measured jobs, and the job column each averages
JOB_MEANS = {"mean_wait": "wait", "mean_response": "response", "mean_slowdown": "slowdown",
             "mean_bounded_slowdown": "bounded_slowdown"}
#: the metrics that are a percentile of the measured jobs' values: (the job column, the percentile);
#: a one-replication run's interval is by sectioning: the spread of the percentile over the batches
QUANTILES = {"p95_wait": ("wait", 95.0)}
#: ... each batch then holding at least this many jobs (ten above a 95th percentile)
MIN_QUANTILE_BATCH = 200
#: a half-width beyond this share of the mean gives a shaky interval
WIDE = 0.5

_UNIT = (0.0, 1.0)
_NONNEGATIVE = (0.0, math.inf)
_PERCENT = (0.0, 100.0)
_SIGNED = (-math.inf, math.inf)

#: Every metric's domain: the values it can take, declared once per metric (a per-cluster metric
#: ``name.<cluster>`` is ``name``'s), from how its model computes it -- not guessed from words in
#: its name, which gave placement times, transfer times, job spreads, Cao's RRs and the wasted
#: processor time no lower bound and measured loads none above 1 (issue 36). A metric not here
#: gets no bound; tests/simengine/test_statistics.py runs every model and fails on one.
DOMAINS: dict[str, tuple[float, float]] = {
    # the job metrics of every model (simengine.results)
    "mean_wait": _NONNEGATIVE, "p95_wait": _NONNEGATIVE, "mean_response": _NONNEGATIVE,
    "max_response": _NONNEGATIVE, "mean_slowdown": (1.0, math.inf), "mean_bounded_slowdown": (1.0, math.inf),
    "utilisation": _UNIT, "throughput": _NONNEGATIVE, "makespan": _NONNEGATIVE, "jobs_measured": _NONNEGATIVE,
    # the event-driven cluster's reservations and preemption
    "reservations_accepted": _NONNEGATIVE, "reservations_rejected": _NONNEGATIVE, "preemptions": _NONNEGATIVE,
    "jobs_preempted_killed": _NONNEGATIVE, "lost_work": _NONNEGATIVE,
    # ... with resource failures (docs/failures.md): shares of processor time
    "availability": _UNIT, "goodput": _UNIT, "jobs_lost_to_failures": _NONNEGATIVE,
    "broken_reservations": _NONNEGATIVE,
    # ... with a trace's cancelled jobs withdrawn (docs/traces.md)
    "jobs_withdrawn": _NONNEGATIVE, "jobs_cancelled_running": _NONNEGATIVE,
    # users (Jain's index of n users is in [1/n, 1])
    "users_measured": _NONNEGATIVE, "jain_wait": _UNIT, "jain_bounded_slowdown": _UNIT,
    "worst_user_mean_wait": _NONNEGATIVE, "worst_user_mean_bounded_slowdown": (1.0, math.inf),
    # Ballier's grid (simengine.grid.run): busy processor time over capacity x window, and the
    # offered loads, which can exceed 1
    "total_load": _UNIT, "local_load": _UNIT, "global_load": _UNIT, "processor_wasted_time": _UNIT,
    "offered_global_load": _NONNEGATIVE, "offered_local_load": _NONNEGATIVE,
    "global_success_rate": _UNIT, "local_kill_rate": _UNIT, "global_jobs_measured": _NONNEGATIVE,
    "local_jobs_measured": _NONNEGATIVE, "local_response": _NONNEGATIVE, "mean_global_tries": _NONNEGATIVE,
    # KOALA (simengine.grid.koala_run): times are durations; the spread is distinct clusters over
    # components; the start delay is the actual start minus the first planned one (either sign)
    "background_load": _UNIT, "koala_load": _UNIT, "pwt_utilisation": _UNIT, "pgt_utilisation": _UNIT,
    "coallocated_fraction": _UNIT, "mean_job_spread": _UNIT,
    "mean_placement_time": _NONNEGATIVE, "median_placement_time": _NONNEGATIVE,
    "p90_placement_time": _NONNEGATIVE, "mean_placement_tries": _NONNEGATIVE, "mean_claiming_tries": _NONNEGATIVE,
    "mean_ftt": _NONNEGATIVE, "mean_twt": _NONNEGATIVE, "mean_start_delay": _SIGNED,
    "max_placement_queue": _NONNEGATIVE, "last_arrival": _NONNEGATIVE, "koala_jobs_done": _NONNEGATIVE,
    "koala_jobs_failed": _NONNEGATIVE, "koala_jobs_killed": _NONNEGATIVE, "koala_jobs_measured": _NONNEGATIVE,
    # ... with soft errors: a job's failures over its starts (failures + 1) is below 1
    "failure_rate": _UNIT, "failures_per_job": _NONNEGATIVE, "koala_failures": _NONNEGATIVE,
    "excluded_clusters": _NONNEGATIVE, "soft_errors": _NONNEGATIVE,
    # ... and the KOALA recipe's (simengine.reproductions.koala): the last completion's time after the
    # last arrival; the done jobs' file transfers on their processors over the system
    "drain_time": _NONNEGATIVE, "ftt_utilisation": _UNIT,
    # Cao (simengine.cao.run): RR = (end - ready) / max(run time, 1 s), so below 1 for sub-second jobs
    "rr_medium": _NONNEGATIVE, "rr_long": _NONNEGATIVE, "rr_medium_local": _NONNEGATIVE,
    "rr_long_local": _NONNEGATIVE, "rr_medium_task": _NONNEGATIVE, "rr_long_task": _NONNEGATIVE,
    "grid_makespan": _NONNEGATIVE, "reservation_share": _UNIT, "tasks": _NONNEGATIVE, "workflows": _NONNEGATIVE,
    "cross_slice": _NONNEGATIVE,
    # Klein (simengine.evolving.metrics): ratios to the CBF baseline, percentages
    "reservation_vs_cbf": _NONNEGATIVE, "makespan_vs_cbf": _NONNEGATIVE, "jct_vs_cbf": _NONNEGATIVE,
    "jwt_vs_cbf": _NONNEGATIVE, "utilisation_pct": _PERCENT, "stretches_pct": _PERCENT,
    "waste_pct": _NONNEGATIVE, "mean_job_waste_pct": _NONNEGATIVE, "mean_job_stretch_pct": _NONNEGATIVE,
}


def t_quantile(df: int, p: float) -> float:
    """Student's t quantile for ``df`` (a whole number ≥ 1) degrees of freedom at probability
    ``p`` in (0, 1). Newton's method on the closed-form CDF of whole degrees of freedom
    (Abramowitz and Stegun 26.7.3-4), started from the normal quantile: pure Python, because
    importing scipy.special would cost every command-line run about 0.13 s
    (tests/simengine/test_statistics.py compares it with scipy's ``stdtrit``)."""
    df = int(df)
    if df < 1 or not 0.0 < p < 1.0:
        raise ValueError(f"t quantile needs df >= 1 and 0 < p < 1, not df={df}, p={p}")
    if p < 0.5:
        return -t_quantile(df, 1.0 - p)
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2.0 * p - 1.0) / math.sqrt(2.0 * p * (1.0 - p))
    target = 2.0 * p - 1.0  # P(|T| <= t)
    log_density = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    t = NormalDist().inv_cdf(p)
    for _ in range(100):
        step = (_t_central(t, df) - target) / (2.0 * math.exp(log_density - (df + 1) / 2 * math.log1p(t * t / df)))
        t = max(t - step, t / 2)  # (the CDF is concave here: Newton never overshoots by more)
        if abs(step) <= 1e-14 * t:
            break
    return t


def _t_central(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with ``df`` whole degrees of freedom, t >= 0 (A&S 26.7.3-4)."""
    theta = math.atan(t / math.sqrt(df))
    s, c2 = math.sin(theta), math.cos(theta) ** 2
    term, total = 1.0, 1.0
    if df % 2 == 0:  # sinθ (1 + 1/2 cos²θ + 1·3/(2·4) cos⁴θ + ... up to cos^(df-2)θ)
        for k in range(2, df, 2):
            term *= c2 * (k - 1) / k
            total += term
        return s * total
    # 2/π (θ + sinθ cosθ (1 + 2/3 cos²θ + 2·4/(3·5) cos⁴θ + ... up to cos^(df-3)θ))
    for k in range(3, df - 1, 2):
        term *= c2 * (k - 1) / k
        total += term
    return 2.0 / math.pi * (theta + s * math.sqrt(c2) * total)


def t_half_width(values) -> float | None:
    """Half-width of Student's t 95% interval of the mean of ``values`` (NaNs left out); None
    for fewer than two values."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if len(v) < 2:
        return None
    return float(t_quantile(len(v) - 1, 0.975) * v.std(ddof=1) / math.sqrt(len(v)))


def batch_means_half_width(values) -> float | None:
    """Half-width of the 95% t interval of the mean of ``BATCHES`` batch means of ``values`` (one
    replication's per-job values in arrival order, NaNs left out); None with too few values."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    per = len(v) // BATCHES
    if per < MIN_BATCH:
        return None
    return slice_means_half_width(v[:per * BATCHES].reshape(BATCHES, per).mean(axis=1))


def slice_means_half_width(means) -> float | None:
    """Half-width of the 95% t interval of the mean of batch means ``means`` (one replication's
    BATCHES equal batches of jobs, or of time: a utilisation's slices of its window)."""
    means = np.asarray(means, dtype=float)
    if len(means) < 2 or np.isnan(means).any():
        return None
    return float(t_quantile(len(means) - 1, 0.975) * means.std(ddof=1) / math.sqrt(len(means)))


def batch_quantile_half_width(values, q: float) -> float | None:
    """Half-width of the sectioning interval of the ``q``-th percentile of ``values`` (one
    replication's per-job values in arrival order, NaNs left out): the t interval of the
    percentiles of ``BATCHES`` equal batches, to be centred on the percentile of all the values
    (Asmussen & Glynn, Stochastic Simulation, §III.5a); None with fewer than MIN_QUANTILE_BATCH
    values per batch."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    per = len(v) // BATCHES
    if per < MIN_QUANTILE_BATCH:
        return None
    per_batch = np.percentile(v[:per * BATCHES].reshape(BATCHES, per), q, axis=1)
    return float(t_quantile(BATCHES - 1, 0.975) * per_batch.std(ddof=1) / math.sqrt(BATCHES))


def domain(name: str) -> tuple[float, float]:
    """The values metric ``name`` can take (``utilisation.<cluster>`` as ``utilisation``): its
    declaration in DOMAINS; no bound for a metric not declared."""
    return DOMAINS.get(name.split(".")[0], _SIGNED)


def within_domain(name: str, low: float, high: float) -> tuple[float, float]:
    """``[low, high]`` intersected with the domain of ``name``."""
    lo, hi = domain(name)
    return min(max(low, lo), hi), max(min(high, hi), lo)


#: what the flag means, for a page's tooltip
SHAKY_RULE = (f"an interval is flagged when it comes from fewer than {MIN_REPLICATIONS} replications or its "
              f"half-width is more than {WIDE:.0%} of the mean")


def shaky(replications: int, mean: float | None, half_width: float | None, batch_means: bool = False) -> str | None:
    """Why an interval should not be trusted, in one line; None when it may be."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return None
    if replications < 2:
        if batch_means and half_width is not None:
            return (f"1 replication: a batch-means interval ({BATCHES} batches of its jobs; correlated batches "
                    "may make it too narrow)")
        return "1 replication: no interval"
    if replications < MIN_REPLICATIONS:
        return f"only {replications} replications (fewer than {MIN_REPLICATIONS}): the interval is rough"
    if half_width is not None and abs(mean) > 0 and half_width > WIDE * abs(mean):
        return f"wide: the half-width is {half_width / abs(mean):.0%} of the mean"
    return None


def stored_shaky(stored: dict, replications: int | None = None) -> str | None:
    """:func:`shaky` of a metric as a Result's summary stores it (``mean``, ``half_width``,
    ``values``; ``replications`` when the values were not kept, as in a sweep's table)."""
    if "shaky" in stored:  # (said by the engine when it stored the result)
        return stored["shaky"]
    if replications is None:
        if "values" not in stored:
            return None  # (an older sweep table: how many replications is not known)
        replications = sum(v is not None and not (isinstance(v, float) and math.isnan(v))
                           for v in stored.get("values") or [])
    return shaky(replications, stored.get("mean"), stored.get("half_width"))


def paired_difference(baseline, other) -> dict | None:
    """The difference ``other - baseline`` of a metric between two runs that share their seeds
    (replication r of both drew the same jobs: common random numbers), replication by
    replication: its mean, the 95% t interval of the mean of the paired differences, and what it
    shows -- ``lower`` / ``higher`` when the interval excludes 0, ``no difference shown`` when it
    holds 0. None with fewer than two pairs (NaN values leave their pair out). Pairing removes
    the workload's own variation from the comparison, so the interval is much narrower than the
    two runs' intervals side by side."""
    a = np.asarray([math.nan if v is None else v for v in baseline], dtype=float)
    b = np.asarray([math.nan if v is None else v for v in other], dtype=float)
    n = min(len(a), len(b))
    d = b[:n] - a[:n]
    d = d[~np.isnan(d)]
    if len(d) < 2:
        return None
    mean = float(d.mean())
    half = t_half_width(d)
    low, high = mean - half, mean + half
    verdict = "lower" if high < 0 else "higher" if low > 0 else "no difference shown"
    rough = (f"only {len(d)} pairs (fewer than {MIN_REPLICATIONS}): the interval is rough"
             if len(d) < MIN_REPLICATIONS else None)
    return {"mean": mean, "ci_low": low, "ci_high": high, "half_width": half, "pairs": len(d), "verdict": verdict,
            "shaky": rough}
