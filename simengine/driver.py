"""The one replication driver: every model's replications run here (docs/development.md, Layout).

A :class:`Model` simulates one replication into one :class:`Replication`; :func:`run_model`
runs replication 0 in this process -- with the live Gantt (:class:`~simengine.streaming.LiveGantt`)
and progress from inside it -- and the others in a pool when that pays, then assembles the Result.

When to pool (one rule): a model whose replications release the GIL (compiled kernels, numpy)
runs the others in threads, started beside replication 0 (a thread pool costs nothing to
start); any other model in processes, used when ``workers`` > 1 asks for them or, ``workers``
None, when replication 0 shows that the others would take at least ``POOL_MIN_SECONDS`` here
(a process pool costs about a second to start). Every replication draws from its own
SeedSequence child, so the Result does not depend on where or in which order they ran.

Stopping (a cancelled run, a server's wall-clock budget): the progress callback may raise. It is
called with every chunk, and -- through its ``check()``, when it has one -- at least every
``STEP_REPORT_SECONDS`` while replication 0's progress stands still and while replications 1..R-1
run: from inside a replication run here (the
models that report steps stop at once, the others at their end), and from the wait on a pool
(the run ends at once; the replications running in the pool's threads or processes are left to
finish on their own, the queued ones are dropped).
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Protocol

import numpy as np

from simengine.results import Result, assemble_result, empty_job_rows
from simengine.scenario import Scenario, load_scenario, trace_base_dir
from simengine.streaming import ChunkEmitter, LiveGantt, ProgressCallback
from simengine.workload_build import trace_time_origins

#: least wall-clock seconds between two progress reports from inside replication 0
STEP_REPORT_SECONDS = 0.5

#: with ``workers`` None, a process pool is used when the remaining replications would take
#: longer than this in this process (replication 0's time x their number)
POOL_MIN_SECONDS = 4.0

#: ``place(n, size_hint)``: n rows of every job column for a replication to write its rows into
Place = Callable[..., dict[str, np.ndarray]]  # (n rows, size hint, optional columns) -> columns


@dataclass
class Replication:
    """One replication's outcome, whatever the model."""

    metrics: dict[str, float]
    jobs: dict[str, np.ndarray] | None  # job rows (None: not kept, run.keep_jobs "first")
    segments: dict[str, np.ndarray] | None = None  # Gantt segments (asked of replication 0)
    series: dict[str, np.ndarray] | None = None  # time series (with the segments)
    notes: list[str] = field(default_factory=list)
    #: batch-means half-widths of metrics that are not means over jobs (results.assemble_result)
    batch_half: dict[str, float] | None = None


class Replicate(Protocol):
    def __call__(self, scenario: Scenario, replication: int, with_segments: bool,
                 on_step: Callable[[float, float], None] | None = None, live: LiveGantt | None = None,
                 place: Place | None = None) -> Replication:
        """Simulate replication ``replication``: its segments and series when ``with_segments``.
        ``on_step(fraction, sim_time)``: progress from inside it (a model may ignore it);
        ``live``: replication 0's live Gantt, for a model that streams while it simulates (the
        driver sends the rest at the end); ``place``: where to write the job rows (models with
        ``rows_in_place`` only)."""


@dataclass(frozen=True)
class Model:
    """A model family: the scenarios it ``handles`` and how it simulates one replication
    (:mod:`simengine.models` lists them in the order they are asked)."""

    name: str
    handles: Callable[[Scenario], bool]
    replicate: Replicate
    #: replications release the GIL: the others run in threads (else in processes)
    gil_free: bool = False
    #: replications write their job rows through ``place`` (in threads, into shared columns)
    rows_in_place: bool = False
    #: work done before the clock starts (read traces, compile kernels)
    prepare: Callable[[Scenario], None] | None = None
    #: load its compiled parts from numba's cache (compile them the first time), whatever the
    #: scenario: a server's worker does it once when it starts (simengine.models.warm_up)
    warm_up: Callable[[], None] | None = None


def run_model(model: Model, scenario: Scenario, on_progress: ProgressCallback | None = None,
              workers: int | None = None) -> Result:
    """Run ``scenario.run.replications`` replications of ``model`` and assemble the Result
    (``workers``: threads or processes for replications 1..R-1; 1: all in this process)."""
    emit = ChunkEmitter(on_progress)
    R = scenario.run.replications
    keep_all = scenario.run.keep_jobs == "all"
    if model.prepare is not None:
        model.prepare(scenario)
    keep_freed_memory()
    t0 = time.perf_counter()
    rows = SharedRows(R if keep_all else 1) if model.rows_in_place else None

    def one(r: int, **asked) -> Replication:
        place = None
        if rows is not None and (keep_all or r == 0):
            index = r if keep_all else 0

            def place(n: int, size_hint: int, optional: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
                return rows.take(index, n, size_hint, optional)
        try:
            return model.replicate(scenario, r, place=place, **asked)
        except BaseException:
            if rows is not None:
                rows.abandon()  # replications waiting for this one's rows must not wait forever
            raise

    rest = list(range(1, R))
    outcomes: list[Replication] = []
    threads = None
    stopped = True  # until every replication is in: an exception leaves the pool without waiting
    try:
        if model.gil_free and rest and workers != 1:
            threads = ThreadPoolExecutor(max_workers=_pool_size(workers, len(rest)))
            running = [threads.submit(one, r, with_segments=False) for r in rest]
        live = emit.live(R)
        listening = on_progress is not None  # (else nobody hears steps: models need not pause for them)
        first = one(0, with_segments=True, on_step=_step_reporter(emit, R) if listening else None, live=live)
        if live is not None:
            live.finish(first.segments, first.jobs)  # its Gantt is out while the others run
        outcomes.append(first)
        first_seconds = time.perf_counter() - t0
        if threads is not None:
            for future in running:
                outcomes.append(_await(partial(future.result, timeout=STEP_REPORT_SECONDS), FutureTimeout, emit))
                emit.progress(len(outcomes) / R, 0.0)
        elif rest and not model.gil_free and _processes_pay(workers, len(rest), first_seconds):
            # (imported here: multiprocessing adds ~5 ms to every command-line replay that has no pool)
            from concurrent.futures import ProcessPoolExecutor

            payload = [(model, scenario.model_dump_json(), trace_base_dir(scenario), r) for r in rest]
            pool = ProcessPoolExecutor(max_workers=_pool_size(workers, len(rest)))
            finished = False
            try:
                for future in [pool.submit(_replicate_in_worker, args) for args in payload]:
                    outcomes.append(_await(partial(future.result, timeout=STEP_REPORT_SECONDS), FutureTimeout,
                                           emit))
                    emit.progress(len(outcomes) / R, 0.0)
                finished = True
            finally:
                # stopped, or a replication failed: the queued ones are cancelled and the running
                # ones not waited for (they end on their own: a worker killed while it sends its
                # result leaves the pool's manager waiting for the rest of it for ever)
                pool.shutdown(wait=finished, cancel_futures=True)
        else:
            poll = _poller(emit) if listening else None
            for r in rest:
                outcomes.append(one(r, with_segments=False, on_step=poll))
                emit.progress(len(outcomes) / R, 0.0)
        stopped = False
    finally:
        if threads is not None:
            if stopped and rows is not None:
                rows.abandon()  # threads waiting for another's rows give up
            threads.shutdown(wait=not stopped, cancel_futures=True)
    if rows is not None:
        kept = [rows.result()]
    else:
        kept = [o.jobs for i, o in enumerate(outcomes) if (keep_all or i == 0) and o.jobs is not None]
    result = assemble_result(scenario, kept, [o.metrics for o in outcomes], first.segments, first.series or {},
                             [n for o in outcomes for n in o.notes], first.batch_half)
    result.engine_seconds = time.perf_counter() - t0
    result.time_origins = trace_time_origins(scenario)
    emit.metrics(result.metrics)
    return result


def _pool_size(workers: int | None, remaining: int) -> int:
    return max(1, min(workers if workers is not None else os.cpu_count() or 1, remaining))


def _processes_pay(workers: int | None, remaining: int, first_seconds: float) -> bool:
    """Is a process pool worth starting for ``remaining`` replications (module docstring)?"""
    if remaining < 2:  # one replication left: a pool cannot overlap anything
        return False
    if workers is not None:
        return workers > 1
    return (os.cpu_count() or 1) > 1 and first_seconds * remaining >= POOL_MIN_SECONDS


def _await(get: Callable[[], Replication], timeout: type[BaseException], emit: ChunkEmitter) -> Replication:
    """The next replication from a pool; meanwhile the callback is asked every
    STEP_REPORT_SECONDS whether to stop (its exception ends the wait)."""
    while True:
        try:
            return get()
        except timeout:
            emit.poll()


def _poller(emit: ChunkEmitter) -> Callable[[float, float], None]:
    """``on_step`` for replications 1..R-1 run here: asks the callback whether to stop, at most
    every STEP_REPORT_SECONDS (their progress is reported when each ends)."""
    last = [time.perf_counter()]

    def on_step(fraction: float, sim_time: float) -> None:
        now = time.perf_counter()
        if now - last[0] >= STEP_REPORT_SECONDS:
            last[0] = now
            emit.poll()

    return on_step


def _replicate_in_worker(args) -> Replication:
    model, scenario_json, base_dir, r = args
    keep_freed_memory()
    scenario = load_scenario(scenario_json, base_dir=base_dir)
    if model.prepare is not None:
        model.prepare(scenario)
    return model.replicate(scenario, r, False)


def _step_reporter(emit: ChunkEmitter, R: int) -> Callable[[float, float], None]:
    """Progress from inside replication 0, at most every STEP_REPORT_SECONDS and never backwards
    (a replication that draws more jobs and runs again starts its fraction over; clusters
    simulated one after another each start their clock over: the furthest time is reported).
    While the fraction stands still (work after the simulated time is over, such as the evolving
    model's CBF baseline), the callback's ``check()`` is asked instead, as often: it may stop the run."""
    last = {"time": time.perf_counter(), "fraction": 0.0, "sim_time": 0.0, "asked": time.perf_counter()}

    def on_step(fraction: float, sim_time: float) -> None:
        now = time.perf_counter()
        fraction = min(max(fraction, 0.0), 0.99) / R  # the end of the replication reports 1/R
        last["sim_time"] = max(last["sim_time"], float(sim_time))
        if now - last["time"] >= STEP_REPORT_SECONDS and fraction > last["fraction"]:
            last["time"], last["asked"], last["fraction"] = now, now, fraction
            emit.progress(fraction, last["sim_time"])
        elif now - last["asked"] >= STEP_REPORT_SECONDS:
            last["asked"] = now
            emit.poll()

    return on_step


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

    def take(self, i: int, n: int, size_hint: int, optional: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
        """Replication i's n rows (JOB_COLUMNS and the ``optional`` ones, the same for every replication)."""
        with self._cond:
            if self.columns is None:
                per = size_hint + size_hint // 16 + 1024
                self.columns = empty_job_rows(per * self.R, optional)
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
            self.spilled[i] = empty_job_rows(n, optional)
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


def keep_freed_memory() -> None:
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
