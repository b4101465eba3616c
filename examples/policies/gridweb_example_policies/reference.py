"""FCFS and EASY written against simengine.policy, to read beside the built-in compiled ones
(simengine/schedulers/): they give the same schedules, which the tests check and
benchmarks/python_policy.py times. Not registered by the entry point: import this module to
register ``python-fcfs`` and ``python-easy``.
"""
from __future__ import annotations

import math
from itertools import islice

from pydantic import BaseModel, ConfigDict, Field

from simengine.policy import LocalScheduler, register


@register
class PythonFCFS(LocalScheduler):
    """First-come first-served, no backfilling (plain Python)."""

    name = "python-fcfs"

    def schedule(self, now, queue, free, running):
        started = []
        for job in queue:
            if job.size > free:
                break
            started.append(job)
            free -= job.size
        return started


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


@register
class PythonEASY(LocalScheduler):
    """EASY backfilling (plain Python): the queue head gets a reservation at the shadow time."""

    name = "python-easy"
    Params = OverrunParams

    def schedule(self, now, queue, free, running):
        started = []
        h = 0
        for job in queue:
            if job.size > free:
                break
            started.append(job)
            free -= job.size
            h += 1
        if h == len(queue) or free == 0:
            return started
        head = queue[h]
        step = self.params.overrun_step
        ends = sorted([(planned_end(j, now, step), j.size) for j in running]
                      + [(now + j.estimate, j.size) for j in started], key=lambda e: e[0])
        avail, shadow = free, math.inf
        for end, size in ends:
            if avail >= head.size and end > shadow:
                break  # every job ending at the shadow time is counted
            avail += size
            if avail >= head.size and shadow == math.inf:
                shadow = end
        extra = avail - head.size if shadow < math.inf else 0
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
