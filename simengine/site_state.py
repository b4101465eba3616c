"""Stateful site allocation written in plain Python: a policy that looks at the sites' state at
each decision (docs/policies/site-allocation.md).

A researcher subclasses :class:`StatefulSiteAllocation` and writes ``choose(now, job, sites)``:
called when a grid job arrives, it answers a site index (the job goes there at once) or None
(the job is held in the grid scheduler's FCFS queue). A policy that holds jobs asks for a
wake-up with ``self.wake_at(t)``; at that time the held jobs are offered again, in arrival
order, to ``release(now, job, sites)`` (by default ``choose`` again). ``sites`` shows each
site at ``now`` (:class:`Site`): its processors and speed, when each processor's queue drains,
its remaining work, its running jobs and its queue; a dispatch shows in ``sites`` before the
next call, so a batch sees the jobs sent earlier in it.

The sites are the LWR sites of simengine.grid_lwr, simulated here with the same arithmetic and
the same order of events: at one instant, arrivals first (in submit order), then the held jobs'
release; inside a site a job goes to the first processor with the least remaining work and
starts when that processor's queue drains. So the compiled Deferred and SB-Deferred written
through this API give the compiled pass's schedule bit for bit (tests/simengine/test_policy_site_state.py).
"""
from __future__ import annotations

import heapq
import math
from collections import deque
from typing import Callable, ClassVar

import numpy as np
from pydantic import BaseModel

from simengine.policy import PolicyError, PolicyKind, policy_raised
from simengine.registry import SITE_ALLOCATION

__all__ = ["StatefulSiteAllocation", "Site", "SiteJob"]


class SiteJob:
    """A grid job as a stateful site-allocation policy sees it: ``id`` (its index among the
    replication's jobs, in submit order), ``submit``, ``size`` (processors), ``estimate``
    (requested time), ``work`` (its service demand: the policy is clairvoyant, as LWR is; a run
    takes ``work / speed`` of its site). Once dispatched: ``site``, ``processor`` (within the
    site), ``dispatch`` (when it left the grid scheduler), ``start`` and ``end`` (planned: LWR
    knows them when it queues the job); before, ``site`` is -1 and the times NaN."""

    __slots__ = ("id", "submit", "size", "estimate", "work", "site", "processor", "dispatch", "start", "end")

    def __init__(self, id: int, submit: float, size: int, estimate: float, work: float):
        self.id, self.submit, self.size, self.estimate, self.work = id, submit, size, estimate, work
        self.site = self.processor = -1
        self.dispatch = self.start = self.end = math.nan

    def __repr__(self) -> str:
        return f"SiteJob(id={self.id}, submit={self.submit}, size={self.size}, work={self.work})"


class Site:
    """One site at the moment of a decision (``now``): ``index``, ``name``, ``processors``,
    ``speed``; ``free_at`` (when each processor's queue drains: the planned end of its last job;
    at or before ``now``: idle), ``remaining_work`` (the work queued and running there, in
    seconds of its processors, summed in processor order as the compiled pass sums it),
    ``idle`` (processors with nothing to do), ``running`` and ``queue`` (its jobs, :class:`SiteJob`)."""

    __slots__ = ("index", "name", "processors", "speed", "_free_at", "_jobs", "_engine")

    def __init__(self, index: int, name: str, processors: int, speed: float, engine: "_Engine"):
        self.index, self.name, self.processors, self.speed = index, name, processors, speed
        self._free_at = [-math.inf] * processors
        self._jobs = [deque() for _ in range(processors)]  # per processor: its jobs not known to be over
        self._engine = engine

    @property
    def now(self) -> float:
        return self._engine.now

    @property
    def free_at(self) -> tuple[float, ...]:
        return tuple(self._free_at)

    @property
    def remaining_work(self) -> float:
        now = self._engine.now
        rem = 0.0
        for f in self._free_at:  # a plain loop: the compiled pass's order (3.12's sum() compensates)
            if f > now:  # (adding max(0, f - now), without the call)
                rem += f - now
        return rem

    @property
    def idle(self) -> int:
        now = self._engine.now
        return sum(1 for f in self._free_at if f <= now)

    def _current(self) -> list[deque]:
        now = self._engine.now
        for jobs in self._jobs:
            while jobs and jobs[0].end <= now:
                jobs.popleft()
        return self._jobs

    @property
    def running(self) -> list[SiteJob]:
        """The jobs running at ``now`` (at most one per processor), by processor."""
        now = self._engine.now
        return [jobs[0] for jobs in self._current() if jobs and jobs[0].start <= now]

    @property
    def queue(self) -> list[SiteJob]:
        """The jobs queued at ``now`` (dispatched here, not started), in dispatch order."""
        now = self._engine.now
        waiting = [job for jobs in self._current() for job in jobs if job.start > now]
        waiting.sort(key=lambda job: (job.dispatch, job.id))
        return waiting

    def __repr__(self) -> str:
        return f"Site(index={self.index}, name={self.name!r}, processors={self.processors}, speed={self.speed})"


class StatefulSiteAllocation(PolicyKind):
    """Subclass this, set ``name`` (``Params``, ``summary``) and write :meth:`choose` (and, for a
    policy that holds jobs, :meth:`release`). One instance allocates the grid jobs of one
    replication: it may keep state. ``self.processors`` and ``self.speed`` per site; ``rng``
    is the replication's generator for the grid scheduler: draw from it, never from a global one."""

    kind_registry = SITE_ALLOCATION
    kind_methods = ("choose",)
    capabilities: ClassVar[tuple[str, ...]] = ("stateful",)

    @classmethod
    def implementation_of(cls, policy: type) -> object:
        return PythonStatefulSiteAllocation(policy)

    @classmethod
    def capabilities_of(cls, policy: type) -> tuple[str, ...]:
        # stateful whatever the subclass declares: that is what sends it to the simulation with the sites
        return tuple(dict.fromkeys(("stateful", *policy.capabilities)))

    def __init__(self, params: BaseModel, processors: np.ndarray, speed: np.ndarray, rng: np.random.Generator):
        self.params, self.processors, self.speed, self.rng = params, processors, speed, rng

    def choose(self, now: float, job: SiteJob, sites: tuple[Site, ...]) -> int | None:
        """At ``job``'s arrival: the index of the site it goes to now, or None to hold it in the
        grid scheduler's queue (then ask for a wake-up with :meth:`wake_at`)."""
        raise NotImplementedError

    def release(self, now: float, job: SiteJob, sites: tuple[Site, ...]) -> int | None:
        """At a wake-up, for each held job in arrival order: its site now, or None to keep holding
        it. By default :meth:`choose` again."""
        return self.choose(now, job, sites)

    def wake_at(self, t: float) -> None:
        """Offer the held jobs to :meth:`release` at time ``t`` (at or after the arrival being
        decided; after ``now`` when asked during a release). At one instant, arrivals come first."""
        self.__dict__.setdefault("_wake_requests", []).append(t)


class PythonStatefulSiteAllocation:
    """The registry's implementation of a :class:`StatefulSiteAllocation` subclass: a
    :meth:`stepper` the stateful model drives (simengine.kernel_model), like the compiled
    policies' (simengine.site_allocation.StatefulPolicy)."""

    def __init__(self, policy: type[StatefulSiteAllocation]):
        self.policy = policy
        self.name = policy.name
        self.__doc__ = policy.__doc__

    def __call__(self, *args, **kwargs):
        raise TypeError(f"{self.name} is a stateful site allocation: it cannot route jobs up front; the runner "
                        "simulates it with the sites")

    def stepper(self, params, processors, speed, names, jobs, work, fixed, rng, site, proc, dispatch,
                start) -> Callable[[float], bool]:
        """``advance(until)``: every arrival and wake-up before ``until`` (math.inf: all), True once
        nothing is left; fills ``site``, ``proc``, ``dispatch`` and ``start`` as
        simengine.grid_lwr.grid_lwr_advance does (``fixed``: its meaning there)."""
        if not isinstance(params, self.policy.Params):
            params = self.policy.Params.model_validate(params or {})
        procs = np.asarray(processors, np.int64)
        speeds = np.asarray(speed, np.float64)
        policy = self.policy(params, procs, speeds, rng)
        engine = _Engine(policy, procs, speeds, names, jobs, work, fixed, site, proc, dispatch, start)
        return engine.advance


class _Engine:
    """The grid scheduler and the LWR sites, event by event, around a Python policy."""

    def __init__(self, policy, procs, speed, names, jobs, work, fixed, site, proc, dispatch, start):
        self.policy, self.name = policy, policy.name
        self.now = -math.inf
        self.sites = tuple(Site(k, str(names[k]) if names is not None else str(k), int(c), float(s), self)
                           for k, (c, s) in enumerate(zip(procs.tolist(), speed.tolist())))
        self.submit = np.asarray(jobs.submit, np.float64).tolist()
        self.size = np.asarray(jobs.processors).tolist()
        self.estimate = np.asarray(jobs.estimate, np.float64).tolist()
        self.work = np.asarray(work, np.float64).tolist()
        self.fixed = np.asarray(fixed).tolist()
        self.out = (site, proc, dispatch, start)
        self.next = 0  # the next arrival
        self.held: list[SiteJob] = []
        self.wakes: list[float] = []  # heap of requested wake-up times

    def advance(self, until: float) -> bool:
        submit, n, wakes = self.submit, len(self.submit), self.wakes
        while True:
            ta = submit[self.next] if self.next < n else math.inf
            if not ta < math.inf:
                ta = math.inf
            while wakes and not self.held and wakes[0] < ta:  # nothing to offer: a wake-up with no effect
                heapq.heappop(wakes)
            tw = wakes[0] if wakes else math.inf
            if tw < ta:
                if tw >= until:
                    return False
                while wakes and wakes[0] == tw:
                    heapq.heappop(wakes)
                self._release(tw)
            elif ta < math.inf:
                if ta >= until:
                    return False
                self._arrive(self.next, ta)
                self.next += 1
            else:
                if self.held:
                    raise PolicyError(f"{self.name}: {len(self.held)} jobs are held in the grid scheduler's queue "
                                      f"after the last arrival and no wake-up (wake_at) releases them")
                return True

    def _arrive(self, j: int, t: float) -> None:
        fixed = self.fixed[j]
        if fixed < -1:  # rejected (fits no site)
            return
        self.now = t
        job = SiteJob(j, t, self.size[j], self.estimate[j], self.work[j])
        if fixed >= 0:
            self._place(job, fixed, t)
            return
        policy = self.policy
        try:
            k = policy.choose(t, job, self.sites)
        except Exception as exc:  # noqa: BLE001 - the researcher's code: any failure
            raise policy_raised(self.name, f"choose() for job {j} at its arrival (t={t:g})", exc) from exc
        self._woken(t, False, f"choosing for job {j}")
        if k is None:
            self.held.append(job)
        else:
            self._place(job, self._checked(k, job, t, "its arrival"), t)

    def _release(self, t: float) -> None:
        self.now = t
        policy, kept = self.policy, []
        for job in self.held:
            try:
                k = policy.release(t, job, self.sites)
            except Exception as exc:  # noqa: BLE001 - the researcher's code: any failure
                raise policy_raised(self.name, f"release() for job {job.id} at t={t:g}", exc) from exc
            if k is None:
                kept.append(job)
            else:
                self._place(job, self._checked(k, job, t, "a wake-up"), t)
        self.held = kept
        self._woken(t, True, "releasing held jobs")

    def _woken(self, t: float, strictly_later: bool, doing: str) -> None:
        asked = self.policy.__dict__.get("_wake_requests")
        if not asked:
            return
        for w in asked:
            if not (isinstance(w, (int, float, np.integer, np.floating)) and (w > t or w == t and not strictly_later)):
                later = "after" if strictly_later else "at or after"
                raise PolicyError(f"{self.name}: wake_at({w!r}) while {doing} at t={t:g}: a wake-up must be "
                                  f"{later} t")
            heapq.heappush(self.wakes, float(w))
        asked.clear()

    def _checked(self, k, job: SiteJob, t: float, moment: str) -> int:
        K = len(self.sites)
        if not (isinstance(k, (int, np.integer)) and not isinstance(k, bool) and 0 <= k < K):
            raise PolicyError(f"{self.name}: job {job.id} was sent to {k!r} at {moment} (t={t:g}), not a site "
                              f"index 0..{K - 1} (or None to hold it)")
        k = int(k)
        if self.sites[k].processors < job.size:
            raise PolicyError(f"{self.name}: job {job.id} needs {job.size} processors; at {moment} (t={t:g}) it "
                              f"was sent to site {k}, which has {self.sites[k].processors}")
        return k

    def _place(self, job: SiteJob, k: int, t: float) -> None:
        # simengine.grid_lwr._place, operation for operation (the same floats)
        s_ = self.sites[k]
        free_at = s_._free_at
        best, f = 0, free_at[0]
        best_w = f - t if f > t else 0.0  # max(0, f - t): x - y is 0 only when x == y
        if best_w > 0.0:  # (an idle processor has the least work: none)
            for p in range(1, len(free_at)):
                f = free_at[p]
                if f <= t:
                    best = p
                    break
                w = f - t
                if w < best_w:
                    best, best_w = p, w
        s = max(t, free_at[best])
        end = s + job.work / s_.speed
        free_at[best] = end
        job.site, job.processor, job.dispatch, job.start, job.end = k, best, t, s, end
        queued = s_._jobs[best]
        while queued and queued[0].end <= t:  # (what no view will show again)
            queued.popleft()
        queued.append(job)
        site, proc, dispatch, start = self.out
        site[job.id], proc[job.id], dispatch[job.id], start[job.id] = k, best, t, s
