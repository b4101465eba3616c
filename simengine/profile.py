"""Availability profile: free processors of one cluster as a step function of time.

Stored as two parallel numpy arrays of breakpoints -- ``times[i]`` and ``free[i]``,
the free processor count on ``[times[i], times[i+1])``; the last step lasts forever.
The compiled ``prof_*`` functions below do the work so compiled code can call them;
:class:`AvailabilityProfile` wraps them for Python callers (reservations, claims and
tests). Conservative backfilling keeps its own linked profile instead
(``simengine/schedulers/_linked_profile.py``), whose moves are local edits.
"""
from __future__ import annotations

import math

import numpy as np

from simengine.jit import njit

INF = math.inf


@njit(cache=True)
def prof_index(times, lo, n, t):
    """Index of the step containing ``t`` (the largest i in [lo, n) with times[i] <= t)."""
    a, b = lo, n - 1
    if t < times[lo]:
        return lo
    while a < b:
        mid = (a + b + 1) >> 1
        if times[mid] <= t:
            a = mid
        else:
            b = mid - 1
    return a


@njit(cache=True)
def prof_grow(times, free, lo, n, extra):
    """Make room for ``extra`` more breakpoints: drop the consumed prefix, else reallocate."""
    if n + extra <= times.shape[0]:
        return times, free, lo, n
    if lo > 0:
        m = n - lo
        for k in range(m):
            times[k] = times[lo + k]
            free[k] = free[lo + k]
        lo, n = 0, m
    if n + extra > times.shape[0]:
        cap = max(2 * times.shape[0], n + extra)
        t2 = np.empty(cap, np.float64)
        f2 = np.empty(cap, np.int64)
        t2[:n] = times[:n]
        f2[:n] = free[:n]
        times, free = t2, f2
    return times, free, lo, n


@njit(cache=True)
def _split(times, free, lo, n, t):
    """Ensure a breakpoint at ``t`` (capacity checked by the caller); return (index, n)."""
    i = prof_index(times, lo, n, t)
    if times[i] == t:
        return i, n
    # insert after i, copying its free count (shift the tail right, in place)
    for k in range(n, i + 1, -1):
        times[k] = times[k - 1]
        free[k] = free[k - 1]
    times[i + 1] = t
    free[i + 1] = free[i]
    return i + 1, n + 1


@njit(cache=True)
def _merge_at(times, free, lo, n, i):
    """Remove breakpoint i if it no longer changes the free count; return n."""
    if lo < i < n and free[i] == free[i - 1]:
        for k in range(i, n - 1):
            times[k] = times[k + 1]
            free[k] = free[k + 1]
        return n - 1
    return n


@njit(cache=True)
def prof_add(times, free, lo, n, start, end, delta):
    """Add ``delta`` processors to the free count on ``[start, end)``; return the new arrays and n.

    A negative delta reserves, a positive one releases. ``start`` must not precede times[lo].
    """
    if end <= start:
        return times, free, lo, n
    times, free, lo, n = prof_grow(times, free, lo, n, 2)
    i, n = _split(times, free, lo, n, start)
    j, n = _split(times, free, lo, n, end)
    for k in range(i, j):
        free[k] += delta
    n = _merge_at(times, free, lo, n, j)
    n = _merge_at(times, free, lo, n, i)
    return times, free, lo, n


@njit(cache=True)
def prof_find_start(times, free, lo, n, after, duration, size, limit, own_start, own_end, own_size):
    """Earliest s >= after with at least ``size`` free processors on [s, s + duration).

    Only starts before ``limit`` are searched; returns inf when none is found. The
    window ``[own_start, own_end)`` holding ``own_size`` processors is counted as free
    (a job looking for a better place for its own reservation). A zero duration asks
    for ``size`` free processors at the instant s.
    """
    k = prof_index(times, lo, n, after)
    s = after
    while s < limit:
        end = s + duration
        x = s
        j = k
        blocked_at = -1.0
        while True:
            # effective step [x, seg_end): the profile step j, cut at the own window's edges
            seg_end = times[j + 1] if j + 1 < n else INF
            avail = free[j]
            if own_size > 0:
                if own_start <= x < own_end:
                    avail += own_size
                    if own_end < seg_end:
                        seg_end = own_end
                elif x < own_start < seg_end:
                    seg_end = own_start
            if avail < size:
                blocked_at = seg_end
                break
            if seg_end >= end or seg_end == INF:
                break
            x = seg_end
            if j + 1 < n and times[j + 1] <= x:
                j += 1
        if blocked_at < 0.0:
            return s
        # nothing can start before the blocking step ends
        s = blocked_at
        if s == INF:
            return INF
        while k + 1 < n and times[k + 1] <= s:
            k += 1
    return INF


@njit(cache=True)
def prof_advance(times, lo, n, t):
    """Forget steps that ended before ``t``; return the new ``lo``."""
    return prof_index(times, lo, n, t)


class AvailabilityProfile:
    """Free processors over time for one cluster of ``processors`` processors.

    >>> p = AvailabilityProfile(10)
    >>> p.reserve(0.0, 5.0, 6)
    >>> p.earliest_start(6, 2.0, after=0.0)
    5.0
    """

    def __init__(self, processors: int, origin: float = 0.0):
        self.processors = int(processors)
        self.times = np.full(16, origin, np.float64)
        self.free = np.full(16, self.processors, np.int64)
        self.lo, self.n = 0, 1

    def free_at(self, t: float) -> int:
        return int(self.free[prof_index(self.times, self.lo, self.n, t)])

    def earliest_start(self, size: int, duration: float, after: float) -> float:
        """Earliest time >= ``after`` at which ``size`` processors stay free for ``duration``."""
        if size > self.processors:
            return INF
        return float(prof_find_start(self.times, self.free, self.lo, self.n, float(after), float(duration),
                                     int(size), INF, 0.0, 0.0, 0))

    def reserve(self, start: float, end: float, size: int) -> None:
        """Take ``size`` processors on [start, end); raises if they are not all free."""
        if self.earliest_start(size, end - start, start) != start:
            raise ValueError(f"{size} processors are not free on [{start}, {end})")
        self._add(start, end, -int(size))

    def release(self, start: float, end: float, size: int) -> None:
        """Give back ``size`` processors on [start, end)."""
        self._add(start, end, int(size))

    def steps(self) -> tuple[np.ndarray, np.ndarray]:
        """(times, free) of the current steps, as copies."""
        return self.times[self.lo:self.n].copy(), self.free[self.lo:self.n].copy()

    def _add(self, start: float, end: float, delta: int) -> None:
        self.times, self.free, self.lo, self.n = prof_add(
            self.times, self.free, self.lo, self.n, float(start), float(end), delta)
