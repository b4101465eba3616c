"""The replication loop of the models that simulate one replication at a time in this process
(reservations and preemption, Cao's system, evolving applications): each replication's rows,
segments, metrics and series in, replication 0's segments streamed, one Result out."""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

from simengine.results import Result, assemble_result
from simengine.streaming import ChunkEmitter, ProgressCallback

#: replicate(r, with_segments) -> (job rows, segments or None, metrics, series or None, notes)
Replicate = Callable[[int, bool], tuple[dict, dict | None, dict, dict | None, list]]


def run_replications(scenario, on_progress: ProgressCallback | None, replicate: Replicate) -> Result:
    """Run ``scenario.run.replications`` replications one after the other.

    Replication 0 is asked for its Gantt segments and time series; its segments are streamed
    as soon as it is done. Job rows are kept as ``run.keep_jobs`` says; metrics of every
    replication go into the Result's means and confidence intervals.
    """
    emit = ChunkEmitter(on_progress)
    R = scenario.run.replications
    t0 = time.perf_counter()
    kept, values, notes = [], [], []
    segments, series = None, None
    for r in range(R):
        cols, seg, metrics, ser, rep_notes = replicate(r, r == 0)
        if r == 0:
            segments, series = seg, ser
            emit.segments(seg, cols)
        if scenario.run.keep_jobs == "all" or r == 0:
            kept.append(cols)
        values.append(metrics)
        notes += rep_notes
        emit.progress((r + 1) / R, float(np.nanmax(cols["end"], initial=0.0)) if r == 0 else 0.0)
    result = assemble_result(scenario, kept, values, segments, series or {}, notes)
    result.engine_seconds = time.perf_counter() - t0
    emit.metrics(result.metrics)
    return result
