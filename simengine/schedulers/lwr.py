"""LWR: Least Work Remaining (Zikos & Karatza; MODELS.md §5).

Every processor has its own FCFS queue; an arriving one-processor job joins the
processor whose queue holds the least remaining work (ties: lowest index). Service
demands are known (clairvoyant), so a processor's queue is summarised by the time it
drains, and the whole model is one pass over the arrivals -- no event list needed.
That also lets R replications run in lock step in one compiled call.
"""
from __future__ import annotations

import math

import numpy as np

from simengine.jit import njit
from simengine.registry import LOCAL_SCHEDULERS, NoParams
from simengine.schedulers.base import ClusterSchedule, ClusterSteps, check_inputs


@njit(cache=True)
def lwr_kernel(submit, runtime, processors, horizon, start, proc, until):
    """A generator that pauses before each arrival at or after ``until[0]`` (ClusterSteps):
    a job's start, decided at its arrival, is never earlier than the arrival."""
    drain = np.full(processors, -math.inf)  # when each processor's queue empties
    for j in range(submit.shape[0]):
        t = submit[j]
        if t > horizon:
            break
        while t >= until[0]:
            yield t
        best = 0
        best_work = max(0.0, drain[0] - t)
        for p in range(1, processors):
            w = max(0.0, drain[p] - t)
            if w < best_work:
                best = p
                best_work = w
        s = max(t, drain[best])
        drain[best] = s + runtime[j]
        proc[j] = best
        if s <= horizon:
            start[j] = s


def steps(submit, runtime, estimate, size, processors, params, horizon=math.inf) -> ClusterSteps:
    check_inputs(submit, size, processors)
    if len(size) and size.max() > 1:
        raise ValueError("LWR schedules one-processor jobs only")
    start, until = ClusterSteps.outputs(len(submit))
    proc = np.full(len(submit), -1, np.int64)
    return ClusterSteps(lwr_kernel(submit, runtime, processors, horizon, start, proc, until), start, until, proc)


def schedule(submit, runtime, estimate, size, processors, params, horizon=math.inf) -> ClusterSchedule:
    return steps(submit, runtime, estimate, size, processors, params, horizon).to_end()


schedule.steps = steps
LOCAL_SCHEDULERS.register("lwr", NoParams, "Least Work Remaining: per-processor FCFS queues (one-processor jobs)",
                           capabilities=("compiled", "serial"))(schedule)
