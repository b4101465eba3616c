"""A Python policy as the scheduling pass of the event core (simengine.local.core, EXTERNAL).

The core handles an instant's events (completions, reservation requests and windows, the
preemptions a window forces, arrivals, timers) and stops with DECIDE; :class:`Cluster` reads what
happened from the core's event log, keeps the policy's view of the queue and the running jobs up to
date, tells the policy (its ``on_*`` callbacks, then ``decide``) and carries out what it asks
(``start``, ``reject``, ``kill``, ``requeue``, ``suspend``, ``wake_me_up_at``) through the core's
``act_*`` functions, so every rule of the cluster (processors, reservations outranking jobs,
preemption overheads, the pieces of the Gantt) is the core's, whoever decides.

Views are kept incrementally (no scan of the queue per event): the queue is a list in queue
order -- higher priority first, suspended before queued at equal priority, then submit order --
that arrivals are appended to (or inserted in, with priorities) and started jobs taken out of.
"""
from __future__ import annotations

import functools
import math
from bisect import bisect_left
from typing import TYPE_CHECKING

import numba
import numpy as np

from simengine.local import core
from simengine.local.core import AR_ACCEPTED, AR_ACTIVE, LOG_CANCELLED, LOG_END, LOG_PREEMPTED, LOG_SUBMIT, LOG_TIMER
from simengine.preemption import PreemptionMode, VictimChoice, ordered_victims
from simengine.policy_types import Job, PolicyError, Profile, policy_raised  # noqa: F401  (Profile: read from here too)

if TYPE_CHECKING:
    from simengine.local.cluster import AdvanceReservation, ClusterSim

_NO_PROCESSORS = np.zeros(0, np.int64)
_NFREE = core.CTL_NFREE
#: how act_* refusals read
_WHY = {
    core.ACT_NOT_WAITING: "it is not waiting",
    core.ACT_TOO_FEW_FREE: "fewer processors are free than it needs",
    core.ACT_BAD_PROCESSORS: "the processors are not {size} distinct processor ids of the cluster",
    core.ACT_BUSY_PROCESSORS: "a processor it was given is not free (or was named twice)",
    core.ACT_OWN_PROCESSORS: "a suspended job resumes on its own processors, and they are not all free",
    core.ACT_NOT_RUNNING: "it is not running",
    core.ACT_PAST: "that time has passed",
}
#: the status of a job the core preempted, as the policy reads it
_STATUS = {core.QUEUED: "waiting", core.SUSPENDED: "suspended", core.KILLED: "killed"}


def _compiled(function, *args):
    """A cached property: ``function`` compiled for (the cluster's state, arguments of the types of
    ``args``), called without numba's dispatch (the arguments must then have exactly those types)."""
    def bind(self):
        return function.compile((numba.typeof(self._state), *(numba.typeof(a) for a in args)))
    return functools.cached_property(bind)


class Cluster:
    """What an event-API policy sees of its cluster and how it acts on it (``self.cluster``).

    Attributes
    ----------
    processors : int
        The cluster's processors (ids 0 .. processors - 1).
    now : float
        The current simulated time.
    free : int
        Idle processors now (those of open reservation windows are not idle); kept up to date
        as the policy acts.
    queue : list of Job
        The waiting jobs (suspended ones too), in queue order; read it, do not change it.
    running : dict of job id -> Job
        The running jobs, in the order they started.
    reservations : list of AdvanceReservation
        The cluster's advance reservations (``status``: simengine.local.cluster's AR_* codes,
        ``start``/``end`` the granted window, ``processors`` the count held).
    sizes, plans, priorities : numpy arrays, by job id
        Every job's processors, planned duration (its estimate; after a preemption what is left
        of it plus the overhead) and priority: with :meth:`waiting_ids`, what a policy scanning a
        long queue with numpy reads (read-only; index them with arrived jobs' ids: the entries of
        jobs yet to arrive are there too, but not the policy's to know).
    """

    def __init__(self, sim: "ClusterSim", policy_class: type, params, mode: PreemptionMode,
                 victims: tuple[type[VictimChoice], object] | None = None):
        self._sim = sim
        self._state = sim._state
        a = sim._a
        self.processors = sim.P
        self.now = -math.inf
        self.free = sim.P  # (read from the core at every decision and after every action)
        self.queue: list[Job] = []
        self._keys: list[tuple] = []  # (the queue's jobs' keys, in the same order: bisected without a key function)
        self.running: dict[int, Job] = {}
        self.reservations: list[AdvanceReservation] = sim.ars
        self._ahead_until: float | None = None  # (reservations_ahead: the last window's end)
        #: the scenario's preemption mode (simengine.preemption): what ``preempt`` does, and the
        #: overhead ``requeue`` and ``suspend`` add
        self.preemption = mode
        self._jobs: list[Job | None] = [None] * sim.n
        self._submit, self._size = a["submit"].tolist(), a["size"].tolist()
        self._estimate = sim._estimate.tolist()
        self._prio = a["prio"].tolist()
        self._plain = not any(self._prio)  # no priorities: arrivals append to the queue
        self._pplan, self._state_arr, self._off = a["pplan"], a["state"], a["off"]
        self._log_kind, self._log_id, self._ctl = a["log_kind"], a["log_id"], a["ctl"]
        self._decide_t, self._end = a["decide_t"], a["end"]
        self._qbuf = a["qbuf"]
        self.sizes, self.plans, self.priorities = _read_only(a["size"]), _read_only(a["pplan"]), _read_only(a["prio"])
        #: the cluster's victim choice when it is written in Python (None: the core's own order)
        self._victims = None if victims is None else victims[0](victims[1], self)
        self.name = policy_class.name
        self.policy = policy_class.create(params, self)
        # a callback is called when the policy's classes define it: not the empty default of the root
        base = next(b for b in reversed(type(self.policy).__mro__) if "on_submit" in vars(b))
        own = lambda m: getattr(type(self.policy), m) is not getattr(base, m)  # noqa: E731
        p = self.policy
        self._on_submit = p.on_submit if own("on_submit") else None
        self._on_complete = p.on_complete if own("on_complete") else None
        self._on_preempted = p.on_preempted if own("on_preempted") else None
        self._on_reservation = p.on_reservation if own("on_reservation") else None
        self._on_timer = p.on_timer if own("on_timer") else None
        self._on_cancelled = p.on_cancelled if own("on_cancelled") else None

    # ---- what the policy reads ------------------------------------------------------------------

    def waiting_ids(self) -> np.ndarray:
        """The waiting jobs' ids in queue order (those of ``queue``), as a numpy array: a view of
        the core's queue, valid until the queue next changes (copy it before starting jobs)."""
        ctl = self._ctl
        qh = int(ctl[core.CTL_QH])
        return self._qbuf[qh:qh + int(ctl[core.CTL_QN])]

    def job(self, job_id: int) -> Job:
        """The Job of this id (one that has arrived)."""
        return self._jobs[job_id]

    def allocation(self, job: Job) -> tuple[int, ...]:
        """The processor ids a running (or suspended: its checkpoint's) job holds."""
        off = int(self._off[job.id])
        return tuple(self._sim._pool[off:off + job.size].tolist()) if off >= 0 else ()

    def idle_processors(self) -> np.ndarray:
        """The ids of the idle processors, ascending."""
        self._read_core()
        return np.flatnonzero(self._sim._a["owner"] == -1)

    def profile(self, exclude=(), still_running: bool = False) -> "Profile":
        """The processors expected free from now on (a :class:`Profile`), counting the running jobs
        (but those of ``exclude``) until their planned end -- start + plan, extended by the overrun
        step, then twice as long each time, once outlived; ``still_running``: a job due to end now
        counts one step more -- and the accepted reservations over their windows."""
        times, free = self._free_profile(self._state, self.now, bool(still_running), _ids(exclude))
        return Profile(times.tolist(), free.tolist())

    def fit_limits(self, reserve: Job | None = None, after: float | None = None) -> np.ndarray:
        """For p = 0 .. ``free``: until when p processors stay free from now by plan (the running jobs
        until their planned end, as :meth:`profile` counts them, and the accepted reservations), as
        a float array ``lim``: a job of p processors and plan d > 0 may start now and run its plan
        iff ``now + d <= lim[p]`` (inf: for ever; -inf: not even now). With ``reserve`` (a waiting
        job), that job is first held at its earliest fit at or after ``after`` (default: now; a
        suspended job, when its own processors are free): what a backfilling scheduler reads to
        start jobs without delaying it. Computed by the engine, as its own EASY does."""
        return self._backfill_limits(self._state, self.now, -1 if reserve is None else reserve.id,
                                     math.nan if after is None else float(after))

    def reservations_ahead(self) -> bool:
        """Is an accepted or open reservation window not over yet (so a job's estimate may run into
        one)?"""
        until = self._ahead_until
        if until is None:  # (recomputed after the reservations change)
            until = self._ahead_until = max((r.end for r in self.reservations if r.status in (AR_ACCEPTED, AR_ACTIVE)),
                                            default=-math.inf)
        return self.now < until

    def own_processors_free(self, job: Job, exclude=()) -> bool:
        """Are suspended ``job``'s processors (its checkpoint's) free -- counting those of the running
        jobs of ``exclude`` as freed?"""
        return bool(self._own_free(self._state, job.id, _ids(exclude)))

    def own_processors_free_each(self, ids: np.ndarray) -> np.ndarray:
        """For the jobs of ``ids`` (e.g. some of :meth:`waiting_ids`), as a bool array: is each one
        either not suspended or suspended with its own processors free (may it start now)?"""
        return self._own_free_each(self._state, np.ascontiguousarray(ids, np.int64))

    def own_processors_free_at(self, job: Job) -> float:
        """When every processor of suspended ``job`` is expected to be free, by plan."""
        return self._own_free_at(self._state, job.id, self.now)

    def victims(self, priority: "int | Job | None" = None) -> list[Job]:
        """The running jobs that may be preempted for a job of ``priority`` (None: any; or the
        waiting Job itself), in the cluster's victim order -- the scenario's ``victims``; by
        default the built-in one: lowest priority first, then the newest start, then the order they
        started in (jobs ending at this very instant are left out). A Python victim choice is told
        the job to start: the one given, or else the first waiting job of ``priority`` (the job the
        built-in passes preempt for); it may leave candidates out."""
        preemptor = priority if isinstance(priority, Job) else None
        if preemptor is not None:
            priority = preemptor.priority
        below = np.iinfo(np.int64).max if priority is None else int(priority)
        ids = self._victims_of(self._state, self.now, below).tolist()
        if self._victims is None:
            return [self.running[j] for j in ids]
        if preemptor is None and priority is not None:
            preemptor = next((job for job in self.queue if job.priority == priority), None)
        ok = set(ids)
        return ordered_victims(self._victims, self.now, preemptor,
                               [job for j, job in self.running.items() if j in ok])  # (in start order)

    def preempt(self, job: Job) -> None:
        """Preempt running ``job`` as the cluster's preemption mode says (``preemption``: suspend,
        requeue, or kill -- also when the mode is none)."""
        mode = self.preemption
        (self.suspend if mode.resumes else self.requeue if mode.restarts else self.kill)(job)

    # ---- what the policy does -------------------------------------------------------------------

    def start(self, job: Job, processors=None) -> None:
        """Start waiting ``job`` now: on ``processors`` (ids; None: the lowest idle ones -- a
        suspended job always resumes on its own)."""
        if processors is None:
            procs = _NO_PROCESSORS
        else:
            procs = np.ascontiguousarray(processors, np.int64).ravel()
            if len(np.unique(procs)) != len(procs):
                self._refused("start", job, "a processor is named twice")
        why = self._act_start(self._state, job.id, self.now, procs)
        if why:
            self._refused("start", job, _WHY[why].format(size=job.size))
        self.free = int(self._ctl[_NFREE])
        self._dequeue(job)
        job.start = self.now
        job.status = "running"
        job.plan = float(self._pplan[job.id])
        self.running[job.id] = job

    def reject(self, job: Job) -> None:
        """Waiting ``job`` never runs (status ``rejected``)."""
        if job.status != "waiting":
            self._refused("reject", job, "only a waiting job that never ran can be rejected")
        why = core.act_reject(self._state, job.id, self.now)
        if why:
            self._refused("reject", job, _WHY[why])
        self._dequeue(job)
        job.status = "rejected"

    def kill(self, job: Job) -> None:
        """Running ``job`` ends now (status ``killed``); the part it ran is lost."""
        self._preempt(job, 0)
        job.status = "killed"

    def requeue(self, job: Job) -> None:
        """Running ``job`` stops now and waits again; it restarts from scratch (plus the cluster's
        preemption overhead)."""
        self._preempt(job, 1)
        job.status = "waiting"
        self._enqueue(job)

    def suspend(self, job: Job) -> None:
        """Running ``job`` stops now and keeps its processors' checkpoint: started again it resumes
        on the same processors, for its remaining time plus the cluster's preemption overhead."""
        self._preempt(job, 2)
        job.status = "suspended"
        self._enqueue(job)

    def wake_me_up_at(self, time: float) -> None:
        """Call ``on_timer`` (and ``decide``) at ``time`` (not before now)."""
        if core.act_timer(self._state, float(time), self.now):
            raise PolicyError(f"{self.name}: at t={self.now:g} it asked to be woken at {time:g}, in the past")

    # ---- the engine's side ----------------------------------------------------------------------

    # The core's functions the policy calls most, bound once to their compiled code for this
    # cluster's state: numba's dispatcher types every argument of every call first (about 0.6 of
    # the 1.3-2 µs a call costs; a policy on a long queue makes several per decision).
    _free_profile = _compiled(core.free_profile, 0.0, False, _NO_PROCESSORS)
    _backfill_limits = _compiled(core.backfill_limits, 0.0, 0, 0.0)
    _own_free_each = _compiled(core.own_free_each, _NO_PROCESSORS)
    _own_free_at = _compiled(core.own_free_at, 0, 0.0)
    _act_start = _compiled(core.act_start, 0, 0.0, _NO_PROCESSORS)
    _own_free = _compiled(core.own_free, 0, _NO_PROCESSORS)
    _victims_of = _compiled(core.victims, 0.0, 0)
    #: the core's loop (ClusterSim.run calls it once per decision)
    advance = _compiled(core.advance, 0.0, 0, False)

    def _read_core(self) -> None:
        """The core's arrays read into the cluster (reservations' statuses and windows too): what
        reservations_ahead keeps is computed again."""
        self._sim._read()
        self._ahead_until = None

    def _refused(self, what: str, job: Job, why: str):
        raise PolicyError(f"{self.name}: at t={self.now:g} it asked to {what} job {job.id} "
                          f"({job.size} processors, {self.free} free): {why}")

    def _preempt(self, job: Job, how: int) -> None:
        if self.running.get(job.id) is not job:
            self._refused(("kill", "requeue", "suspend")[how], job, "it is not running")
        core.act_preempt(self._state, job.id, self.now, how)
        self.free = int(self._ctl[_NFREE])
        del self.running[job.id]
        job.start = math.nan
        job.plan = float(self._pplan[job.id])

    def _enqueue(self, job: Job) -> None:
        q, keys = self.queue, self._keys
        key = job.key = (-job.priority, 0 if job.status == "suspended" else 1, job.id)
        if not q or keys[-1] < key:
            q.append(job)
            keys.append(key)
        else:
            i = bisect_left(keys, key)
            q.insert(i, job)
            keys.insert(i, key)

    def _dequeue(self, job: Job) -> None:
        q = self.queue
        if q and q[0] is job:
            del q[0]
            del self._keys[0]
        else:
            i = bisect_left(self._keys, job.key)
            del q[i]
            del self._keys[i]

    def decide(self) -> None:
        """The core stopped with DECIDE: read its log, tell the policy, let it act."""
        ctl = self._ctl
        n = int(ctl[core.CTL_NLOG])
        ctl[core.CTL_NLOG] = 0
        ctl[core.CTL_TIMER_LOGGED] = 0
        now = self.now = float(self._decide_t[0])
        self.free = int(ctl[_NFREE])
        submitted, ended, preempted, changed, cancelled = [], [], [], [], []
        timer = False
        running, jobs = self.running, self._jobs
        for kind, i in zip(self._log_kind[:n].tolist(), self._log_id[:n].tolist()):  # (usually one or two)
            if kind == LOG_SUBMIT:
                job = jobs[i] = Job(i, self._submit[i], self._size[i], self._estimate[i], self._prio[i])
                if self._plain:
                    job.key = key = (0, 1, i)
                    self.queue.append(job)
                    self._keys.append(key)
                else:
                    self._enqueue(job)
                submitted.append(job)
            elif kind == LOG_END:
                job = running.pop(i)
                job.status, job.end = "done", float(self._end[i])
                ended.append(job)
            elif kind == LOG_PREEMPTED:
                job = running.pop(i)
                job.start = math.nan
                job.plan = float(self._pplan[i])
                job.status = _STATUS[int(self._state_arr[i])]
                if job.status != "killed":
                    self._enqueue(job)
                preempted.append(job)
            elif kind == LOG_TIMER:
                timer = True
            elif kind == LOG_CANCELLED:  # the user withdrew it (waiting) or killed it (running)
                job = jobs[i]
                if running.pop(i, None) is None:
                    self._dequeue(job)
                job.status, job.end = "cancelled", float(self._end[i])
                cancelled.append(job)
            else:
                changed.append((i, kind))
        if changed:
            self._read_core()  # the reservations' windows and statuses
        p = self.policy
        try:
            if submitted and self._on_submit:
                p.on_submit(now, submitted)
            if ended and self._on_complete:
                p.on_complete(now, ended)
            if cancelled and self._on_cancelled:
                p.on_cancelled(now, cancelled)
            if preempted and self._on_preempted:
                p.on_preempted(now, preempted)
            if changed and self._on_reservation:
                for r, kind in changed:
                    p.on_reservation(now, self._sim.ars[r], _AR_EVENT[kind])
            if timer and self._on_timer:
                p.on_timer(now)
            p.decide(now)
        except PolicyError:
            raise
        except Exception as exc:  # noqa: BLE001 - the researcher's code: any failure
            raise policy_raised(self.name, f"a call at t={now:g} ({len(self.queue)} waiting, {self.free} "
                                           f"processors free)", exc) from exc


def _read_only(a: np.ndarray) -> np.ndarray:
    view = a.view()
    view.flags.writeable = False
    return view


def _ids(jobs) -> np.ndarray:
    return np.fromiter((j.id for j in jobs), np.int64) if jobs else _NO_PROCESSORS


#: what on_reservation is told
_AR_EVENT = {core.LOG_AR_ACCEPTED: "accepted", core.LOG_AR_REJECTED: "rejected", core.LOG_AR_MOVED: "moved",
             core.LOG_AR_START: "started", core.LOG_AR_END: "ended"}
