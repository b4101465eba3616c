"""FCFS and EASY on the event API (simengine.policy.EventScheduler), with everything the built-in
ones do: advance reservations (a job whose estimate would run into an accepted window waits),
priorities (the queue is in priority order) and preemption (the top waiting job preempts the
fewest lower-priority running jobs that let it start now). They give exactly the schedules of the
built-in compiled ``fcfs`` and ``easy`` on the event-driven cluster -- the tests compare every
start, end and piece -- so everything the built-ins decide can be decided through the public API.

Built in (simengine.local.twins); the builder lists them.
"""
from __future__ import annotations

import math
from bisect import bisect_right
from operator import attrgetter

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from simengine.policy import EventScheduler, register
from simengine.policy_types import Profile


class QueueParams(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    overrun_step: float = Field(60.0, gt=0, description="A job running past its estimate is planned to end this "
                                                        "many seconds later, then twice as long again each time")


@register
class EventsFCFS(EventScheduler):
    """First-come first-served with reservations, priorities and preemption (plain Python, event API)."""

    name = "events-fcfs"
    Params = QueueParams
    backfill = False

    def decide(self, now):
        c = self.cluster
        queue = c.queue
        if not queue:
            return
        # a profile is needed only while a reservation window lies ahead: a job must not run into it
        ahead = c.reservations_ahead()
        profile = c.profile() if ahead else None
        while queue:  # start the top job while it can (started jobs leave the queue)
            job = queue[0]
            if not self.can_start(job, profile):
                if not self.preempt_for(job):
                    break
                ahead = c.reservations_ahead()
                profile = c.profile() if ahead else None
            c.start(job)
            if profile is not None:
                profile.take(now, now + job.plan, job.size)
        if self.backfill and queue and c.free > 0:
            self.backfill_behind(queue[0], now)

    def __init__(self, params, cluster):
        super().__init__(params, cluster)
        #: nobody ranks below a job of the lowest priority: it preempts no one
        self.lowest_priority = int(cluster.priorities.min()) if len(cluster.priorities) else 0

    def can_start(self, job, profile) -> bool:
        c = self.cluster
        if job.size > c.free:
            return False
        if job.status == "suspended" and not c.own_processors_free(job):
            return False  # it resumes on its own processors only
        return profile is None or profile.fits(self.cluster.now, job.plan, job.size)

    def preempt_for(self, job) -> bool:
        """Preempt the fewest lower-priority jobs (in the victim order) after which ``job`` can
        start now and run its plan; nobody when even all of them would not do."""
        c = self.cluster
        if not c.preemption.preempts or job.priority <= self.lowest_priority:
            return False
        candidates = c.victims(job)
        free = c.free
        for k, victim in enumerate(candidates):
            free += victim.size
            chosen = candidates[:k + 1]
            if free < job.size:
                continue
            if job.status == "suspended" and not c.own_processors_free(job, exclude=chosen):
                continue
            if c.profile(exclude=chosen, still_running=True).fits(c.now, job.plan, job.size):
                for v in chosen:
                    c.preempt(v)
                return True
        return False

    def backfill_behind(self, head, now):
        """EASY: the blocked head gets a reservation at its earliest fit (its shadow time); later
        jobs start now when they fit without delaying it."""
        c = self.cluster
        profile = None
        for job in list(c.queue[1:]):
            if c.free == 0:
                break
            if job.size > c.free or (profile is not None and not profile.fits(now, job.plan, job.size)):
                continue
            if job.status == "suspended" and not c.own_processors_free(job):
                continue
            if profile is None:
                profile = self.shadow_profile(head, now)
                if not profile.fits(now, job.plan, job.size):
                    continue
            c.start(job)
            profile.take(now, now + job.plan, job.size)

    def shadow_profile(self, head, now, profile=None):
        """Free processors by plan (``profile``: the cluster's now, when already read), with the
        head's reservation at its earliest fit."""
        c = self.cluster
        profile = c.profile() if profile is None else profile
        after = c.own_processors_free_at(head) if head.status == "suspended" else now
        shadow = profile.earliest(after, head.plan, head.size)
        if shadow < math.inf:  # a head asking for no time still holds its processors at that instant
            hold = shadow + head.plan if head.plan > 0 else math.nextafter(shadow, math.inf)
            profile.take(shadow, hold, head.size)
        return profile


@register
class EventsEASY(EventsFCFS):
    """EASY backfilling with reservations, priorities and preemption (plain Python, event API)."""

    name = "events-easy"
    backfill = True


@register
class EventsEASYArrays(EventsEASY):
    """EASY again (the same decisions as ``events-easy``, in the same order), written for long
    queues: the backfill scan is a few numpy operations over the queue (``cluster.waiting_ids``,
    ``sizes``, ``plans``), and at an instant when only arrivals happened it looks at the new jobs
    alone -- nothing freed processors or moved a plan, so a job that did not fit at the last
    instant still does not."""

    name = "events-easy-arrays"

    def __init__(self, params, cluster):
        super().__init__(params, cluster)
        #: the last instant's backfill, when it was the last decision: (head, free left, the
        #: profile with the head's reservation, its fit limits, the profile without it, until when
        #: it holds (its next step), when a suspended head's processors are free)
        self._last = self._this = None
        self._arrived, self._other = None, False

    def on_submit(self, now, jobs):
        self._arrived = jobs

    def on_complete(self, now, jobs):
        self._other = True

    on_preempted = on_complete

    def on_reservation(self, now, reservation, event):
        self._other = True

    def on_timer(self, now):
        self._other = True

    def decide(self, now):
        self._last, self._this = self._this, None
        try:
            super().decide(now)
        finally:
            self._arrived, self._other = None, False

    def backfill_behind(self, head, now):
        c = self.cluster
        last = self._last
        if (last is not None and last[0] is head and last[1] == c.free and self._arrived is not None
                and not self._other and now < last[5] and _same_from(last[4], c.profile(), now)
                and (head.status != "suspended" or c.own_processors_free_at(head) == last[6])):
            # (the plans, and so the head's reservation, are the same too: a job due to end at the
            # last instant but still running is planned again without an event saying so)
            profile, lim, plain = last[2], last[3], last[4]
            for job in sorted(self._arrived, key=_key):  # (queue order)
                if job.status == "waiting" and job is not head and self._fits(job, now, lim):
                    c.start(job)
                    profile.take(now, now + job.plan, job.size)
                    plain.take(now, now + job.plan, job.size)
                    lim = fit_limits(profile, now, c.free)
            self._remember(head, profile, lim, plain, now, last[6])
            return
        rest = c.waiting_ids()[1:]  # (behind the head)
        free = c.free
        small = rest[c.sizes[rest] <= free]  # (a copy: starting jobs below changes the queue)
        if not small.size:
            return  # nobody is small enough: no profile needed
        sizes, plans = c.sizes[small], c.plans[small]
        ends = now + plans  # (the same float additions as the compiled pass)
        plain = c.profile()
        # (as the reservation is placed: starting jobs below may take a suspended head's processors)
        head_after = c.own_processors_free_at(head) if head.status == "suspended" else None
        profile = self.shadow_profile(head, now, Profile(plain.times[:], plain.free[:]))
        lim = fit_limits(profile, now, free)
        # the jobs that fit now, in queue order; each start leaves less room (never more), so the
        # later ones are checked again when their turn comes -- a suspended one's processors too
        # (a start may have taken them)
        fitting = np.flatnonzero((plans <= 0) | (ends <= lim[sizes]))
        if fitting.size:
            fitting = fitting[c.own_processors_free_each(small[fitting])]
        started = False
        for i in fitting.tolist():
            size, plan = int(sizes[i]), plans[i]
            if size > free or (plan > 0 and ends[i] > lim[size]):
                continue
            job = c.job(int(small[i]))
            if started and job.status == "suspended" and not c.own_processors_free(job):
                continue
            c.start(job)
            started = True
            free = c.free
            profile.take(now, now + job.plan, job.size)
            plain.take(now, now + job.plan, job.size)
            if free == 0:
                break
            lim = fit_limits(profile, now, free)
        self._remember(head, profile, lim, plain, now, head_after)

    def _remember(self, head, profile, lim, plain, now, head_after):
        times = profile.times
        k = bisect_right(times, now)
        self._this = (head, self.cluster.free, profile, lim, plain, times[k] if k < len(times) else math.inf,
                      head_after)

    def _fits(self, job, now, lim) -> bool:
        size = job.size
        return size <= self.cluster.free and (job.plan <= 0 or now + job.plan <= lim[size])



def _same_from(before, now_profile, now: float) -> bool:
    """Is ``before`` (a profile from an earlier instant) from ``now`` on the profile the cluster
    has now (which starts at now)?"""
    k = bisect_right(before.times, now) - 1
    return (before.free[k] == now_profile.free[0] and before.times[k + 1:] == now_profile.times[1:]
            and before.free[k + 1:] == now_profile.free[1:])


def fit_limits(profile, now: float, nfree: int) -> np.ndarray:
    """For p = 0 .. nfree: until when p processors stay free from ``now`` on ``profile`` (inf: for
    ever, -inf: not even now); a job of p processors and plan d > 0 fits iff now + d <= lim[p]
    (simengine.local.profile.fit_limits; a few dozen steps: plain Python is quicker than numpy)."""
    times, free = profile.times, profile.free
    k = bisect_right(times, now) - 1
    low = max(min(free[k], nfree), 0)
    lim = [math.inf] * (low + 1) + [-math.inf] * (nfree - low)
    for i in range(k + 1, len(times)):
        if low == 0:
            break
        f = free[i]
        if f < low:
            f = max(f, 0)
            lim[f + 1:low + 1] = [times[i]] * (low - f)  # p in (f, low] last until this step
            low = f
    return np.array(lim)


_key = attrgetter("key")
