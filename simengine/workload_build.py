"""A replication's workload, as every model builds it: its random streams, its jobs (synthetic
streams drawn, traces read and retimed), their routing to clusters, and the loop that draws more
synthetic jobs until they cover the run's stop rule.

Randomness: ``SeedSequence(run.seed).spawn(R)`` gives one child per replication; each child
spawns one stream per job stream plus one for site allocation. Same scenario + seed + engine
version => identical results.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from simengine.generate import generate_stream
from simengine.registry import SITE_ALLOCATION
from simengine.scenario import GRID_TARGET, Scenario, SyntheticStream, TraceStream
from simengine.traces import read_trace, walltime_kills
from simengine.workload import JobTable


#: the first draw of an endless synthetic stream: this many times its share of the completions
DRAW_MARGIN = 1.2


@lru_cache(maxsize=8)
def _cached_trace(path: str, fmt: str | None, site_map: tuple | None, limit: int | None, skip_untimed: bool = False):
    return read_trace(path, format=fmt, site_map=dict(site_map) if site_map else None, limit=limit,
                      skip_untimed=skip_untimed)


def _site_map(stream: TraceStream, scenario: Scenario) -> tuple | None:
    """The stream's GWF site map as the read cache keys it: (site, cluster index) pairs."""
    if not stream.site_map:
        return None
    return tuple(sorted((site, scenario.platform.cluster_index(c)) for site, c in stream.site_map.items()))


def load_trace_stream(stream: TraceStream, scenario: Scenario, index: int,
                      horizon: float | None = None) -> tuple[JobTable, list[str]]:
    """The jobs of a trace stream, retimed as the stream asks, routed to its target; with a
    ``horizon``, only those submitted before it, and a note saying how many were left out (every
    model reads its traces here, so no model cuts a trace silently)."""
    platform = scenario.platform
    trace = _cached_trace(stream.resolved_path, stream.format, _site_map(stream, scenario), stream.limit,
                          stream.skip_untimed)
    jobs = trace.jobs.take(np.arange(len(trace.jobs)))
    jobs.stream[:] = index
    notes = []
    if trace.skipped:
        why = ("their profiles give no run time: Batsim times them on its platform model" if trace.format == "batsim"
               else "no processor count")
        notes.append(f"{stream.name}: {trace.skipped} jobs skipped ({why})")
    jobs, said = _cancelled_jobs(stream, jobs)
    notes += said
    if stream.target != GRID_TARGET:
        jobs.cluster[:] = platform.cluster_index(stream.target)
    elif not stream.site_map:
        jobs.cluster[:] = -1
    if len(jobs):
        first = jobs.submit[0]
        scale = stream.time_scale
        if stream.target_load is not None:
            span = jobs.submit[-1] - first
            capacity = stream_capacity(stream, scenario)
            offered = float((jobs.processors * jobs.runtime).sum()) / (capacity * span) if span > 0 else 0.0
            if offered > 0:
                scale = offered / stream.target_load
                notes.append(f"{stream.name}: offered load {offered:.4f} scaled to {stream.target_load} "
                             f"(submit times x {scale:.4f})")
        if scale != 1.0:
            jobs.submit = first + (jobs.submit - first) * scale
    if horizon is not None:
        before = len(jobs)
        jobs = jobs.take(jobs.submit < horizon)
        if len(jobs) < before:
            notes.append(f"{stream.name}: {len(jobs):,} of the trace's {before:,} jobs arrive before "
                         f"run.stop.horizon ({horizon:,g} s); the others are not simulated")
    return jobs, notes


#: SWF's status of a cancelled job (GWF's too)
STATUS_CANCELLED = 5


def _cancelled_jobs(stream: TraceStream, jobs: JobTable) -> tuple[JobTable, list[str]]:
    """The trace's cancelled jobs (status 5): those that ran are replayed with the time they ran;
    those that never did (run time 0 or unknown) are, as ``stream.cancelled`` says, withdrawn
    from the queue at their cancellation time -- the submission plus the trace's wait, kept as
    ``extra["cancel_after"]`` (the wait: a span, so a retimed stream keeps it) --, kept as jobs of
    run time 0, or dropped; a note counts them (docs/traces.md, "Cancelled jobs")."""
    status = jobs.extra.get("status")
    if status is None:
        return jobs, []
    cancelled = status == STATUS_CANCELLED
    if not cancelled.any():
        return jobs, []
    never = cancelled & ~(jobs.runtime > 0)
    ran = int(cancelled.sum() - never.sum())
    what = {"drop": "dropped (cancelled: drop)",
            "keep": "replayed as jobs of run time 0 (cancelled: withdraw withdraws them at their cancellation, "
                    "drop leaves them out)",
            "withdraw": "submitted and withdrawn at their cancellation time, the submission plus the trace's wait "
                        "(cancelled: withdraw)"}[stream.cancelled]
    note = (f"{stream.name}: {int(cancelled.sum()):,} jobs the trace marks cancelled (status 5): {ran:,} ran before "
            f"their cancellation and are replayed with the time they ran; {int(never.sum()):,} never ran and are {what}")
    if stream.cancelled == "drop" and never.any():
        jobs = jobs.take(np.flatnonzero(~never))
    elif stream.cancelled == "withdraw":
        wait = np.asarray(jobs.extra.get("wait", np.full(len(jobs), np.nan)), np.float64)
        # (an unknown wait: withdrawn at its submission, so it never waits)
        jobs.extra["cancel_after"] = np.where(never, np.where(wait >= 0, wait, 0.0), np.nan)
    return jobs, [note]


def read_traces(scenario: Scenario) -> None:
    """Read every trace stream of the scenario into the cache (a model's ``prepare``: before the
    engine clock starts, so engine_seconds is the simulation's own time)."""
    for i, stream in enumerate(scenario.workload.streams):
        if isinstance(stream, TraceStream):
            load_trace_stream(stream, scenario, i)


#: the SWF header keys that say when a trace's time 0 was (SWF 2.2): a schedule of the trace keeps them
TIME_ORIGIN_KEYS = ("UnixStartTime", "TimeZone", "TimeZoneString")


def trace_time_origins(scenario: Scenario) -> dict[str, dict[str, str]]:
    """Per trace stream (by name) replayed on its own clock (no time_scale, no target_load): the
    TIME_ORIGIN_KEYS its header gives, from the read cache (:func:`read_traces` filled it)."""
    out = {}
    for i, stream in enumerate(scenario.workload.streams):
        if not isinstance(stream, TraceStream) or stream.time_scale != 1.0 or stream.target_load is not None:
            continue
        header = _cached_trace(stream.resolved_path, stream.format, _site_map(stream, scenario), stream.limit,
                               stream.skip_untimed).header
        found = {k: str(header[k]) for k in TIME_ORIGIN_KEYS if isinstance(header.get(k), str)}
        if found:
            out[stream.name] = found
    return out


def stream_capacity(stream, scenario: Scenario) -> float:
    clusters = scenario.platform.clusters
    if stream.target == GRID_TARGET:
        return float(sum(c.processors * c.speed for c in clusters))
    c = clusters[scenario.platform.cluster_index(stream.target)]
    return float(c.processors * c.speed)


def _synthetic_counts(scenario: Scenario, completions: int, margin: float) -> list[int]:
    """Jobs to generate per synthetic stream so the run reaches ``completions``."""
    rates = [s.arrival_rate(scenario.platform) if isinstance(s, SyntheticStream) else 0.0
             for s in scenario.workload.streams]
    total = sum(rates) or 1.0
    return [int(math.ceil(completions * margin * r / total)) + 100 for r in rates]


def build_workload(scenario: Scenario, rngs: list[np.random.Generator], horizon: float | None,
                   counts: list[int] | None) -> tuple[JobTable, list[str]]:
    tables, notes = [], []
    for i, stream in enumerate(scenario.workload.streams):
        if isinstance(stream, TraceStream):
            jobs, n = load_trace_stream(stream, scenario, i, horizon)
            notes += n
        else:
            # a fresh copy of the stream's generator, so a longer draw extends a shorter one
            rng = np.random.Generator(type(rngs[i].bit_generator)(rngs[i].bit_generator.seed_seq))
            jobs = generate_stream(stream, scenario.platform, rng, n=counts[i] if counts else None,
                                   horizon=horizon, stream_index=i)
        tables.append(jobs)
    return JobTable.concat(tables).sorted_by_submit(), notes


def replication_rngs(scenario: Scenario, replication: int) -> list[np.random.Generator]:
    # SeedSequence(seed).spawn(R)[r], without building the other R - 1 children
    child = np.random.SeedSequence(scenario.run.seed, spawn_key=(replication,))
    return [np.random.default_rng(s) for s in child.spawn(len(scenario.workload.streams) + 1)]


#: the spawn index of a replication's failure draws: far past any stream's (the site allows 64
#: streams, limits.py), so a failure model draws apart from the workload, whose draws stay those
#: of the same scenario without it
FAILURE_STREAM = 1 << 20


def failure_rng(scenario: Scenario, replication: int, *more: int) -> np.random.Generator:
    """Replication ``replication``'s generator of failure draws: the child (replication,
    FAILURE_STREAM) of the run's seed for KOALA's soft errors, and its children (..., cluster)
    for a cluster's resource failures (``more``), so adding a cluster changes no other's."""
    return np.random.default_rng(np.random.SeedSequence(scenario.run.seed,
                                                        spawn_key=(replication, FAILURE_STREAM, *more)))


def route_jobs(jobs: JobTable, scenario: Scenario, rng: np.random.Generator) -> np.ndarray:
    """Cluster of every job (site allocation for grid jobs); -1 where none can hold it."""
    processors = np.asarray(scenario.platform.processors)
    cluster = jobs.cluster.astype(np.int64)
    grid = cluster < 0
    if len(jobs) and grid.all() and jobs.processors.max() <= processors.min():
        # every job is the grid's and fits every cluster (as in Zikos & Karatza): route them all
        entry = SITE_ALLOCATION.get(scenario.grid.site_allocation.name)
        cluster[:] = entry.implementation(jobs, processors, scenario.grid.site_allocation.params, rng)
        return cluster
    fits_somewhere = jobs.processors <= processors.max()
    todo = grid & fits_somewhere
    if todo.any():
        entry = SITE_ALLOCATION.get(scenario.grid.site_allocation.name)
        chosen = jobs if todo.all() else jobs.take(todo)
        cluster[todo] = entry.implementation(chosen, processors, scenario.grid.site_allocation.params, rng)
    cluster[grid & ~fits_somewhere] = -1
    too_big = (cluster >= 0) & (jobs.processors > processors[np.maximum(cluster, 0)])
    cluster[too_big] = -1
    return cluster


def drawn_until(scenario: Scenario, jobs: JobTable) -> float:
    """The last submission of the endless synthetic stream that ends first: what happens
    before it cannot change when more jobs are drawn (``until_enough``)."""
    if scenario.run.stop.completions is None:
        return math.inf
    last = math.inf
    for i in endless_streams(scenario):
        mine = np.flatnonzero(jobs.stream == i)
        last = min(last, float(jobs.submit[mine[-1]]) if len(mine) else -math.inf)
    return last


def stop_horizon(scenario: Scenario) -> float:
    """The run's ``stop.horizon`` (inf: none)."""
    return scenario.run.stop.horizon if scenario.run.stop.horizon is not None else math.inf


def prepare_jobs(scenario: Scenario, replication: int, counts: list[int] | None):
    """Replication ``replication``'s jobs in submit order, routed: (jobs, cluster (-1: rejected),
    run time and estimate on their cluster's speed, walltime kill flag, notes)."""
    rngs = replication_rngs(scenario, replication)
    horizon = scenario.run.stop.horizon
    jobs, notes = build_workload(scenario, rngs[:-1], horizon, counts)
    cluster = route_jobs(jobs, scenario, rngs[-1])
    rejected = int((cluster < 0).sum())
    if rejected:
        notes.append(f"replication {replication}: {rejected} jobs larger than their cluster were rejected")
    runtime, estimate = jobs.runtime, jobs.estimate
    speeds = [c.speed for c in scenario.platform.clusters]
    if any(v != 1.0 for v in speeds):
        speed = np.array(speeds + [1.0])[cluster]
        runtime = runtime / speed
        estimate = estimate / speed
    runtime, killed = walltime_cut(scenario, jobs.stream, runtime, estimate)
    return jobs, cluster, runtime, estimate, killed, notes


def walltime_cut(scenario: Scenario, stream: np.ndarray, runtime: np.ndarray,
                 estimate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The run times with the jobs of the streams that kill at the walltime (:func:`walltime_kills`)
    cut at their estimate, and which were cut. A job without an estimate runs to its end."""
    kills = np.array(walltime_kills(scenario.workload.streams, scenario.run.enforce_walltime), bool)
    if not kills.any():
        return runtime, np.zeros(len(runtime), bool)
    at = kills[stream]
    return np.where(at, np.fmin(runtime, estimate), runtime), (runtime > estimate) & at


def early_stop_note(scenario: Scenario, kept: int, workload: int) -> str | None:
    """What to say when ``run.stop.completions`` ended a run whose workload is finite (traces, counted
    streams) before all of its ``workload`` jobs had arrived (``kept`` had): a replay cut short."""
    if endless_streams(scenario) or kept >= workload:
        return None
    return (f"run.stop.completions ({scenario.run.stop.completions:,}) ended the run when {kept:,} of the "
            f"workload's {workload:,} jobs had arrived; the others are not simulated (leave the stop empty "
            "to run the whole workload)")


def endless_streams(scenario: Scenario) -> list[int]:
    """Indices of the synthetic streams without a job count (drawn until the stop rule is covered)."""
    return [i for i, s in enumerate(scenario.workload.streams) if isinstance(s, SyntheticStream) and s.count is None]


def streams_cover(scenario: Scenario, jobs: JobTable, t_n: float, done: int) -> bool:
    """Do the jobs drawn cover a run whose ``run.stop.completions``-th completion is at ``t_n``
    (``done`` completions in all)? Every endless synthetic stream must have drawn a job after it:
    jobs it would still have drawn could have changed the schedule before then."""
    if done < scenario.run.stop.completions:
        return False
    stream = jobs.stream
    for i in endless_streams(scenario):
        last = len(stream) - 1 if len(stream) and stream[-1] == i else None
        if last is None:
            mine = np.flatnonzero(stream == i)
            last = mine[-1] if len(mine) else None
        if last is None or jobs.submit[last] <= t_n:
            return False
    return True


def until_enough(scenario: Scenario, attempt: Callable[[list[int] | None], Any],
                 enough: Callable[[Any], bool]) -> Any:
    """``attempt(counts)`` with more synthetic jobs each time until ``enough(outcome)`` says they
    cover the run's stop (every model's replication loop; ``outcome.jobs`` is its JobTable).

    A synthetic stream draws its k-th job the same whatever the count, so a longer attempt
    only extends a shorter one, and the jobs the run keeps do not depend on the count."""
    completions = scenario.run.stop.completions
    margin = DRAW_MARGIN
    drawn = -1
    while True:
        counts = _synthetic_counts(scenario, completions, margin) if completions else None
        out = attempt(counts)
        if len(out.jobs) == drawn or enough(out):
            return out  # (same jobs as the last attempt: the horizon ends the streams first)
        drawn = len(out.jobs)
        margin *= 2  # the queue grew more than expected: draw more jobs and run again
