"""FCFS and EASY written against simengine.policy, to read beside the built-in compiled ones
(simengine/schedulers/): they give the same schedules, which the tests check and
benchmarks/python_policy.py times. Not registered by the entry point: import this module to
register ``python-fcfs``, ``python-easy`` and ``python-easy-arrays`` (EASY again, its queue scan
done by numpy on arrays it keeps between calls: what "a policy may keep state" buys).
"""
from __future__ import annotations

import math
from itertools import islice

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from simengine.policy import LocalScheduler, register


def start_from_head(queue, free: int) -> tuple[list, int]:
    """The jobs at the head of the queue that fit, in order, until one does not; the processors
    left free then."""
    started = []
    for job in queue:
        if job.size > free:
            break
        started.append(job)
        free -= job.size
    return started, free


@register
class PythonFCFS(LocalScheduler):
    """First-come first-served, no backfilling (plain Python)."""

    name = "python-fcfs"

    def schedule(self, now, queue, free, running):
        return start_from_head(queue, free)[0]


class OverrunParams(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    overrun_step: float = Field(60.0, gt=0, description="A job running past its estimate is planned to end this "
                                                        "many seconds later, then twice as long again each time")


def planned_end(job, now: float, step: float) -> float:
    """When a running job is expected to end, seen at ``now`` (the built-in schedulers' rule:
    its estimate, extended by step, 2 step, 4 step ... once it has outlived it)."""
    end = job.start + job.estimate
    if end >= now:
        return end
    ext = step
    while end + ext <= now:
        end += ext
        ext *= 2.0
    return end + ext


def head_reservation(head, now: float, free: int, running, started, step: float) -> tuple[float, int]:
    """EASY's reservation for the blocked ``head``: the shadow time (when enough processors will
    have been freed for it, by the planned ends of the running jobs and of those just started)
    and the extra processors (those free then that the head leaves over)."""
    ends = sorted([(planned_end(j, now, step), j.size) for j in running]
                  + [(now + j.estimate, j.size) for j in started])  # (the order within a tie does not matter)
    avail, shadow = free, math.inf
    for end, size in ends:
        if avail >= head.size and end > shadow:
            break  # every job ending at the shadow time is counted
        avail += size
        if avail >= head.size and shadow == math.inf:
            shadow = end
    return shadow, (avail - head.size if shadow < math.inf else 0)


@register
class PythonEASY(LocalScheduler):
    """EASY backfilling (plain Python): the queue head gets a reservation at the shadow time."""

    name = "python-easy"
    Params = OverrunParams

    def schedule(self, now, queue, free, running):
        started, free = start_from_head(queue, free)
        h = len(started)
        if h == len(queue) or free == 0:
            return started
        shadow, extra = head_reservation(queue[h], now, free, running, started, self.params.overrun_step)
        for job in islice(queue, h + 1, None):
            size = job.size
            if size > free:
                continue
            before_shadow = now + job.estimate <= shadow
            if before_shadow or size <= extra:
                if not before_shadow:
                    extra -= size
                free -= size
                started.append(job)
                if free == 0:
                    break
        return started


@register
class PythonEASYArrays(PythonEASY):
    """EASY backfilling (plain Python) that keeps the waiting jobs' sizes and estimates in numpy
    arrays between calls, so the backfill scan is a few array operations instead of a Python loop
    over a long queue. Same decisions as ``python-easy``, in the same order.

    It relies on the queue of a plain cluster: jobs leave it only when started, and arrive at its
    end. With priorities or preemption (jobs inserted, or waiting again) it schedules as
    ``python-easy`` does."""

    name = "python-easy-arrays"

    def __init__(self, params, processors):
        super().__init__(params, processors)
        # the jobs that arrived since the last compaction, in queue order: ``jobs``, their sizes
        # and estimates; a started job's size is set to STARTED, which no free count reaches, so
        # the scan below passes over it until the next compaction leaves it out
        self.jobs: list = []
        self.size = np.empty(1024, np.int32)  # (int32: numpy compares it faster than int64)
        self.estimate = np.empty(1024)
        self.index: dict = {}  # job id -> its index in those
        self.arrived = 0  # jobs that have arrived (ids count them: 0, 1, 2 ...)
        self.gone = 0  # jobs marked STARTED
        self.plain = True

    def schedule(self, now, queue, free, running):
        new = queue[-1].id + 1 - self.arrived  # (arrivals since the last call)
        if not self.plain or new > len(queue) or queue[0].priority or queue[-1].priority:
            self.plain = False  # (a job came back or jumped the queue: the arrays no longer follow it)
            return super().schedule(now, queue, free, running)
        self.add(queue[len(queue) - new:])
        started, free = start_from_head(queue, free)
        h = len(started)
        if h < len(queue) and free > 0:
            head, jobs = queue[h], self.jobs
            shadow, extra = head_reservation(head, now, free, running, started, self.params.overrun_step)
            lo, hi = self.index[head.id] + 1, len(jobs)  # (every job before the head has started)
            # a job fits iff it is small enough for the free processors and either ends by the
            # shadow time or leaves the head's processors alone (a started job's size is STARTED:
            # never small enough); each start leaves the later jobs less room, so the rest is
            # tested again after it
            while lo < hi:
                size, ends = self.size[lo:hi], now + self.estimate[lo:hi]  # (python-easy's float additions)
                fits = (size <= min(free, extra)) | ((ends <= shadow) & (size <= free))
                i = int(fits.argmax())
                if not fits[i]:
                    break
                job = jobs[lo + i]
                if ends[i] > shadow:
                    extra -= job.size
                free -= job.size
                started.append(job)
                lo += i + 1
                if free == 0:
                    break
        index = self.index
        for job in started:
            self.size[index.pop(job.id)] = STARTED
        self.gone += len(started)
        return started

    def add(self, arrivals) -> None:
        """Append the arrivals to the arrays -- first leaving the started jobs out when they are
        half of them, so a scan from the head passes over few."""
        n = len(self.jobs)
        if self.gone > n // 2:
            keep = (self.size[:n] != STARTED).nonzero()[0]
            n = len(keep)
            self.jobs = [self.jobs[i] for i in keep.tolist()]
            self.size[:n], self.estimate[:n] = self.size[keep], self.estimate[keep]
            self.index = {job.id: i for i, job in enumerate(self.jobs)}
            self.gone = 0
        if n + len(arrivals) > len(self.size):
            more = max(len(self.size), len(arrivals))
            self.size = np.concatenate([self.size, np.empty(more, self.size.dtype)])
            self.estimate = np.concatenate([self.estimate, np.empty(more)])
        for i, job in enumerate(arrivals, n):
            self.size[i], self.estimate[i] = job.size, job.estimate
            self.index[job.id] = i
        self.jobs += arrivals
        self.arrived += len(arrivals)


#: how PythonEASYArrays marks a started job in its size array: more processors than any cluster has
STARTED = np.iinfo(np.int32).max
