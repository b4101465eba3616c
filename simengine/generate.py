"""Synthetic job streams: Poisson arrivals with sizes, runtimes and estimates drawn from distributions
(and ``kind: lublin`` streams, drawn by simengine.lublin)."""

from __future__ import annotations

import math

import numpy as np

from simengine.distributions import processor_counts
from simengine.lublin import lublin_feitelson, offered_load
from simengine.scenario import GRID_TARGET, FactorEstimate, LublinStream, Platform, SyntheticStream
from simengine.workload import JobTable

__all__ = ["generate_stream"]


def _children(rng: np.random.Generator) -> tuple[np.random.Generator, ...]:
    """Four independent generators (arrivals, sizes, runtimes, estimates) derived from ``rng``.

    ``rng`` is advanced by a fixed amount, so the caller's next draws do not depend on how
    many jobs were generated. One generator per column keeps job k's attributes the same
    whatever the number of jobs asked for (a longer run extends a shorter one).
    """
    seed = np.random.SeedSequence(rng.integers(0, 2**32, size=4, dtype=np.uint64).tolist())
    return tuple(np.random.default_rng(s) for s in seed.spawn(4))


def generate_stream(
    stream: SyntheticStream,
    platform: Platform,
    rng: np.random.Generator,
    *,
    n: int | None = None,
    horizon: float | None = None,
    stream_index: int = 0,
) -> JobTable:
    """Generate the jobs of one synthetic stream.

    Parameters
    ----------
    stream : SyntheticStream
        A validated stream of a scenario whose platform is ``platform``.
    platform : Platform
        Resolves the target cluster and, for ``target_load``, the capacity.
    rng : numpy.random.Generator
        Source of randomness; the same state gives the same jobs.
    n : int, optional
        Generate (at most) this many jobs.
    horizon : float, optional
        Generate every job submitted before this time (seconds).
    stream_index : int
        Stored in the ``stream`` column.

    At least one of ``n``, ``horizon`` and ``stream.count`` must bound the stream;
    when several are given the tightest wins. A ``lublin`` stream always draws its
    ``count`` (``n`` is ignored: the runner's per-stream counts assume Poisson rates)
    and the horizon cuts it.

    Returns
    -------
    JobTable
        ``job_id`` 1..N in submit order; the first job arrives after one exponential
        gap (not at time 0); ``processors`` are the size draws rounded up, at least 1;
        ``estimate`` = runtime (exact) or runtime x factor; ``cluster`` is the target
        cluster's index, or -1 for target ``grid``.
    """
    if isinstance(stream, LublinStream):
        return _lublin_stream(stream, platform, rng, horizon, stream_index)
    limit = min((x for x in (n, stream.count) if x is not None), default=None)
    if limit is None and horizon is None:
        raise ValueError(
            f"stream '{stream.name}' is unbounded: give n or horizon (or set the stream's count)"
        )
    if limit is not None and limit < 0:
        raise ValueError(f"n must not be negative (got {limit})")
    rate = stream.arrival_rate(platform)
    if not (rate > 0 and math.isfinite(rate)):
        raise ValueError(f"stream '{stream.name}' has arrival rate {rate}; it must be positive and finite")
    arrivals, sizes, runtimes, estimates = _children(rng)
    scale = 1.0 / rate

    if horizon is None:
        submit = np.cumsum(arrivals.exponential(scale, limit))
    else:
        chunks: list[np.ndarray] = []
        last, count = 0.0, 0
        expected = rate * horizon
        while last < horizon and (limit is None or count < limit):
            size = int(min(expected - count + 6.0 * math.sqrt(expected + 1.0) + 64, 1 << 22))
            if limit is not None:
                size = min(size, limit - count)
            chunk = last + np.cumsum(arrivals.exponential(scale, size))
            chunks.append(chunk)
            last, count = float(chunk[-1]), count + size
        submit = np.concatenate(chunks) if chunks else np.zeros(0)
        submit = submit[: np.searchsorted(submit, horizon, side="left")]
        if limit is not None:
            submit = submit[:limit]
    m = len(submit)

    processors = processor_counts(stream.size.sample(sizes, m))
    runtime = np.maximum(stream.runtime.sample(runtimes, m), 0.0)
    if isinstance(stream.estimate, FactorEstimate):
        estimate = runtime * stream.estimate.factor.sample(estimates, m)
    else:
        estimate = runtime.copy()
    cluster = -1 if stream.target == GRID_TARGET else platform.cluster_index(stream.target)
    return JobTable(
        job_id=np.arange(1, m + 1, dtype=np.int64),
        submit=submit,
        runtime=runtime,
        estimate=estimate,
        processors=processors,
        cluster=np.full(m, cluster, dtype=np.int32),
        stream=np.full(m, stream_index, dtype=np.int32),
    )


def _lublin_stream(stream: LublinStream, platform: Platform, rng: np.random.Generator,
                   horizon: float | None, stream_index: int) -> JobTable:
    """A ``kind: lublin`` stream: the model's jobs, rescaled to ``target_load`` of the target's
    capacity (processors x speed) if given, cut at ``horizon``."""
    seed = np.random.SeedSequence(rng.integers(0, 2**32, size=4, dtype=np.uint64).tolist())
    model_rng, estimate_rng = (np.random.default_rng(s) for s in seed.spawn(2))
    cluster = -1 if stream.target == GRID_TARGET else platform.cluster_index(stream.target)
    jobs = lublin_feitelson(stream.count, model_rng, stream.model_processors(platform),
                            job_types=stream.job_types, start_hour=stream.start_hour,
                            time_scale=stream.time_scale, stream=stream_index, cluster=cluster)
    if stream.target_load is not None and len(jobs):
        targets = range(len(platform.clusters)) if cluster < 0 else [cluster]
        capacity = sum(platform.clusters[i].processors * platform.clusters[i].speed for i in targets)
        load = offered_load(jobs.submit, jobs.processors, jobs.runtime, capacity)
        if 0 < load < math.inf:
            jobs.submit = jobs.submit * (load / stream.target_load)
    if isinstance(stream.estimate, FactorEstimate):
        jobs.estimate = jobs.runtime * stream.estimate.factor.sample(estimate_rng, len(jobs))
    if horizon is not None:
        jobs = jobs.take(jobs.submit < horizon)
    return jobs
