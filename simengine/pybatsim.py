"""pybatsim's scheduler shape on GridWeb's event API (docs/write-a-policy.md, "pybatsim").

A scheduler written for pybatsim's low-level API (``batsim.batsim.BatsimScheduler``: callbacks
``onJobSubmission``, ``onJobCompletion``, ``onNoMoreEvents`` ..., actions through ``self.bs``:
``execute_jobs`` with each job's ``allocation``, ``reject_jobs``, ``kill_jobs``, ``wake_me_up_at``)
runs here with its import line changed to ``from simengine.pybatsim import BatsimScheduler`` (and
``ProcSet`` from here too, or any iterable of processor ids), a ``name`` and ``@register``.

This is an adapter written for GridWeb, not pybatsim's code: the names are pybatsim's, the
behaviour is GridWeb's event-driven cluster. What differs is listed in docs/write-a-policy.md.
"""
from __future__ import annotations

import math
from typing import Any, Iterable

from simengine.policy import EventScheduler, Job as _Job
from simengine.registry import LOCAL_SCHEDULERS

__all__ = ["BatsimScheduler", "Batsim", "Job", "ProcSet"]


class ProcSet:
    """A set of processor ids, built like pybatsim's ``procset.ProcSet``: from ids and inclusive
    (first, last) intervals, e.g. ``ProcSet((0, 3), 8)`` is {0, 1, 2, 3, 8}."""

    def __init__(self, *parts: int | tuple[int, int]):
        ids: set[int] = set()
        for p in parts:
            if isinstance(p, tuple):
                ids.update(range(p[0], p[1] + 1))
            else:
                ids.add(int(p))
        self._ids = sorted(ids)

    def __iter__(self):
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def __repr__(self) -> str:
        return f"ProcSet({', '.join(map(str, self._ids))})"


class Job:
    """A job as pybatsim shows it: ``id`` ("w0!<index>"), ``submit_time``, ``requested_resources``,
    ``requested_time`` (its estimate), ``allocation`` (set it before ``execute_jobs``; None: GridWeb
    takes the lowest idle processors), ``job_state``, ``start_time``, ``finish_time``, ``profile``
    ("delay") and ``priority``."""

    def __init__(self, job: _Job):
        self._job = job
        self.id = f"w0!{job.id}"
        self.submit_time = job.submit
        self.requested_resources = job.size
        self.requested_time = job.estimate
        self.priority = job.priority
        self.profile = "delay"
        self.allocation: Any = None
        self.job_state = "SUBMITTED"
        self.start_time = math.nan
        self.finish_time = math.nan

    def __repr__(self) -> str:
        return f"<Job {self.id}: {self.requested_resources} res, {self.requested_time:g} s, {self.job_state}>"


class Batsim:
    """What a pybatsim scheduler reaches as ``self.bs``: the time, the platform's size, the jobs,
    and the actions."""

    def __init__(self, cluster, jobs: dict[str, Job]):
        self._cluster = cluster
        self.jobs = jobs
        self.nb_resources = self.nb_res = cluster.processors
        self._killed: list[Job] = []
        self._requested: set[float] = set()

    def time(self) -> float:
        return self._cluster.now

    def execute_jobs(self, jobs: Iterable[Job]) -> None:
        """Start each job now on its ``allocation`` (None: the lowest idle processors)."""
        for job in jobs:
            procs = None if job.allocation is None else list(job.allocation)
            self._cluster.start(job._job, procs)
            job.job_state = "RUNNING"
            job.start_time = self._cluster.now
            if job.allocation is None:
                job.allocation = ProcSet(*self._cluster.allocation(job._job))

    def reject_jobs(self, jobs: Iterable[Job]) -> None:
        for job in jobs:
            self._cluster.reject(job._job)
            job.job_state = "REJECTED"

    def kill_jobs(self, jobs: Iterable[Job]) -> None:
        """Kill running jobs now; the scheduler hears of it through ``onJobsKilled`` right after
        (at the same simulated time), as Batsim answers a kill."""
        for job in jobs:
            self._cluster.kill(job._job)
            job.job_state = "COMPLETED_KILLED"
            job.finish_time = self._cluster.now
            self._killed.append(job)
        self._cluster.wake_me_up_at(self._cluster.now)

    def wake_me_up_at(self, time: float) -> None:
        self._cluster.wake_me_up_at(time)
        self._requested.add(float(time))

    def notify_submission_finished(self) -> None:
        """Nothing to do: GridWeb submits no dynamic jobs."""

    notify_registration_finished = notify_submission_finished


class BatsimScheduler(EventScheduler):
    """Subclass this as in pybatsim (override the ``on*`` callbacks, act through ``self.bs``), add a
    ``name`` and ``@register``. ``self.options`` holds the scenario's scheduler parameters (give a
    ``Params`` model to declare them; without one, none are accepted)."""

    kind_registry = LOCAL_SCHEDULERS
    kind_methods = ("onJobSubmission", "onJobCompletion", "onNoMoreEvents", "onRequestedCall", "onJobsKilled")

    def __init__(self, options: dict | None = None):
        self.options = options or {}

    @classmethod
    def create(cls, params, cluster) -> "BatsimScheduler":
        self = cls(params.model_dump())
        self.cluster = cluster
        self.processors = cluster.processors
        self._jobs: dict[int, Job] = {}
        self.bs = Batsim(cluster, {})
        self.onAfterBatsimInit()
        self.onSimulationBegins()
        return self

    # ---- pybatsim's callbacks (override what you need) -----------------------------------------

    def onAfterBatsimInit(self) -> None: ...

    def onSimulationBegins(self) -> None: ...

    def onJobSubmission(self, job: Job) -> None: ...

    def onJobCompletion(self, job: Job) -> None: ...

    def onJobsKilled(self, jobs: list[Job]) -> None: ...

    def onRequestedCall(self) -> None: ...

    def onNoMoreEvents(self) -> None: ...

    # ---- the event API, translated ---------------------------------------------------------------

    def on_submit(self, now, jobs):
        for j in jobs:
            job = self._jobs[j.id] = Job(j)
            self.bs.jobs[job.id] = job
            self.onJobSubmission(job)

    def on_complete(self, now, jobs):
        for j in jobs:
            job = self._jobs[j.id]
            job.job_state, job.finish_time = "COMPLETED_SUCCESSFULLY", j.end
            self.onJobCompletion(job)

    def on_preempted(self, now, jobs):  # a reservation's window took their processors
        killed = []
        for j in jobs:
            job = self._jobs[j.id]
            job.job_state = "COMPLETED_KILLED" if j.status == "killed" else "SUBMITTED"
            job.allocation = None
            killed.append(job)
        self.onJobsKilled(killed)

    def on_cancelled(self, now, jobs):
        # the trace's users cancelled them (docs/traces.md): Batsim's word is killed; a waiting one
        # was never started (its allocation is what the scheduler left there)
        killed = []
        for j in jobs:
            job = self._jobs[j.id]
            job.job_state, job.finish_time = "COMPLETED_KILLED", now
            killed.append(job)
        self.onJobsKilled(killed)

    def on_timer(self, now):
        bs = self.bs
        if bs._killed:
            killed, bs._killed = bs._killed, []
            self.onJobsKilled(killed)
        if now in bs._requested:
            bs._requested.discard(now)
            self.onRequestedCall()

    def decide(self, now):
        self.onNoMoreEvents()
