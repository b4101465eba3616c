"""One cluster, event by event: FCFS, EASY or conservative backfilling with advance
reservations, priorities and preemption, tracking which processors every job holds
(docs/reservations.md). :class:`ClusterSim` is the Python face of the compiled event core
(simengine.local.core), which runs the loop below.

Without reservations, priorities or preemption the start times are exactly those of the
compiled kernels (simengine.schedulers), which tests/simengine/test_local_events.py checks;
the same instants, the same tie rules:

- each loop takes the next event time t and handles, in order: job completions and
  reservation ends (conservative: the unused rest of the plan is given back), a trace's
  cancellations (a waiting job leaves the queue, a running one is killed), overrun
  extensions (conservative), reservation requests (admission), relaxed reservations
  sliding earlier (if processors came free), reservation windows starting (overrunning
  jobs preempted), arrivals, then one scheduling pass;
- a job with run time 0 completes at its start and frees its processors at the next
  pass at that same instant (FCFS, EASY); in conservative it holds no processor.

Scheduling passes (queue order: higher priority first, suspended before queued at equal
priority, then submit order):

- FCFS starts queue heads while they fit now: enough free processors, and -- by their
  estimate -- no overlap with an accepted reservation window;
- EASY does the same, then gives the blocked head a reservation at its earliest fit on the
  profile of running jobs (until their planned end) and reservations (its shadow time),
  and backfills later jobs that fit on that profile now;
- conservative gives every queued job the earliest reservation that fits on the profile
  of running jobs, reservations and earlier queued jobs; compression, overrun repair and
  reservations re-planned around an accepted (or slid) advance reservation.

Preemption: when the top waiting job cannot start now, running jobs of strictly lower
priority are preempted (lowest priority, then newest start first; the fewest so the top
job starts now; nobody if even all would not do), with the cluster's mode.
"""
from __future__ import annotations

import gc
import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from pydantic import BaseModel

from simengine.jit import load_own_copies
from simengine.local import core
from simengine.local.external import Cluster
from simengine.local.core import (AR_ACCEPTED, AR_ACTIVE, AR_DONE, AR_PENDING, AR_REJECTED, CANCELLED,  # noqa: F401
                                  DONE, KILLED, QUEUED, REJECTED, RUNNING, SUSPENDED, WAITING)
from simengine.local.profile import replan_queue
from simengine.local.schema import PYTHON_TWINS
from simengine.registry import LOCAL_SCHEDULERS
from simengine.preemption import PreemptionMode, victim_choice
from simengine.schedulers.base import planned_end  # noqa: F401  (re-exported: the kernels' rule)
from simengine.schedulers.conservative import compress, job_classes

INF = math.inf
NAN = math.nan

POLICIES = ("fcfs", "easy", "conservative")

#: event times between two on_step calls of ClusterSim.run
STEP_EVENTS = 2048


@dataclass
class AdvanceReservation:
    """An advance reservation on one cluster, as the simulator sees it (times in seconds).

    ``est``/``lft`` give a relaxed reservation's frame (None: rigid); ``job_runtime`` the
    run time of the job using it (None: no job). After the run, ``status`` is AR_DONE (or
    AR_ACTIVE/AR_ACCEPTED when the run stopped first) or AR_REJECTED, ``start``/``end`` the
    granted window and ``procs`` the processors it held.
    """

    index: int
    processors: int
    start: float
    end: float
    request_time: float = 0.0
    est: float | None = None
    lft: float | None = None
    job_runtime: float | None = None
    status: int = AR_PENDING
    procs: tuple = ()
    note: str = ""
    asked_start: float = field(default=NAN)
    #: an outage (simengine.local.failures): core.DOWN_REQUEUE or DOWN_LOSE, on processors
    #: ``first`` .. ``first + processors - 1``; 0 (AR_RESERVATION): an advance reservation
    outage: int = 0
    first: int = -1
    #: processors it did not get or lost to an outage (a broken reservation when > 0)
    broken: int = 0

    @property
    def length(self) -> float:
        return self.end - self.start

    @property
    def relaxed(self) -> bool:
        return self.lft is not None




def _simple_form(python: type) -> bool:
    """Does the policy act only through ``schedule`` (when jobs wait and processors are free)?
    (Read from the class's kind: simengine.policy imports this module.)"""
    kind = next(b for b in python.__mro__ if "kind_registry" in vars(b))
    return "schedule" in kind.kind_methods and all(
        getattr(python, m) is getattr(kind, m) for m in kind.__mro__[1].kind_methods)


class ClusterSim:
    """Simulate one cluster.

    Parameters
    ----------
    processors : int
        Processors of the cluster.
    policy : str
        ``fcfs``, ``easy`` or ``conservative``.
    submit, runtime, estimate, size : arrays
        The cluster's jobs sorted by submit time (run times at the cluster's speed).
    priority : array, optional
        Queue priority per job (default all 0).
    reservations : list of AdvanceReservation, optional
        Updated in place as the run goes (status, granted window, processors, note).
    mode : PreemptionMode, optional
        The cluster's preemption mode (default none).
    overrun_step : float
        Plan extension for jobs outliving their estimate (BackfillParams.overrun_step).
    horizon : float
        No event after this time is handled.
    outages : list of AdvanceReservation, optional
        Down intervals (``outage`` set; simengine.local.failures): seen by every policy as
        reservations nobody may refuse, requested at their start.
    cancel : array, optional
        When each job is cancelled (inf or NaN: never; not before its submission): waiting, it
        leaves the queue; running, it is killed; it ends CANCELLED (docs/traces.md, "Cancelled jobs").
    victims : PolicyRef, dict, str or None
        The cluster's victim choice (simengine.preemption; None: the built-in order). A Python one
        with fcfs or easy runs their plain-Python twin (PYTHON_TWINS), which takes its victims.

    After :meth:`run` (arrays indexed by job): ``first_start``, ``end``, ``state`` (DONE, KILLED, CANCELLED,
    or still RUNNING/QUEUED/SUSPENDED/WAITING at the horizon), ``preemptions``, ``lost``
    (seconds of run lost per job), ``resumes``, ``completed`` (jobs that finished their work,
    in the order they did), and ``pieces``: (owner, t0, t1, kind, processor ids) with owner
    ``("j", job)`` or ``("r", reservation index)``; what is still open is in :meth:`open_pieces`.
    """

    def __init__(self, processors: int, policy: str, submit, runtime, estimate, size, priority=None,
                 reservations: list[AdvanceReservation] | None = None, mode: PreemptionMode | None = None,
                 overrun_step: float = 60.0, horizon: float = INF, params=None, python: type | None = None,
                 victims=None, outages: list[AdvanceReservation] | None = None, cancel=None):
        choice = victim_choice(victims)  # (None: the core's own order)
        if python is None and policy in POLICIES and choice is not None:
            # the compiled passes take victims in the core's order: with a Python victim choice the
            # pass's plain-Python twin runs instead (the same schedules; it asks cluster.victims)
            if policy not in PYTHON_TWINS:
                raise ValueError(f"victim choice {choice[0].name!r}: the {policy} scheduler has no plain-Python twin "
                                 f"yet; a Python victim choice needs {', '.join(PYTHON_TWINS)} or a Python scheduler")
            # (by name: simengine.parts registers the twins; importing them here would make the
            # engine import the policy API, which imports the engine)
            python = LOCAL_SCHEDULERS.get(PYTHON_TWINS[policy]).implementation.policy
            if isinstance(params, BaseModel):
                params = params.model_dump()
        if python is None and policy not in POLICIES:
            entry = LOCAL_SCHEDULERS.get(policy) if policy in LOCAL_SCHEDULERS else None
            python = getattr(entry.implementation, "policy", None) if entry else None
            if python is None:
                raise ValueError(f"unknown policy {policy!r}; known: "
                                 f"{', '.join(LOCAL_SCHEDULERS.with_capability('event_driven'))}")
            params = entry.validated(params)
        elif python is not None and not isinstance(params, BaseModel):
            params = python.Params.model_validate(params or {})
        self.P = int(processors)
        self.policy = policy
        # before the core loads: it then calls these hot loops' own objects (simengine.jit)
        load_own_copies(compress, replan_queue)
        submit = np.asarray(submit, np.float64)
        runtime = np.asarray(runtime, np.float64)
        estimate = self._estimate = np.asarray(estimate, np.float64)
        size = np.asarray(size, np.int64)
        n = self.n = len(submit)
        if n > 1 and np.any(np.diff(submit) < 0):
            raise ValueError("jobs must be sorted by submit time")
        if n and (size.max() > self.P or size.min() < 1):
            raise ValueError(f"job sizes must be within 1..{self.P}")
        prio = np.asarray(priority, np.int64) if priority is not None else np.zeros(n, np.int64)
        if cancel is not None:
            cancel = np.asarray(cancel, np.float64)
            if cancel.shape != submit.shape:
                raise ValueError(f"cancel has {cancel.size} entries, expected one per job ({n})")
            if np.any(cancel < submit):
                raise ValueError("a job cannot be cancelled before its submission")
            cancel = np.where(np.isnan(cancel), INF, cancel)
        # in request order (the core's positions): an outage after the reservations asked at its start
        self.ars = sorted((reservations or []) + (outages or []), key=lambda r: (r.request_time, r.outage > 0, r.index))
        for r in self.ars:
            r.asked_start = r.start
        self.mode = mode or PreemptionMode("none", False, False, False)
        step = float(overrun_step)
        cons = policy == "conservative"
        # planned durations: conservative plans a job asking for no time but running as one step
        plan0 = np.where(cons & (estimate == 0) & (runtime > 0), step, estimate) if n else estimate
        classes = job_classes(size, plan0.copy()) if cons and n else (
            np.zeros(n, np.int64), np.zeros(0, np.int64), np.zeros(0))
        a = self.ars
        nan = math.nan
        self._state, arrays = core.new_state(
            self.P, core.EXTERNAL if python is not None else POLICIES.index(policy), step, float(horizon), self.mode.preempts, self.mode.restarts,
            self.mode.resumes, self.mode.overhead, submit, runtime, size, prio, plan0, classes,
            [r.processors for r in a], [r.start for r in a], [r.end for r in a], [r.request_time for r in a],
            [r.est if r.est is not None else nan for r in a], [r.lft if r.lft is not None else nan for r in a],
            [r.job_runtime if r.job_runtime is not None else nan for r in a],
            lazy=python is not None and _simple_form(python),
            ar_down=[r.outage for r in a], ar_first=[max(r.first, 0) for r in a], cancel=cancel)
        self._a = arrays
        self.first_start, self.end, self.state = arrays["first_start"], arrays["end"], arrays["state"]
        self.preemptions, self.resumes, self.lost = arrays["preemptions"], arrays["resumes_n"], arrays["lost"]
        #: per job: how often an outage killed it
        self.failures = arrays["failures"]
        self.run_start, self.susp_at = arrays["run_start"], arrays["susp_at"]
        self._pieces: list[tuple] = []
        self._read()
        #: the Python policy deciding (simengine.local.external), None for a compiled one
        self.external = None if python is None else Cluster(self, python, params, self.mode, choice)

    # ---- what the core holds, as Python ---------------------------------------------------------

    def _read(self) -> None:
        (self._pc_owner, self._pc_t0, self._pc_t1, self._pc_kind, self._pc_off, self._pc_len, self._npc,
         self._pool, queue, self.qn, running, nrun, self._ncomp, self.finished, self._arrived,
         self._report_t) = core.buffers(self._state)
        if getattr(self, "external", None) is not None:  # a Python policy keeps the queue
            self.qn = len(self.external.queue)
        self._queue = queue
        self._running = running[:nrun]
        a, st = self._a, self._a["ar_status"]
        for k, r in enumerate(self.ars):  # the reservations as the caller gave them, updated
            r.status = int(st[k])
            r.start, r.end = float(a["ar_start"][k]), float(a["ar_end"][k])
            if r.status in (AR_ACTIVE, AR_DONE):
                r.procs = self._procs_at(int(a["ar_off"][k]), int(a["ar_held"][k]))
            r.broken = int(a["ar_broken"][k])
            if r.status == AR_REJECTED and not r.note:
                at = float(a["ar_at"][k])
                r.note = (f"rejected at {at:g}: {r.processors} processors are not free over [{r.start:g}, {r.end:g})"
                          if not r.relaxed else
                          f"rejected at {at:g}: {r.processors} processors for {r.length:g} s do not fit in "
                          f"[{r.start:g}, {r.lft:g}]")

    def _procs_at(self, off: int, k: int) -> tuple:
        return tuple(self._pool[off:off + k].tolist())

    @property
    def pieces(self) -> list[tuple]:
        """The closed pieces so far, in the order they closed (a reservation's own job: when its
        window opened)."""
        k = slice(len(self._pieces), self._npc)
        self._pieces += self._tuples(self._pc_owner[k], self._pc_t0[k], self._pc_t1[k], self._pc_kind[k],
                                     self._pc_off[k], self._pc_len[k])
        return self._pieces

    def _tuples(self, owner, t0, t1, kind, off, length) -> list[tuple]:
        """Pieces as (owner, t0, t1, kind, processor ids) tuples, owner ("j", job), ("r", index) or
        ("d", outage index)."""
        return [(("j", o) if o >= 0 else ("d" if self.ars[-1 - o].outage else "r", self.ars[-1 - o].index), a, b, k,
                 self._procs_at(f, m))
                for o, a, b, k, f, m in zip(owner.tolist(), t0.tolist(), t1.tolist(), kind.tolist(), off.tolist(),
                                             length.tolist())]

    def _open(self) -> tuple[np.ndarray, ...]:
        """What is in progress now, as the core's piece columns (owner, t0, t1, kind, offset in the
        processor pool, count): running jobs and suspended jobs' gaps in the order they started or
        by job (t1 unknown: NaN), then open reservation windows (until their end)."""
        a = self._a
        run = np.array(self.running, np.int64)
        sus = np.array(self.suspended, np.int64)
        act = np.array([k for k, r in enumerate(self.ars) if r.status == AR_ACTIVE], np.int64)
        return (np.concatenate([run, sus, -1 - act]),
                np.concatenate([a["run_start"][run], a["susp_at"][sus], a["ar_start"][act]]),
                np.concatenate([np.full(len(run) + len(sus), NAN), a["ar_end"][act]]),
                np.concatenate([np.full(len(run), core.KIND_RUN, np.int64),
                                np.full(len(sus), core.KIND_SUSPENDED, np.int64),
                                np.where(a["ar_down"][act] > 0, core.KIND_DOWN, core.KIND_RESERVATION)]),
                np.concatenate([a["off"][run], a["off"][sus], a["ar_off"][act]]),
                np.concatenate([a["size"][run], a["size"][sus], a["ar_held"][act]]))

    @property
    def queue(self) -> list[int]:
        """Queued job ids in queue order."""
        if self.external is not None:
            return [job.id for job in self.external.queue]
        return self._queue.tolist()

    @property
    def running(self) -> list[int]:
        """Running jobs, in the order they started."""
        seq = self._a["run_seq"]
        return sorted(self._running.tolist(), key=lambda j: seq[j])

    @property
    def suspended(self) -> list[int]:
        return np.flatnonzero(self.state == SUSPENDED).tolist()

    @property
    def completed(self) -> np.ndarray:
        return self._a["comp"][:self._ncomp]

    def open_pieces(self) -> list[tuple]:
        """What is in progress now, as :attr:`pieces` lists pieces (t1 NaN: still running or suspended)."""
        return self._tuples(*self._open())

    def piece_table(self, start: int = 0, closed: bool = True, still_open: bool = False) -> dict[str, np.ndarray]:
        """Pieces as arrays, in the order of :attr:`pieces` (from piece ``start`` on, when
        ``closed``) then of :meth:`open_pieces` (when ``still_open``): ``job`` (-1 for a
        reservation), ``reservation`` (its index, -1 for a job), ``outage`` (its index, -1 for the
        others), ``t0``, ``t1`` (NaN: open),
        ``kind``, ``count`` (processors), and per block of consecutive processor ids ``block_piece``
        (the piece's row), ``block_first``, ``block_count``. Built with numpy, no Python per piece."""
        columns = []
        if closed:
            k = slice(start, self._npc)
            columns.append((self._pc_owner[k], self._pc_t0[k], self._pc_t1[k], self._pc_kind[k], self._pc_off[k],
                            self._pc_len[k]))
        if still_open:
            columns.append(self._open())
        owner, t0, t1, kind, off, length = (list(c) for c in zip(*columns)) if columns else ([],) * 6
        cat = lambda parts, dtype: np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)  # noqa: E731
        owner, off, length = cat(owner, np.int64), cat(off, np.int64), cat(length, np.int64)
        index = np.array([-1 if r.outage else r.index for r in self.ars] + [-1], np.int64)
        down = np.array([r.index if r.outage else -1 for r in self.ars] + [-1], np.int64)
        out = {"job": np.where(owner >= 0, owner, -1),
               "reservation": np.where(owner < 0, index[np.where(owner < 0, -1 - owner, -1)], -1),
               "outage": np.where(owner < 0, down[np.where(owner < 0, -1 - owner, -1)], -1),
               "t0": cat(t0, np.float64), "t1": cat(t1, np.float64), "kind": cat(kind, np.int64), "count": length}
        # every piece's processor ids (the core hands them out in ascending order), then the runs
        # of consecutive ids within a piece
        m, total = len(owner), int(length.sum())
        piece = np.repeat(np.arange(m), length)
        begin = np.cumsum(length) - length
        procs = self._pool[np.arange(total) - np.repeat(begin, length) + np.repeat(off, length)]
        new = np.ones(total, np.bool_)
        new[1:] = (procs[1:] != procs[:-1] + 1) | (piece[1:] != piece[:-1])
        first = np.flatnonzero(new)
        out["block_piece"] = piece[first]
        out["block_first"] = procs[first]
        out["block_count"] = np.diff(np.append(first, total))
        return out

    # ---- the main loop --------------------------------------------------------------------------

    def run(self, on_step: Callable[[float, float], None] | None = None, until: float = INF) -> "ClusterSim":
        """Simulate until nothing is left to happen or the horizon; ``on_step(fraction of the
        jobs arrived, now)`` is called every STEP_EVENTS event times (progress of a long run).
        With ``until``: stop before the first event at or after it (call again to go on; the
        live Gantt advances every cluster slice by slice). ``finished`` says nothing is left."""
        every = STEP_EVENTS if on_step is not None else 0
        fresh = True
        state, until, external = self._state, float(until), self.external
        advance = core.advance if external is None else external.advance
        # A Python policy allocates as it decides (its view's jobs live for the run), and each
        # of the collector's full passes would walk every object the process already had --
        # a tenth of a Python policy's run time in a process that has run a few before. The
        # objects older than the run are set aside meanwhile (gc.freeze; collected as usual after).
        if external is not None:
            gc.freeze()
        try:
            while True:
                code = advance(state, until, every, fresh)
                fresh = False
                if code == core.DECIDE:
                    external.decide()
                elif code == core.REPORT_DUE:
                    self._read()
                    on_step(self._arrived / self.n if self.n else 1.0, float(self._report_t))
                else:
                    break
        finally:
            if external is not None:
                gc.unfreeze()
        self._read()
        return self
