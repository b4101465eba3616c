"""Replication 0 of the kernel path, simulated in slices of simulated time so that its Gantt
streams while it runs (simengine.streaming.LiveGantt).

Every cluster's compiled scheduler (:class:`~simengine.schedulers.base.ClusterSteps`) is
advanced to the same time T, slice after slice (streaming.run_in_slices); after each slice the jobs that started before
T are known, their processors are handed out by the same
:class:`~simengine.gantt.ProcessorAssigner` the Result uses (so the rows are the Result's), the
segments that ended before T are reported closed and the ones still running open.

The frontier reported never passes a time after which the Result could still differ: the stop
time once the ``run.stop.completions``-th completion is known, the horizon, and, while more
synthetic jobs may have to be drawn, the last job drawn of each endless stream
(``runner.until_enough`` simulates again with more; the schedule before that time is the same).
"""
from __future__ import annotations

import math

import numpy as np

from simengine.gantt import EVENT_END, EVENT_START, EVENT_ZERO, KIND_RUN, ProcessorAssigner
from simengine.schedulers.base import ClusterSteps
from simengine.streaming import LiveGantt, concat_rows, empty_rows, run_in_slices, take_rows


class _Cluster:
    """One cluster's jobs while they are fed slice by slice."""

    def __init__(self, c: int, idx: np.ndarray, steps: ClusterSteps, submit: np.ndarray, runtime: np.ndarray,
                 size: np.ndarray, processors: int):
        self.c, self.idx, self.steps = c, idx, steps
        self.submit, self.runtime, self.size = submit, runtime, size
        self.end = np.full(len(idx), np.nan)
        self.pinned = steps.processor is not None
        self.assigner = None if self.pinned else ProcessorAssigner(size, processors)
        self.arrived = 0
        self.waiting = np.zeros(0, np.int64)  # arrived, not started (local indices)
        self.running = np.zeros(0, np.int64)  # started, end not handed to the assigner yet
        self.active = empty_rows()  # rows not reported closed yet (job_id holds the local index)

    def feed(self, T: float) -> np.ndarray:
        """Take in the jobs that started before T; returns their ends."""
        start = self.steps.start
        k = int(np.searchsorted(self.submit, T, side="left"))
        candidates = np.concatenate([self.waiting, np.arange(self.arrived, k)])
        self.arrived = k
        began = start[candidates] < T
        new = candidates[began]
        self.waiting = candidates[~began]
        self.end[new] = start[new] + self.runtime[new]
        if self.pinned:
            job, first, count = new, self.steps.processor[new], np.ones(len(new), np.int64)
        else:
            ending = self.running[self.end[self.running] < T]
            self.running = np.concatenate([self.running[self.end[self.running] >= T], new[self.end[new] >= T]])
            positive = new[self.end[new] > start[new]]
            ended = np.concatenate([ending, positive[self.end[positive] < T]])
            jobs = np.concatenate([ended, new])
            kinds = np.concatenate([np.full(len(ended), EVENT_END, np.int8),
                                    np.where(self.end[new] > start[new], EVENT_START, EVENT_ZERO).astype(np.int8)])
            times = np.concatenate([self.end[ended], start[new]])
            job, first, count = self.assigner.events(jobs, kinds, times)
        if len(job):
            n = len(job)
            self.active = concat_rows([self.active, {
                "cluster": np.full(n, self.c, np.int16), "first_processor": first.astype(np.int32),
                "processors": count.astype(np.int32), "t0": start[job], "t1": self.end[job],
                "kind": np.full(n, KIND_RUN, np.int8), "component": np.zeros(n, np.int16),
                "job_id": job.astype(np.int64), "stream": np.zeros(n, np.int32)}])
        return self.end[new]

    def report(self, F: float, job_id: np.ndarray, stream: np.ndarray):
        """(rows that ended before F, rows open at F), named by job; closed ones are dropped."""
        closed = self.active["t1"] < F
        out = take_rows(self.active, closed)
        self.active = take_rows(self.active, ~closed)
        opened = take_rows(self.active, self.active["t0"] < F)
        for rows in (out, opened):
            g = self.idx[rows["job_id"]]
            rows["job_id"], rows["stream"] = job_id[g], stream[g].astype(np.int32)
        return out, opened


def feed_live(live: LiveGantt, steppers: list[tuple[int, np.ndarray, ClusterSteps]], jobs, runtime: np.ndarray,
              processors: list[int], completions: int | None, horizon: float, drawn_until: float) -> None:
    """Advance every cluster's scheduler to the end, slice by slice, telling ``live`` what each
    slice showed. ``drawn_until``: the frontier cap while more jobs may be drawn (module docstring)."""
    live.restart()
    n = len(jobs)
    if not n:
        return
    submit = jobs.submit
    clusters = [_Cluster(c, idx, steps, submit[idx], runtime[idx], jobs.processors[idx].astype(np.int64),
                         processors[c]) for c, idx, steps in steppers]
    begin, expected = _expect(live, submit, completions, horizon)
    stop = StopTime(completions, horizon)

    def advance(T: float) -> bool:
        for cl in clusters:
            cl.steps.advance(T)
        return all(cl.steps.done for cl in clusters)

    def report(T: float) -> bool:
        stop.add_ends(np.concatenate([cl.feed(T) for cl in clusters]), T)
        F = min(T, stop.time, drawn_until)
        if all(cl.steps.done for cl in clusters):  # the simulation is over: its time is its last end
            F = min(F, max(float(np.nanmax(cl.end, initial=-math.inf)) for cl in clusters))
        closed, opened = zip(*(cl.report(F, jobs.job_id, jobs.stream) for cl in clusters))
        queued = [0] * len(processors)
        for cl in clusters:
            queued[cl.c] = len(cl.waiting)
        live.update(F, concat_rows(list(closed)), concat_rows(list(opened)), queued)
        return T >= stop.time or T >= drawn_until

    run_in_slices(begin, expected, advance, report)
    for cl in clusters:
        cl.steps.to_end()


def feed_placed_live(live: LiveGantt, advance, jobs, start: np.ndarray, site: np.ndarray, proc: np.ndarray,
                     runtime_of, never: np.ndarray, processors: list[int], completions: int | None, horizon: float,
                     drawn_until: float) -> None:
    """As :func:`feed_live` for a model that places each job on one processor of a site when it
    arrives or at its batch (simengine.grid_lwr's stateful site allocation): ``advance(T)``
    takes every arrival and batch before T, after which every job starting before T has its
    ``start``, ``site`` and ``proc``; ``runtime_of(jobs)`` their run times; ``never``: jobs
    that are never placed."""
    live.restart()
    n = len(jobs)
    if not n:
        return
    submit = jobs.submit
    begin, expected = _expect(live, submit, completions, horizon)
    stop = StopTime(completions, horizon)
    state = {"arrived": 0, "waiting": np.zeros(0, np.int64), "active": empty_rows(), "done": False, "last": -math.inf}

    def step(T: float) -> bool:
        state["done"] = advance(T)
        return state["done"]

    def report(T: float) -> bool:
        k = int(np.searchsorted(submit, T, side="left"))
        arrived = np.arange(state["arrived"], k)
        state["arrived"] = k
        candidates = np.concatenate([state["waiting"], arrived[~never[arrived]]])
        began = start[candidates] < T
        new = candidates[began]
        state["waiting"] = candidates[~began]
        end = start[new] + runtime_of(new)
        stop.add_ends(end, T)
        state["last"] = max(state["last"], float(end.max(initial=-math.inf)))
        m = len(new)
        state["active"] = concat_rows([state["active"], {
            "cluster": site[new].astype(np.int16), "first_processor": proc[new].astype(np.int32),
            "processors": np.ones(m, np.int32), "t0": start[new], "t1": end, "kind": np.full(m, KIND_RUN, np.int8),
            "component": np.zeros(m, np.int16), "job_id": jobs.job_id[new], "stream": jobs.stream[new].astype(np.int32)}])
        F = min(T, stop.time, drawn_until)
        if state["done"] and not len(state["waiting"]):  # the simulation is over: its time is its last end
            F = min(F, state["last"])
        active = state["active"]
        closed = active["t1"] < F
        state["active"] = take_rows(active, ~closed)
        opened = take_rows(state["active"], state["active"]["t0"] < F)
        placed = state["waiting"][site[state["waiting"]] >= 0]
        live.update(F, take_rows(active, closed), opened, np.bincount(site[placed], minlength=len(processors)).tolist())
        return T >= stop.time or T >= drawn_until

    run_in_slices(begin, expected, step, report)
    advance(math.inf)


def _expect(live: LiveGantt, submit: np.ndarray, completions: int | None, horizon: float) -> tuple[float, float]:
    """The replication's span for its progress: from the first submission to the submission of
    the ``completions``-th job (or the last), the horizon at the latest."""
    begin = float(submit[0])
    expected = float(submit[min(completions, len(submit)) - 1]) if completions else float(submit[-1])
    if math.isfinite(horizon):
        expected = min(expected, horizon)
    live.expect(begin, expected)
    return begin, expected


class StopTime:
    """When a run stopped by ``completions`` (or its horizon) stops, learnt slice by slice: after
    the ends before T are all known (``add_ends``), either the completions-th end is among them
    (``time``) or it is at or after T."""

    def __init__(self, completions: int | None, horizon: float):
        self.completions, self.time = completions, horizon
        self.done = 0
        self.pending = np.zeros(0)

    def add_ends(self, ends: np.ndarray, T: float) -> None:
        if not self.completions or self.time < math.inf and self.done >= self.completions:
            return
        self.pending = np.concatenate([self.pending, ends])
        before = self.pending[self.pending < T]
        if self.done + len(before) >= self.completions and self.done < self.completions:
            self.time = min(self.time, float(np.sort(before)[self.completions - self.done - 1]))
        self.done += len(before)
        self.pending = self.pending[self.pending >= T]
