"""Two schedulers written the way pybatsim's low-level API is used (callbacks, then actions on
``self.bs``), to show that such a scheduler runs on GridWeb with its import line changed
(docs/write-a-policy.md, "pybatsim"). Written for GridWeb; no pybatsim code.

* ``pybatsim-filler``: at every event, start each waiting job that fits now, in submission order
  (a filler: no reservation for the head, so wide jobs may starve).
* ``pybatsim-easy``: EASY backfilling that chooses each job's processors itself -- the highest
  idle ids (a ``ProcSet``), packing from the top of the machine.

Registered through the package's entry point (the builder lists them).
"""
from __future__ import annotations

import math

from simengine.policy import register
from simengine.pybatsim import BatsimScheduler, ProcSet  # was: from batsim.batsim import BatsimScheduler


def planned_end(job, now: float, step: float = 60.0) -> float:
    """When a running job is expected to end: start + requested time, extended by step, 2 step,
    4 step ... once it has outlived that (the built-in schedulers' rule)."""
    end = job.start_time + job.requested_time
    if end >= now:
        return end
    ext = step
    while end + ext <= now:
        end += ext
        ext *= 2.0
    return end + ext


@register
class FillerSched(BatsimScheduler):
    """Start every waiting job that fits, in submission order (pybatsim style)."""

    name = "pybatsim-filler"

    def onSimulationBegins(self):
        self.waiting = []
        self.idle = self.bs.nb_resources

    def onJobSubmission(self, job):
        self.waiting.append(job)

    def onJobCompletion(self, job):
        self.idle += job.requested_resources

    def onJobsKilled(self, jobs):  # (a trace's cancellations: a waiting job leaves, a running one ends)
        for job in jobs:
            if job in self.waiting:
                self.waiting.remove(job)
            else:
                self.idle += job.requested_resources

    def onNoMoreEvents(self):
        started = []
        for job in self.waiting:
            if job.requested_resources <= self.idle:
                self.idle -= job.requested_resources
                started.append(job)
        if started:
            self.waiting = [j for j in self.waiting if j not in started]
            self.bs.execute_jobs(started)


@register
class TopDownEASY(BatsimScheduler):
    """EASY backfilling placing each job on the highest idle processors (pybatsim style)."""

    name = "pybatsim-easy"

    def onSimulationBegins(self):
        self.waiting = []
        self.running = {}  # job id -> job
        self.idle = set(range(self.bs.nb_resources))

    def onJobSubmission(self, job):
        self.waiting.append(job)

    def onJobCompletion(self, job):
        del self.running[job.id]
        self.idle.update(job.allocation)

    def onJobsKilled(self, jobs):  # (a trace's cancellations: a waiting job leaves, a running one ends)
        for job in jobs:
            if job.id in self.running:
                self.onJobCompletion(job)
            else:
                self.waiting.remove(job)

    def take(self, job):
        procs = sorted(self.idle)[-job.requested_resources:]
        self.idle.difference_update(procs)
        job.allocation = ProcSet(*procs)
        self.running[job.id] = job
        self.bs.execute_jobs([job])

    def onNoMoreEvents(self):
        now = self.bs.time()
        while self.waiting and self.waiting[0].requested_resources <= len(self.idle):
            self.take(self.waiting.pop(0))
        if not self.waiting:
            return
        head = self.waiting[0]
        # the head's shadow time: when enough processors will have been freed by plan, and how many
        # of those it leaves over (the extra processors a backfilled job may keep past it)
        ends = sorted((planned_end(job, now), job.requested_resources) for job in self.running.values())
        avail, shadow = len(self.idle), math.inf
        for end, size in ends:
            if avail >= head.requested_resources and end > shadow:
                break
            avail += size
            if avail >= head.requested_resources and shadow == math.inf:
                shadow = end
        extra = avail - head.requested_resources if shadow < math.inf else 0
        for job in list(self.waiting[1:]):
            if job.requested_resources > len(self.idle):
                continue
            if now + job.requested_time <= shadow:
                self.waiting.remove(job)
                self.take(job)
            elif job.requested_resources <= extra:
                extra -= job.requested_resources
                self.waiting.remove(job)
                self.take(job)
