"""LWR, Least Work Remaining (Zikos & Karatza; MODELS.md section 5), on the event API
(simengine.policy.EventScheduler): every processor has its own FCFS queue, and an arriving
one-processor job joins the processor whose queue holds the least remaining work (ties: the lowest
processor id). The policy chooses the processor itself (``cluster.start(job, processors=[p])``).

LWR is clairvoyant: the compiled ``lwr`` (simengine/schedulers/lwr.py) reads each job's service
demand. A policy sees the requested time only, so this one counts a job's work as its estimate:
it gives exactly the compiled schedules -- every start and processor -- when the estimates are the
run times, as in LWR's model (tests/simengine/test_policy_twins.py). With other estimates the
starts still follow the real completions (a job starts when the one before it on its processor
ends), but the choice of processor follows the estimates. Like the compiled lwr it schedules
clusters without advance reservations (it refuses them).
"""
from __future__ import annotations

from collections import deque

from simengine.policy import EventScheduler, register
from simengine.registry import NoParams


@register
class EventsLWR(EventScheduler):
    """Least Work Remaining: per-processor FCFS queues, one-processor jobs (plain Python, event API)."""

    name = "events-lwr"
    Params = NoParams
    capabilities = ("serial",)  # (a scenario sending it larger jobs is refused before the run)

    def __init__(self, params, cluster):
        super().__init__(params, cluster)
        self.drain = [float("-inf")] * cluster.processors  # when each processor's queue empties, by plan
        self.lines = [deque() for _ in range(cluster.processors)]  # the jobs waiting for each processor
        self.on = {}  # running job id -> its processor
        self.busy = set()  # processors running a job
        self.ready = set()  # processors whose queue or state changed since the last decision

    def on_submit(self, now, jobs):
        for job in jobs:
            if job.size != 1:
                raise ValueError(f"job {job.id} asks for {job.size} processors: LWR schedules one-processor "
                                 f"jobs only")
            # the processor with the least work left (the first of equals)
            best = min(range(self.processors), key=lambda p: (max(0.0, self.drain[p] - now), p))
            self.drain[best] = max(now, self.drain[best]) + job.estimate
            self.lines[best].append(job)
            self.ready.add(best)

    def on_reservation(self, now, reservation, event):
        if event == "accepted":  # (its window would take processors from under the queues)
            raise ValueError(f"advance reservation {reservation.index} was accepted: LWR, like the compiled lwr, "
                             f"schedules clusters without advance reservations")

    def on_complete(self, now, jobs):
        for job in jobs:
            p = self.on.pop(job.id)
            self.busy.discard(p)
            self.ready.add(p)

    def on_cancelled(self, now, jobs):
        for job in jobs:
            if job.id in self.on:  # it ran: its processor is free
                self.on_complete(now, [job])
                continue
            for p, line in enumerate(self.lines):  # it waited: its line is shorter by its estimate
                if job in line:
                    line.remove(job)
                    self.drain[p] -= job.estimate
                    break

    def decide(self, now):
        for p in self.ready:  # each processor's next job starts when the processor is idle
            if self.lines[p] and p not in self.busy:
                job = self.lines[p].popleft()
                self.cluster.start(job, processors=[p])
                self.on[job.id] = p
                self.busy.add(p)
        self.ready.clear()
