"""Executing runs: the engine call, its streamed chunks, the stored result; dispatch to workers.

``execute_run(run_id)`` is what a worker does with a queued run, in full-stack mode inside the
Celery task ``gridweb.execute_run`` (``gridweb.runs.tasks``), in embedded mode in the web
process's single background thread (:class:`EmbeddedWorker`). It

1. claims the run (queued → running, ``started_at``, ``worker``, a new ``attempt``);
2. validates the snapshot ``spec`` (which writes uploaded traces onto this machine);
3. calls ``simengine.run(scenario, on_progress)``: each chunk is stored as a ``RunChunk``
   *before* its ``seq`` is announced on the channel-layer group ``run-<id>`` (docs/web.md);
   progress, simulated time and ETA are written at most every ``THROTTLE_SECONDS``, and so is
   ``cancel_requested`` read — when set, the callback raises and the run ends ``cancelled``;
4. stores the result in one transaction — ``RunResult`` (``Result.write_npz`` bytes), summary,
   counts, thumbnail, status ``done`` — then announces ``{"kind": "status", ...}``.

Any exception ends the run ``failed`` with a readable ``error`` (the engine's ScenarioError and
TraceError messages as they are, which name the field or the trace line; anything else as
"Type: message") and no ``RunResult``; the chunks streamed so far stay.

No run is lost, and none runs twice at once:

* Every write after the claim is conditional on the run's ``attempt``. A task delivered again
  finds the run finished (skipped), queued (runs it), or running: if that execution may still
  be alive — its process exists, when it is on this machine; its ``heartbeat`` (refreshed every
  ``HEARTBEAT_SECONDS`` by a thread while the engine works) is recent, when it is elsewhere —
  the delivery answers ``BUSY`` (the Celery task retries later); otherwise that execution
  died, so the run restarts cleanly — its chunks
  are deleted and it streams again from seq 0 (the engine is deterministic, so a client that
  kept the old chunks misses nothing and gets no duplicates). After ``MAX_ATTEMPTS`` starts the
  run fails instead (a run that kills its worker, e.g. out of memory, is not retried forever).
* Full stack: the task is ``acks_late`` with ``reject_on_worker_lost``, so a message is
  acknowledged only when the run has ended; a worker process that dies puts it back on the
  queue; a warm shutdown (SIGTERM) lets the running task finish; a cold one returns its
  unacknowledged messages to Redis.
* Embedded: when the worker thread starts (first dispatch, or first request the server
  serves), runs this machine's embedded worker was running in a process that is gone are
  marked failed ("interrupted ..."), and queued runs are queued again, oldest first.
* Full stack, dispatch: the database is the queue of record. Creating a run only writes its row;
  :func:`dispatch_waiting` hands queued runs to the broker in fair order (round-robin over users,
  at most ``GRIDWEB_USER_RUNS_IN_FLIGHT`` of one user handed over or running) after a run is
  created or ends and in every recovery sweep. A send that fails (broker down) fails at once
  and leaves the run waiting for the next pass; a message the broker lost (Redis restarted
  empty) is sent again by the recovery sweep (:func:`resend_lost_messages`).
"""

from __future__ import annotations

import asyncio
import logging
import math
import multiprocessing
import os
import queue
import socket
import threading
import time
import traceback
import uuid
from collections import Counter
from datetime import timedelta
from typing import Any, Callable

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.conf import settings
from django.db import InterfaceError, OperationalError, close_old_connections, connection, transaction
from django.db.models import Count, Max, Q, Sum
from django.utils import timezone

import simengine
from gridweb.celery import app as celery_app
from gridweb.scenarios.validation import SpecInvalid, trace_dir, validate_spec
from simengine.errors import SimEngineError

from . import result_store
from .frames import json_safe, segments_chunk_frame
from .models import FINISHED, Run, RunChunk, RunResult, Status
from .sweeps import finish_sweep, mark_sweep_running
from .thumbnails import gantt_thumbnail

log = logging.getLogger(__name__)

THROTTLE_SECONDS = 0.5  # progress writes and cancellation checks, at most this often
HEARTBEAT_SECONDS = 10.0  # a running execution refreshes Run.heartbeat this often
# No heartbeat for this long from another machine: its execution is dead. Generous, because the
# engine's compiled kernels hold the GIL and the heartbeat thread waits for them.
HEARTBEAT_STALE = timedelta(seconds=settings.GRIDWEB_HEARTBEAT_STALE_SECONDS)
PID_REUSE_AFTER = timedelta(hours=1)
MAX_ATTEMPTS = 3  # starts of one run before it is failed instead of restarted

# Outcomes of execute_run
DONE, FAILED, CANCELLED = Status.DONE.value, Status.FAILED.value, Status.CANCELLED.value
SKIPPED = "skipped"  # finished already (or no such run): nothing to do
BUSY = "busy"  # another execution may still be running it: try again later


def group_name(run_id: int) -> str:
    """The channel-layer group of a run's stream."""
    return f"run-{run_id}"


class RunCancelled(Exception):
    """Raised inside the engine's progress callback when the owner cancelled the run."""


class RunSuperseded(Exception):
    """Raised when a newer delivery of the task took the run over: stop without writing."""


class RunOverBudget(Exception):
    """Raised inside the engine's progress callback when the run has taken longer than this
    server's wall-clock budget per run (``settings.GRIDWEB_RUN_WALL_SECONDS``): it fails with
    this message, its streamed Gantt kept."""

    def __init__(self, budget: float):
        super().__init__(f"stopped after {budget:,.0f} s of wall-clock time, this server's limit per run "
                         "(the Gantt of what was simulated is kept; a smaller run, or fewer replications, fits)")


# --- Announcements on the channel layer ------------------------------------------------------------

_stream_loop: asyncio.AbstractEventLoop | None = None


def register_stream_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Called by the websocket consumer: the event loop the in-memory layer's consumers wait in.

    The in-memory channel layer (embedded mode) is not thread-safe: a message must be put on
    its queues from the consumers' loop, so the worker thread hands its announcements to it.
    """
    global _stream_loop
    _stream_loop = loop


def announce(run_id: int, message: dict[str, Any]) -> None:
    """Send ``message`` to the group ``run-<id>``. A lost announcement is not fatal: the
    consumer sends every stored chunk it has not sent on the next one, and on reconnect, and
    checks now and then whether the run has ended (a lost status)."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        if isinstance(layer, InMemoryChannelLayer):
            loop = _stream_loop
            if loop is None or loop.is_closed() or not loop.is_running():
                return  # nobody in this process is watching a stream
            future = asyncio.run_coroutine_threadsafe(layer.group_send(group_name(run_id), message), loop)
            future.result(timeout=5)
        else:
            async_to_sync(layer.group_send)(group_name(run_id), message)
    except Exception:  # noqa: BLE001 - streaming is best effort; the chunks are stored
        log.warning("could not announce %s of run %s", message.get("type"), run_id, exc_info=True)


def announce_status(run: Run) -> None:
    """Tell the run's watchers it has ended (the consumer sends what is left, then the status)."""
    announce(run.pk, {"type": "run.status", "status": run.status, "error": run.error})


# --- Execution --------------------------------------------------------------------------------------


def worker_name(celery_hostname: str | None = None) -> str:
    """Who executes a run, as ``<name>@<machine>:<pid>``: the Celery worker's hostname (e.g.
    ``worker1@node7``) or ``embedded@<machine>``, and the process, so that a later delivery
    on the same machine can tell whether that execution's process is still alive."""
    return f"{celery_hostname or 'embedded@' + socket.gethostname()}:{os.getpid()}"


# Runs executing in this process (a same-pid record of any other run is from an earlier process).
_active_runs: set[int] = set()


def execution_gone(run: Run, now) -> bool:
    """Whether the execution recorded on a running ``run`` has certainly stopped.

    On this machine the process tells (the heartbeat thread cannot beat while a compiled
    kernel holds the GIL, so a live run can look silent for minutes); elsewhere only the
    heartbeat does: silent for HEARTBEAT_STALE. A process id alive for PID_REUSE_AFTER without
    a heartbeat is taken for another process that got the same id."""
    silent = run.heartbeat is None or now - run.heartbeat >= HEARTBEAT_STALE
    name, _, pid = run.worker.rpartition(":")
    if name.rpartition("@")[2] != socket.gethostname() or not pid.isdigit():
        return silent  # another machine: only its heartbeat tells
    if int(pid) == os.getpid():
        return run.pk not in _active_runs
    if run.heartbeat is not None and now - run.heartbeat >= PID_REUSE_AFTER:
        return True
    return not _process_alive(int(pid))


def readable_error(exc: BaseException) -> str:
    """The text a failed run keeps: engine errors as they are (they name the field or the
    trace line), validation errors by field, anything else as ``Type: message``."""
    text = str(exc) if isinstance(exc, SimEngineError | SpecInvalid | RunOverBudget) else f"{type(exc).__name__}: {exc}"
    # Uploaded traces are named by their stored name, not by where this worker keeps them.
    return text.replace(f"{trace_dir()}{os.sep}", "")


def _claim(run_id: int, worker: str) -> tuple[str, Run | None]:
    """Take the run for this execution; (outcome, run) where outcome is "" to go ahead."""
    now = timezone.now()
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.status in FINISHED:
            return SKIPPED, run
        if run.status == Status.QUEUED and run.cancel_requested:
            _finish(run, Status.CANCELLED, now)
            return SKIPPED, run
        if run.status == Status.RUNNING:
            if not execution_gone(run, now):
                return BUSY, run
            if run.cancel_requested:  # its owner cancelled it, and then its execution stopped: done
                Run.objects.filter(pk=run.pk).update(**_stream_counts(run.pk))
                _finish(run, Status.CANCELLED, now)
                return SKIPPED, run
            if run.attempt >= MAX_ATTEMPTS:
                run.error = (f"interrupted {run.attempt} times: the worker running it stopped each time "
                             f"(last on {run.worker or 'an unknown worker'}; out of memory?)")
                _finish(run, Status.FAILED, now)
                return SKIPPED, run
            # The worker of the previous attempt died: start again from a clean stream (its
            # watchers are told once this transaction is committed).
            RunChunk.objects.filter(run=run).delete()
            transaction.on_commit(lambda: announce(run_id, {"type": "run.restart"}))
        run.status = Status.RUNNING
        run.attempt += 1
        run.worker = worker[:200]
        run.started_at = now
        run.heartbeat = now
        run.progress, run.sim_time, run.eta = 0.0, 0.0, None
        run.last_seq, run.segments_count, run.error = -1, 0, ""
        run.save(update_fields=["status", "attempt", "worker", "started_at", "heartbeat", "progress",
                                "sim_time", "eta", "last_seq", "segments_count", "error", "updated"])
    return "", run


def _finish(run: Run, status: str, now) -> None:
    """End a run that is not running (inside the caller's transaction)."""
    run.status = status
    run.finished_at = now
    run.save(update_fields=["status", "finished_at", "error", "updated"])


class _Heartbeat:
    """Refreshes ``Run.heartbeat`` from a thread while the engine works (its callbacks can be
    minutes apart on a big replication)."""

    def __init__(self, run_id: int, attempt: int):
        self.run_id, self.attempt = run_id, attempt
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat-run-{run_id}", daemon=True)

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join(timeout=HEARTBEAT_SECONDS)

    def _beat(self) -> None:
        try:
            while not self._stop.wait(HEARTBEAT_SECONDS):
                Run.objects.filter(pk=self.run_id, attempt=self.attempt, status=Status.RUNNING).update(
                    heartbeat=timezone.now())
        except Exception:  # noqa: BLE001 - a missed heartbeat only delays a redelivery
            log.warning("heartbeat of run %s stopped", self.run_id, exc_info=True)
        finally:
            try:
                close_old_connections()
            except Exception:  # noqa: BLE001 - the thread ends either way (its connection with it)
                log.debug("heartbeat of run %s: closing its connection failed", self.run_id, exc_info=True)


#: the estimate of a run's time left says "estimating" until its progress has moved this long and this
#: far since the first progress seen (issue 38: a 4 s run showed "63 min" at 0 %, while the worker
#: read its trace and loaded its kernels, time that says nothing of the simulation's pace)
ETA_SETTLE_SECONDS, ETA_SETTLE_FRACTION = 3.0, 0.02


class EtaEstimate:
    """Seconds a run has left, from the pace of its progress since the first progress seen (the one
    estimate: the worker stores it as ``Run.eta`` and puts it in each progress chunk the page shows)."""

    def __init__(self):
        self.first: tuple[float, float] | None = None  # (monotonic time, fraction) of the first progress

    def seconds_left(self, fraction: float, now: float) -> float | None:
        """None while estimating (no settled pace yet) or once there is nothing left to estimate."""
        if not 0 < fraction < 1:
            return None
        if self.first is None:
            self.first = (now, fraction)
            return None
        t0, f0 = self.first
        if now - t0 < ETA_SETTLE_SECONDS or fraction - f0 < ETA_SETTLE_FRACTION:
            return None
        return (now - t0) * (1 - fraction) / (fraction - f0)


class _Progress:
    """The engine's ``on_progress`` callback for one execution of one run."""

    def __init__(self, run: Run):
        self.run_id, self.attempt = run.pk, run.attempt
        self.started = time.monotonic()
        self.fraction, self.sim_time, self.segments, self.last_seq = 0.0, 0.0, 0, -1
        self._last_check = self._last_write = -math.inf
        self.eta = EtaEstimate()
        self.left: float | None = None  # the estimate at the last progress

    def check(self, force: bool = False) -> None:
        """Raise if the run was cancelled or taken over (read at most every THROTTLE_SECONDS), or
        has used up its wall-clock budget (the engine calls this at least at every replication's
        end and, while replication 0 runs, every half second)."""
        now = time.monotonic()
        budget = settings.GRIDWEB_RUN_WALL_SECONDS
        if now - self.started > budget:
            raise RunOverBudget(budget)
        if not force and now - self._last_check < THROTTLE_SECONDS:
            return
        self._last_check = now
        state = Run.objects.filter(pk=self.run_id).values("cancel_requested", "attempt", "status").first()
        if state is None or state["attempt"] != self.attempt or state["status"] != Status.RUNNING:
            raise RunSuperseded()
        if state["cancel_requested"]:
            raise RunCancelled()

    def __call__(self, chunk: dict[str, Any]) -> None:
        self.check()
        seq, kind = int(chunk["seq"]), str(chunk["kind"])
        data, rows = None, 0
        if kind == "segments":
            payload, data, rows = segments_chunk_frame(chunk)
        else:
            payload = json_safe(chunk)  # metrics can be NaN; JSON (and PostgreSQL) cannot
        if "fraction" in chunk:
            self.fraction = float(chunk["fraction"])
            self.left = self.eta.seconds_left(self.fraction, time.monotonic())
            if kind == "progress":  # (the page shows it: "estimating" while None)
                payload["eta_seconds"] = self.left
        if chunk.get("sim_time") is not None and math.isfinite(chunk["sim_time"]):
            self.sim_time = max(self.sim_time, float(chunk["sim_time"]))
        RunChunk.objects.create(run_id=self.run_id, seq=seq, kind=kind[:16], payload=payload, data=data, rows=rows,
                                rows_before=self.segments)
        self.segments += rows
        self.last_seq = seq
        self.write_progress()
        announce(self.run_id, {"type": "run.chunk", "seq": seq})

    def write_progress(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_write < THROTTLE_SECONDS:
            return
        self._last_write = now
        eta = timezone.now() + timedelta(seconds=self.left) if self.left is not None and self.fraction < 1 else None
        Run.objects.filter(pk=self.run_id, attempt=self.attempt).update(
            progress=self.fraction, sim_time=self.sim_time, eta=eta, last_seq=self.last_seq,
            segments_count=self.segments, heartbeat=timezone.now())


def engine_processes() -> int | None:
    """Processes the engine may use for replications: one inside a Celery prefork child, which is
    daemonic and may not start processes of its own (scale with more worker processes instead);
    the engine's own choice elsewhere (the embedded worker, a solo or threads pool)."""
    return 1 if multiprocessing.current_process().daemon else None


def execute_run(run_id: int, worker: str | None = None) -> str:
    """Run a queued run to its end (see the module docstring); returns the outcome:
    ``done``, ``failed``, ``cancelled``, ``skipped`` (nothing to do) or ``busy``."""
    outcome, run = _claim(run_id, worker or worker_name())
    if outcome:
        if run is not None and outcome == SKIPPED and run.status in FINISHED:
            _after_end(run)
        return outcome
    assert run is not None
    mark_sweep_running(run.sweep_id)
    progress = _Progress(run)
    _active_runs.add(run.pk)
    try:
        with _Heartbeat(run.pk, run.attempt):
            scenario = validate_spec(run.spec)
            progress.check(force=True)
            result = simengine.run(scenario, progress, workers=engine_processes())
        progress.check(force=True)  # a cancel that came in at the very end still wins
        return _store_result(run, result, progress)
    except RunSuperseded:
        log.info("run %s attempt %s was taken over by a newer delivery; stopping", run.pk, run.attempt)
        return SKIPPED
    except RunCancelled:
        return _end(run, Status.CANCELLED, "")
    except Exception as exc:  # noqa: BLE001 - every failure becomes the run's readable error
        if isinstance(exc, InterfaceError | OperationalError) and not embedded():
            raise  # the database is unreachable: the Celery task retries later (gridweb.runs.tasks)
        log.info("run %s failed:\n%s", run.pk, traceback.format_exc())
        return _end(run, Status.FAILED, readable_error(exc))
    finally:
        _active_runs.discard(run.pk)


def _store_result(run: Run, result: simengine.results.Result, progress: _Progress) -> str:
    """Everything a done run keeps: the result files, then in one transaction the run's fields
    (the files of an attempt that lost the run, or of a run cancelled meanwhile, are removed)."""
    location, size = result_store.save(run, result)
    summary = json_safe(result.summary())
    thumbnail = gantt_thumbnail(result.segments, result.cluster_names, result.cluster_processors)
    with transaction.atomic():
        locked = Run.objects.select_for_update().filter(pk=run.pk, attempt=run.attempt,
                                                         status=Status.RUNNING).first()
        cancelled = locked is not None and locked.cancel_requested
        if locked is not None and not cancelled:
            RunResult.objects.update_or_create(run=locked, defaults={"npz": None, "location": location,
                                                                      "size": size})
            locked.summary = summary
            locked.thumbnail = thumbnail
            locked.segments_count = int(len(result.segments["t0"]))
            locked.last_seq = progress.last_seq
            locked.progress = 1.0
            locked.sim_time = progress.sim_time
            locked.eta = None
            locked.status = Status.DONE
            locked.finished_at = timezone.now()
            locked.save(update_fields=["summary", "thumbnail", "segments_count", "last_seq", "progress",
                                       "sim_time", "eta", "status", "finished_at", "updated"])
    if locked is None or cancelled:
        result_store.delete(location)  # nobody will read them
    if locked is None:
        return SKIPPED
    if cancelled:
        return _end(run, Status.CANCELLED, "")
    _after_end(locked)
    return DONE


def _end(run: Run, status: str, error: str) -> str:
    """End this attempt as failed or cancelled (if it still owns the run)."""
    fields: dict[str, Any] = {"status": status, "error": error, "finished_at": timezone.now(), "eta": None,
                              "updated": timezone.now(), **_stream_counts(run.pk)}
    changed = Run.objects.filter(pk=run.pk, attempt=run.attempt, status=Status.RUNNING).update(**fields)
    if not changed:
        return SKIPPED
    run.refresh_from_db()
    _after_end(run)
    return status


def _stream_counts(run_id: int) -> dict[str, int]:
    """``last_seq`` and ``segments_count`` as the stored chunks say (progress writes are throttled,
    and a terminated process writes nothing more: a run that ends so must not disagree with its
    chunks)."""
    stored = RunChunk.objects.filter(run_id=run_id).aggregate(last=Max("seq"), rows=Sum("rows"))
    return {"last_seq": -1 if stored["last"] is None else stored["last"], "segments_count": stored["rows"] or 0}


def _after_end(run: Run) -> None:
    """Tell the watchers, finish the sweep if this was its last point, and hand the next waiting
    run to the workers (its owner's share, or another user's, is free again)."""
    announce_status(run)
    if run.sweep_id is not None:
        finish_sweep(run.sweep_id)
    if not embedded():
        try:
            dispatch_waiting()
        except Exception:  # noqa: BLE001 - the run has ended either way; the recovery sweep dispatches later
            log.warning("dispatching waiting runs after run %s ended failed", run.pk, exc_info=True)


def end_terminated_run(run_id: int) -> None:
    """A worker killed the run's process (Celery revoke with terminate): end it ``cancelled``."""
    error = ""
    run = Run.objects.filter(pk=run_id).first()
    if run is None or run.status in FINISHED:
        return
    if not run.cancel_requested:
        error = "stopped by the worker (its task was terminated)"
    if Run.objects.filter(pk=run_id, status__in=[Status.QUEUED, Status.RUNNING]).update(
            status=Status.CANCELLED, error=error, finished_at=timezone.now(), eta=None, updated=timezone.now(),
            **_stream_counts(run_id)):
        run.refresh_from_db()
        _after_end(run)


# --- Dispatch ----------------------------------------------------------------------------------------


#: the Celery tasks (gridweb.runs.tasks, which calls this module) are sent by name
EXECUTE_RUN = "gridweb.execute_run"
AGGREGATE_SWEEP = "gridweb.aggregate_sweep"


def embedded() -> bool:
    return bool(settings.GRIDWEB_EMBEDDED_WORKER)


def send_task(name: str, args: tuple, task_id: str) -> None:
    """Queue Celery task ``name`` for the workers (full-stack mode). Raises at once when the broker
    does not answer: no publishing retries, and no subscription to the task's result (nobody reads
    it; Celery's Redis result backend retried that subscription for 19 s with Redis down). What
    was to be sent stays in the database, and a later pass sends it."""
    with celery_app.pool.acquire(block=True) as conn:
        # once, at once (kombu retries a new connection for seconds before giving up)
        conn.ensure_connection(max_retries=0)
        celery_app.send_task(name, args=args, task_id=task_id, ignore_result=True, retry=False, connection=conn)


def revoke(task_id: str, terminate: bool = False) -> bool:
    """Revoke a run's Celery task (full-stack mode), with ``terminate`` killing the process running
    it (SIGKILL, not Celery's default SIGTERM: the worker process handles SIGTERM in Python, which
    waits until the engine's compiled kernel returns). Best effort, and at once: with the broker
    away it only logs and returns False -- a cancelled run's claim or its progress checks stop it."""
    if not _broker_answers():
        log.warning("could not revoke task %s (the broker does not answer); the worker's checks stop its run", task_id)
        return False
    try:
        with celery_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=0)  # once (kombu retries a new connection for seconds)
            if terminate:
                celery_app.control.revoke(task_id, terminate=True, signal="SIGKILL", connection=conn)
            else:
                celery_app.control.revoke(task_id, connection=conn)
    except Exception:  # noqa: BLE001 - the cancel is recorded in the database either way
        log.warning("could not revoke task %s (the broker does not answer); the worker's checks stop its run",
                    task_id, exc_info=True)
        return False
    return True


def dispatch(run_id: int) -> None:
    """Hand this run to a worker now: a Celery task in full-stack mode (its id stored in
    ``Run.task_id``), the embedded worker thread otherwise. Raises when the broker does not
    answer, and the run is then not marked handed over. New runs go through
    :func:`dispatch_waiting` instead (fair share); this is for redeliveries and by-hand requeues."""
    if embedded():
        embedded_worker().submit_run(run_id)
        return
    task_id = _new_task_id()
    with transaction.atomic():  # (the worker's claim waits for this row until it is committed)
        Run.objects.filter(pk=run_id).update(task_id=task_id, dispatched_at=timezone.now())
        send_task(EXECUTE_RUN, (run_id,), task_id)


def hand_over_new(run_id: int) -> None:
    """After a new run is committed: the embedded worker queues it; in full-stack mode the fair
    dispatcher hands it (or an earlier waiting run of another user) to the workers."""
    if embedded():
        embedded_worker().submit_run(run_id)
    else:
        dispatch_waiting()


# An arbitrary number naming the dispatcher's PostgreSQL advisory lock: one pass at a time.
DISPATCH_LOCK = 0x6772_6964  # "grid"


def dispatch_waiting() -> list[int]:
    """Fair share (full-stack mode): hand queued runs nobody has handed over yet to the workers.

    The database is the queue of record; the broker holds at most
    ``settings.GRIDWEB_USER_RUNS_IN_FLIGHT`` runs per user (handed over and not started, or
    running), so one user's backlog waits here and another user's new run goes to the broker
    behind at most that many of theirs. Runs are taken round-robin over users (each user's
    oldest first). A send that fails (broker down) leaves the run waiting and ends the pass; the
    next pass -- after a run is created or ends, and every ``GRIDWEB_RECOVERY_SECONDS`` in each
    worker's recovery sweep -- sends it. Passes take turns (an advisory lock), and each run is
    sent only if it is still queued and not handed over, so two passes never send one run twice.
    Returns the ids sent."""
    if embedded():
        return []
    cap = settings.GRIDWEB_USER_RUNS_IN_FLIGHT
    sent: list[int] = []
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [DISPATCH_LOCK])
        in_flight = Counter(dict(
            Run.objects.filter(Q(status=Status.RUNNING) | Q(status=Status.QUEUED, dispatched_at__isnull=False))
            .order_by().values("owner_id").annotate(n=Count("pk")).values_list("owner_id", "n")))
        waiting = Run.objects.filter(status=Status.QUEUED, dispatched_at=None).order_by("pk")
        taken: Counter = Counter()
        turns = []  # (turn, run id): a user's k-th waiting run goes in turn in_flight + k
        for run_id, owner_id in waiting.values_list("pk", "owner_id"):
            turn = in_flight[owner_id] + taken[owner_id]
            taken[owner_id] += 1
            if turn < cap:
                turns.append((turn, run_id))
        for _, run_id in sorted(turns):
            task_id = _new_task_id()
            try:
                with transaction.atomic():
                    if not Run.objects.filter(pk=run_id, status=Status.QUEUED, dispatched_at=None).update(
                            task_id=task_id, dispatched_at=timezone.now()):
                        continue  # cancelled meanwhile
                    send_task(EXECUTE_RUN, (run_id,), task_id)
            except Exception:  # noqa: BLE001 - the broker is away: the run waits for the next pass
                log.warning("could not hand run %s to the broker; it stays queued until the next dispatch pass",
                            run_id, exc_info=True)
                break
            sent.append(run_id)
    return sent


def _broker_answers() -> bool:
    """Whether the broker (Redis) answers a ping within a second: Celery's remote control retries a
    lost connection for seconds, or for good, before it gives up."""
    url = str(celery_app.conf.broker_url or "")
    if not url.startswith(("redis://", "rediss://", "unix://")):
        return True
    import redis  # (full-stack mode only)

    try:
        return bool(redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


def _broker_messages() -> str | None:
    """Every message waiting in the broker's run queue or taken but not acknowledged, as one text
    (the task ids are in it), or None when that cannot be read (not Redis, or Redis away)."""
    url = str(celery_app.conf.broker_url or "")
    if not url.startswith(("redis://", "rediss://", "unix://")):
        return None
    import redis  # (full-stack mode only)

    queue_name = celery_app.conf.task_default_queue or "celery"
    try:
        client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=2)
        with client.pipeline(transaction=False) as pipe:
            # kombu's Redis transport: one list per priority step ("celery", "celery\x06\x163", ...)
            # and a hash of the messages workers have taken and not acknowledged
            for priority in range(10):
                pipe.lrange(queue_name if priority == 0 else f"{queue_name}\x06\x16{priority}", 0, -1)
            pipe.hvals("unacked")
            replies = pipe.execute()
    except redis.RedisError:
        log.warning("could not read the broker's queue to look for lost messages", exc_info=True)
        return None
    return "\n".join(item.decode(errors="replace") for reply in replies for item in reply)


def resend_lost_messages(now) -> list[int]:
    """Queued runs handed over more than ``HEARTBEAT_STALE`` ago whose message is in the broker
    neither waiting nor taken (Redis restarted without its data): sent again. A message that was
    there after all only makes a second delivery, which the claim makes harmless."""
    candidates = list(Run.objects.filter(status=Status.QUEUED, dispatched_at__lt=now - HEARTBEAT_STALE)
                      .order_by("pk").values_list("pk", "task_id"))
    if not candidates:
        return []
    messages = _broker_messages()
    if messages is None:
        return []
    lost = [run_id for run_id, task_id in candidates if not task_id or task_id not in messages]
    for run_id in lost:
        log.warning("run %s: its message is no longer in the broker; handing it to the workers again", run_id)
        dispatch(run_id)
    return lost


def lost_runs(now) -> list[Run]:
    """Running runs whose execution has certainly stopped (``execution_gone``) and that were not
    handed to a worker again since it started, or not within ``HEARTBEAT_STALE`` (that delivery
    may still be waiting in the queue)."""
    def handed_over_lately(run: Run) -> bool:
        return (run.dispatched_at is not None and run.started_at is not None and run.dispatched_at > run.started_at
                and now - run.dispatched_at < HEARTBEAT_STALE)

    return [run for run in Run.objects.filter(status=Status.RUNNING).order_by("pk")
            if execution_gone(run, now) and not handed_over_lately(run)]


def recover_lost_runs() -> list[int]:
    """Hand every lost run to the workers again (full-stack mode): the delivery restarts it
    cleanly, or fails it after MAX_ATTEMPTS, and its watchers are told either way; then queued
    runs whose message the broker lost are sent again, and waiting runs are dispatched
    (:func:`dispatch_waiting`: those a broker outage kept back, too). What each Celery worker's
    recovery thread does every ``GRIDWEB_RECOVERY_SECONDS`` (gridweb.runs.tasks) and
    ``manage.py gridweb_requeue`` does on demand; two workers doing it at once hand a lost run
    over twice, which is harmless (the first delivery claims it)."""
    now = timezone.now()
    lost = lost_runs(now)
    for run in lost:
        log.warning("run %s: its execution on %s is gone; handing it to the workers again", run.pk,
                    run.worker or "an unknown worker")
        dispatch(run.pk)
    resent = resend_lost_messages(now)
    dispatch_waiting()
    for kind, resend in _RECOVERY_SENDS.items():
        try:
            resend()
        except Exception:  # noqa: BLE001 - one kind's failure must not stop the others' recovery
            log.warning("recovery sweep: sending the waiting %s items failed", kind, exc_info=True)
    return [run.pk for run in lost] + resent


#: other kinds of work the recovery sweep hands to the broker when a send failed (e.g. reproductions
#: created while Redis was down), by kind; registered by their apps
_RECOVERY_SENDS: dict[str, Callable[[], Any]] = {}


def register_recovery_send(kind: str, resend: Callable[[], Any]) -> None:
    """Let each worker's recovery sweep call ``resend`` (send what a broker outage kept back)."""
    _RECOVERY_SENDS[kind] = resend


def dispatch_sweep(sweep_id: int) -> None:
    """Start every point of a sweep: in full-stack mode through the fair dispatcher like any run
    (the sweep is aggregated once, by whichever point ends last: ``_after_end``); in embedded
    mode the points then the aggregation, in order."""
    if not embedded():
        dispatch_waiting()
        return
    worker = embedded_worker()
    for run_id in Run.objects.filter(sweep_id=sweep_id, status=Status.QUEUED).order_by("pk").values_list("pk", flat=True):
        worker.submit_run(run_id)
    worker.submit_sweep(sweep_id)


def _new_task_id() -> str:
    return str(uuid.uuid4())


# --- The embedded worker -------------------------------------------------------------------------------


#: other kinds of work the embedded worker does, by kind: (execute(ident, worker name),
#: recover() -> the idents to queue again when it starts); registered by their apps
_EMBEDDED_WORK: dict[str, tuple[Callable[[int, str], Any], Callable[[], list[int]]]] = {}


def register_embedded_work(kind: str, execute: Callable[[int, str], Any], recover: Callable[[], list[int]]) -> None:
    """Let the embedded worker execute items of ``kind`` (e.g. reproductions: gridweb.reproductions)."""
    _EMBEDDED_WORK[kind] = (execute, recover)


class EmbeddedWorker:
    """One background thread of the web process that executes runs one at a time, in order.

    Not eager execution inside the request: ``submit_run`` only queues, so the request returns
    at once and the run goes on after it. On start it recovers what a previous process left
    (see the module docstring).
    """

    def __init__(self) -> None:
        self._queue: queue.Queue[tuple[str, int]] = queue.Queue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._recovered = threading.Event()  # set once start-up recovery has queued its work
        self.current_run: int | None = None

    def start(self) -> None:
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._thread = threading.Thread(target=self._loop, name="gridweb-embedded-worker", daemon=True)
            self._thread.start()

    def submit_run(self, run_id: int) -> None:
        self._put(("run", run_id))

    def submit_sweep(self, sweep_id: int) -> None:
        self._put(("sweep", sweep_id))

    def submit(self, kind: str, ident: int) -> None:
        """Queue an item of a registered kind (register_embedded_work)."""
        self._put((kind, ident))

    def _put(self, item: tuple[str, int]) -> None:
        self._queue.put(item)
        self.start()

    def wait_idle(self, timeout: float) -> bool:
        """Block until every queued item is done (for tests and the shutdown path); True if idle."""
        deadline = time.monotonic() + timeout
        if self._thread is not None and not self._recovered.wait(timeout):
            return False
        while time.monotonic() < deadline:
            if self._queue.unfinished_tasks == 0:
                return True
            time.sleep(0.05)
        return self._queue.unfinished_tasks == 0

    def _loop(self) -> None:
        try:
            self._recover()
        except Exception:  # noqa: BLE001 - recovery must not stop the worker
            log.exception("embedded worker: recovery of interrupted runs failed")
        finally:
            close_old_connections()
            self._recovered.set()
        while True:
            kind, ident = self._queue.get()
            try:
                close_old_connections()
                if kind == "run":
                    self.current_run = ident
                    execute_run(ident, worker_name())
                elif kind == "sweep":
                    finish_sweep(ident)
                else:
                    _EMBEDDED_WORK[kind][0](ident, worker_name())
            except Exception:  # noqa: BLE001 - one bad item must not stop the worker
                log.exception("embedded worker: %s %s", kind, ident)
            finally:
                self.current_run = None
                close_old_connections()
                self._queue.task_done()

    def _recover(self) -> None:
        """Fail runs a gone process of this machine was running; queue the queued ones again."""
        now = timezone.now()
        for run in Run.objects.filter(status=Status.RUNNING):
            if execution_gone(run, now):
                changed = Run.objects.filter(pk=run.pk, attempt=run.attempt, status=Status.RUNNING).update(
                    status=Status.FAILED, finished_at=now, eta=None, updated=now,
                    error="interrupted: the GridWeb process running it stopped before it finished "
                          "(start it again to rerun it)", **_stream_counts(run.pk))
                if changed:
                    run.refresh_from_db()
                    _after_end(run)
        queued = Run.objects.filter(status=Status.QUEUED).order_by("pk")
        sweeps = sorted(set(queued.exclude(sweep=None).values_list("sweep_id", flat=True)))
        for run_id in queued.values_list("pk", flat=True):
            self._queue.put(("run", run_id))
        for sweep_id in sweeps:
            self._queue.put(("sweep", sweep_id))
        for kind, (_, recover) in _EMBEDDED_WORK.items():
            for ident in recover():
                self._queue.put((kind, ident))


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_embedded_worker: EmbeddedWorker | None = None
_embedded_lock = threading.Lock()


def embedded_worker() -> EmbeddedWorker:
    """This process's embedded worker (created on first use)."""
    global _embedded_worker
    with _embedded_lock:
        if _embedded_worker is None:
            _embedded_worker = EmbeddedWorker()
        return _embedded_worker


def start_embedded_worker_on_first_request(**_: Any) -> None:
    """``request_started`` receiver: a restarted embedded server picks up queued and interrupted
    runs without waiting for a new run (``GRIDWEB_EMBEDDED_WORKER_AUTOSTART``)."""
    if embedded() and getattr(settings, "GRIDWEB_EMBEDDED_WORKER_AUTOSTART", False):
        embedded_worker().start()
