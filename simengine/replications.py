"""The replication loop of the models that simulate one replication at a time in Python
(reservations and preemption, Cao's system, evolving applications): each replication's rows,
segments, metrics and series in, replication 0's segments streamed, one Result out.

Replication 0 always runs in this process (its Gantt is streamed as soon as it is done, and a
model that reports steps streams progress while it runs). The
others run in a process pool when that pays: ``workers`` > 1 was asked for, or (``workers``
None) replication 0 took long enough that the pool's start-up is small beside the rest. Every
replication draws from its own SeedSequence child, so the Result does not depend on where or
in which order the replications ran.
"""
from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Callable


from simengine.results import Result, assemble_result
from simengine.scenario import Scenario, load_scenario, trace_base_dir
from simengine.streaming import ChunkEmitter, LiveGantt, ProgressCallback

#: replicate(scenario, r, with_segments, on_step, live) -> (job rows, segments or None, metrics,
#: series or None, notes); a module-level function, so that a pool worker can be handed it.
#: ``on_step`` (None, or a callable taking the fraction of the replication done and its simulated
#: time) is for models whose replication takes long enough to report on the way; ``live`` (None,
#: or replication 0's streaming.LiveGantt) for models that stream their Gantt while they simulate
#: (a model that does not is streamed at the end of the replication); others ignore them.
Replicate = Callable[[Scenario, int, bool, "Callable[[float, float], None] | None", "LiveGantt | None"],
                     tuple[dict, dict | None, dict, dict | None, list]]

#: least wall-clock seconds between two progress reports from inside replication 0
STEP_REPORT_SECONDS = 0.5

#: with ``workers`` None, the pool is used when the remaining replications would take longer
#: than this in this process (replication 0's time x their number); a pool costs ~1 s to start.
POOL_MIN_SECONDS = 4.0


def run_replications(scenario: Scenario, on_progress: ProgressCallback | None, replicate: Replicate,
                     workers: int | None = None) -> Result:
    """Run ``scenario.run.replications`` replications of ``replicate`` and assemble the Result.

    Replication 0 is asked for its Gantt segments and time series; its segments are streamed
    as soon as it is done. Job rows are kept as ``run.keep_jobs`` says; metrics of every
    replication go into the Result's means and confidence intervals. ``workers``: processes
    for replications 1..R-1 (1: all in this process; None: decided from replication 0's time).
    """
    emit = ChunkEmitter(on_progress)
    R = scenario.run.replications
    t0 = time.perf_counter()
    live = emit.live(R)
    cols, segments, metrics, series, notes = replicate(scenario, 0, True, _step_reporter(emit, R), live)
    if live is not None:
        live.finish(segments, cols)
    kept, values, notes = [cols], [metrics], list(notes)
    first_seconds = time.perf_counter() - t0

    def add(r: int, out) -> None:
        cols, _, metrics, _, rep_notes = out
        if scenario.run.keep_jobs == "all":
            kept.append(cols)
        values.append(metrics)
        notes.extend(rep_notes)
        emit.progress((r + 1) / R, 0.0)

    rest = list(range(1, R))
    n_workers = _pool_size(workers, len(rest), first_seconds)
    if n_workers > 1:
        payload = [(replicate, scenario.model_dump_json(), trace_base_dir(scenario), r) for r in rest]
        pool = ProcessPoolExecutor(max_workers=n_workers)
        try:
            for r, out in zip(rest, pool.map(_replicate_in_worker, payload)):
                add(r, out)
        finally:
            # A callback that raises (a cancelled run) must not wait for the queued replications.
            pool.shutdown(wait=True, cancel_futures=True)
    else:
        for r in rest:
            add(r, replicate(scenario, r, False, None, None))
    result = assemble_result(scenario, kept, values, segments, series or {}, notes)
    result.engine_seconds = time.perf_counter() - t0
    emit.metrics(result.metrics)
    return result


def _step_reporter(emit: ChunkEmitter, R: int) -> Callable[[float, float], None]:
    """Progress from inside replication 0, at most every STEP_REPORT_SECONDS and never backwards
    (a replication that draws more jobs and runs again starts its fraction over; clusters
    simulated one after another each start their clock over: the furthest time is reported)."""
    last = {"time": time.perf_counter(), "fraction": 0.0, "sim_time": 0.0}

    def on_step(fraction: float, sim_time: float) -> None:
        now = time.perf_counter()
        fraction = min(max(fraction, 0.0), 0.99) / R  # the end of the replication reports 1/R
        last["sim_time"] = max(last["sim_time"], float(sim_time))
        if now - last["time"] >= STEP_REPORT_SECONDS and fraction > last["fraction"]:
            last["time"], last["fraction"] = now, fraction
            emit.progress(fraction, last["sim_time"])

    return on_step


def _pool_size(workers: int | None, remaining: int, first_seconds: float) -> int:
    if remaining < 2:  # one replication left: a pool cannot overlap anything
        return 1
    if workers is None:
        if first_seconds * remaining < POOL_MIN_SECONDS:
            return 1
        workers = os.cpu_count() or 1
    return max(1, min(workers, remaining))


def _replicate_in_worker(args):
    replicate, scenario_json, base_dir, r = args
    return replicate(load_scenario(scenario_json, base_dir=base_dir), r, False, None, None)
