"""Availability profiles for the event-driven cluster simulator.

Two forms, both step functions of free processors over time (``times[i]``, ``free[i]``:
the count on ``[times[i], times[i+1])``, the last step lasting forever), both allowed
to go negative (an overrunning job's extension can collide with reservations):

- :func:`steps`: built at once from intervals (running jobs until their planned end,
  advance reservations) for one scheduling decision -- FCFS's and EASY's view;
- :class:`Profile`: kept up to date by edits (conservative backfilling's queued
  reservations), on the compiled ``prof_*`` functions of :mod:`simengine.profile`.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from simengine.profile import prof_add, prof_advance, prof_find_start, prof_index

INF = math.inf


def steps(t: float, processors: int, starts, ends, sizes) -> tuple[np.ndarray, np.ndarray]:
    """(times, free) from time ``t`` on, with ``sizes[k]`` processors taken on [starts[k], ends[k])."""
    s = np.maximum(np.asarray(starts, np.float64), t)
    e = np.asarray(ends, np.float64)
    p = np.asarray(sizes, np.int64)
    keep = e > s
    s, e, p = s[keep], e[keep], p[keep]
    pts = np.concatenate(([t], s, e))
    delta = np.concatenate(([0], -p, p))
    order = np.argsort(pts, kind="stable")
    pts = pts[order]
    cum = np.cumsum(delta[order])
    last = np.empty(len(pts), bool)
    last[:-1] = pts[1:] != pts[:-1]
    last[-1] = True
    return pts[last].copy(), processors + cum[last]


def min_free(times, free, n, a, b):
    """Fewest free processors on [a, b) (at the instant a when b <= a)."""
    return _min_free_lo(times, free, 0, n, a, b)


def earliest(times: np.ndarray, free: np.ndarray, after: float, duration: float, size: int,
             limit: float = INF) -> float:
    """Earliest s >= after (and < limit, else inf) with ``size`` free on [s, s + duration)."""
    return float(prof_find_start(times, free, 0, len(times), float(after), float(duration), int(size),
                                 float(limit), 0.0, 0.0, 0))


def add(times: np.ndarray, free: np.ndarray, a: float, b: float, delta: int) -> tuple[np.ndarray, np.ndarray]:
    """A copy of the step function with ``delta`` added on [a, b) (a >= times[0])."""
    t2 = np.empty(len(times) + 2)
    f2 = np.empty(len(times) + 2, np.int64)
    t2[:len(times)] = times
    f2[:len(times)] = free
    t2, f2, _, n = prof_add(t2, f2, 0, len(times), float(a), float(b), int(delta))
    return t2[:n], f2[:n]


class Profile:
    """A step function of free processors kept by edits (reservations may overlap into negative)."""

    def __init__(self, processors: int, origin: float = 0.0):
        self.times = np.full(64, origin, np.float64)
        self.free = np.full(64, int(processors), np.int64)
        self.lo, self.n = 0, 1

    def advance(self, t: float) -> None:
        """Forget the steps that ended before ``t``."""
        self.lo = prof_advance(self.times, self.lo, self.n, float(t))

    def add(self, a: float, b: float, delta: int) -> None:
        """``delta`` more free processors on [a, b) (negative: take)."""
        if b > a:
            self.times, self.free, self.lo, self.n = prof_add(self.times, self.free, self.lo, self.n, float(a),
                                                              float(b), int(delta))

    def earliest(self, after: float, duration: float, size: int, own: tuple[float, float, int] | None = None,
                 limit: float = INF) -> float:
        """Earliest s >= after with ``size`` free on [s, s + duration); ``own`` = (start, end, size)
        of a window counted as free (the job's own reservation)."""
        a, b, p = own if own is not None else (0.0, 0.0, 0)
        return float(prof_find_start(self.times, self.free, self.lo, self.n, float(after), float(duration),
                                     int(size), float(limit), float(a), float(b), int(p)))

    def min_free(self, a: float, b: float) -> int:
        """Fewest free processors on [a, b)."""
        return int(_min_free_lo(self.times, self.free, self.lo, self.n, float(a), float(b)))


@njit(cache=True)
def compress_queue(times, free, lo, n, t, after, rstart, pend, pplan, size):
    """Conservative backfilling's compression of the queued reservations, compiled: in queue
    order, each reservation starting after ``t`` moves to its earliest fit at or after
    ``after[q]`` if that is sooner (its own window counts as free while it looks).

    ``rstart``/``pend`` (queued starts and ends) are updated in place; returns the profile
    arrays and the earliest new start (inf when nothing moved).
    """
    first = INF
    for q in range(rstart.shape[0]):
        s_old = rstart[q]
        if s_old <= t or after[q] >= s_old:
            continue
        s = prof_find_start(times, free, lo, n, after[q], pplan[q], size[q], s_old, s_old, pend[q], size[q])
        if s < s_old:
            times, free, lo, n = prof_add(times, free, lo, n, s_old, pend[q], size[q])
            e = s + pplan[q]
            times, free, lo, n = prof_add(times, free, lo, n, s, e, -size[q])
            rstart[q] = s
            pend[q] = e
            if s < first:
                first = s
    return times, free, lo, n, first


@njit(cache=True)
def _min_free_lo(times, free, lo, n, a, b):
    i = prof_index(times, lo, n, a)
    low = free[i]
    i += 1
    while i < n and times[i] < b:
        if free[i] < low:
            low = free[i]
        i += 1
    return low
