"""Run a scenario: build each replication's workload, route jobs to clusters, let
each cluster's local scheduler place them, then turn the schedule into the output
contract (simengine.results).

Randomness: ``SeedSequence(run.seed).spawn(R)`` gives one child per replication;
each child spawns one stream per job stream plus one for site allocation. Same
scenario + seed + engine version => identical results.

Replications run (a) in a thread pool when the model is dispatch only (every cluster
LWR): each one compiled pass over its jobs, its rows written in place into columns
shared by all replications; (b) in a process pool when there are several and the run
is big enough to pay for starting processes; (c) one after the other otherwise.
"""
from __future__ import annotations

import ctypes
import math
import os
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from simengine.kernel_feed import feed_live
from simengine.streaming import ChunkEmitter, LiveGantt, ProgressCallback  # noqa: F401 - re-exported
from simengine.gantt import KIND_RUN, SEGMENT_COLUMNS, assign_processors
from simengine.generate import generate_stream
from simengine.grid.schema import is_coallocation
from simengine.grid_lwr import grid_lwr_kernel, lwr_sites
from simengine.registry import LOCAL_SCHEDULERS, SITE_ALLOCATION
from simengine.results import (Result, assemble_result, empty_job_rows, finish_rows, kth_smallest_end, time_series)
from simengine.scenario import GRID_TARGET, Scenario, SyntheticStream, TraceStream, load_scenario, trace_base_dir
from simengine.site_allocation import choose
from simengine.traces import read_trace
from simengine.workload import JobTable


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
    jobs: dict[str, np.ndarray] | None  # None: rows not kept (run.keep_jobs "first", replication > 0)
    segments: dict[str, np.ndarray] | None
    metrics: dict[str, float]
    series: dict[str, np.ndarray] | None
    notes: list[str]


@dataclass
class Simulated:
    """One replication's schedule before the stop rule: its jobs in submit order, the
    cluster (-1: rejected), run time, walltime kill flag, start (NaN: never started) and
    processor (LWR; else -1) of each."""

    jobs: JobTable
    cluster: np.ndarray
    runtime: np.ndarray
    killed: np.ndarray
    start: np.ndarray
    proc: np.ndarray
    notes: list[str]
    #: (k-th smallest end, started jobs, largest end) for k = run.stop.completions, once known
    kth_end: tuple[float, int, float] | None = None


def _rngs(scenario: Scenario, replication: int) -> list[np.random.Generator]:
    # SeedSequence(seed).spawn(R)[r], without building the other R - 1 children
    child = np.random.SeedSequence(scenario.run.seed, spawn_key=(replication,))
    return [np.random.default_rng(s) for s in child.spawn(len(scenario.workload.streams) + 1)]


def _route(jobs: JobTable, scenario: Scenario, rng: np.random.Generator) -> np.ndarray:
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


def _schedule_clusters(scenario: Scenario, jobs: JobTable, cluster: np.ndarray, runtime: np.ndarray,
                       estimate: np.ndarray, horizon: float, live: LiveGantt | None = None):
    """Start times (and LWR processors) of every job, cluster by cluster; with ``live``, all
    clusters advance together slice by slice and their Gantt streams (simengine.kernel_feed)."""
    n = len(jobs)
    start = np.full(n, np.nan)
    proc = np.full(n, -1, np.int64)
    steppers = []
    for c, spec in enumerate(scenario.platform.clusters):
        idx = np.flatnonzero(cluster == c)
        if not len(idx):
            continue
        entry = LOCAL_SCHEDULERS.get(spec.scheduler.name)
        params = entry.params.model_validate(spec.scheduler.params)
        steppers.append((c, idx, entry.implementation.steps(jobs.submit[idx], runtime[idx], estimate[idx],
                                                            jobs.processors[idx], spec.processors, params,
                                                            horizon=horizon)))
    if live is not None:
        feed_live(live, steppers, jobs, runtime, scenario.platform.processors, scenario.run.stop.completions,
                  horizon, _drawn_until(scenario, jobs))
    for c, idx, steps in steppers:
        out = steps.to_end()
        start[idx] = out.start
        if out.processor is not None:
            proc[idx] = out.processor
    return start, proc


def _drawn_until(scenario: Scenario, jobs: JobTable) -> float:
    """The last submission of the endless synthetic stream that ends first: what happens
    before it cannot change when more jobs are drawn (``until_enough``)."""
    if scenario.run.stop.completions is None:
        return math.inf
    last = math.inf
    for i in endless_streams(scenario):
        mine = np.flatnonzero(jobs.stream == i)
        last = min(last, float(jobs.submit[mine[-1]]) if len(mine) else -math.inf)
    return last


def _horizon(scenario: Scenario) -> float:
    return scenario.run.stop.horizon if scenario.run.stop.horizon is not None else math.inf


def finish_replication(scenario: Scenario, sim: Simulated, replication: int, with_segments: bool,
                       place: Callable[[int], dict[str, np.ndarray]] | None = None) -> ReplicationOutcome:
    """Stop and warm-up rules, statuses, job rows, metrics and (optionally) segments and time series.

    The rows go into ``place(n)`` (n rows of every job column) when given, else into new
    arrays; with ``run.keep_jobs: first`` only replication 0 keeps its rows.
    """
    run = scenario.run
    jobs, notes = sim.jobs, sim.notes
    n = len(jobs)
    horizon = _horizon(scenario)
    completions = run.stop.completions
    if sim.kth_end is not None and horizon == math.inf:
        t_n, finished, largest = sim.kth_end
    else:
        t_n, finished, largest = kth_smallest_end(sim.start, sim.runtime, horizon, completions or 0)
    t_stop = horizon
    keep = n
    if completions is not None:
        if finished >= completions:
            t_stop = min(t_stop, float(t_n))
        else:
            notes.append(f"replication {replication}: only {finished} of {completions} completions")
        keep = int(np.searchsorted(jobs.submit, t_stop, side="right"))  # jobs are sorted by submit
    if not math.isfinite(t_stop):
        t_stop = float(largest) if finished else 0.0
    cols = None
    if run.keep_jobs == "all" or replication == 0:
        cols = place(keep) if place is not None else empty_job_rows(keep)
    held = np.empty(keep) if with_segments else None
    clusters = scenario.platform.clusters
    metrics = finish_rows(jobs.submit, sim.runtime, sim.killed, sim.cluster, sim.start, jobs.job_id, jobs.stream,
                          jobs.processors, jobs.estimate, replication, keep, t_stop, run.warmup.time,
                          run.warmup.completions, [c.name for c in clusters], [c.processors for c in clusters],
                          cols, held)
    series = segments = None
    if with_segments:
        capacity = sum(c.processors for c in clusters)
        series = time_series(cols, held, capacity, t_stop)
        for c, spec in enumerate(clusters):
            on_c = cols["cluster"] == c
            mine = {k: cols[k][on_c] for k in ("submit", "start", "processors")}
            series[f"utilisation.{spec.name}"] = time_series(mine, held[on_c], spec.processors,
                                                             t_stop)["utilisation"]
        segments = build_segments(scenario, cols, held, sim.proc[:keep])
    return ReplicationOutcome(cols, segments, metrics, series, notes)


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
    runtime, estimate = jobs.runtime, jobs.estimate
    speeds = [c.speed for c in scenario.platform.clusters]
    if any(v != 1.0 for v in speeds):
        speed = np.array(speeds + [1.0])[cluster]
        runtime = runtime / speed
        estimate = estimate / speed
    killed = np.zeros(len(jobs), bool)
    if scenario.run.enforce_walltime:
        killed = runtime > estimate
        runtime = np.minimum(runtime, estimate)
    return jobs, cluster, runtime, estimate, killed, notes


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


def _enough(scenario: Scenario, sim: Simulated) -> bool:
    """Did the generated synthetic jobs cover the run up to its last counted completion?"""
    if scenario.run.stop.completions is None or not endless_streams(scenario):
        return True
    sim.kth_end = kth_smallest_end(sim.start, sim.runtime, math.inf, scenario.run.stop.completions)
    t_n, started, _ = sim.kth_end
    return streams_cover(scenario, sim.jobs, t_n, started)


def until_enough(scenario: Scenario, attempt: Callable[[list[int] | None], Any],
                 enough: Callable[[Any], bool]) -> Any:
    """``attempt(counts)`` with more synthetic jobs each time until ``enough(outcome)`` says they
    cover the run's stop (every model's replication loop; ``outcome.jobs`` is its JobTable).

    A synthetic stream draws its k-th job the same whatever the count, so a longer attempt
    only extends a shorter one, and the jobs the run keeps do not depend on the count."""
    completions = scenario.run.stop.completions
    margin = 1.2
    drawn = -1
    while True:
        counts = _synthetic_counts(scenario, completions, margin) if completions else None
        out = attempt(counts)
        if len(out.jobs) == drawn or enough(out):
            return out  # (same jobs as the last attempt: the horizon ends the streams first)
        drawn = len(out.jobs)
        margin *= 2  # the queue grew more than expected: draw more jobs and run again


def _until_enough(scenario: Scenario, attempt: Callable[[list[int] | None], Simulated]) -> Simulated:
    return until_enough(scenario, attempt, lambda sim: _enough(scenario, sim))


def simulate_replication(scenario: Scenario, replication: int, with_segments: bool,
                         live: LiveGantt | None = None) -> ReplicationOutcome:
    """One replication; ``live``: stream its Gantt while it runs (replication 0)."""
    if _stateful_policy(scenario) is not None:
        return simulate_stateful(scenario, [replication], with_segments)[0]

    def attempt(counts):
        jobs, cluster, runtime, estimate, killed, notes = _prepare(scenario, replication, counts)
        start, proc = _schedule_clusters(scenario, jobs, cluster, runtime, estimate, _horizon(scenario), live)
        return Simulated(jobs, cluster, runtime, killed, start, proc, notes)

    return finish_replication(scenario, _until_enough(scenario, attempt), replication, with_segments)


def _dispatch_one(scenario: Scenario, replication: int, counts: list[int] | None) -> Simulated:
    """One replication of a dispatch-only model (every cluster LWR, static site allocation):
    route the jobs, then all sites in one compiled pass."""
    jobs, cluster, runtime, _, killed, notes = _prepare(scenario, replication, counts)
    n = len(jobs)
    start = np.full(n, np.nan)
    proc = np.full(n, -1, np.int64)
    off = np.concatenate([[0], np.cumsum(scenario.platform.processors)]).astype(np.int64)
    lwr_sites(jobs.submit, runtime, cluster, off, _horizon(scenario), start, proc)
    return Simulated(jobs, cluster, runtime, killed, start, proc, notes)


def simulate_lwr_sites(scenario: Scenario, with_segments_for_first: bool, rows: SharedRows | None = None,
                       threads: int | None = None, on_first=None) -> list[ReplicationOutcome]:
    """All R replications of a dispatch-only model (every cluster LWR), each in one compiled
    pass over its jobs (:func:`simengine.grid_lwr.lwr_sites`), in a thread pool."""
    return _in_threads(scenario, list(range(scenario.run.replications)),
                       lambda r, counts: _dispatch_one(scenario, r, counts), with_segments_for_first, rows,
                       threads, on_first)


def _in_threads(scenario: Scenario, replications: list[int], simulate_one, with_segments_for_first: bool,
                rows: SharedRows | None, threads: int | None, on_first=None) -> list[ReplicationOutcome]:
    """Simulate and finish each replication in a thread pool (the kernels and numpy release
    the GIL; each replication has its own random streams, so results do not depend on the
    order threads run in). Each writes its job rows into ``rows`` (in replication order).
    ``threads``: at most this many (default: the machine's cores). ``on_first(outcome)`` is
    called in this thread as soon as the first replication is done (its Gantt goes out then)."""
    rows = rows if rows is not None else SharedRows(len(replications))

    def one(i: int) -> ReplicationOutcome:
        try:
            r = replications[i]
            sim = _until_enough(scenario, lambda counts: simulate_one(r, counts))
            return finish_replication(scenario, sim, r, with_segments_for_first and i == 0,
                                      lambda n: rows.take(i, n, len(sim.jobs)))
        except BaseException:
            rows.abandon()
            raise

    _keep_freed_memory()
    with ThreadPoolExecutor(max_workers=threads or os.cpu_count() or 1) as pool:
        outcomes = []
        for i, outcome in enumerate(pool.map(one, range(len(replications)))):
            if i == 0 and on_first is not None:
                on_first(outcome)
            outcomes.append(outcome)
        return outcomes


class SharedRows:
    """The job rows of R replications, written in place in replication order.

    Replication i asks for its n rows once it knows n (after its stop rule) and gets
    them right after replication i - 1's, as views of columns allocated once (large
    arrays, so no per-replication copies and no concatenation at the end). The columns
    are sized from the first replication's job count; rows that do not fit go into
    arrays of their own, joined at the end.
    """

    def __init__(self, replications: int):
        self.R = replications
        self.counts: list[int | None] = [None] * replications
        self.offsets: list[int] = [0]  # offsets[i]: first row of replication i, once known
        self.columns: dict[str, np.ndarray] | None = None
        self.spilled: dict[int, dict[str, np.ndarray]] = {}
        self.failed = False
        self._cond = threading.Condition()

    def take(self, i: int, n: int, size_hint: int) -> dict[str, np.ndarray]:
        with self._cond:
            if self.columns is None:
                per = size_hint + size_hint // 16 + 1024
                self.columns = empty_job_rows(per * self.R)
            self.counts[i] = n
            while len(self.offsets) <= self.R and self.counts[len(self.offsets) - 1] is not None:
                self.offsets.append(self.offsets[-1] + self.counts[len(self.offsets) - 1])
            self._cond.notify_all()
            self._cond.wait_for(lambda: self.failed or len(self.offsets) > i)
            if self.failed:
                raise RuntimeError("an earlier replication failed")
            a = self.offsets[i]
            capacity = len(self.columns["submit"])
            if a + n <= capacity:
                return {k: v[a:a + n] for k, v in self.columns.items()}
            self.spilled[i] = empty_job_rows(n)
            return self.spilled[i]

    def abandon(self) -> None:
        with self._cond:
            self.failed = True
            self._cond.notify_all()

    def result(self) -> dict[str, np.ndarray]:
        """Every replication's rows, in replication order."""
        total = self.offsets[-1]
        if not self.spilled:
            return {k: v[:total] for k, v in self.columns.items()}
        first = min(self.spilled)
        return {k: np.concatenate([v[:self.offsets[first]]] + [self.spilled[i][k] for i in sorted(self.spilled)])
                for k, v in self.columns.items()}


_MALLOC_TUNED = False


def _keep_freed_memory() -> None:
    """Let glibc's malloc keep the memory a replication frees for the next one.

    Each replication allocates and frees some ten arrays of about 1 MB (its jobs and
    schedule). By default glibc starts by serving such blocks with fresh ``mmap``s and
    trims the heap back to the system after each replication, so the next one pays a
    page fault for every 4 kB it touches again -- about half of a replication's time
    on a virtual machine. glibc's own heuristic raises both thresholds as a program
    frees larger blocks (up to 32 MiB and 64 MiB); this sets them there from the start,
    once per process (Linux with glibc only; elsewhere it does nothing).
    """
    global _MALLOC_TUNED
    if _MALLOC_TUNED:
        return
    _MALLOC_TUNED = True
    if not sys.platform.startswith("linux"):
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc
        return
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    mallopt(M_MMAP_THRESHOLD, 32 << 20)
    mallopt(M_TRIM_THRESHOLD, 64 << 20)


def _stateful_policy(scenario: Scenario):
    """The site-allocation implementation if it is stateful (Deferred, SB-Deferred), else None."""
    impl = SITE_ALLOCATION.get(scenario.grid.site_allocation.name).implementation
    return impl if getattr(impl, "stateful", False) else None


def simulate_stateful(scenario: Scenario, replications: list[int], with_segments_for_first: bool,
                      rows: SharedRows | None = None, threads: int | None = None,
                      on_first=None) -> list[ReplicationOutcome]:
    """Replications of a model with a stateful site-allocation policy over LWR sites
    (validated: every cluster is LWR): grid scheduler and sites in one compiled pass
    (simengine.grid_lwr) per replication, in a thread pool. ``submit`` stays the arrival
    at the grid, so wait and response include the time spent in the grid scheduler's queue."""
    impl = _stateful_policy(scenario)
    clusters = scenario.platform.clusters
    processors = np.asarray(scenario.platform.processors, np.int64)
    speed = np.array([c.speed for c in clusters], np.float64)
    args = impl.kernel_args(scenario.grid.site_allocation.params, processors)
    w = np.asarray(args["weights"], np.float64)
    cumw = np.cumsum(w / w.sum())
    horizon = scenario.run.stop.horizon

    def simulate_one(r: int, counts: list[int] | None) -> Simulated:
        rngs = _rngs(scenario, r)
        jobs, notes = build_workload(scenario, rngs[:-1], horizon, counts)
        n = len(jobs)
        u = rngs[-1].random(n)
        fixed = jobs.cluster.astype(np.int64)
        bad = jobs.processors > 1  # LWR sites run one-processor jobs only
        if bad.any():
            notes.append(f"replication {r}: {int(bad.sum())} jobs needing more than one processor "
                         "were rejected (LWR sites)")
        fixed[bad] = -2
        work = jobs.runtime.astype(np.float64)
        killed = np.zeros(n, bool)
        if scenario.run.enforce_walltime:
            killed = work > jobs.estimate
            work = np.minimum(work, jobs.estimate)
        site = np.full(n, -1, np.int64)
        proc = np.full(n, -1, np.int64)
        dispatch = np.full(n, np.nan)
        start = np.full(n, np.nan)
        grid_lwr_kernel(jobs.submit, work, fixed, args["policy"], float(args["interval"]), float(args["sdt"]),
                        u, cumw, processors, speed, site, proc, dispatch, start)
        runtime = work / np.append(speed, 1.0)[site]
        return Simulated(jobs, site, runtime, killed, start, proc, notes)

    return _in_threads(scenario, replications, simulate_one, with_segments_for_first, rows, threads, on_first)


def _replication_worker(args):
    scenario_json, base_dir, replication = args
    _keep_freed_memory()
    scenario = load_scenario(scenario_json, base_dir=base_dir)
    return simulate_replication(scenario, replication, with_segments=False)


def _dispatch_only(scenario: Scenario) -> bool:
    return all(c.scheduler.name == "lwr" for c in scenario.platform.clusters)


def _estimated_jobs(scenario: Scenario) -> int:
    if scenario.run.stop.completions:
        return scenario.run.stop.completions * scenario.run.replications
    return 0  # unknown: stay in process


# ---- the models beside the kernel path ------------------------------------------------------

@dataclass(frozen=True)
class Model:
    """A model family that simulates the scenarios it ``handles`` instead of the kernel path:
    ``run`` gives the Result, ``replication`` one replication's (job rows, segments)."""

    name: str
    handles: Callable[[Scenario], bool]
    run: Callable[..., Result]
    replication: Callable[[Scenario, int], tuple[dict, dict]]


def _cao():
    from simengine.cao.run import is_cao, replicate, run_cao

    return Model("cao", is_cao, run_cao, lambda s, r: replicate(s, r, True)[:2])


def _coallocation():
    from simengine.grid.koala_run import simulate_koala_replication
    from simengine.grid.run import run_grid, simulate_replication as grid_replication
    from simengine.grid.schema import is_koala

    def replication(s: Scenario, r: int) -> tuple[dict, dict]:
        out = (simulate_koala_replication if is_koala(s) else grid_replication)(s, r, True, True)
        return out.jobs, out.segments

    return Model("co-allocation", is_coallocation, run_grid, replication)


def _evolving():
    from simengine.evolving.run import is_evolving, replicate, run_evolving

    return Model("evolving", is_evolving, run_evolving, lambda s, r: replicate(s, r, True)[:2])


def _local():
    from simengine.local.run import needs_local, replicate, run_local

    return Model("event-driven cluster", needs_local, run_local, lambda s, r: replicate(s, r, True)[:2])


#: in the order they are asked whether they handle a scenario (the first that does simulates it);
#: each built on first use (their packages import this module)
_MODEL_FACTORIES = (_cao, _coallocation, _evolving, _local)
_MODELS: list[Model] = []


def model_of(scenario: Scenario) -> Model | None:
    """The model family that simulates ``scenario`` (None: the kernel path)."""
    if not _MODELS:
        _MODELS.extend(factory() for factory in _MODEL_FACTORIES)
    return next((m for m in _MODELS if m.handles(scenario)), None)


def replication_segments(scenario: Any, replication: int, *, base_dir: str | None = None) -> dict[str, np.ndarray]:
    """Replication ``replication``'s Gantt segments as the live stream's rows (the job named by
    its job id and stream). A Result keeps replication 0's; this simulates any replication again
    (same scenario, seed and engine version give the same replication)."""
    from simengine.streaming import live_rows

    scenario = scenario if isinstance(scenario, Scenario) else load_scenario(scenario, base_dir=base_dir)
    if not 0 <= replication < scenario.run.replications:
        raise ValueError(f"replication: must be within 0..{scenario.run.replications - 1}")
    model = model_of(scenario)
    if model is not None:
        jobs, seg = model.replication(scenario, replication)
    else:
        warm_up_kernels()
        out = simulate_replication(scenario, replication, with_segments=True)
        jobs, seg = out.jobs, out.segments
    columns = dict(seg)
    rows = np.asarray(seg["job"], np.int64)
    columns["job_id"] = jobs["job_id"][rows]
    columns["stream"] = jobs["stream"][rows]
    return live_rows(columns)


# ---- public API ----------------------------------------------------------------------------

def run(scenario: Any, on_progress: ProgressCallback | None = None, *, workers: int | None = None,
        base_dir: str | None = None) -> Result:
    """Simulate a scenario and return its :class:`~simengine.results.Result`.

    Parameters
    ----------
    scenario : Scenario, dict, str or path
        Anything :func:`simengine.load_scenario` accepts.
    on_progress : callable, optional
        Called with numbered chunks (dicts) as the run goes (docs/output.md, "Streaming"):
        ``kind`` "segments" while replication 0 is simulated, each with the Gantt segments that
        closed in a window of simulated time (typed numpy columns) and those in progress;
        ``kind`` "progress" with ``fraction`` done and ``sim_time``; ``kind`` "metrics" at the
        end. ``seq`` numbers every chunk from 0 so a late client can ask for what it missed.
    workers : int, optional
        Processes for replications (threads when every cluster runs LWR or the site
        allocation is stateful); default: the machine's cores when the run is big.
    """
    scenario = scenario if isinstance(scenario, Scenario) else load_scenario(scenario, base_dir=base_dir)
    model = model_of(scenario)
    if model is not None:
        return model.run(scenario, on_progress, workers=workers)
    R = scenario.run.replications
    emit = ChunkEmitter(on_progress)
    # Traces are read (and kernels compiled) before the clock starts: engine_seconds is
    # the simulation's own time.
    for s in scenario.workload.streams:
        if isinstance(s, TraceStream):
            load_trace_stream(s, scenario, 0)
    warm_up_kernels()
    _keep_freed_memory()
    t0 = time.perf_counter()
    jobs = None
    if _stateful_policy(scenario) is not None or (R > 1 and _dispatch_only(scenario)):
        rows = SharedRows(R if scenario.run.keep_jobs == "all" else 1)

        def first_done(outcome: ReplicationOutcome) -> None:  # its Gantt goes out while the rest run
            emit.segments(outcome.segments, outcome.jobs, R)

        if _stateful_policy(scenario) is not None:
            outcomes = simulate_stateful(scenario, list(range(R)), True, rows, workers, first_done)
        else:
            outcomes = simulate_lwr_sites(scenario, True, rows, workers, first_done)
        jobs = rows.result()
        emit.progress(1.0, 0.0)
    else:
        live = emit.live(R)
        first = simulate_replication(scenario, 0, with_segments=True, live=live)
        outcomes = [first]
        # The rest of replication 0's Gantt goes out now, so a watcher sees it while the others run.
        if live is not None:
            live.finish(first.segments, first.jobs)
        rest = list(range(1, R))
        n_workers = workers if workers is not None else (
            os.cpu_count() or 1 if _estimated_jobs(scenario) >= POOL_MIN_JOBS else 1)
        if rest and n_workers > 1:
            payload = [(scenario.model_dump_json(), trace_base_dir(scenario), r) for r in rest]
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
    result = _assemble(scenario, outcomes, jobs)
    result.engine_seconds = time.perf_counter() - t0
    if not emit.sent_segments:
        emit.segments(result.segments, result.jobs, R)
    emit.metrics(result.metrics)
    return result



def _assemble(scenario: Scenario, outcomes: list[ReplicationOutcome],
              jobs: dict[str, np.ndarray] | None = None) -> Result:
    """The Result of a run; ``jobs``: the rows kept when already gathered in place."""
    kept = [jobs] if jobs is not None else [o.jobs for o in outcomes if o.jobs is not None]
    first = outcomes[0]
    return assemble_result(scenario, kept, [o.metrics for o in outcomes], first.segments, first.series,
                           [n for o in outcomes for n in o.notes])


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
    i64 = np.array([0, 0], np.int64)
    lwr_sites(one, one, i64, np.array([0, 1], np.int64), math.inf, np.full(2, np.nan), i64.copy())
    grid_lwr_kernel(one, one, np.full(2, -1, np.int64), 1, 1.0, 0.0, np.zeros(2), np.ones(1), np.ones(1, np.int64),
                    np.ones(1), np.full(2, -1, np.int64), np.full(2, -1, np.int64), np.full(2, np.nan),
                    np.full(2, np.nan))
    choose(np.random.default_rng(0), np.ones(1), np.zeros(2, np.int32))
    kth_smallest_end(one, one, math.inf, 1)
    for out, held in ((empty_job_rows(2), np.empty(2)), (None, None)):
        finish_rows(one, one, np.zeros(2, bool), i64, one, i64, np.zeros(2, np.int32), np.ones(2, np.int64), one,
                    0, 2, 2.0, 0.0, 1, ["c"], [1], out, held)
    _WARM = True
