"""Straightforward pure-Python schedulers, written independently of the engine's
compiled kernels, to check them against. Slow on purpose: clarity over speed."""
from __future__ import annotations

import math


def _usage(intervals, tau):
    return sum(size for start, end, size in intervals if start <= tau < end)


def _fits(intervals, processors, s, d, size):
    points = [s] + [a for a, _, _ in intervals if s < a < s + d]
    return all(_usage(intervals, p) + size <= processors for p in points)


def _earliest(intervals, processors, after, d, size):
    candidates = sorted({after} | {e for _, e, _ in intervals if e > after})
    for c in candidates:
        if _fits(intervals, processors, c, d, size):
            return c
    raise AssertionError("no start found")


def fcfs(submit, runtime, size, processors):
    start, free_at = [], []  # free_at: (end, size) of running jobs
    t = 0.0
    for j in range(len(submit)):
        t = max(t, submit[j])
        while processors - sum(s for e, s in free_at if e > t) < size[j]:
            t = min(e for e, _ in free_at if e > t)
        start.append(t)
        free_at.append((t + runtime[j], size[j]))
    return start


def easy(submit, runtime, estimate, size, processors):
    n = len(submit)
    start = [math.nan] * n
    queue, running = [], []  # running: (job, start)
    arrived = 0
    while arrived < n or queue:
        ends = [start[j] + runtime[j] for j, _ in running]
        t = min([submit[arrived]] if arrived < n else [] + [], default=math.inf)
        t = min([t] + ends)
        running = [(j, s) for j, s in running if s + runtime[j] > t]
        while arrived < n and submit[arrived] <= t:
            queue.append(arrived)
            arrived += 1
        free = processors - sum(size[j] for j, _ in running)
        while queue and size[queue[0]] <= free:
            j = queue.pop(0)
            start[j] = t
            running.append((j, t))
            free -= size[j]
        if queue:
            head = queue[0]
            shadow, extra = math.inf, 0
            for end in sorted({s + estimate[j] for j, s in running}):
                # processors free at the moment `end`: everything ending then or before
                avail = free + sum(size[j] for j, s in running if s + estimate[j] <= end)
                if avail >= size[head]:
                    shadow, extra = end, avail - size[head]
                    break
            for j in list(queue[1:]):
                if size[j] > free:
                    continue
                if t + estimate[j] <= shadow or size[j] <= extra:
                    if t + estimate[j] > shadow:
                        extra -= size[j]
                    queue.remove(j)
                    start[j] = t
                    running.append((j, t))
                    free -= size[j]
    return start


def conservative(submit, runtime, estimate, size, processors):
    """Requires runtime <= estimate (no overruns): compression semantics only."""
    n = len(submit)
    start = [math.nan] * n
    res = {}  # queued job -> reserved start
    running = []  # (job, start)
    arrived = 0

    def intervals(exclude=None):
        iv = [(s, s + estimate[j], size[j]) for j, s in running]
        iv += [(s, s + estimate[j], size[j]) for j, s in res.items() if j != exclude]
        return [x for x in iv if x[1] > x[0]]

    while arrived < n or res:
        t = min([submit[arrived]] if arrived < n else [math.inf])
        t = min([t] + [s + runtime[j] for j, s in running] + list(res.values()))
        early = any(s + runtime[j] <= t < s + estimate[j] for j, s in running)
        running = [(j, s) for j, s in running if s + runtime[j] > t]
        if early:
            for j in sorted(res):
                res[j] = min(res[j], _earliest(intervals(j), processors, t, estimate[j], size[j]))
        while arrived < n and submit[arrived] <= t:
            res[arrived] = _earliest(intervals(), processors, t, estimate[arrived], size[arrived])
            arrived += 1
        for j in sorted(j for j, s in res.items() if s <= t):
            start[j] = t
            running.append((j, t))
            del res[j]
    return start
