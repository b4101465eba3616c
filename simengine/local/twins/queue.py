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

from pydantic import BaseModel, ConfigDict, Field

from simengine.policy import EventScheduler, register


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
        if not c.preemption.preempts:
            return False
        candidates = c.victims(job.priority)
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

    def shadow_profile(self, head, now):
        """Free processors by plan, with the head's reservation at its earliest fit."""
        c = self.cluster
        profile = c.profile()
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
