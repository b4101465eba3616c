"""The numbered chunks a run streams to its ``on_progress`` callback (docs/output.md, Streaming).

One emitter for every simulation path, so the chunk format is written once, and one live
Gantt (:class:`LiveGantt`) that every model feeds while its replication 0 runs:

- ``update(frontier, closed, open)``: the model has simulated everything before ``frontier``;
  ``closed`` are segments that ended before it (new since the last update), ``open`` every
  segment in progress at it (a running job, a held claim, a reservation window). Rows a model
  reports closed must be rows of its final Result (the model caps the frontier where later
  events could still change them: the stop time, the last job drawn).
- ``finish(segments, jobs)``: the Result's segments; the rows not streamed yet go out.

The live Gantt sends a ``segments`` chunk at least every ``LIVE_INTERVAL`` seconds of wall time
while updates come (the first as soon as there is something to show). Each chunk covers a
contiguous window ``[w0, w1)`` of simulated time: its ``segments`` are the rows that closed in
it (sorted by ``t1``) -- and any row a model could only name after its window had gone out
(Cao's reservation frame of a task that starts after its latest finish) -- and its ``open`` rows
the snapshot at ``w1``. Every row ends before its chunk's ``w1``; the rows of all chunks together
are exactly the Result's segments.
"""
from __future__ import annotations

import math
import time
from typing import Any, Callable

import numpy as np

#: most segment rows in one chunk
CHUNK_ROWS = 65536
#: wall-clock seconds between two live chunks (docs promise at most 0.5 s)
LIVE_INTERVAL = 0.4
#: wall-clock seconds a slice of simulated time should take (run_in_slices)
SLICE_SECONDS = 0.1
#: the first slice is this share of the expected span (then slices grow geometrically)
FIRST_SLICE = 1 / 4096

#: the columns of a streamed segment row: MODELS.md §8's segment, the job named by its
#: ``job_id`` within its ``stream`` (as jobs.csv names it)
LIVE_DTYPES = {"cluster": np.int16, "first_processor": np.int32, "processors": np.int32, "t0": np.float64,
               "t1": np.float64, "kind": np.int8, "component": np.int16, "job_id": np.int64, "stream": np.int32}
LIVE_COLUMNS = tuple(LIVE_DTYPES)

#: called with every numbered chunk; raising stops the run. It may also have a ``check()``
#: (raise to stop, nothing else) that the driver calls between chunks (ChunkEmitter.poll), and
#: ``wants_segments = False`` when it only follows progress (no Gantt is built for it)
ProgressCallback = Callable[[dict[str, Any]], None]


def live_rows(columns: dict[str, Any], n: int | None = None) -> dict[str, np.ndarray]:
    """``columns`` as the live row columns (dtypes of LIVE_DTYPES; missing ``component``: 0)."""
    if n is None:
        n = len(columns["t0"])
    out = {}
    for name, dtype in LIVE_DTYPES.items():
        values = columns.get(name)
        out[name] = np.zeros(n, dtype) if values is None else np.asarray(values).astype(dtype, copy=False)
    return out


def empty_rows() -> dict[str, np.ndarray]:
    return {name: np.zeros(0, dtype) for name, dtype in LIVE_DTYPES.items()}


def concat_rows(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    if not parts:
        return empty_rows()
    if len(parts) == 1:
        return parts[0]
    return {name: np.concatenate([p[name] for p in parts]) for name in LIVE_COLUMNS}


def take_rows(rows: dict[str, np.ndarray], which) -> dict[str, np.ndarray]:
    return {name: values[which] for name, values in rows.items()}


class ChunkEmitter:
    """Numbers every chunk sent to the progress callback (``seq`` from 0, no gaps)."""

    def __init__(self, callback: ProgressCallback | None):
        self.callback, self.seq = callback, 0
        self.sent_segments = False
        #: someone draws the Gantt (a progress bar does not)
        self.wants_segments = callback is not None and getattr(callback, "wants_segments", True)

    def send(self, chunk: dict[str, Any]) -> None:
        if self.callback is not None:
            chunk["seq"] = self.seq
            self.seq += 1
            self.callback(chunk)

    def progress(self, fraction: float, sim_time: float) -> None:
        self.send({"kind": "progress", "fraction": fraction, "sim_time": sim_time})

    def poll(self) -> None:
        """Between chunks: the callback's ``check()``, when it has one, raises to stop the run."""
        check = getattr(self.callback, "check", None)
        if check is not None:
            check()

    def live(self, replications: int = 1) -> LiveGantt | None:
        """The live Gantt of replication 0 (None when nobody listens: models skip the work)."""
        if not self.wants_segments:
            return None
        return LiveGantt(self, replications)

    def segments(self, seg: dict[str, np.ndarray], jobs: dict[str, np.ndarray] | None = None,
                 replications: int = 1) -> None:
        """Replication 0's segments at once (models without a live feed)."""
        self.sent_segments = True
        if self.wants_segments:
            LiveGantt(self, replications).finish(seg, jobs)

    def metrics(self, metrics: dict[str, Any]) -> None:
        self.send({"kind": "metrics", "metrics": {k: m.as_dict() for k, m in metrics.items()}, "fraction": 1.0})


class LiveGantt:
    """Replication 0's Gantt while it is simulated (see the module docstring)."""

    def __init__(self, emit: ChunkEmitter, replications: int = 1, interval: float | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.emit, self.R, self.clock = emit, max(1, replications), clock
        self.interval = LIVE_INTERVAL if interval is None else interval
        self.sent_until = -math.inf  # closed rows with t1 before this have been sent
        self.replay_until = -math.inf  # a repeated attempt's rows before this were sent by an earlier one
        self.frontier = -math.inf
        self.pending: list[dict[str, np.ndarray]] = []
        self.open = empty_rows()
        self.queued: list[int] | None = None
        self.last_sent: float | None = None
        self.begin, self.expected_end, self.done = 0.0, math.nan, 0.0
        self.finished = False

    def expect(self, begin: float, end: float, done: float = 0.0) -> None:
        """The simulated times the replication starts and is expected to end at (for its
        progress fraction, which is measured in simulated time); ``done``: the share of the
        replication's work finished before ``begin`` (an offline plan), where the fraction starts."""
        self.begin, self.expected_end, self.done = float(begin), float(end), float(done)

    def restart(self) -> None:
        """The model simulates the replication again from its start (with more jobs drawn):
        what it reported and was not sent yet is dropped; what was sent stays."""
        self.pending = []
        self.open = empty_rows()
        self.frontier = self.sent_until
        self.replay_until = self.sent_until

    def update(self, frontier: float, closed: dict[str, np.ndarray] | None = None,
               open_rows: dict[str, np.ndarray] | None = None, queued: list[int] | None = None) -> None:
        """Everything before ``frontier`` is simulated (see the module docstring); ``queued``:
        jobs waiting in each cluster's queue at it."""
        # closed rows count even when the frontier stands still (a late row names a window
        # already past): they go out with the next chunk
        if closed is not None and len(closed["t0"]):
            keep = closed["t1"] >= self.replay_until  # a repeated attempt reports sent rows again
            if keep.any():
                self.pending.append(closed if keep.all() else take_rows(closed, keep))
        if frontier <= self.frontier:
            return
        self.frontier = float(frontier)
        if open_rows is not None:
            self.open = open_rows
        if queued is not None:
            self.queued = [int(q) for q in queued]
        now = self.clock()
        if self.last_sent is None or now - self.last_sent >= self.interval:
            self._send(self.frontier, concat_rows(self.pending), final=False)
            self.pending = []

    def fraction(self, at: float) -> float:
        span = self.expected_end - self.begin
        simulated = min(max((at - self.begin) / span if span > 0 else 0.0, 0.0), 1.0)
        return min(self.done + (1.0 - self.done) * simulated, 0.99) / self.R

    def finish(self, seg: dict[str, np.ndarray] | None, jobs: dict[str, np.ndarray] | None = None) -> None:
        """The Result's segments (``job`` a row of ``jobs``): the rows not sent yet go out,
        the last chunk marked ``final``."""
        if self.finished:
            return
        self.finished = True
        self.emit.sent_segments = True
        n = len(seg["t0"]) if seg else 0
        columns = dict(seg) if n else {}
        if n:
            rows = np.asarray(seg["job"], np.int64)
            if jobs is not None:
                columns["job_id"] = jobs["job_id"][rows]
                columns["stream"] = jobs["stream"][rows]
        rows = live_rows(columns, n) if n else empty_rows()
        rows = take_rows(rows, rows["t1"] >= self.sent_until)  # (a row sent late ends before it too)
        # rows reported late and not sent yet end before sent_until: the Result's rows after it
        # do not hold them
        late = [take_rows(p, p["t1"] < self.sent_until) for p in self.pending]
        rows = concat_rows([*late, rows])
        self.pending = []
        end = max(self.frontier, float(rows["t1"].max()) if len(rows["t1"]) else -math.inf)
        end = np.nextafter(end, math.inf) if math.isfinite(end) else self.begin
        self.open = empty_rows()
        if self.queued is not None:
            # the queues where the Gantt ends, from the job table -- not the last live update's,
            # which depends on how the wall clock sliced the run (same run, same chunks)
            self.queued = _waiting_at(jobs, end, len(self.queued)) if jobs is not None else None
        self._send(end, rows, final=True)

    def _send(self, until: float, rows: dict[str, np.ndarray], final: bool) -> None:
        """Chunks of ``rows`` (closed before ``until``) covering [sent_until, until)."""
        order = np.argsort(rows["t1"], kind="stable")
        t1 = rows["t1"][order]
        w0 = self.sent_until if math.isfinite(self.sent_until) else min(self.begin, float(t1[0]) if len(t1) else
                                                                        self.begin)
        pieces = _split(t1, CHUNK_ROWS)
        for k, (a, b) in enumerate(pieces):
            last = k == len(pieces) - 1
            w1 = until if last else float(t1[b])
            chunk: dict[str, Any] = {"kind": "segments", "replication": 0, "window": [w0, w1],
                                     "segments": take_rows(rows, order[a:b])}
            if last:
                chunk["open"] = self.open
                chunk["final"] = final
                if self.queued is not None:
                    chunk["queued"] = self.queued
                chunk["sim_time"] = min(until, self.frontier) if math.isfinite(self.frontier) else w1
                chunk["fraction"] = 1.0 / self.R if final else self.fraction(until)
            self.emit.send(chunk)
            w0 = w1
        self.sent_until = until
        self.last_sent = self.clock()


def run_in_slices(begin: float, expected_end: float, advance: Callable[[float], bool],
                  report: Callable[[float], bool], seconds: float | None = None) -> None:
    """Drive a resumable simulation to its end in slices of simulated time: ``advance(T)``
    handles every event before T (True when nothing is left), then ``report(T)`` tells the live
    Gantt what the slice showed (True: nothing more can be streamed before the Result, so the
    rest runs in one go). Slices start small and grow or shrink to take about ``seconds``
    (SLICE_SECONDS) of wall time each, so chunks flow from the first moments of a long run. (A
    slice costing more than ``seconds`` halves the step: an ``advance`` whose cost is mostly
    overhead must make progress on every call, as the evolving plan's does.)"""
    seconds = SLICE_SECONDS if seconds is None else seconds
    step = max((expected_end - begin) * FIRST_SLICE, 1e-9) if math.isfinite(expected_end) else 1.0
    T = begin
    while True:
        T = T + step
        wall = time.perf_counter()
        done = advance(T)
        if report(T) or done:
            if not done:
                advance(math.inf)
            return
        took = time.perf_counter() - wall
        step *= min(4.0, max(0.5, seconds / max(took, 1e-6)))


def _split(t1: np.ndarray, size: int) -> list[tuple[int, int]]:
    """Cut sorted ``t1`` into pieces of about ``size`` rows, never between equal values."""
    n = len(t1)
    pieces, a = [], 0
    while n - a > size:
        b = a + size
        b = int(np.searchsorted(t1, t1[b], side="left"))
        if b <= a:  # one value fills the piece: it goes whole
            b = int(np.searchsorted(t1, t1[a], side="right"))
            if b >= n:
                break
        pieces.append((a, b))
        a = b
    pieces.append((a, n))
    return pieces


def _waiting_at(jobs: dict[str, np.ndarray], t: float, clusters: int) -> list[int]:
    """Jobs of ``jobs`` waiting at ``t`` in each of ``clusters`` clusters: submitted, not started
    and not ended (a rejected job ends without starting); a grid job not yet sent anywhere (cluster
    -1) is in no cluster's queue."""
    waiting = (jobs["submit"] <= t) & ~(jobs["start"] <= t) & ~(jobs["end"] <= t) & (jobs["cluster"] >= 0)
    return np.bincount(jobs["cluster"][waiting], minlength=clusters)[:clusters].tolist()
