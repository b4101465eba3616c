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
from operator import attrgetter

import numpy as np
from simengine.policy import EventScheduler, register
from simengine.schedulers.base import BackfillParams


@register
class EventsFCFS(EventScheduler):
    """First-come first-served with reservations, priorities and preemption (plain Python, event API)."""

    name = "events-fcfs"
    Params = BackfillParams  # (the built-ins' own: the same parameters, the same forms)
    backfill = False

    def decide(self, now):
        c = self.cluster
        queue = c.queue
        if not queue:
            return
        # a profile is needed only while a reservation window lies ahead (a job must not run into
        # it), and read when a job small enough first needs it (on a long queue the top job is
        # mostly too large)
        ahead = c.reservations_ahead()
        profile = None
        while queue:  # start the top job while it can (started jobs leave the queue)
            job = queue[0]
            if ahead and profile is None and job.size <= c.free:
                profile = c.profile()
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
    ``sizes``, ``plans``) against the engine's limits (``cluster.fit_limits``), and when only
    arrivals happened since the last scan, with the same head, free processors and limits, it
    looks at the new jobs alone -- a job that did not fit then does not fit now."""

    name = "events-easy-arrays"

    def __init__(self, params, cluster):
        super().__init__(params, cluster)
        #: the last backfill scan: (head, free processors, limits); and the jobs that arrived since
        #: (None: something else happened, so every waiting job is looked at again)
        self._last, self._since = None, None

    def on_submit(self, now, jobs):
        if self._since is not None:
            self._since += jobs

    def on_complete(self, now, jobs):
        self._since = None

    on_preempted = on_cancelled = on_complete

    def on_reservation(self, now, reservation, event):
        self._since = None

    def on_timer(self, now):
        self._since = None

    def backfill_behind(self, head, now):
        c = self.cluster
        free = c.free
        # (from when the head may start is read once: starting jobs below may take a suspended
        # head's processors, and its reservation stays where it was placed)
        after = c.own_processors_free_at(head) if head.status == "suspended" else now
        lim = c.fit_limits(head, after)
        ids = self._arrivals_only(head, free, lim)
        self._last, self._since = (head, free, lim), []
        if ids is None:
            ids = c.waiting_ids()[1:]  # (behind the head)
        small = ids[c.sizes[ids] <= free]  # (a copy: starting jobs below changes the queue)
        if not small.size:
            return
        sizes, plans = c.sizes[small], c.plans[small]
        ends = now + plans  # (the same float additions as the compiled pass)
        fits = (plans <= 0) | (ends <= lim[sizes])
        idx = fits.nonzero()[0]
        if not idx.size:
            return
        fits[idx] = c.own_processors_free_each(small[idx])  # (a suspended job resumes on its own processors)
        at, started = 0, False
        while True:
            # the first job from ``at`` on that fits now, in queue order; each start leaves less
            # room (never more), so the later ones are checked again
            i = int(fits[at:].argmax()) + at if at < len(fits) else at
            if i >= len(fits) or not fits[i]:
                break
            job = c.job(int(small[i]))
            at = i + 1
            if started and job.status == "suspended" and not c.own_processors_free(job):
                continue  # (a start since may have taken its processors)
            c.start(job)
            started = True
            free = c.free
            if free == 0:  # (nobody else fits; the next scan follows a completion)
                self._last = None
                return
            lim = c.fit_limits(head, after)
            self._last = (head, free, lim)
            if at >= len(fits):
                break
            rest = sizes[at:]
            fits[at:] &= (rest <= free) & ((plans[at:] <= 0) | (ends[at:] <= lim[np.minimum(rest, free)]))

    def _arrivals_only(self, head, free, lim):
        """When only arrivals happened since the last scan, with the same head, free processors
        and limits, the ids of the arrivals still waiting (in queue order): no other job fits
        now, as none did then. Else None: every waiting job is looked at."""
        last, since = self._last, self._since
        if (since is None or last is None or last[0] is not head or last[1] != free
                or last[2].tobytes() != lim.tobytes()):
            return None
        return np.array([j.id for j in sorted(since, key=_key) if j.status == "waiting" and j is not head], np.int64)


_key = attrgetter("key")
