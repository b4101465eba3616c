"""Lublin-Feitelson workload model for rigid parallel jobs (MODELS.md §1, used by Cao's thesis).

U. Lublin and D. G. Feitelson, "The Workload on Parallel Supercomputers: Modeling the
Characteristics of Rigid Jobs", J. Parallel Distrib. Comput. 63(11):1105-1122, 2003 (the
"1999" model). Every parameter below is the default of Lublin's reference program
``lublin99.c`` (Parallel Workloads Archive; the same constants are in GridSim's
``WorkloadLublin99.java``), which states the paper's fitted values. The program was read,
not copied: this is an independent numpy implementation of the same model.

The model, per job type (batch or interactive, two independent arrival processes merged in
time; or one "typeless" process fitted to the whole sample):

* **size** -- serial (1 processor) with probability ``serial_prob``; otherwise a parallel job
  whose log2 size is two-stage uniform: U(ulow, umed) with probability ``uprob``, else
  U(umed, uhi). With probability ``pow2_prob`` (of all jobs; the same uniform decides serial,
  power of two, other) the log2 size is rounded to an integer first. Size = round(2**x).
* **runtime** -- ln(runtime) is hyper-gamma: gamma(a1, b1) with probability
  p = clip(pa * size + pb, 0, 1), else gamma(a2, b2) (shape, scale); draws above
  ``max_log_runtime`` = 12 (exp(12) s, about 45 h) are redrawn. Runtime = floor(exp(x)) s.
* **arrivals** -- ln(gap) ~ gamma(aarr * arar, barr) (redrawn above ``max_log_interarrival``
  = 13) is the gap at rush-hour rate; a daily cycle stretches it: the day has 48 half-hour
  buckets whose weights are the gamma(anum, bnum) probability of the bucket, counted from
  ``CYCLIC_DAY_START`` = 11, normalised to mean 1. A gap of g seconds buys g / 1800 points and
  bucket b costs w_b points, so arrivals fall in bucket b in proportion to w_b.

Implementation choices (all reproduce the reference's distributions exactly):

* The redraw loops are replaced by inverse-CDF draws from the truncated distributions
  (``scipy.special.gammaincinv``); for the hyper-gamma the mixing probability becomes
  p F1(12) / (p F1(12) + (1-p) F2(12)), which is what rejecting whole hyper-gamma draws gives.
  One uniform per decision, so job k's values do not depend on how many jobs are drawn.
* The arrival "points" clock is inverted in closed form (it is piecewise linear), so all
  arrivals of a type come from one cumulative sum.
* Times are floored to whole seconds as the reference prints them (``integer_times``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from simengine.workload import JobTable

__all__ = [
    "LublinParams",
    "BATCH",
    "INTERACTIVE",
    "TYPELESS",
    "JOB_TYPE_INTERACTIVE",
    "JOB_TYPE_BATCH",
    "SHORT_LIMIT",
    "MEDIUM_LIMIT",
    "lublin_feitelson",
    "params_for",
    "daily_weights",
    "offered_load",
    "workload_statistics",
    "CAO_TABLE3",
    "CAO_KNOBS",
    "cao_workload",
    "cao_cluster_workloads",
    "combined_offered_load",
]

#: ``extra['job_type']`` codes, as in lublin99.c (ACTIVE = 0, BATCH = 1).
JOB_TYPE_INTERACTIVE, JOB_TYPE_BATCH = 0, 1

BUCKETS = 48  # half hours per day (lublin99.c BUCKETS)
SECONDS_IN_BUCKET = 86400 / BUCKETS
CYCLIC_DAY_START = 11  # lublin99.c: the fitted day runs over buckets 11 .. 58
REFERENCE_PROCESSORS = 128  # the parameters below fit a 128-processor machine (uhi = 7)

#: Cao's classes (thesis Table 4): short < 600 s, medium < 3 h, long >= 3 h.
SHORT_LIMIT, MEDIUM_LIMIT = 600.0, 3 * 3600.0


@dataclass(frozen=True)
class LublinParams:
    """The model's parameters for one job type (lublin99.c "MODEL PARAMETERS").

    Sizes: ``serial_prob``, ``pow2_prob``, two-stage uniform ``ulow, umed, uhi, uprob`` on
    log2(size). Runtimes: hyper-gamma ``a1, b1, a2, b2`` (shape, scale) on ln(runtime) with
    p = ``pa`` * size + ``pb``. Arrivals: rush-hour gap ln ~ gamma(``aarr`` * ``arar``,
    ``barr``); daily cycle gamma(``anum``, ``bnum``) over half-hour buckets.
    """

    serial_prob: float
    pow2_prob: float
    ulow: float
    umed: float
    uhi: float
    uprob: float
    a1: float
    b1: float
    a2: float
    b2: float
    pa: float
    pb: float
    aarr: float
    barr: float
    anum: float
    bnum: float
    arar: float

    def __post_init__(self) -> None:
        for name in ("serial_prob", "pow2_prob", "uprob"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must be a probability in [0, 1] (got {v})")
        if self.serial_prob + self.pow2_prob > 1.0 + 1e-12:
            raise ValueError(f"serial_prob + pow2_prob must not exceed 1 (got {self.serial_prob + self.pow2_prob:g})")
        if not self.ulow <= self.umed <= self.uhi:
            raise ValueError(f"need ulow <= umed <= uhi (got {self.ulow}, {self.umed}, {self.uhi})")
        for name in ("a1", "b1", "a2", "b2", "aarr", "barr", "anum", "bnum", "arar"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive (got {getattr(self, name)})")

    def mean_log2_parallel_size(self) -> float:
        """E[log2 size] of the two-stage uniform before power-of-two rounding (lublin99.c comment)."""
        return (self.uprob * self.ulow + self.umed + (1 - self.uprob) * self.uhi) / 2


# lublin99.c, SERIAL_PROB_BATCH .. ARAR_BATCH (paper Tables 3-5, batch column).
BATCH = LublinParams(
    serial_prob=0.2927, pow2_prob=0.6686, ulow=1.2, umed=5.0, uhi=7.0, uprob=0.875,
    a1=6.57, b1=0.823, a2=639.1, b2=0.0156, pa=-0.003, pb=0.6986,
    aarr=6.0415, barr=0.8531, anum=6.1271, bnum=5.2740, arar=1.0519,
)
# lublin99.c, SERIAL_PROB_ACTIVE .. ARAR_ACTIVE (interactive column).
INTERACTIVE = LublinParams(
    serial_prob=0.1541, pow2_prob=0.625, ulow=1.0, umed=3.0, uhi=5.5, uprob=0.705,
    a1=3.8351, b1=0.6605, a2=7.073, b2=0.6856, pa=-0.0118, pb=0.9156,
    aarr=6.5510, barr=0.6621, anum=8.9186, bnum=3.6680, arar=0.9797,
)
# lublin99.c, the "typeless" parameters (INCLUDE_JOBS_TYPE 0, fitted to the whole sample).
TYPELESS = LublinParams(
    serial_prob=0.244, pow2_prob=0.576, ulow=0.8, umed=4.5, uhi=7.0, uprob=0.86,
    a1=4.2, b1=0.94, a2=312.0, b2=0.03, pa=-0.0054, pb=0.78,
    aarr=10.2303, barr=0.4871, anum=8.1737, bnum=3.9631, arar=1.0225,
)

JobTypes = Literal["both", "batch", "interactive", "typeless"]


def params_for(base: LublinParams, processors: int) -> LublinParams:
    """``base`` resized to a machine of ``processors``.

    The reference fits 128 processors (uhi = log2 128 = 7). For another size the size
    parameters uhi and umed shift by log2(processors / 128), as lublin99.c advises ("UHi is the
    log2 of the system size", umed = uhi - 1.5 .. 3.5 below it); ulow is kept unless that
    would exceed umed. At 128 processors the parameters are unchanged.
    """
    if processors < 1:
        raise ValueError(f"processors must be at least 1 (got {processors})")
    shift = math.log2(processors) - math.log2(REFERENCE_PROCESSORS)
    if shift == 0:
        return base
    uhi = max(base.uhi + shift, 0.0)
    umed = min(max(base.umed + shift, 0.0), uhi)
    return replace(base, uhi=uhi, umed=umed, ulow=min(base.ulow, umed))


def daily_weights(params: LublinParams) -> np.ndarray:
    """Weights of the 48 half-hour buckets of the day (bucket 0 starts at midnight), mean 1.

    lublin99.c ``arrive_init``: bucket (i - 1) mod 48 gets the gamma(anum, bnum) probability
    of [i - 0.5, i + 0.5] for i = 11 .. 58, so the fitted day starts at 05:00.
    """
    from scipy.special import gammainc  # (here, not at the top: importing scipy.special costs ~0.13 s)
    i = np.arange(CYCLIC_DAY_START, BUCKETS + CYCLIC_DAY_START, dtype=np.float64)
    w = np.empty(BUCKETS)
    w[(i.astype(np.int64) - 1) % BUCKETS] = (gammainc(params.anum, (i + 0.5) / params.bnum)
                                            - gammainc(params.anum, (i - 0.5) / params.bnum))
    return w / w.mean()


def _truncated_gamma(u: np.ndarray, shape: float, scale: float, limit: float) -> np.ndarray:
    """Gamma(shape, scale) conditioned on <= limit, by inverse CDF of the uniforms ``u``."""
    from scipy.special import gammainc, gammaincinv  # (lazy: see daily_weights)
    top = gammainc(shape, limit / scale)
    return scale * gammaincinv(shape, np.clip(u * top, 0.0, top))


def _sizes(u: np.ndarray, p: LublinParams, processors: int) -> np.ndarray:
    """Sizes from uniforms ``u`` (m x 3): kind (serial / power of two / other), stage, position."""
    kind, stage, pos = u[:, 0], u[:, 1], u[:, 2]
    first = stage <= p.uprob
    lo = np.where(first, p.ulow, p.umed)
    hi = np.where(first, p.umed, p.uhi)
    par = lo + pos * (hi - lo)
    pow2 = kind <= p.serial_prob + p.pow2_prob
    par = np.where(pow2, np.floor(par + 0.5), par)  # lublin99.c: (unsigned)(par + 0.5)
    size = np.floor(np.exp2(par) + 0.5)
    size = np.where(kind <= p.serial_prob, 1.0, size)
    return np.clip(size, 1, processors).astype(np.int64)


def _log_runtimes(u: np.ndarray, sizes: np.ndarray, p: LublinParams, limit: float) -> np.ndarray:
    """ln(runtime) from uniforms ``u`` (m x 2): hyper-gamma with size-dependent p, truncated."""
    from scipy.special import gammainc  # (lazy: see daily_weights)
    mix = np.clip(p.pa * sizes + p.pb, 0.0, 1.0)
    f1 = gammainc(p.a1, limit / p.b1)
    f2 = gammainc(p.a2, limit / p.b2)
    # rejecting whole hyper-gamma draws above the limit reweights the two branches
    first_w = mix * f1
    first = u[:, 0] * (first_w + (1 - mix) * f2) <= first_w
    x1 = _truncated_gamma(u[:, 1], p.a1, p.b1, limit)
    x2 = _truncated_gamma(u[:, 1], p.a2, p.b2, limit)
    return np.where(first, x1, x2)


def _arrivals(u: np.ndarray, p: LublinParams, start_hour: float, limit: float) -> np.ndarray:
    """Arrival times (s from the start) of one type's process from uniforms ``u``.

    The reference's point clock: a gap g buys g / 1800 points, bucket b costs w_b; arrival k
    is where the cumulative cost reaches the cumulative points (first arrival after one gap,
    as lublin99.c's ``arrive_init`` draws one gap before the first job).
    """
    gaps = np.exp(_truncated_gamma(u, p.aarr * p.arar, p.barr, limit))
    points = np.cumsum(gaps / SECONDS_IN_BUCKET)
    w = daily_weights(p)
    start_bucket = start_hour * BUCKETS / 24.0
    # cost of the part of the day before the start instant, so time 0 = start_hour
    b0 = int(math.floor(start_bucket))
    cost = np.concatenate([[0.0], np.cumsum(w)])  # cost[j] = cost of buckets 0..j-1
    offset = cost[b0] + (start_bucket - b0) * w[b0]
    total = offset + points
    day = np.floor(total / BUCKETS)
    rem = total - day * BUCKETS
    j = np.clip(np.searchsorted(cost, rem, side="right") - 1, 0, BUCKETS - 1)
    bucket_pos = j + (rem - cost[j]) / w[j]
    return (day * BUCKETS + bucket_pos - start_bucket) * SECONDS_IN_BUCKET


def _children(rng: np.random.Generator, k: int) -> list[np.random.Generator]:
    # ``rng`` advances by a fixed amount; one child per column keeps job k's values the same
    # whatever n (a longer table extends a shorter one)
    seed = np.random.SeedSequence(rng.integers(0, 2**32, size=4, dtype=np.uint64).tolist())
    return [np.random.default_rng(s) for s in seed.spawn(k)]


def lublin_feitelson(
    n: int,
    rng: np.random.Generator,
    processors: int = 128,
    *,
    job_types: JobTypes = "both",
    batch: LublinParams | None = None,
    interactive: LublinParams | None = None,
    typeless: LublinParams | None = None,
    start_hour: float = 0.0,
    max_log_runtime: float = 12.0,
    max_log_interarrival: float = 13.0,
    target_load: float | None = None,
    time_scale: float = 1.0,
    integer_times: bool = True,
    stream: int = 0,
    cluster: int = -1,
) -> JobTable:
    """Draw ``n`` rigid jobs from the Lublin-Feitelson model.

    Parameters
    ----------
    n : int
        Number of jobs.
    rng : numpy.random.Generator
        The only source of randomness: the same state gives the same table. Job k's values
        do not depend on ``n``.
    processors : int
        Machine size the sizes are drawn for (reference: 128; see :func:`params_for`); no job
        is larger.
    job_types : {"both", "batch", "interactive", "typeless"}
        ``both`` (lublin99.c default, INCLUDE_JOBS_TYPE 1): a batch and an interactive arrival
        process merged in time, each job taking its own type's parameters. ``batch`` or
        ``interactive``: that process only. ``typeless``: the whole-sample fit.
    batch, interactive, typeless : LublinParams, optional
        Replace a type's parameters (defaults :data:`BATCH`, :data:`INTERACTIVE`,
        :data:`TYPELESS`; e.g. ``dataclasses.replace(BATCH, serial_prob=0.1)``).
    start_hour : float
        Hour of the day at time 0 (lublin99.c START = 0, midnight).
    max_log_runtime, max_log_interarrival : float
        Truncation of ln(runtime) and ln(gap) (lublin99.c TOO_MUCH_TIME 12, TOO_MUCH_ARRIVE_TIME 13).
    target_load : float, optional
        Rescale submit times so that :func:`offered_load` (sum of size x runtime over
        ``processors`` x last submit) equals this value. The daily cycle is stretched with them.
    time_scale : float
        Multiply submit times by this factor (e.g. 0.5 doubles the arrival rate); give it or
        ``target_load``, not both.
    integer_times : bool
        Floor submit and run times to whole seconds, as the reference prints them.
    stream, cluster : int
        Values of the ``stream`` and ``cluster`` columns.

    Returns
    -------
    JobTable
        Submit-sorted, ``job_id`` 1..n, ``estimate`` = runtime, ``extra['job_type']``
        (:data:`JOB_TYPE_BATCH` or :data:`JOB_TYPE_INTERACTIVE`; ``typeless`` jobs count as
        interactive, as in the reference).
    """
    n = int(n)
    if n < 0:
        raise ValueError(f"n must not be negative (got {n})")
    if processors < 1:
        raise ValueError(f"processors must be at least 1 (got {processors})")
    if not 0 <= start_hour < 24:
        raise ValueError(f"start_hour must be in [0, 24) (got {start_hour})")
    if target_load is not None and not target_load > 0:
        raise ValueError(f"target_load must be positive (got {target_load})")
    if not (time_scale > 0 and math.isfinite(time_scale)):
        raise ValueError(f"time_scale must be positive and finite (got {time_scale})")
    if target_load is not None and time_scale != 1.0:
        raise ValueError("give target_load or time_scale, not both")
    if job_types == "both":
        kinds = [(JOB_TYPE_BATCH, batch or BATCH), (JOB_TYPE_INTERACTIVE, interactive or INTERACTIVE)]
    elif job_types == "batch":
        kinds = [(JOB_TYPE_BATCH, batch or BATCH)]
    elif job_types == "interactive":
        kinds = [(JOB_TYPE_INTERACTIVE, interactive or INTERACTIVE)]
    elif job_types == "typeless":
        kinds = [(JOB_TYPE_INTERACTIVE, typeless or TYPELESS)]
    else:
        raise ValueError(f"job_types must be one of both, batch, interactive, typeless (got {job_types!r})")

    gens = _children(rng, 3 * 2)  # (arrivals, sizes, runtimes) for each of up to two types
    parts = []
    for t, (code, base) in enumerate(kinds):
        p = params_for(base, processors)
        g_arr, g_size, g_run = gens[3 * t: 3 * t + 3]
        # n of each type always covers the first n of the merged stream
        submit = _arrivals(g_arr.random(n), p, start_hour, max_log_interarrival)
        size = _sizes(g_size.random((n, 3)), p, processors)
        runtime = np.exp(_log_runtimes(g_run.random((n, 2)), size, p, max_log_runtime))
        parts.append((submit, size, runtime, np.full(n, code, dtype=np.int8)))
    submit, size, runtime, jtype = (np.concatenate(c) for c in zip(*parts))
    if integer_times:
        submit, runtime = np.floor(submit), np.floor(runtime)
    # lublin99.c takes batch only when strictly earlier: order by time, then interactive first
    order = np.lexsort((jtype, submit))[:n]
    submit, size, runtime, jtype = submit[order], size[order], runtime[order], jtype[order]
    if target_load is not None and n:
        load = offered_load(submit, size, runtime, processors)
        if load > 0 and math.isfinite(load):
            time_scale = load / target_load
    if time_scale != 1.0:
        submit = submit * time_scale
        if integer_times:
            submit = np.floor(submit)
    return JobTable(
        job_id=np.arange(1, n + 1, dtype=np.int64),
        submit=submit,
        runtime=runtime,
        estimate=runtime.copy(),
        processors=size,
        cluster=np.full(n, cluster, dtype=np.int32),
        stream=np.full(n, stream, dtype=np.int32),
        extra={"job_type": jtype},
    )


def offered_load(submit: np.ndarray, processors: np.ndarray, runtime: np.ndarray, capacity: float) -> float:
    """Lublin's load: sum(size x runtime) / (capacity x last submit) (lublin99.c header comment)."""
    submit = np.asarray(submit, dtype=np.float64)
    if not len(submit):
        return 0.0
    span = float(submit.max())
    work = float(np.dot(np.asarray(processors, dtype=np.float64), np.asarray(runtime, dtype=np.float64)))
    return work / (capacity * span) if span > 0 else math.inf


def workload_statistics(jobs: JobTable, capacity: float = REFERENCE_PROCESSORS) -> dict:
    """Cao's Table 3 for a job table: per class short (< 600 s), medium (< 3 h), long (>= 3 h).

    Parameters
    ----------
    jobs : JobTable
    capacity : float
        Processors of one cluster, the machine the load is measured against (128).

    Returns
    -------
    dict
        ``jobs`` (count); ``percent``, ``mean_size``, ``mean_runtime`` and ``work_share``
        (each a dict over ``short``, ``medium``, ``long``; NaN for an empty class);
        ``offered_load``: Lublin's load sum(size x runtime) / (capacity x last submit).
        Cao's Table 3 "offered load" (2.96-3.14 for seeds 71, 13, 3, 31) is about 4 times
        this value of one stream (about 0.75 against one 128-processor cluster): the work of
        his 4 clusters' streams against one cluster (:func:`combined_offered_load`). The
        thesis does not define the term; docs/workloads-lublin.md gives the candidates.
    """
    rt = np.asarray(jobs.runtime, dtype=np.float64)
    size = np.asarray(jobs.processors, dtype=np.float64)
    classes = {
        "short": rt < SHORT_LIMIT,
        "medium": (rt >= SHORT_LIMIT) & (rt < MEDIUM_LIMIT),
        "long": rt >= MEDIUM_LIMIT,
    }
    n = len(rt)
    work = size * rt
    total = float(work.sum())

    def mean(x, m):
        return float(x[m].mean()) if m.any() else math.nan

    load = offered_load(jobs.submit, size, rt, capacity)
    return {
        "jobs": n,
        "percent": {k: 100.0 * float(m.sum()) / n if n else math.nan for k, m in classes.items()},
        "mean_size": {k: mean(size, m) for k, m in classes.items()},
        "mean_runtime": {k: mean(rt, m) for k, m in classes.items()},
        "work_share": {k: float(work[m].sum()) / total if total else math.nan for k, m in classes.items()},
        "offered_load": load,
    }


#: Cao's Table 3 (thesis §4.11.1): seed -> % of jobs, average size, average runtime (s) per
#: class (short, medium, long) and offered load.
CAO_TABLE3 = {
    71: {"percent": (64.0, 19.4, 16.6), "mean_size": (8.7, 16.5, 19.7), "mean_runtime": (79, 5757, 19200),
         "offered_load": 3.08},
    13: {"percent": (63.9, 19.4, 16.7), "mean_size": (8.7, 16.7, 20.6), "mean_runtime": (79, 5821, 19100),
         "offered_load": 3.05},
    3: {"percent": (64.2, 19.8, 16.0), "mean_size": (8.7, 17.2, 20.1), "mean_runtime": (79, 5763, 19087),
        "offered_load": 3.14},
    31: {"percent": (64.0, 19.8, 16.2), "mean_size": (8.8, 16.6, 20.5), "mean_runtime": (79, 5829, 18954),
         "offered_load": 2.96},
}

#: The knobs that reproduce Cao's workload: his Table 3 fits the typeless (whole-sample) model.
CAO_KNOBS = {"job_types": "typeless"}


def cao_workload(seed: int, n: int = 20000, **knobs) -> JobTable:
    """Cao's workload for a seed: ``lublin_feitelson(n, default_rng(SeedSequence(seed)), 128,
    job_types="typeless", **knobs)``.

    Its statistics are Table 3's (docs/workloads-lublin.md); Cao's seeds drove SCOJO-PECT's
    Java generator, so the jobs themselves differ.
    """
    kw = {**CAO_KNOBS, **knobs}
    return lublin_feitelson(n, np.random.default_rng(np.random.SeedSequence(seed)), REFERENCE_PROCESSORS, **kw)


def cao_cluster_workloads(seed: int, clusters: int = 4, n: int = 20000, **knobs) -> list[JobTable]:
    """One Lublin stream per cluster, the reading of Cao's setup that matches both his offered
    loads and his reservation percentages (docs/workloads-lublin.md).

    Stream 0 is :func:`cao_workload` (``SeedSequence(seed)``, Table 3's statistics); stream
    c > 0 uses ``SeedSequence([seed, c])``. Each is the model at its own rate (about 0.75 of a
    128-processor cluster), so the grid is offered about ``clusters`` x 0.75 = 3 clusters' worth
    of work, Cao's "offered load"; ``cluster`` is set to the stream's index.
    """
    out = []
    for c in range(clusters):
        ss = np.random.SeedSequence(seed) if c == 0 else np.random.SeedSequence([seed, c])
        kw = {**CAO_KNOBS, "cluster": c, **knobs}
        out.append(lublin_feitelson(n, np.random.default_rng(ss), REFERENCE_PROCESSORS, **kw))
    return out


def combined_offered_load(tables: list[JobTable], capacity: float = REFERENCE_PROCESSORS) -> float:
    """Work of several streams over ``capacity`` x the last submit of any: Cao's offered load of
    four cluster streams measured against one 128-processor cluster."""
    last = max((float(t.submit.max()) for t in tables if len(t)), default=0.0)
    work = sum(float(np.dot(t.processors.astype(np.float64), t.runtime)) for t in tables)
    return work / (capacity * last) if last > 0 else math.inf
