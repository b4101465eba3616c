"""Gantt segments (MODELS.md §8): which processors each job held, and when.

Local schedulers decide *when* a job runs and on how many processors; this pass
decides *which* processors, so the browser can draw one row per processor. Each job
takes the lowest-numbered free processors when it starts (ends are handled before
starts at the same instant), which is a valid assignment because no schedule ever
uses more processors than the cluster has. A job whose processors are not contiguous
gives one segment per contiguous block.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from simengine.schedulers._heap import heap_pop, heap_push

#: Segment kinds, in the order of MODELS.md §8; stored as int8 codes.
KIND_NAMES = ("run", "claimed", "reservation", "suspended", "killed", "stretched", "transfer")
KIND_RUN, KIND_CLAIMED, KIND_RESERVATION, KIND_SUSPENDED, KIND_KILLED, KIND_STRETCHED, KIND_TRANSFER = range(7)

SEGMENT_COLUMNS = ("cluster", "first_processor", "processors", "t0", "t1", "job", "component", "kind")


@njit(cache=True)
def _assign(start, end, size, processors, order_events, is_end):
    n = start.shape[0]
    total = 0
    for j in range(n):
        if not np.isnan(start[j]):
            total += size[j]
    seg_job = np.empty(total, np.int64)
    seg_first = np.empty(total, np.int64)
    seg_count = np.empty(total, np.int64)
    ns = 0
    # free processor ids in a min-heap
    hk = np.empty(processors + 1)
    hv = np.empty(processors + 1, np.int64)
    hn = 0
    for p in range(processors):
        hn = heap_push(hk, hv, hn, float(p), p)
    held = np.empty(total, np.int64)  # processors held by each job, at offset[j]
    offset = np.zeros(n + 1, np.int64)
    for j in range(n):
        offset[j + 1] = offset[j] + (size[j] if not np.isnan(start[j]) else 0)
    taken = np.empty(processors, np.int64)
    for e in range(order_events.shape[0]):
        j = order_events[e]
        if is_end[e]:
            for k in range(offset[j], offset[j + 1]):
                hn = heap_push(hk, hv, hn, float(held[k]), held[k])
            continue
        m = size[j]
        for k in range(m):
            taken[k] = hv[0]
            hn = heap_pop(hk, hv, hn)
        # heap pops come out sorted: cut them into contiguous blocks
        first = taken[0]
        count = 1
        for k in range(1, m + 1):
            if k < m and taken[k] == taken[k - 1] + 1:
                count += 1
                continue
            seg_job[ns] = j
            seg_first[ns] = first
            seg_count[ns] = count
            ns += 1
            if k < m:
                first = taken[k]
                count = 1
        for k in range(m):
            held[offset[j] + k] = taken[k]
        if start[j] == end[j]:  # zero-length: gives its processors back at once
            for k in range(m):
                hn = heap_push(hk, hv, hn, float(taken[k]), taken[k])
    return seg_job[:ns], seg_first[:ns], seg_count[:ns]


def assign_processors(start: np.ndarray, end: np.ndarray, size: np.ndarray, processors: int):
    """Segments (job index, first processor, processor count) for one cluster's schedule.

    ``start``/``end`` are NaN for jobs that never started; those get no segment.
    """
    started = np.flatnonzero(~np.isnan(start))
    positive = started[end[started] > start[started]]
    # events at one instant: ends, then zero-length jobs (they hand their processors
    # straight back), then the other starts
    times = np.concatenate([end[positive], start[started]])
    kinds = np.concatenate([np.zeros(len(positive), np.int8),
                            np.where(end[started] > start[started], 2, 1).astype(np.int8)])
    jobs = np.concatenate([positive, started])
    order = np.lexsort((jobs, kinds, times))
    return _assign(start.astype(np.float64), end.astype(np.float64), size.astype(np.int64), int(processors),
                   jobs[order], kinds[order] == 0)
