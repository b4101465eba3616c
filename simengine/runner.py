"""Run a scenario: build each replication's workload, route jobs to clusters, let
each cluster's local scheduler place them, then turn the schedule into the output
contract (simengine.results).

Randomness: ``SeedSequence(run.seed).spawn(R)`` gives one child per replication;
each child spawns one stream per job stream plus one for site allocation. Same
scenario + seed + engine version => identical results.

Replications run (a) in lock step in one compiled call when the model is dispatch
only (every cluster LWR), (b) in a process pool when there are several and the run
is big enough to pay for starting processes, (c) one after the other otherwise.
"""
from __future__ import annotations

import math
import os
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from simengine import __version__
from simengine.gantt import KIND_RUN, SEGMENT_COLUMNS, assign_processors
from simengine.generate import generate_stream
from simengine.grid_lwr import grid_lwr_replications
from simengine.registry import LOCAL_SCHEDULERS, SITE_ALLOCATION
from simengine.results import (BOUNDED_SLOWDOWN_TAU, Metric, Result, cluster_utilisation, replication_metrics,
                                time_series)
from simengine.scenario import GRID_TARGET, Scenario, SyntheticStream, TraceStream, load_scenario, scenario_hash
from simengine.schedulers.lwr import lwr_replications
from simengine.traces import read_trace
from simengine.workload import (STATUS_COMPLETED, STATUS_KILLED, STATUS_REJECTED, STATUS_UNFINISHED,
                                JobTable)

ProgressCallback = Callable[[dict[str, Any]], None]

#: Segments per streamed chunk.
CHUNK_SEGMENTS = 5000
#: Below this many jobs in all, replications run in this process (starting a pool costs more).
POOL_MIN_JOBS = 200_000


# ---- workload ------------------------------------------------------------------------------

@lru_cache(maxsize=8)
def _cached_trace(path: str, fmt: str | None, site_map: tuple | None, limit: int | None):
    return read_trace(path, format=fmt, site_map=dict(site_map) if site_map else None, limit=limit)


def load_trace_stream(stream: TraceStream, scenario: Scenario, index: int) -> tuple[JobTable, list[str]]:
    """The jobs of a trace stream, retimed as the stream asks, routed to its target."""
    platform = scenario.platform
    site_map = None
    if stream.site_map:
        site_map = tuple(sorted((site, platform.cluster_index(c)) for site, c in stream.site_map.items()))
    trace = _cached_trace(stream.resolved_path, stream.format, site_map, stream.limit)
    jobs = trace.jobs.take(np.arange(len(trace.jobs)))
    jobs.stream[:] = index
    notes = []
    if trace.skipped:
        notes.append(f"{stream.name}: {trace.skipped} jobs skipped (no processor count)")
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
    return jobs, notes


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
            jobs, n = load_trace_stream(stream, scenario, i)
            notes += n
            if horizon is not None:
                jobs = jobs.take(jobs.submit < horizon)
        else:
            # a fresh copy of the stream's generator, so a longer draw extends a shorter one
            rng = np.random.Generator(type(rngs[i].bit_generator)(rngs[i].bit_generator.seed_seq))
            jobs = generate_stream(stream, scenario.platform, rng, n=counts[i] if counts else None,
                                   horizon=horizon, stream_index=i)
        tables.append(jobs)
    return JobTable.concat(tables).sorted_by_submit(), notes


# ---- one replication -----------------------------------------------------------------------

@dataclass
class ReplicationOutcome:
    jobs: dict[str, np.ndarray]
    segments: dict[str, np.ndarray] | None
    metrics: dict[str, float]
    series: dict[str, np.ndarray] | None
    notes: list[str]


def _rngs(scenario: Scenario, replication: int) -> list[np.random.Generator]:
    child = np.random.SeedSequence(scenario.run.seed).spawn(scenario.run.replications)[replication]
    return [np.random.default_rng(s) for s in child.spawn(len(scenario.workload.streams) + 1)]


def _route(jobs: JobTable, scenario: Scenario, rng: np.random.Generator) -> np.ndarray:
    """Cluster of every job (site allocation for grid jobs); -1 where none can hold it."""
    processors = np.asarray(scenario.platform.processors)
    cluster = jobs.cluster.astype(np.int64).copy()
    grid = cluster < 0
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


def _schedule_clusters(scenario: Scenario, jobs: JobTable, cluster: np.ndarray, runtime: np.ndarray,
                       estimate: np.ndarray, horizon: float, lwr_starts=None):
    """Start times (and LWR processors) of every job, cluster by cluster."""
    n = len(jobs)
    start = np.full(n, np.nan)
    proc = np.full(n, -1, np.int64)
    for c, spec in enumerate(scenario.platform.clusters):
        idx = np.flatnonzero(cluster == c)
        if not len(idx):
            continue
        entry = LOCAL_SCHEDULERS.get(spec.scheduler.name)
        params = entry.params.model_validate(spec.scheduler.params)
        out = entry.implementation(jobs.submit[idx], runtime[idx], estimate[idx], jobs.processors[idx],
                                   spec.processors, params, horizon=horizon)
        start[idx] = out.start
        if out.processor is not None:
            proc[idx] = out.processor
    return start, proc


def finish_replication(scenario: Scenario, jobs: JobTable, cluster: np.ndarray, runtime: np.ndarray,
                       killed: np.ndarray, start: np.ndarray, proc: np.ndarray, replication: int,
                       notes: list[str], with_segments: bool) -> ReplicationOutcome:
    """Statuses, stop and warm-up rules, derived columns, metrics and (optionally) segments."""
    run = scenario.run
    n = len(jobs)
    end = start + runtime
    horizon = run.stop.horizon if run.stop.horizon is not None else math.inf
    finished = ~np.isnan(start) & (end <= horizon)
    t_stop = horizon
    keep = slice(0, n)
    if run.stop.completions is not None:
        ends = end[finished]
        if len(ends) >= run.stop.completions:
            t_stop = min(t_stop, _kth_smallest(ends, run.stop.completions))
        else:
            notes.append(f"replication {replication}: only {len(ends)} of {run.stop.completions} completions")
        keep = slice(0, int(np.searchsorted(jobs.submit, t_stop, side="right")))  # jobs are sorted by submit
    if not math.isfinite(t_stop):
        t_stop = float(np.nanmax(end)) if finished.any() else 0.0
    started_by_stop = ~np.isnan(start) & (start <= t_stop)
    start = np.where(started_by_stop, start, np.nan)
    done = started_by_stop & (end <= t_stop)
    # processors are held until the job ends or the run stops; a job still running at
    # the stop has no end
    held_until = np.where(started_by_stop, np.minimum(end, t_stop), np.nan)
    end = np.where(done, end, np.nan)
    status = np.full(n, STATUS_UNFINISHED, np.int8)
    status[done] = STATUS_COMPLETED
    status[done & killed] = STATUS_KILLED
    status[cluster < 0] = STATUS_REJECTED
    # warm-up: the first W completions, and jobs submitted before the warm-up time
    warmup = jobs.submit < run.warmup.time
    t_warm = run.warmup.time
    w = run.warmup.completions
    if w and done.sum() >= w:
        ends = np.where(done, end, np.inf)
        t_w = _kth_smallest(ends, w)
        # the first w completions; among jobs ending together at t_w, the earliest submitted
        before = ends < t_w
        warmup |= before
        warmup[np.flatnonzero(ends == t_w)[:w - int(before.sum())]] = True
        t_warm = max(t_warm, t_w)
    wait = start - jobs.submit
    response = end - jobs.submit
    with np.errstate(divide="ignore", invalid="ignore"):
        slowdown = np.where(runtime > 0, response / runtime, np.nan)
        bounded = np.maximum(response / np.maximum(runtime, BOUNDED_SLOWDOWN_TAU), 1.0)
    cols = {
        "job_id": jobs.job_id, "replication": np.full(n, replication, np.int32), "stream": jobs.stream,
        "cluster": cluster.astype(np.int32), "submit": jobs.submit, "start": start, "end": end,
        "processors": jobs.processors, "runtime": runtime, "estimate": jobs.estimate, "wait": wait,
        "response": response, "slowdown": slowdown, "bounded_slowdown": bounded, "status": status,
        "warmup": warmup,
    }
    cols = {k: v[keep] for k, v in cols.items()}
    proc = proc[keep]
    held_until = held_until[keep]
    clusters = scenario.platform.clusters
    capacity = sum(c.processors for c in clusters)
    metrics = replication_metrics(cols, held_until, capacity, (t_warm, t_stop))
    per_cluster = cluster_utilisation(cols, held_until, np.asarray(scenario.platform.processors), (t_warm, t_stop))
    for spec, u in zip(clusters, per_cluster):
        metrics[f"utilisation.{spec.name}"] = float(u)
    series = segments = None
    if with_segments:
        series = time_series(cols, held_until, capacity, t_stop)
        for c, spec in enumerate(clusters):
            on_c = cols["cluster"] == c
            mine = {k: v[on_c] for k, v in cols.items()}
            series[f"utilisation.{spec.name}"] = time_series(mine, held_until[on_c], spec.processors,
                                                             t_stop)["utilisation"]
        segments = build_segments(scenario, cols, held_until, proc)
    return ReplicationOutcome(cols, segments, metrics, series, notes)


def _kth_smallest(x: np.ndarray, k: int) -> float:
    """The k-th smallest value (k from 1), without sorting everything."""
    return float(np.partition(x, k - 1)[k - 1])


def build_segments(scenario: Scenario, cols: dict[str, np.ndarray], held_until: np.ndarray,
                   proc: np.ndarray) -> dict[str, np.ndarray]:
    parts = []
    for c, spec in enumerate(scenario.platform.clusters):
        idx = np.flatnonzero((cols["cluster"] == c) & ~np.isnan(cols["start"]))
        if not len(idx):
            continue
        if (proc[idx] >= 0).all():  # the scheduler pinned jobs to processors (LWR)
            job, first, count = np.arange(len(idx)), proc[idx], np.ones(len(idx), np.int64)
        else:
            job, first, count = assign_processors(cols["start"][idx], held_until[idx],
                                                  cols["processors"][idx], spec.processors)
        rows = idx[job]
        parts.append({"cluster": np.full(len(rows), c, np.int32), "first_processor": first.astype(np.int32),
                      "processors": count.astype(np.int32), "t0": cols["start"][rows], "t1": held_until[rows],
                      "job": rows.astype(np.int64), "component": np.zeros(len(rows), np.int16),
                      "kind": np.full(len(rows), KIND_RUN, np.int8)})
    if not parts:
        return {c: np.zeros(0) for c in SEGMENT_COLUMNS}
    seg = {k: np.concatenate([p[k] for p in parts]) for k in SEGMENT_COLUMNS}
    order = np.lexsort((seg["first_processor"], seg["cluster"], seg["t0"]))
    return {k: v[order] for k, v in seg.items()}


def _prepare(scenario: Scenario, replication: int, counts: list[int] | None):
    rngs = _rngs(scenario, replication)
    horizon = scenario.run.stop.horizon
    jobs, notes = build_workload(scenario, rngs[:-1], horizon, counts)
    cluster = _route(jobs, scenario, rngs[-1])
    rejected = int((cluster < 0).sum())
    if rejected:
        notes.append(f"replication {replication}: {rejected} jobs larger than their cluster were rejected")
    speed = np.array([c.speed for c in scenario.platform.clusters] + [1.0])[cluster]
    runtime = jobs.runtime / speed
    estimate = jobs.estimate / speed
    killed = np.zeros(len(jobs), bool)
    if scenario.run.enforce_walltime:
        killed = runtime > estimate
        runtime = np.minimum(runtime, estimate)
    return jobs, cluster, runtime, estimate, killed, notes


def _enough(scenario: Scenario, jobs: JobTable, outcome_end: np.ndarray) -> bool:
    """Did the generated synthetic jobs cover the run up to its last counted completion?"""
    if scenario.run.stop.completions is None or not any(
            isinstance(s, SyntheticStream) and s.count is None for s in scenario.workload.streams):
        return True
    ends = outcome_end[~np.isnan(outcome_end)]
    if len(ends) < scenario.run.stop.completions:
        return False
    t_n = _kth_smallest(ends, scenario.run.stop.completions)
    for i, s in enumerate(scenario.workload.streams):
        if isinstance(s, SyntheticStream) and s.count is None:
            mine = jobs.submit[jobs.stream == i]
            if not len(mine) or mine[-1] <= t_n:
                return False
    return True


def simulate_replication(scenario: Scenario, replication: int, with_segments: bool) -> ReplicationOutcome:
    if _stateful_policy(scenario) is not None:
        return simulate_stateful(scenario, [replication], with_segments)[0]
    completions = scenario.run.stop.completions
    margin = 1.2
    while True:
        counts = _synthetic_counts(scenario, completions, margin) if completions else None
        jobs, cluster, runtime, estimate, killed, notes = _prepare(scenario, replication, counts)
        horizon = scenario.run.stop.horizon if scenario.run.stop.horizon is not None else math.inf
        start, proc = _schedule_clusters(scenario, jobs, cluster, runtime, estimate, horizon)
        if _enough(scenario, jobs, start + runtime):
            break
        margin *= 2  # the queue grew more than expected: draw more jobs and run again
    return finish_replication(scenario, jobs, cluster, runtime, killed, start, proc, replication, notes,
                              with_segments)


def simulate_lwr_lockstep(scenario: Scenario, with_segments_for_first: bool) -> list[ReplicationOutcome]:
    """All R replications of a dispatch-only model (every cluster LWR) in one compiled call per cluster."""
    R = scenario.run.replications
    completions = scenario.run.stop.completions
    margin = 1.2
    while True:
        counts = _synthetic_counts(scenario, completions, margin) if completions else None
        with _threads() as pool:
            prepared = list(pool.map(lambda r: _prepare(scenario, r, counts), range(R)))
        horizon = scenario.run.stop.horizon if scenario.run.stop.horizon is not None else math.inf
        starts = [np.full(len(p[0]), np.nan) for p in prepared]
        procs = [np.full(len(p[0]), -1, np.int64) for p in prepared]
        for c, spec in enumerate(scenario.platform.clusters):
            idxs = [np.flatnonzero(p[1] == c) for p in prepared]
            width = max((len(i) for i in idxs), default=0)
            if width == 0:
                continue
            submit = np.full((R, width), np.inf)
            runtime = np.zeros((R, width))
            for r, (p, idx) in enumerate(zip(prepared, idxs)):
                submit[r, :len(idx)] = p[0].submit[idx]
                runtime[r, :len(idx)] = p[2][idx]
            start = np.full((R, width), np.nan)
            proc = np.full((R, width), -1, np.int64)
            lwr_replications(submit, runtime, spec.processors, horizon, start, proc)
            for r, idx in enumerate(idxs):
                starts[r][idx] = start[r, :len(idx)]
                procs[r][idx] = proc[r, :len(idx)]
        if all(_enough(scenario, p[0], s + p[2]) for p, s in zip(prepared, starts)):
            break
        margin *= 2
    with _threads() as pool:
        return list(pool.map(
            lambda r: finish_replication(scenario, prepared[r][0], prepared[r][1], prepared[r][2], prepared[r][4],
                                         starts[r], procs[r], r, prepared[r][5], with_segments_for_first and r == 0),
            range(R)))


def _threads() -> ThreadPoolExecutor:
    """Threads for per-replication numpy work (it releases the GIL); each replication has
    its own random streams, so results do not depend on the order threads run in."""
    return ThreadPoolExecutor(max_workers=os.cpu_count() or 1)


def _stateful_policy(scenario: Scenario):
    """The site-allocation implementation if it is stateful (Deferred, SB-Deferred), else None."""
    impl = SITE_ALLOCATION.get(scenario.grid.site_allocation.name).implementation
    return impl if getattr(impl, "stateful", False) else None


def simulate_stateful(scenario: Scenario, replications: list[int],
                      with_segments_for_first: bool) -> list[ReplicationOutcome]:
    """Replications of a model with a stateful site-allocation policy over LWR sites
    (validated: every cluster is LWR): grid scheduler and sites in one compiled pass
    (simengine.grid_lwr), the replications in lock step. ``submit`` stays the arrival at
    the grid, so wait and response include the time spent in the grid scheduler's queue."""
    impl = _stateful_policy(scenario)
    clusters = scenario.platform.clusters
    processors = np.asarray(scenario.platform.processors, np.int64)
    speed = np.array([c.speed for c in clusters], np.float64)
    args = impl.kernel_args(scenario.grid.site_allocation.params, processors)
    w = np.asarray(args["weights"], np.float64)
    cumw = np.cumsum(w / w.sum())
    horizon = scenario.run.stop.horizon
    completions = scenario.run.stop.completions
    R = len(replications)
    margin = 1.2
    while True:
        counts = _synthetic_counts(scenario, completions, margin) if completions else None
        prepared = []
        for r in replications:
            rngs = _rngs(scenario, r)
            jobs, notes = build_workload(scenario, rngs[:-1], horizon, counts)
            u = rngs[-1].random(len(jobs))
            fixed = jobs.cluster.astype(np.int64).copy()
            bad = jobs.processors > 1  # LWR sites run one-processor jobs only
            if bad.any():
                notes.append(f"replication {r}: {int(bad.sum())} jobs needing more than one processor "
                             "were rejected (LWR sites)")
            fixed[bad] = -2
            work = jobs.runtime.astype(np.float64)
            killed = np.zeros(len(jobs), bool)
            if scenario.run.enforce_walltime:
                killed = work > jobs.estimate
                work = np.minimum(work, jobs.estimate)
            prepared.append((jobs, fixed, work, killed, u, notes))
        width = max((len(p[0]) for p in prepared), default=0)
        submit = np.full((R, width), np.inf)
        work = np.zeros((R, width))
        fixed = np.full((R, width), -2, np.int64)
        u = np.zeros((R, width))
        for i, p in enumerate(prepared):
            n = len(p[0])
            submit[i, :n], work[i, :n], fixed[i, :n], u[i, :n] = p[0].submit, p[2], p[1], p[4]
        site = np.full((R, width), -1, np.int64)
        proc = np.full((R, width), -1, np.int64)
        dispatch = np.full((R, width), np.nan)
        start = np.full((R, width), np.nan)
        grid_lwr_replications(submit, work, fixed, args["policy"], float(args["interval"]), float(args["sdt"]),
                              u, cumw, processors, speed, site, proc, dispatch, start)
        done = []
        for i, p in enumerate(prepared):
            n = len(p[0])
            cluster = site[i, :n]
            runtime = p[2] / np.append(speed, 1.0)[cluster]
            done.append((cluster, runtime, start[i, :n], proc[i, :n]))
        if all(_enough(scenario, p[0], d[2] + d[1]) for p, d in zip(prepared, done)):
            break
        margin *= 2
    with _threads() as pool:
        return list(pool.map(
            lambda i: finish_replication(scenario, prepared[i][0], done[i][0], done[i][1], prepared[i][3],
                                         done[i][2], done[i][3], replications[i], prepared[i][5],
                                         with_segments_for_first and i == 0),
            range(R)))


def _replication_worker(args):
    scenario_json, base_dir, replication = args
    scenario = load_scenario(scenario_json, base_dir=base_dir)
    return simulate_replication(scenario, replication, with_segments=False)


def _lockstep_possible(scenario: Scenario) -> bool:
    return all(c.scheduler.name == "lwr" for c in scenario.platform.clusters)


def _estimated_jobs(scenario: Scenario) -> int:
    if scenario.run.stop.completions:
        return scenario.run.stop.completions * scenario.run.replications
    return 0  # unknown: stay in process


# ---- public API ----------------------------------------------------------------------------

def run(scenario: Any, on_progress: ProgressCallback | None = None, *, workers: int | None = None,
        base_dir: str | None = None) -> Result:
    """Simulate a scenario and return its :class:`~simengine.results.Result`.

    Parameters
    ----------
    scenario : Scenario, dict, str or path
        Anything :func:`simengine.load_scenario` accepts.
    on_progress : callable, optional
        Called with numbered chunks (dicts) as the run goes: ``kind`` "progress" with
        ``fraction`` done and ``sim_time``; ``kind`` "segments" with a block of Gantt
        segments of replication 0 (columns as lists); ``kind`` "metrics" at the end.
        ``seq`` numbers every chunk from 0 so a late client can ask for what it missed.
    workers : int, optional
        Processes for replications; default: the machine's cores when the run is big.
    """
    scenario = scenario if isinstance(scenario, Scenario) else load_scenario(scenario, base_dir=base_dir)
    R = scenario.run.replications
    emit = _Emitter(on_progress)
    # Traces are read (and kernels compiled) before the clock starts: engine_seconds is
    # the simulation's own time.
    for s in scenario.workload.streams:
        if isinstance(s, TraceStream):
            load_trace_stream(s, scenario, 0)
    warm_up_kernels()
    t0 = time.perf_counter()
    if _stateful_policy(scenario) is not None:
        outcomes = simulate_stateful(scenario, list(range(R)), True)
        emit.progress(1.0, 0.0)
    elif R > 1 and _lockstep_possible(scenario):
        outcomes = simulate_lwr_lockstep(scenario, True)
        emit.progress(1.0, 0.0)
    else:
        first = simulate_replication(scenario, 0, with_segments=True)
        outcomes = [first]
        # Replication 0's Gantt goes out now, so a watcher sees it while the others run.
        emit.segments(first.segments)
        emit.progress(1 / R, float(np.nanmax(first.jobs["end"], initial=0.0)))
        rest = list(range(1, R))
        n_workers = workers if workers is not None else (
            os.cpu_count() or 1 if _estimated_jobs(scenario) >= POOL_MIN_JOBS else 1)
        if rest and n_workers > 1:
            payload = [(scenario.model_dump_json(), _base_dir(scenario), r) for r in rest]
            pool = ProcessPoolExecutor(max_workers=min(n_workers, len(rest)))
            try:
                for k, out in enumerate(pool.map(_replication_worker, payload)):
                    outcomes.append(out)
                    emit.progress((k + 2) / R, 0.0)
            finally:
                # A callback that raises (a cancelled run) must not wait for the queued replications.
                pool.shutdown(wait=True, cancel_futures=True)
        else:
            for r in rest:
                outcomes.append(simulate_replication(scenario, r, with_segments=False))
                emit.progress((r + 1) / R, 0.0)
    result = _assemble(scenario, outcomes)
    result.engine_seconds = time.perf_counter() - t0
    if not emit.sent_segments:
        emit.segments(result.segments)
    emit.metrics(result)
    return result


def _base_dir(scenario: Scenario) -> str | None:
    for s in scenario.workload.streams:
        if isinstance(s, TraceStream):
            return os.path.dirname(os.path.abspath(s.resolved_path))
    return None


def _assemble(scenario: Scenario, outcomes: list[ReplicationOutcome]) -> Result:
    jobs = {k: np.concatenate([o.jobs[k] for o in outcomes]) for k in outcomes[0].jobs}
    names = sorted({k for o in outcomes for k in o.metrics})
    metrics = {k: Metric.from_values(k, [o.metrics.get(k, math.nan) for o in outcomes]) for k in names}
    notes = [n for o in outcomes for n in o.notes]
    first = outcomes[0]
    return Result(
        scenario=scenario.model_dump(mode="json"), scenario_hash=scenario_hash(scenario),
        seed=scenario.run.seed, engine_version=__version__,
        cluster_names=[c.name for c in scenario.platform.clusters],
        cluster_processors=[c.processors for c in scenario.platform.clusters],
        jobs=jobs, segments=first.segments, metrics=metrics, series=first.series,
        replications=len(outcomes), notes=list(dict.fromkeys(notes)))


class _Emitter:
    """Numbers every chunk sent to the progress callback."""

    def __init__(self, callback: ProgressCallback | None):
        self.callback, self.seq = callback, 0
        self.sent_segments = False

    def _send(self, chunk: dict[str, Any]) -> None:
        if self.callback is not None:
            chunk["seq"] = self.seq
            self.seq += 1
            self.callback(chunk)

    def progress(self, fraction: float, sim_time: float) -> None:
        self._send({"kind": "progress", "fraction": fraction, "sim_time": sim_time})

    def segments(self, seg: dict[str, np.ndarray]) -> None:
        self.sent_segments = True
        if self.callback is None:
            return
        n = len(seg["t0"])
        for a in range(0, n, CHUNK_SEGMENTS):
            self._send({"kind": "segments", "replication": 0,
                        "segments": {k: v[a:a + CHUNK_SEGMENTS].tolist() for k, v in seg.items()}})

    def metrics(self, result: Result) -> None:
        self._send({"kind": "metrics", "metrics": {k: m.as_dict() for k, m in result.metrics.items()},
                    "fraction": 1.0})


_WARM = False


def warm_up_kernels() -> None:
    """Compile (or load from cache) every kernel on a tiny input, outside the timed part."""
    global _WARM
    if _WARM:
        return
    one = np.array([0.0, 1.0])
    for name in LOCAL_SCHEDULERS.names():
        entry = LOCAL_SCHEDULERS.get(name)
        entry.implementation(one, one, one, np.array([1, 1]), 1, entry.params())
    assign_processors(one, one + 1, np.array([1, 1]), 1)
    lwr_replications(np.zeros((1, 2)), np.ones((1, 2)), 1, math.inf, np.full((1, 2), np.nan),
                     np.full((1, 2), -1, np.int64))
    grid_lwr_replications(np.zeros((1, 2)), np.ones((1, 2)), np.full((1, 2), -1, np.int64), 1, 1.0, 0.0,
                          np.zeros((1, 2)), np.ones(1), np.ones(1, np.int64), np.ones(1),
                          np.full((1, 2), -1, np.int64), np.full((1, 2), -1, np.int64),
                          np.full((1, 2), np.nan), np.full((1, 2), np.nan))
    _WARM = True
