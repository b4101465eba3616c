"""FCFS: strict first-come first-served, no backfilling (MODELS.md §2)."""
from __future__ import annotations

import math

from simengine.jit import njit

from simengine.registry import LOCAL_SCHEDULERS, NoParams
from simengine.schedulers._heap import heap_pop, heap_push, new_heap
from simengine.schedulers.base import ClusterSchedule, ClusterSteps, check_inputs


@njit(cache=True)
def fcfs_kernel(submit, runtime, size, processors, horizon, hkeys, hvals, start, until):
    """Fills ``start``; a generator that pauses before each event at or after ``until[0]``
    (see :class:`~simengine.schedulers.base.ClusterSteps`)."""
    n = submit.shape[0]
    free = processors
    hn = 0
    arrived = 0  # jobs [0, arrived) have been submitted
    head = 0  # the queue is exactly jobs [head, arrived): FCFS starts them in order
    while head < n:
        t = math.inf
        if arrived < n:
            t = submit[arrived]
        if hn > 0 and hkeys[0] < t:
            t = hkeys[0]
        if t > horizon:
            break
        while t >= until[0]:
            yield t
        while hn > 0 and hkeys[0] <= t:
            free += size[hvals[0]]
            hn = heap_pop(hkeys, hvals, hn)
        while arrived < n and submit[arrived] <= t:
            arrived += 1
        while head < arrived and size[head] <= free:
            start[head] = t
            free -= size[head]
            hn = heap_push(hkeys, hvals, hn, t + runtime[head], head)
            head += 1


def steps(submit, runtime, estimate, size, processors, params, horizon=math.inf) -> ClusterSteps:
    check_inputs(submit, size, processors)
    hkeys, hvals = new_heap(len(submit) + 1)
    start, until = ClusterSteps.outputs(len(submit))
    return ClusterSteps(fcfs_kernel(submit, runtime, size, processors, horizon, hkeys, hvals, start, until),
                        start, until)


def schedule(submit, runtime, estimate, size, processors, params, horizon=math.inf) -> ClusterSchedule:
    return steps(submit, runtime, estimate, size, processors, params, horizon).to_end()


schedule.steps = steps
LOCAL_SCHEDULERS.register("fcfs", NoParams, "First-come first-served, no backfilling",
                           capabilities=("compiled", "event_driven"))(schedule)
