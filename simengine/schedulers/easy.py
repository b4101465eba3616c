"""EASY backfilling (Mu'alem & Feitelson): the queue head gets a reservation at the
shadow time; a later job may start now if it ends by the shadow time or uses only
the extra processors the head will not need (MODELS.md §2)."""
from __future__ import annotations

import math

import numpy as np

from simengine.jit import njit
from simengine.registry import LOCAL_SCHEDULERS
from simengine.schedulers._heap import heap_pop, heap_push, new_heap
from simengine.schedulers.base import (BackfillParams, ClusterSchedule, ClusterSteps, check_inputs, compact_queue,
                                      planned_end)


@njit(cache=True)
def _start(j, t, start, runtime, running, slot, nrun, hkeys, hvals, hn):
    """Start job j at t: record it, schedule its completion, add it to the running set."""
    start[j] = t
    running[nrun] = j
    slot[j] = nrun
    return nrun + 1, heap_push(hkeys, hvals, hn, t + runtime[j], j)


@njit(cache=True)
def easy_kernel(submit, runtime, estimate, size, processors, horizon, overrun_step, hkeys, hvals, start, until):
    """Fills ``start``; a generator that pauses before each event at or after ``until[0]``
    (see :class:`~simengine.schedulers.base.ClusterSteps`)."""
    n = submit.shape[0]
    free = processors
    hn = 0
    # running jobs, unordered, with each job's slot for O(1) removal
    running = np.empty(processors, np.int64)
    slot = np.empty(n, np.int64)
    nrun = 0
    # waiting jobs in arrival order; started ones are marked -1 and compacted away
    queue = np.empty(n, np.int64)
    qpos = np.empty(n, np.int64)
    qn = 0
    removed = 0
    arrived = 0
    ends = np.empty(processors, np.float64)
    sizes = np.empty(processors, np.int64)
    while True:
        t = math.inf
        if arrived < n:
            t = submit[arrived]
        if hn > 0 and hkeys[0] < t:
            t = hkeys[0]
        if t == math.inf or t > horizon:
            break
        while t >= until[0]:
            yield t
        while hn > 0 and hkeys[0] <= t:
            j = hvals[0]
            hn = heap_pop(hkeys, hvals, hn)
            free += size[j]
            k = slot[j]
            nrun -= 1
            running[k] = running[nrun]
            slot[running[k]] = k
        while arrived < n and submit[arrived] <= t:
            queue[qn] = arrived
            qn += 1
            arrived += 1
        # 1. start jobs from the head while they fit
        h = 0
        while h < qn:
            j = queue[h]
            if j >= 0:
                if size[j] > free:
                    break
                free -= size[j]
                nrun, hn = _start(j, t, start, runtime, running, slot, nrun, hkeys, hvals, hn)
                queue[h] = -1
                removed += 1
            h += 1
        # 2. backfill behind the blocked head
        if h < qn and free > 0:
            head = queue[h]
            for k in range(nrun):
                r = running[k]
                ends[k] = planned_end(start[r], estimate[r], t, overrun_step, False)
                sizes[k] = size[r]
            order = np.argsort(ends[:nrun], kind="mergesort")
            avail = free
            shadow = math.inf
            extra = 0
            for k in order:
                if avail >= size[head] and ends[k] > shadow:
                    break  # every job ending at the shadow time has been counted
                avail += sizes[k]
                if avail >= size[head] and shadow == math.inf:
                    shadow = ends[k]
            if shadow < math.inf:
                extra = avail - size[head]
            for q in range(h + 1, qn):
                if free == 0:
                    break
                j = queue[q]
                if j < 0 or size[j] > free:
                    continue
                fits_before_shadow = t + estimate[j] <= shadow
                if fits_before_shadow or size[j] <= extra:
                    if not fits_before_shadow:
                        extra -= size[j]
                    free -= size[j]
                    nrun, hn = _start(j, t, start, runtime, running, slot, nrun, hkeys, hvals, hn)
                    queue[q] = -1
                    removed += 1
        if removed > 64 and 2 * removed > qn:
            qn = compact_queue(queue, qn, qpos)
            removed = 0
        elif h == qn:
            qn = 0
            removed = 0


def steps(submit, runtime, estimate, size, processors, params, horizon=math.inf) -> ClusterSteps:
    check_inputs(submit, size, processors)
    hkeys, hvals = new_heap(len(submit) + 1)
    start, until = ClusterSteps.outputs(len(submit))
    return ClusterSteps(easy_kernel(submit, runtime, estimate, size, processors, horizon, float(params.overrun_step),
                                    hkeys, hvals, start, until), start, until)


def schedule(submit, runtime, estimate, size, processors, params, horizon=math.inf) -> ClusterSchedule:
    return steps(submit, runtime, estimate, size, processors, params, horizon).to_end()


schedule.steps = steps
LOCAL_SCHEDULERS.register("easy", BackfillParams, "EASY backfilling (one reservation, for the queue head)",
                           capabilities=("compiled", "event_driven"))(schedule)
