"""The default model: each cluster's local scheduler a compiled kernel (simengine.schedulers),
and its LWR-grid variant (every site LWR: routing and sites in one compiled pass per replication).

A replication: build and route its workload (simengine.workload_build), let each cluster's
scheduler place its jobs -- replication 0 slice by slice, all clusters together, so its Gantt
streams while it runs (simengine.kernel_feed) -- then apply the stop and warm-up rules and turn
the schedule into job rows, metrics, segments and series (:func:`finish_replication`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from simengine.driver import Model, Place, Replication
from simengine.gantt import KIND_RUN, SEGMENT_COLUMNS, assign_processors, ordered_segments
from simengine.grid_lwr import grid_lwr_kernel, lwr_sites
from simengine.kernel_feed import feed_live, feed_placed_live
from simengine.registry import LOCAL_SCHEDULERS, SITE_ALLOCATION
from simengine.results import (carried_columns, empty_job_rows, finish_rows, kth_smallest_end, measured_rows,
                               time_series, user_metrics)
from simengine.scenario import Scenario
from simengine.site_allocation import choose
from simengine.streaming import LiveGantt, run_in_slices
from simengine.workload import JobTable
from simengine.workload_build import (build_workload, drawn_until, early_stop_note, endless_streams, prepare_jobs,
                                      read_traces, replication_rngs, stop_horizon, streams_cover, until_enough,
                                      walltime_cut)


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


def schedule_clusters(scenario: Scenario, jobs: JobTable, cluster: np.ndarray, runtime: np.ndarray,
                       estimate: np.ndarray, horizon: float, live: LiveGantt | None = None, on_step=None):
    """Start times (and LWR processors) of every job, cluster by cluster; with ``live``, all
    clusters advance together slice by slice and their Gantt streams (simengine.kernel_feed);
    with ``on_step`` (and no ``live``), slice by slice too, ``on_step(fraction, time)`` between
    slices: the kernels hold the interpreter while they run, so a long replication in one go
    would keep its caller deaf (a cancel, a budget, a worker's heartbeat) until its end."""
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
                  horizon, drawn_until(scenario, jobs))
    elif on_step is not None and n:
        begin, end = float(jobs.submit[0]), min(float(jobs.submit[-1]), horizon)

        def advance(T: float) -> bool:
            for _, _, steps in steppers:
                steps.advance(T)
            return all(steps.done for _, _, steps in steppers)

        def report(T: float) -> bool:
            on_step((T - begin) / (end - begin) if end > begin else 0.0, min(T, end))
            return False

        run_in_slices(begin, end, advance, report)
    for c, idx, steps in steppers:
        out = steps.to_end()
        start[idx] = out.start
        if out.processor is not None:
            proc[idx] = out.processor
    return start, proc


def finish_replication(scenario: Scenario, sim: Simulated, replication: int, with_segments: bool,
                       place: Place | None = None) -> Replication:
    """Stop and warm-up rules, statuses, job rows, metrics and (optionally) segments and time series.

    The rows go into ``place(n, size_hint)`` (n rows of every job column) when given, else into new
    arrays; with ``run.keep_jobs: first`` only replication 0 keeps its rows.
    """
    run = scenario.run
    jobs, notes = sim.jobs, sim.notes
    n = len(jobs)
    horizon = stop_horizon(scenario)
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
        if (note := early_stop_note(scenario, keep, n)) is not None:
            notes.append(note)
    if not math.isfinite(t_stop):
        t_stop = float(largest) if finished else 0.0
    cols = None
    kept = run.keep_jobs == "all" or replication == 0 or with_segments
    carried = carried_columns(jobs.extra)
    users = carried.get("user")
    optional = tuple((k, v.dtype) for k, v in carried.items())
    if kept or users is not None:  # (the per-user metrics need every replication's rows)
        cols = place(keep, n, optional) if place is not None and kept else empty_job_rows(keep, optional)
    held = np.empty(keep) if with_segments else None
    clusters = scenario.platform.clusters
    batch_half: dict[str, float] = {}  # (used by a one-replication run: its utilisation's interval)
    metrics = finish_rows(jobs.submit, sim.runtime, sim.killed, sim.cluster, sim.start, jobs.job_id, jobs.stream,
                          jobs.processors, jobs.estimate, replication, keep, t_stop, run.warmup.time,
                          run.warmup.completions, [c.name for c in clusters], [c.processors for c in clusters],
                          cols, held, batch_half)
    if cols is not None:
        for k, v in carried.items():  # (rows are in the jobs' order)
            cols[k][:] = v[:keep]
    if users is not None:
        measured = measured_rows(cols)
        metrics.update(user_metrics(cols, measured))
        if not kept:
            cols = None
    series = segments = None
    if with_segments:
        series = time_series(cols, held, clusters, t_stop)
        segments = build_segments(scenario, cols, held, sim.proc[:keep])
    return Replication(metrics, cols, segments, series, notes, batch_half)


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
    return ordered_segments({k: np.concatenate([p[k] for p in parts]) for k in SEGMENT_COLUMNS})


def _enough(scenario: Scenario, sim: Simulated) -> bool:
    """Did the generated synthetic jobs cover the run up to its last counted completion?"""
    if scenario.run.stop.completions is None or not endless_streams(scenario):
        return True
    sim.kth_end = kth_smallest_end(sim.start, sim.runtime, math.inf, scenario.run.stop.completions)
    t_n, started, _ = sim.kth_end
    return streams_cover(scenario, sim.jobs, t_n, started)


def _until_enough(scenario: Scenario, attempt: Callable[[list[int] | None], Simulated]) -> Simulated:
    return until_enough(scenario, attempt, lambda sim: _enough(scenario, sim))


def _dispatch_one(scenario: Scenario, replication: int, counts: list[int] | None) -> Simulated:
    """One replication of a dispatch-only model (every cluster LWR, static site allocation):
    route the jobs, then all sites in one compiled pass."""
    jobs, cluster, runtime, _, killed, notes = prepare_jobs(scenario, replication, counts)
    n = len(jobs)
    start = np.full(n, np.nan)
    proc = np.full(n, -1, np.int64)
    off = np.concatenate([[0], np.cumsum(scenario.platform.processors)]).astype(np.int64)
    lwr_sites(jobs.submit, runtime, cluster, off, stop_horizon(scenario), start, proc)
    return Simulated(jobs, cluster, runtime, killed, start, proc, notes)


def stateful_policy(scenario: Scenario):
    """The site-allocation implementation if it is stateful (Deferred, SB-Deferred), else None."""
    entry = SITE_ALLOCATION.get(scenario.grid.site_allocation.name)
    return entry.implementation if "stateful" in entry.capabilities else None


def _stateful_one(scenario: Scenario, r: int, counts: list[int] | None, live: LiveGantt | None = None,
                  on_step=None) -> Simulated:
    """One replication of a model with a stateful site-allocation policy over LWR sites
    (validated: every cluster is LWR): grid scheduler and sites in one pass, the policy's
    ``stepper`` -- compiled (simengine.grid_lwr) or a Python policy's (simengine.site_state).
    ``submit`` stays the arrival at the grid, so wait and response include the time spent in
    the grid scheduler's queue. ``on_step``: a Python policy's pass runs in slices, reporting
    between them (it holds the interpreter; the compiled one is quick)."""
    impl = stateful_policy(scenario)
    clusters = scenario.platform.clusters
    processors = np.asarray(scenario.platform.processors, np.int64)
    speed = np.array([c.speed for c in clusters], np.float64)
    horizon = scenario.run.stop.horizon
    rngs = replication_rngs(scenario, r)
    jobs, notes = build_workload(scenario, rngs[:-1], horizon, counts)
    n = len(jobs)
    fixed = jobs.cluster.astype(np.int64)
    bad = jobs.processors > 1  # LWR sites run one-processor jobs only
    if bad.any():
        notes.append(f"replication {r}: {int(bad.sum())} jobs needing more than one processor "
                     "were rejected (LWR sites)")
    fixed[bad] = -2
    work, killed = walltime_cut(scenario, jobs.stream, jobs.runtime.astype(np.float64), jobs.estimate)
    site = np.full(n, -1, np.int64)
    proc = np.full(n, -1, np.int64)
    dispatch = np.full(n, np.nan)
    start = np.full(n, np.nan)
    advance = impl.stepper(scenario.grid.site_allocation.params, processors, speed, [c.name for c in clusters],
                           jobs, work, fixed, rngs[-1], site, proc, dispatch, start)

    if live is not None:
        feed_placed_live(live, advance, jobs, start, site, proc, lambda j: work[j] / speed[site[j]], fixed == -2,
                         scenario.platform.processors, scenario.run.stop.completions, stop_horizon(scenario),
                         drawn_until(scenario, jobs))
    elif on_step is not None and n and "compiled" not in SITE_ALLOCATION.get(scenario.grid.site_allocation.name
                                                                               ).capabilities:
        begin, end = float(jobs.submit[0]), min(float(jobs.submit[-1]), stop_horizon(scenario))

        def report(T: float) -> bool:
            on_step((T - begin) / (end - begin) if end > begin else 0.0, min(T, end))
            return False

        run_in_slices(begin, end, advance, report)
    advance(math.inf)
    runtime = work / np.append(speed, 1.0)[site]
    return Simulated(jobs, site, runtime, killed, start, proc, notes)


#: the local schedulers whose kernels are loaded ("": the shared kernels too)
_WARM: set[str] = set()


def warm_up_kernels(schedulers=None) -> None:
    """Compile (or load from numba's cache) the kernels on a tiny input, outside the timed part:
    those of the local schedulers named in ``schedulers`` (None: every one) and the shared ones.
    Loading a kernel from the cache costs tens of milliseconds, so a run loads only its own."""
    names = LOCAL_SCHEDULERS.names() if schedulers is None else sorted(set(schedulers))
    todo = [n for n in names if n not in _WARM and n in LOCAL_SCHEDULERS]
    one = np.array([0.0, 1.0])
    i64 = np.array([0, 0], np.int64)
    for name in todo:
        entry = LOCAL_SCHEDULERS.get(name)
        entry.implementation(one, one, one, np.array([1, 1]), 1, entry.params())
        if name == "lwr":  # the LWR grid's passes
            lwr_sites(one, one, i64, np.array([0, 1], np.int64), math.inf, np.full(2, np.nan), i64.copy())
            grid_lwr_kernel(one, one, np.full(2, -1, np.int64), 1, 1.0, 0.0, np.zeros(2), np.ones(1),
                            np.ones(1, np.int64), np.ones(1), np.full(2, -1, np.int64), np.full(2, -1, np.int64),
                            np.full(2, np.nan), np.full(2, np.nan))
        _WARM.add(name)
    if "" in _WARM:
        return
    assign_processors(one, one + 1, np.array([1, 1]), 1)
    choose(np.random.default_rng(0), np.ones(1), np.zeros(2, np.int32))
    kth_smallest_end(one, one, math.inf, 1)
    for out, held in ((empty_job_rows(2), np.empty(2)), (None, None)):
        finish_rows(one, one, np.zeros(2, bool), i64, one, i64, np.zeros(2, np.int32), np.ones(2, np.int64), one,
                    0, 2, 2.0, 0.0, 1, ["c"], [1], out, held)
    _WARM.add("")  # (the shared kernels)


# ---- the models ---------------------------------------------------------------------------------

def replicate(scenario: Scenario, replication: int, with_segments: bool, on_step=None,
              live: LiveGantt | None = None, place: Place | None = None) -> Replication:
    """One replication (simengine.driver.Replicate); ``live``: stream its Gantt while it runs."""
    def attempt(counts):
        jobs, cluster, runtime, estimate, killed, notes = prepare_jobs(scenario, replication, counts)
        start, proc = schedule_clusters(scenario, jobs, cluster, runtime, estimate, stop_horizon(scenario), live,
                                        on_step)
        return Simulated(jobs, cluster, runtime, killed, start, proc, notes)

    return finish_replication(scenario, _until_enough(scenario, attempt), replication, with_segments, place)


def replicate_lwr_grid(scenario: Scenario, replication: int, with_segments: bool, on_step=None, live=None,
                       place: Place | None = None) -> Replication:
    """One replication of an LWR grid (every site LWR) in one compiled pass; ``live``: its Gantt
    streams while it runs (a static site allocation's through the kernels: the same schedule)."""
    if stateful_policy(scenario) is None:
        if live is not None:
            return replicate(scenario, replication, with_segments, on_step, live, place)
        sim = _until_enough(scenario, lambda counts: _dispatch_one(scenario, replication, counts))
    else:
        sim = _until_enough(scenario, lambda counts: _stateful_one(scenario, replication, counts, live, on_step))
    return finish_replication(scenario, sim, replication, with_segments, place)


def is_lwr_grid(scenario: Scenario) -> bool:
    """A stateful site allocation (Deferred, SB-Deferred), or several replications of a grid whose
    every cluster is LWR (one replication goes through the kernels, which stream its Gantt)."""
    if stateful_policy(scenario) is not None:
        return True
    return scenario.run.replications > 1 and all(c.scheduler.name == "lwr" for c in scenario.platform.clusters)


def any_scenario(scenario: Scenario) -> bool:
    return True


def prepare(scenario: Scenario) -> None:
    """Traces are read (and kernels compiled) before the clock starts: engine_seconds is the
    simulation's own time."""
    read_traces(scenario)
    warm_up_kernels(c.scheduler.name for c in scenario.platform.clusters)


#: the kernels release the GIL, so the LWR grid's replications run in threads, writing their
#: rows in place; the kernel path's replications run in processes (its Python glue holds the GIL)
KERNEL = Model("kernel", any_scenario, replicate, prepare=prepare, warm_up=warm_up_kernels)
LWR_GRID = Model("lwr-grid", is_lwr_grid, replicate_lwr_grid, gil_free=True, rows_in_place=True, prepare=prepare,
                 warm_up=warm_up_kernels)
