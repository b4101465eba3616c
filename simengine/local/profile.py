"""Availability profiles for the event-driven cluster simulator.

Step functions of free processors over time (``times[i]``, ``free[i]``: the count on
``[times[i], times[i+1])``, the last step lasting forever), allowed to go negative (an
overrunning job's extension can collide with reservations): :func:`_steps` builds one at once
from intervals (running jobs until their planned end, advance reservations) for one scheduling
decision -- FCFS's and EASY's view.

Conservative backfilling's profile is not here: the event core keeps the kernel's linked profile
(simengine.schedulers._linked_profile) and compresses it with the kernel's pass
(simengine.schedulers.conservative.compress); :func:`give_window` (the opposite of the kernel's
``conservative.take_window``) and :func:`replan_queue` are the edits the event core makes beside
the kernel's.

The event core (simengine/local/core.py) calls all of them from compiled code.
"""
from __future__ import annotations

import math

import numpy as np

from simengine.jit import njit
from simengine.profile import prof_index
from simengine.schedulers._linked_profile import (DLO, HEAD, LB, SIZE, lp_add, lp_fit, lp_lower_bounds, lp_release,
                                                  lp_seek, lp_set_bound)
from simengine.schedulers.conservative import reserve

INF = math.inf
ANY_COUNT = 1 << 62  # more processors than any profile holds


@njit(cache=True)
def _steps(t, processors, starts, ends, sizes):
    m = starts.shape[0]
    pts = np.empty(2 * m + 1)
    delta = np.empty(2 * m + 1, np.int64)
    pts[0] = t
    delta[0] = 0
    k = 1
    for i in range(m):
        a = starts[i] if starts[i] > t else t
        if ends[i] > a:
            pts[k] = a
            delta[k] = -sizes[i]
            pts[k + 1] = ends[i]
            delta[k + 1] = sizes[i]
            k += 2
    return steps_of_points(processors, pts, delta, k)


@njit(cache=True)
def steps_of_points(processors, pts, delta, k):
    """The step function of ``processors`` plus the changes ``delta[:k]`` at times ``pts[:k]`` (one
    step per distinct time, with every change up to it summed: the order of equal times does not
    matter, so the sort need not be stable)."""
    order = np.argsort(pts[:k], kind="quicksort")
    times = np.empty(k)
    free = np.empty(k, np.int64)
    w = 0
    cum = 0
    for r in range(k):
        cum += delta[order[r]]
        x = pts[order[r]]
        if r == k - 1 or pts[order[r + 1]] != x:
            times[w] = x
            free[w] = processors + cum
            w += 1
    return times[:w], free[:w]


@njit(cache=True)
def give_window(na, nb, a, b, p, t, nt, nf, L, fs, S, CI, CF, act, nact):
    """Give back a window of ``conservative.take_window`` (nodes na, nb on [a, b)), lowering the class
    bounds it may open (every release of processor time must: simengine.schedulers._linked_profile)."""
    if nb >= 0:
        lp_add(na, b, p, nt, nf, L)
        lp_lower_bounds(na, a, b, p, t, act, nact, CI, CF, nt, nf, L, fs, S)
        lp_release(nb, nt, nf, L, fs, S)
    lp_release(na, nt, nf, L, fs, S)


@njit(cache=True)
def replan_queue(t, give_back, place, after, rstart, pend, pplan, size, cls, snode, enode,
                 nt, nf, L, fs, S, CI, CF, act, nact):
    """Give back the queued reservations of jobs ``give_back``, then give each job of ``place`` in
    turn the earliest reservation at or after max(t, ``after[j]``) (insertion before lower
    priorities, a suspension, overrun repair), on the kernels' linked profile (arguments as in
    simengine.schedulers.conservative.compress). Returns the earliest new start.

    A priority arrival places the whole queue behind it again, so each job searches from its
    class's last fit: placing only takes processors, so no window of (size, shortest time of
    the class) opens before it. A class's first search starts from the latest last fit of the
    classes searched before it that are no larger and no longer (a window of the class holds
    one of theirs), not from now: it skips the steps the placements so far filled. A job waiting
    for its own processors (``after``) or planned shorter than its class's shortest (a resumed
    job's rest) searches from ``after``.

    The class bounds are mended once the placements are made, and only for the old windows of
    the jobs whose reservation changed: where a job got its window back, the profile is as it was
    (most of the queue, most of the time). Until then each old window keeps its start node."""
    m = give_back.shape[0]
    old_node = np.full(m, -1, np.int64)
    old_start = np.empty(m)
    old_end = np.empty(m)
    for q in range(m):
        j = give_back[q]
        if snode[j] < 0:
            continue
        old_node[q], old_start[q], old_end[q] = snode[j], rstart[j], pend[j]
        if enode[j] >= 0:
            lp_add(snode[j], pend[j], size[j], nt, nf, L)
            lp_release(enode[j], nt, nf, L, fs, S)
        snode[j] = -1
        enode[j] = -1
    h = S[HEAD]
    nclass = CF.shape[0]
    bound = np.full(nclass, -INF)
    bnode = np.zeros(nclass, np.int64)
    searched = np.empty(nclass, np.int64)  # the classes searched so far, in the order they were
    nsearched = 0
    first = INF
    for j in place:
        p, d = size[j], pplan[j]
        a = after[j] if after[j] > t else t
        c = cls[j]
        dlo = CF[c, DLO]
        if a > t or d < dlo:
            s, x = lp_fit(lp_seek(h, a, nt, L), a, d, p, INF, nt, nf, L)
        else:
            if bound[c] == -INF:
                bound[c], bnode[c] = t, h
                for k in range(nsearched):
                    o = searched[k]
                    if bound[o] > bound[c] and CI[o, SIZE] <= p and CF[o, DLO] <= dlo:
                        bound[c], bnode[c] = bound[o], bnode[o]
                searched[nsearched] = c
                nsearched += 1
            s, x = lp_fit(lp_seek(bnode[c], bound[c], nt, L), bound[c], dlo, p, INF, nt, nf, L)
            if s < INF:
                bound[c], bnode[c] = s, x
                if d != dlo:
                    s, x = lp_fit(x, s, d, p, INF, nt, nf, L)
        if s == INF:
            raise RuntimeError("conservative backfilling: a reservation found no room (the profile never recovers)")
        reserve(j, s, x, d, p, rstart, pend, snode, enode, nt, nf, L, fs, S)
        if s < first:
            first = s
    # The windows given back and not taken again freed processor time, so class bounds must come
    # down over them -- or be set anew, exact for the profile as the replan leaves it: a class
    # searched here has its last search's fit (no window of the class began before it then, and
    # the placements after it only took processors); any other (its jobs all rank before the
    # replanned ones, or wait for their own processors) by a search from now. Whichever is less
    # work: a priority arrival moves hundreds of windows and leaves few classes unsearched, an
    # overrun's repair the other way round.
    # A job that got its window back holds its old start node again: that reference goes now. The
    # others' old start nodes are let go last: a bound set below may hold one (even an empty
    # window's, which frees nothing: it is not counted as moved).
    kept = 0
    moved = 0
    for q in range(m):
        j = give_back[q]
        if old_node[q] < 0:
            continue
        if rstart[j] == old_start[q] and pend[j] == old_end[q]:
            lp_release(old_node[q], nt, nf, L, fs, S)
            continue
        old_node[kept], old_start[kept], old_end[kept] = old_node[q], old_start[q], old_end[q]
        kept += 1
        if old_end[q] > old_start[q]:
            moved += 1
    unsearched = 0
    for k in range(nact):
        if bound[act[k]] == -INF:
            unsearched += 1
    lower = moved == 0 or unsearched > moved
    if not lower:
        for k in range(nact):
            c = act[k]
            if bound[c] == -INF:
                bound[c], bnode[c] = lp_fit(h, t, CF[c, DLO], CI[c, SIZE], INF, nt, nf, L)
            if bnode[c] >= 0:
                old = lp_set_bound(c, bound[c], bnode[c], CI, CF, nt, nf, L, fs, S)
                if old >= 0:
                    lp_release(old, nt, nf, L, fs, S)
            else:  # no window ever (cannot happen while the profile ends with all processors free)
                CF[c, LB] = -INF
    for q in range(kept):
        if lower:
            # judged after the placements, and other windows came back over it too: a large
            # ``freed`` (lp_lower_bounds; an empty window returns at once)
            lp_lower_bounds(old_node[q], old_start[q], old_end[q], ANY_COUNT, t, act, nact, CI, CF,
                            nt, nf, L, fs, S)
        lp_release(old_node[q], nt, nf, L, fs, S)
    return first


@njit(cache=True)
def queue_insert(buf, n, prio, rank, j):
    """Insert job j into the queue ``buf[:n]`` (ordered by -priority, rank, id; room for one
    more) after every job ranking before it; returns its position."""
    a, b = 0, n
    kp, kr = -prio[j], rank[j]
    while a < b:
        mid = (a + b) // 2
        m = buf[mid]
        mp = -prio[m]
        if mp < kp or (mp == kp and (rank[m] < kr or (rank[m] == kr and m <= j))):
            a = mid + 1
        else:
            b = mid
    for i in range(n, a, -1):
        buf[i] = buf[i - 1]
    buf[a] = j
    return a


@njit(cache=True)
def queue_delete(buf, n, gone):
    """Remove the positions ``gone`` (ascending) from the queue ``buf[:n]``; returns its new length."""
    if gone.shape[0] == 0:
        return n
    w = gone[0]
    g = 0
    for r in range(gone[0], n):
        if g < gone.shape[0] and gone[g] == r:
            g += 1
            continue
        buf[w] = buf[r]
        w += 1
    return w


@njit(cache=True)
def first_backfill(qj, k, size, pplan, nfree, times, free, t, check_fit):
    """First queue position >= k whose job asks for at most ``nfree`` processors and (when
    ``check_fit``) fits on the step function (times, free) from t for its planned duration."""
    m = times.shape[0]
    while k < qj.shape[0]:
        j = qj[k]
        p = size[j]
        if p <= nfree:
            if not check_fit or pplan[j] <= 0 or _min_free_lo(times, free, 0, m, t, t + pplan[j]) >= p:
                return k
        k += 1
    return k


@njit(cache=True)
def fit_limits(times, free, t, nfree, lim):
    """For p = 1..nfree: how long p processors stay free from t on the step function (times, free),
    as ``lim[p]``, the end of the last such instant (inf: for ever, -inf: not even at t). A job of p
    processors and planned duration d > 0 fits from t iff ``t + d <= lim[p]``: what
    ``_min_free_lo(times, free, 0, n, t, t + d) >= p`` says, read in O(1) per job after O(n + nfree)."""
    n = times.shape[0]
    i = prof_index(times, 0, n, t)
    low = free[i] if free[i] < nfree else nfree
    if low < 0:
        low = 0
    for p in range(low + 1, nfree + 1):
        lim[p] = -INF
    i += 1
    while i < n and low > 0:
        if free[i] < low:
            f = free[i] if free[i] > 0 else 0
            for p in range(f + 1, low + 1):
                lim[p] = times[i]
            low = f
        i += 1
    for p in range(1, low + 1):
        lim[p] = INF


@njit(cache=True)
def first_backfill_within(qj, k, size, pplan, nfree, lim, t):
    """``first_backfill`` with the fit test read from ``fit_limits`` (lim) of the same step function."""
    while k < qj.shape[0]:
        j = qj[k]
        p = size[j]
        if p <= nfree and (pplan[j] <= 0 or t + pplan[j] <= lim[p]):
            return k
        k += 1
    return k


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
