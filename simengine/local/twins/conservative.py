"""Conservative backfilling on the event API (simengine.policy.EventScheduler), written to give the
schedules of the compiled ``conservative`` of the event core (simengine/local/core.py:
``_pass_conservative`` and what it calls) -- reservations, priorities and preemption included.

Every queued job holds a reservation: the earliest time its planned duration fits on the profile of
running jobs (until their plan), advance reservation windows and the reservations of the jobs
before it; a job starts when its reservation comes. The profile is the policy's own, edited as
the cluster changes, in the order the core's instant handles events: completions give back the
rest of their plan (and the queue is then compressed: each reservation, in queue order, moves to
its earliest fit if that is sooner); a job outliving its plan is planned one overrun step longer
(then twice as long again each time), and reservations the extension runs into are placed again
after the others (the repair); an accepted or slid advance reservation takes its window, with the
same repair; a job preempted by a window, an arrival, or a victim joins the queue, and the jobs it
now ranks before are placed again after it. The top waiting job preempts lower-priority running
jobs when that lets it start now.

The compiled pass stops at its own event times (planned ends, reservation starts); this policy
asks for a timer at each of them. A stale timer (a reservation that moved earlier) adds an instant
at which nothing changes: its pass does nothing the previous one did not.

The callbacks tell what happened at an instant grouped by kind, not in the order the core did it;
this policy works out the rest: which window preempted which jobs (windows take the fewest victims
in order), how the processors were held before this instant's windows opened, and where a
reservation accepted and slid at the same instant was accepted.

Where it cannot be identical, because the compiled pass reads what a policy is never shown -- the
real run time: a job of run time 0 holds no processors there (here it holds them for the instant it
runs, so jobs started at that instant may get other processors), and a job asking for no time is
planned as one overrun step only when it runs (here always). See tests/simengine/test_policy_twins.py.
"""
from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from operator import attrgetter

from simengine.policy import EventScheduler, register
from simengine.policy_types import AR_ACCEPTED, AR_ACTIVE, Profile
from simengine.schedulers.base import BackfillParams, planned_end as _compiled_planned_end

#: the kernels' rule for when a running job is expected to end, called as plain Python
planned_end = _compiled_planned_end.py_func
_key = attrgetter("key")
INF = math.inf


@register
class EventsConservative(EventScheduler):
    """Conservative backfilling with reservations, priorities and preemption (plain Python, event API)."""

    name = "events-conservative"
    Params = BackfillParams

    def __init__(self, params, cluster):
        super().__init__(params, cluster)
        self.step = float(params.overrun_step)
        self.profile = Profile([-INF], [cluster.processors])  # plans, windows and reservations
        self.q = []  # the queued jobs that hold a reservation, in queue order
        self.rstart, self.rend = {}, {}  # their reservations
        self.pend, self.began, self.sizes = {}, {}, {}  # running jobs: planned end, start, size
        self.plan = {}  # planned duration of a job's current (or next) run
        self.windows = {}  # advance reservation index -> (start, end, processors) on the profile
        self.overruns = {}  # time -> jobs planned to end then (the compiled pass's overrun events)
        self.asked = set()  # times a timer was asked for
        self.next_start = INF  # the earliest reservation
        self.early = self.repaired = False  # this instant: a plan or window came back; a repair
        self._arrived, self._ended, self._preempted, self._ar, self._cancelled = [], [], [], [], []

    # ---- what happened (kept until decide, which replays it in the core's order) -----------------

    def on_submit(self, now, jobs):
        self._arrived += jobs

    def on_complete(self, now, jobs):
        self._ended += jobs

    def on_preempted(self, now, jobs):
        self._preempted += jobs

    def on_cancelled(self, now, jobs):
        self._cancelled += jobs

    def on_reservation(self, now, reservation, event):
        self._ar.append((reservation, event))

    # ---- the pass ----------------------------------------------------------------------------------

    def decide(self, now):
        c = self.cluster
        self.early = self.repaired = False
        self._tidy(now)
        # 1. completions: the unused rest of the plan comes back; overruns: plans grow, then repair
        for job in self._ended:
            self._plan_ends(job, now)
        # (the core handles cancellations with the completions): a running job's plan comes back,
        # a waiting job's reservation too
        for job in self._cancelled:
            if job.id in self.pend:
                self._plan_ends(job, now)
            else:
                self._dequeue(job)
                self.profile.take(self.rstart.pop(job.id), self.rend.pop(job.id), -job.size)
                self.early = True
                self.next_start = min((self.rstart[q.id] for q in self.q), default=INF)
        ext_hi = -INF
        preempted = {job.id: job for job in self._preempted}  # (by a window, after its overrun)
        for j in self.overruns.pop(now, ()):
            job = c.running.get(j) or preempted.get(j)
            if job is None or self.pend.get(j) != now:
                continue  # ended, preempted, or planned again since
            new_end = planned_end(self.began[j], self.plan[j], now, self.step, True)
            self.pend[j] = new_end
            self.profile.take(now, new_end, job.size)
            self._overrun_at(new_end, j)
            ext_hi = max(ext_hi, new_end)
        # until the windows opening now take their processors (4.), the processors are held as
        # before: those windows' are free, the jobs they preempt still hold theirs
        started = [r for r, event in self._ar if event == "started"]
        owners = self._owners_before(now, started) if started else None
        if ext_hi > now:
            self._repair(now, ext_hi, owners)
        # 2.-3. advance reservations accepted or slid earlier take their windows (then repair)
        moved = {r.index for r, event in self._ar if event == "moved"}
        for r, event in self._ar:
            if event == "accepted":
                # (one that also slid now was accepted elsewhere first: that window is taken and
                # repaired around before the slide)
                self._hold_window(r, now, owners, self._admitted(r, now) if r.index in moved else r.start)
            elif event == "moved":
                a, b, p = self.windows.pop(r.index)
                self.profile.take(a, b, -p)
                self.early = True  # its old window came free
                self._hold_window(r, now, owners)
            elif event == "ended":
                self.windows.pop(r.index, None)
        # 4. the jobs the windows opening now preempted join the queue
        if self._preempted:
            self._replay_windows(now, started, owners)
        # 6. the pass: compression if something came back, arrivals (5.) join, due jobs start, the
        # top job may preempt
        if self.early or self.repaired:
            self._compress(now)
        for job in self._arrived:
            self.plan[job.id] = self._plan0(job)
            self._join(job, now)
        self._arrived, self._ended, self._preempted, self._ar, self._cancelled = [], [], [], [], []
        while True:
            self._start_due(now)
            if not self.q:
                break
            top = self.q[0]
            if self.rstart[top.id] <= now or not self._preempt_top(top, now):
                break
        if self.next_start < INF:
            self._timer(self.next_start)

    # ---- queue and reservations ------------------------------------------------------------------

    def _join(self, job, now, owners=None):
        """``job`` joins the queue: it and every queued job it ranks before get, in queue order, the
        earliest reservation that fits."""
        pos = bisect_left(self.q, job.key, key=_key)
        self.q.insert(pos, job)
        self._replan(now, self.q[pos + 1:], self.q[pos:], owners)

    def _replan(self, now, give_back, place, owners=None):
        after = self._after(now, place, owners)
        for job in give_back:
            self.profile.take(self.rstart[job.id], self.rend[job.id], -job.size)
        for job in place:
            s = self.profile.earliest(max(now, after.get(job.id, now)), self.plan[job.id], job.size)
            self._reserve(job, s)
            self.next_start = min(self.next_start, s)

    def _reserve(self, job, s):
        self.rstart[job.id], self.rend[job.id] = s, s + self.plan[job.id]
        self.profile.take(s, s + self.plan[job.id], job.size)

    def _repair(self, now, until, owners=None):
        """Reservations the profile went below zero under, before ``until``, are placed again, in
        queue order, after all the others."""
        if until <= now or self.profile.min_free(now, until) >= 0:
            return
        evicted = [job for job in self.q if self.rstart[job.id] < until]
        self._replan(now, evicted, evicted, owners)
        self.next_start = min((self.rstart[job.id] for job in self.q), default=INF)
        self.repaired = True

    def _compress(self, now):
        """Each reservation starting later, in queue order, moves to its earliest fit (its own
        window counted as free) if that is sooner.

        Such a fit either reaches into the old window -- then it starts in the run of steps with
        enough processors free just before it: a *slide* to where that run begins -- or lies wholly
        before it: a *jump*, an earliest fit on the profile as it stands. A jump search tells where
        the first window of its shape (size, duration) starts; the moves after it only take
        processors, but for the windows they leave, where new fits may begin: so a later job of
        that shape searches again only when that bound is before its reservation."""
        after = self._after(now, [job for job in self.q if self.rstart[job.id] > now])
        profile = self.profile
        bound = {}  # (size, duration) -> no window of that shape starts before it, from now on
        for job in self.q:
            j, p, d = job.id, job.size, self.plan[job.id]
            s_old, e_old = self.rstart[j], self.rend[j]
            a = max(now, after.get(j, now))
            if s_old <= now or a >= s_old:
                continue
            best = min(self._slide(a, s_old, p, d), s_old)
            if bound.get((p, d), a) < best:
                s = profile.earliest(a, d, p)
                if a == now:  # (a suspended job searches from later on: its answer bounds nothing)
                    bound[p, d] = s
                best = min(best, s)
            if best < s_old:
                profile.take(s_old, e_old, -p)
                self._reserve(job, best)
                self.next_start = min(self.next_start, best)
                # [left, e_old) came free: a new fit holds an instant of it with its size free there
                left = max(s_old, best + d)
                top = self._max_free(left, e_old)
                for shape in bound:
                    if shape[0] <= top:
                        bound[shape] = min(bound[shape], left - shape[1])

    def _max_free(self, a, b):
        """The most processors free at any instant of [a, b)."""
        times, free = self.profile.times, self.profile.free
        i = max(bisect_right(times, a) - 1, 0)
        top = free[i]
        while i + 1 < len(times) and times[i + 1] < b:
            i += 1
            top = max(top, free[i])
        return top

    def _slide(self, a, s_old, p, d):
        """The earliest start at or after ``a`` of a fit reaching into the job's own window at
        ``s_old`` (inf: none): the start of the run of steps with p free just before it, if the
        rest lies where its own processors are (the profile is not below zero there)."""
        times, free = self.profile.times, self.profile.free
        i = bisect_left(times, s_old) - 1  # the step just before s_old
        if free[i] < p:
            return INF
        while i > 0 and times[i] > a and free[i - 1] >= p:
            i -= 1
        s = max(times[i], a)
        return s if s + d <= s_old or self.profile.min_free(s_old, s + d) >= 0 else INF

    def _start_due(self, now):
        if self.next_start > now:
            return
        c = self.cluster
        for job in [job for job in self.q if self.rstart[job.id] <= now]:
            j = job.id
            if job.size > c.free or (job.status == "suspended" and not c.own_processors_free(job)):
                # its processors are still busy (a suspended job's own, or an overrun): later
                self.profile.take(self.rstart[j], self.rend[j], -job.size)
                a = max(self._after(now, [job]).get(j, now), self._next_event(now))
                self._reserve(job, self.profile.earliest(a, self.plan[j], job.size))
                continue
            # the reservation becomes the running job's plan: the profile stays as it is
            self._dequeue(job)
            self._run(job, now, self.rend.pop(j))
            del self.rstart[j]
        self.next_start = min((self.rstart[job.id] for job in self.q), default=INF)

    def _run(self, job, now, pend):
        self.cluster.start(job)
        self.began[job.id], self.pend[job.id], self.sizes[job.id] = now, pend, job.size
        self._overrun_at(now + self.plan[job.id], job.id)

    def _dequeue(self, job):
        del self.q[bisect_left(self.q, job.key, key=_key)]

    def _next_event(self, now):
        """The next time the pass is sure to run. (The compiled pass takes its next event, which
        may be a job's real end, hidden from a policy; for a suspended job -- the only one found
        blocked in the tests -- that is never later than when its processors are planned free.)"""
        times = [t for t in self.overruns if t > now]
        times += [r.end for r in self.cluster.reservations if r.status == AR_ACTIVE and r.end > now]
        return min(times, default=now + self.step)

    # ---- preemption ------------------------------------------------------------------------------

    def _preempt_top(self, job, now):
        """The top job preempts the fewest lower-priority running jobs (in the cluster's victim
        order, ``cluster.victims``) after which it can start now and run its plan."""
        c = self.cluster
        if not c.preemption.preempts:
            return False
        candidates = c.victims(job.priority)
        free = c.free
        chosen = None
        for k, victim in enumerate(candidates):
            free += victim.size
            if free < job.size:
                continue
            if job.status == "suspended" and not c.own_processors_free(job, exclude=candidates[:k + 1]):
                continue
            if self._view(now, candidates[:k + 1]).fits(now, self.plan[job.id], job.size):
                chosen = candidates[:k + 1]
                break
        if chosen is None:
            return False
        for victim in chosen:
            c.preempt(victim)
            self._preempted_now(victim, now)
        # it starts now: its reservation moves to [now, now + plan); those it now overlaps move
        j = job.id
        self.profile.take(self.rstart.pop(j), self.rend.pop(j), -job.size)
        self._dequeue(job)
        self._run(job, now, now + self.plan[j])
        self.profile.take(now, self.pend[j], job.size)
        self._repair(now, self.pend[j])
        self._compress(now)
        self.next_start = min((self.rstart[q.id] for q in self.q), default=INF)
        return True

    def _preempted_now(self, job, now, owners=None):
        """Running ``job`` was preempted: its plan comes back, and unless killed it waits again
        (suspended: the rest of its plan plus the overhead; requeued: all of it plus the overhead)."""
        self._plan_ends(job, now)
        mode = self.cluster.preemption
        if job.status == "killed":
            return
        if job.status == "suspended":
            rest = self.plan[job.id] - (now - self.began[job.id])
            self.plan[job.id] = (rest if rest > 0 else self.step) + mode.overhead
        else:
            self.plan[job.id] = self._plan0(job) + mode.overhead
        self._join(job, now, owners)

    def _plan0(self, job):
        """A run's planned duration: the estimate; a job asking for no time holds one overrun step
        (the compiled pass: if it runs -- see the module docstring)."""
        return job.estimate if job.estimate > 0 else self.step

    def _plan_ends(self, job, now):
        """A running job stopped: the rest of its plan comes back (and the queue is compressed)."""
        pend = self.pend.pop(job.id)
        if pend > now:
            self.profile.take(now, pend, -job.size)
            self.early = True

    def _owners_before(self, now, started):
        """:meth:`_owners` before the windows ``started`` now opened: theirs free, the jobs they
        preempted on theirs."""
        owners = self._owners(now)
        for r in started:
            for p in r.procs:
                owners.pop(p, None)
        for v in self._preempted:
            for p in self.cluster.allocation(v):
                owners[p] = self.pend[v.id]
        return owners

    def _replay_windows(self, now, started, owners):
        """The jobs the reservation windows opening now preempted, one window after the other as
        the core took them: each victim joins the queue seeing the processors as they were then
        (``owners``: before the windows opened; later victims still on theirs, later windows not
        yet open)."""
        c = self.cluster
        victims = list(self._preempted)
        free = c.free + sum(r.processors for r in started) - sum(v.size for v in victims)
        for r in started:
            while free < r.processors and victims:
                v = victims.pop(0)
                free += v.size
                for p in c.allocation(v):
                    owners.pop(p, None)
                self._preempted_now(v, now, owners)
            free -= r.processors
            for p in r.procs:
                owners[p] = r.end
        for v in victims:  # (none are left when every window took its own)
            self._preempted_now(v, now, owners)

    # ---- views -----------------------------------------------------------------------------------

    def _owners(self, now):
        """Processor id -> when its holder is planned to let it go (running jobs, open windows)."""
        c = self.cluster
        owners = {}
        for j, job in c.running.items():
            for p in c.allocation(job):
                owners[p] = self.pend[j]
        for r in c.reservations:
            if r.status == AR_ACTIVE:
                for p in r.procs:
                    owners[p] = r.end
        return owners

    def _after(self, now, jobs, owners=None):
        """Suspended jobs of ``jobs`` -> when all their own processors are planned to be free."""
        suspended = [job for job in jobs if job.status == "suspended"]
        if not suspended:
            return {}
        owners = self._owners(now) if owners is None else owners
        return {job.id: max([now] + [owners.get(p, now) for p in self.cluster.allocation(job)])
                for job in suspended}

    def _view(self, now, without):
        """Free processors from now by plan: running jobs (but ``without``) and live windows."""
        gone = {job.id for job in without}
        view = Profile([now], [self.processors])
        for j, job in self.cluster.running.items():
            if j not in gone:
                view.take(now, self.pend[j], job.size)
        for r in self.cluster.reservations:
            if r.status in (AR_ACCEPTED, AR_ACTIVE) and r.end > now:
                view.take(max(r.start, now), r.end, r.processors)
        return view

    def _hold_window(self, r, now, owners, start=None):
        start = r.start if start is None else start
        end = start + (r.end - r.start)
        self.windows[r.index] = (start, end, r.processors)
        self.profile.take(start, end, r.processors)
        self._repair(now, end, owners)

    def _admitted(self, r, now):
        """Where relaxed reservation ``r`` was accepted now, before it slid: the core's admission,
        its earliest fit from the start asked for on the plans of the running jobs and the windows
        held before it."""
        view = Profile([now], [self.processors])
        for j, end in self.pend.items():
            view.take(now, end, self.sizes[j])
        for a, b, p in self.windows.values():
            view.take(max(a, now), b, p)
        return view.earliest(r.asked_start, r.end - r.start, r.processors)

    # ---- timers ----------------------------------------------------------------------------------

    def _overrun_at(self, t, j):
        self.overruns.setdefault(t, []).append(j)
        self._timer(t)

    def _timer(self, t):
        if t not in self.asked and t > self.cluster.now:
            self.asked.add(t)
            self.cluster.wake_me_up_at(t)

    def _tidy(self, now):
        """Forget the profile's past steps and equal neighbours, and timers gone by."""
        prof = self.profile
        if len(prof.times) < 64:
            return
        i = max(bisect_right(prof.times, now) - 1, 0)
        times, free = [prof.times[i]], [prof.free[i]]
        for t, f in zip(prof.times[i + 1:], prof.free[i + 1:]):
            if f != free[-1]:
                times.append(t)
                free.append(f)
        prof.times, prof.free = times, free
        self.asked = {t for t in self.asked if t > now}
        for t in [t for t in self.overruns if t < now]:
            del self.overruns[t]
