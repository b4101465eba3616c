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
    over a long queue. Same decisions as ``python-easy``, in the same order."""

    name = "python-easy-arrays"

    def __init__(self, params, processors):
        super().__init__(params, processors)
        # indexed by job id (ids count arrivals: 0, 1, 2 ...); a started job's size is set to
        # STARTED, which no free count reaches, so the scan below passes over it
        self.size = np.empty(1024, np.int32)  # (int32: numpy compares it faster than int64)
        self.estimate = np.empty(1024)
        self.jobs: list = []

    def schedule(self, now, queue, free, running):
        jobs = self.jobs
        for job in queue[len(queue) - (queue[-1].id + 1 - len(jobs)):]:  # the arrivals since the last call
            if job.id == len(self.size):
                self.size = np.concatenate([self.size, np.empty_like(self.size)])
                self.estimate = np.concatenate([self.estimate, np.empty_like(self.estimate)])
            self.size[job.id], self.estimate[job.id] = job.size, job.estimate
            jobs.append(job)
        started, free = start_from_head(queue, free)
        h = len(started)
        if h < len(queue) and free > 0:
            head = queue[h]
            shadow, extra = head_reservation(head, now, free, running, started, self.params.overrun_step)
            lo = head.id + 1  # (every job before the head has started)
            # the jobs small enough for the free processors, in queue order (a started job's size
            # is STARTED: never small enough); the scan below looks at them alone
            small = (self.size[lo:len(jobs)] <= free).nonzero()[0]
            size = self.size[lo:len(jobs)][small]
            before_shadow = now + self.estimate[lo:len(jobs)][small] <= shadow  # (python-easy's float additions)
            at = 0
            while at < len(size):
                # the first job from ``at`` that fits now and either ends by the shadow time or
                # leaves the head's processors alone; each start leaves the later jobs less room
                rest = size[at:]
                fits = (rest <= min(free, extra)) | (before_shadow[at:] & (rest <= free))
                i = int(fits.argmax())
                if not fits[i]:
                    break
                at += i
                job = jobs[lo + int(small[at])]
                if not before_shadow[at]:
                    extra -= job.size
                free -= job.size
                started.append(job)
                at += 1
                if free == 0:
                    break
        for job in started:
            self.size[job.id] = STARTED
        return started


#: how PythonEASYArrays marks a started job in its size array: more processors than any cluster has
STARTED = np.iinfo(np.int32).max
