"""The confidence intervals a researcher reads, and when to distrust them (docs/output.md, Metrics).

Every metric of a Result is a mean over replications with a 95% interval: Student's t interval
of the replications' values, **intersected with the metric's domain** (waits ≥ 0, slowdowns ≥ 1,
utilisations and rates in [0, 1]; :func:`domain`). The intersection keeps the coverage: the
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

import numpy as np
from scipy.special import stdtrit  # Student's t quantile (scipy.stats.t.ppf's own; importing scipy.stats costs ~0.4 s)

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
#: a half-width beyond this share of the mean gives a shaky interval
WIDE = 0.5

_AT_LEAST_ONE = ("slowdown",)
_UNIT = ("utilisation", "claimed", "fraction", "rate", "share")
_NONNEGATIVE = ("wait", "response", "makespan", "throughput", "jobs", "users", "reservations", "preemptions", "lost",
                "work", "load", "queue", "tries", "kills", "killed", "workflows", "cross_slice")


def t_half_width(values) -> float | None:
    """Half-width of Student's t 95% interval of the mean of ``values`` (NaNs left out); None
    for fewer than two values."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if len(v) < 2:
        return None
    return float(stdtrit(len(v) - 1, 0.975) * v.std(ddof=1) / math.sqrt(len(v)))


def batch_means_half_width(values) -> float | None:
    """Half-width of the 95% t interval of the mean of ``BATCHES`` batch means of ``values`` (one
    replication's per-job values in arrival order, NaNs left out); None with too few values."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    per = len(v) // BATCHES
    if per < MIN_BATCH:
        return None
    means = v[:per * BATCHES].reshape(BATCHES, per).mean(axis=1)
    return float(stdtrit(BATCHES - 1, 0.975) * means.std(ddof=1) / math.sqrt(BATCHES))


def domain(name: str) -> tuple[float, float]:
    """The values metric ``name`` can take (``utilisation.<cluster>`` as ``utilisation``)."""
    words = name.split(".")[0].split("_")
    if words[0] == "jain":  # Jain's fairness index (of waits, slowdowns ...): in [1/n, 1]
        return 0.0, 1.0
    if words[-1] == "pct":  # a percentage (evolving applications' metrics)
        return (0.0, 100.0) if words[0] in _UNIT else (0.0, math.inf)
    if any(w in _AT_LEAST_ONE for w in words):
        return 1.0, math.inf
    if words[-1] in _UNIT or words[0] in _UNIT:
        return 0.0, 1.0
    if any(w in _NONNEGATIVE for w in words):
        return 0.0, math.inf
    return -math.inf, math.inf


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
