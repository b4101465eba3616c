"""Availability profiles for the event-driven cluster simulator.

Two forms, both step functions of free processors over time (``times[i]``, ``free[i]``:
the count on ``[times[i], times[i+1])``, the last step lasting forever), both allowed
to go negative (an overrunning job's extension can collide with reservations):

- :func:`_steps`: built at once from intervals (running jobs until their planned end,
  advance reservations) for one scheduling decision -- FCFS's and EASY's view;
- arrays kept up to date by edits (conservative backfilling's queued reservations), on the
  compiled ``prof_*`` functions of :mod:`simengine.profile`, moved by :func:`compress_queue`
  and :func:`replan_queue` (which places a batch on a linked copy, where an edit shifts no
  array tail).

The event core (simengine/local/core.py) calls all of them from compiled code.
"""
from __future__ import annotations

import math

import numpy as np

from simengine.jit import njit
from simengine.profile import prof_find_start, prof_grow, prof_index
from simengine.schedulers._linked_profile import HEAD, NEXT, NFREE, PREV, lp_at, lp_fit, lp_new, lp_seek, lp_take

INF = math.inf


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
    order = np.argsort(pts[:k], kind="mergesort")
    times = np.empty(k)
    free = np.empty(k, np.int64)
    w = 0
    cum = 0
    for r in range(k):  # one step per distinct time, with everything up to it summed
        cum += delta[order[r]]
        x = pts[order[r]]
        if r == k - 1 or pts[order[r + 1]] != x:
            times[w] = x
            free[w] = processors + cum
            w += 1
    return times[:w].copy(), free[:w].copy()


@njit(cache=True)
def compress_queue(times, free, lo, n, t, qj, after, rstart, pend, pplan, size, processors, cls, csize, cdlo):
    """Conservative backfilling's compression of the queued reservations, compiled: in queue
    order (job ids ``qj``), each reservation starting after ``t`` moves to its earliest fit at
    or after max(t, ``after[j]``) if that is sooner (its own window counts as free while it looks).

    ``rstart``/``pend`` (per job: queued starts and ends) are updated in place; returns the
    profile arrays and the earliest new start (inf when nothing moved).

    The result is that of searching every job from max(t, after[j]), found with less work
    (the kernels' idea, simengine/schedulers/conservative.py). A start s before the job's
    reservation [s_old, e_old) of p processors and d seconds needs p free at the instant s,
    so none exists when ``reach[p]`` (a lower bound of the first instant >= t with p free)
    is at or after s_old. Otherwise s is (a) a *slide*: [s, s_old) has p free, so s lies in
    the free run just before s_old, and the search starts where that run does; or (b) a
    *jump*: a fit of (p, d) on the profile as it stands, which starts no earlier than the
    first fit of (p, dlo) for the job's class (its size, dlo <= d): ``bound[c]``, a lower
    bound of that, set by each search and lowered where a moved reservation gives
    processors back (taking them only delays fits). The new start is the earlier of (a) and (b).
    """
    reach = np.full(processors + 1, INF)
    for i in range(lo, n):
        _lower_reach(reach, times[i] if times[i] > t else t, free[i], processors)
    bound = np.empty(csize.shape[0])
    for c in range(csize.shape[0]):
        bound[c] = reach[csize[c]]
    # the classes of the queued jobs, by size (csize is sorted): only their bounds are read
    queued = np.zeros(csize.shape[0], np.bool_)
    for q in range(qj.shape[0]):
        queued[cls[qj[q]]] = True
    act = np.flatnonzero(queued)
    seen = np.empty(processors + 1)
    back = np.empty(processors + 1)
    edges = np.empty(4)
    # room for every move at once (a move adds at most 4 steps), so no move reallocates
    times, free, lo, n = prof_grow(times, free, lo, n, 4 * qj.shape[0])
    scratch_t = np.empty(2 * (n - lo) + 16)
    scratch_f = np.empty(2 * (n - lo) + 16, np.int64)
    first = INF
    for q in range(qj.shape[0]):
        j = qj[q]
        s_old = rstart[j]
        a = after[j] if after[j] > t else t
        p = size[j]
        if s_old <= t or a >= s_old or reach[p] >= s_old:
            continue
        d = pplan[j]
        e_old = pend[j]
        best = s_old
        # (a) slide: the free run (p free) just before s_old
        k = prof_index(times, lo, n, s_old)
        if times[k] >= s_old and k > lo:
            k -= 1
        if free[k] >= p:
            while k > lo and times[k] > a and free[k - 1] >= p:
                k -= 1
            s = prof_find_start(times, free, lo, n, times[k] if times[k] > a else a, d, p, s_old, s_old, e_old, p)
            if s < best:
                best = s
        # (b) jump: a fit of (p, d) on the profile as it stands
        c = cls[j]
        if a > t or d < cdlo[c]:  # the class bound does not apply (suspended, or a resumed job's plan)
            s = prof_find_start(times, free, lo, n, a, d, p, best, 0.0, 0.0, 0)
            if s < best:
                best = s
        elif bound[c] < best:
            s = prof_find_start(times, free, lo, n, bound[c], cdlo[c], p, best, 0.0, 0.0, 0)
            bound[c] = s if s < best else best
            if s < best and d != cdlo[c]:
                s = prof_find_start(times, free, lo, n, s, d, p, best, 0.0, 0.0, 0)
            if s < best:
                best = s
        if best < s_old:
            e = best + d
            n = _move(times, free, lo, n, s_old, e_old, best, e, p, edges, scratch_t, scratch_f)
            rstart[j] = best
            pend[j] = e
            if best < first:
                first = best
            # p came back on [x0, e_old): only fits holding an instant of it can be new
            x0 = e if e > s_old else s_old
            if x0 < e_old:
                _lower_bounds(times, free, lo, n, t, x0, e_old, p, processors, reach, bound, act, csize, cdlo, seen, back)
    return times, free, lo, n, first


@njit(cache=True)
def _move(times, free, lo, n, a1, b1, a2, b2, p, edges, pt, pv):
    """p processors given back on [a1, b1) and taken on [a2, b2): the same profile as
    prof_add(a1, b1, p) then prof_add(a2, b2, -p) (one step per change of the free count), in
    one pass over the steps the windows touch and one shift of the steps after them. Edits the
    arrays in place (the caller leaves room for 4 more steps) and returns the new n.

    ``edges`` (4), ``pt`` and ``pv`` are the caller's scratch, so that a move allocates nothing
    and returns no array (compression makes millions of moves)."""
    use1 = b1 > a1
    use2 = b2 > a2
    if not use1 and not use2:
        return n
    x0 = min(a1 if use1 else INF, a2 if use2 else INF)
    x1 = max(b1 if use1 else -INF, b2 if use2 else -INF)
    i = prof_index(times, lo, n, x0)
    kh = prof_index(times, lo, n, x1)
    m = kh - i + 1
    # the breakpoints from step i to step kh, with the windows' edges merged in
    ne = 0
    if use1:
        edges[ne] = a1
        edges[ne + 1] = b1
        ne += 2
    if use2:
        edges[ne] = a2
        edges[ne + 1] = b2
        ne += 2
    for a in range(1, ne):  # at most four edges: insertion sort
        x = edges[a]
        b = a
        while b > 0 and edges[b - 1] > x:
            edges[b] = edges[b - 1]
            b -= 1
        edges[b] = x
    if pt.shape[0] < m + ne:
        pt = np.empty(m + ne)
        pv = np.empty(m + ne, np.int64)
    w = 0
    r = i  # the old step holding the current point
    q = 0
    prev = free[i - 1] if i > lo else np.iinfo(np.int64).min
    while r <= kh or q < ne:
        if q < ne and (r > kh or edges[q] < times[r]):
            x = edges[q]
            old = free[r - 1]  # edges lie after times[i]
            q += 1
        else:
            x = times[r]
            old = free[r]
            if q < ne and edges[q] == x:
                q += 1
            r += 1
        if w > 0 and pt[w - 1] == x:
            continue
        v = old
        if use1 and a1 <= x < b1:
            v += p
        if use2 and a2 <= x < b2:
            v -= p
        if v == prev:
            continue
        pt[w] = x
        pv[w] = v
        prev = v
        w += 1
    # replace steps i..kh by the w points
    shift = w - m
    if shift > 0:
        for k in range(n - 1, kh, -1):
            times[k + shift] = times[k]
            free[k + shift] = free[k]
    elif shift < 0:
        for k in range(kh + 1, n):
            times[k + shift] = times[k]
            free[k + shift] = free[k]
    for k in range(w):
        times[i + k] = pt[k]
        free[i + k] = pv[k]
    return n + shift


@njit(cache=True)
def _lower_bounds(times, free, lo, n, t, x0, x1, given, processors, reach, bound, act, csize, cdlo, seen, back):
    """``given`` processors came back on [x0, x1): lower ``reach`` and the bounds of the
    classes ``act`` (ascending size).

    A new fit of a class (size P, shortest time dlo) holds an instant of [x0, x1) with P
    free, so it starts after seen[P] - dlo (seen[P]: the first such instant), and within
    the run of steps with P free that holds it, which starts no earlier than back[P] (where
    the run with P free ending at x0 starts). Classes with P free all over [x0, x1) before
    (P <= its least free count less ``given``) gain nothing.
    """
    # only sizes up to the region's largest free count can be seen there (top): the per-size
    # arrays are read and reset no further
    i = prof_index(times, lo, n, x0)
    least = free[i]
    top = 0
    k = i
    while k < n and times[k] < x1:
        if free[k] > top:
            top = free[k]
        k += 1
    if top > processors:
        top = processors
    seen[:top + 1] = INF
    while i < n and times[i] < x1:
        _lower_reach(seen, times[i] if times[i] > x0 else x0, free[i], processors)
        if free[i] < least:
            least = free[i]
        i += 1
    for p in range(1, top + 1):
        if seen[p] < reach[p]:
            reach[p] = seen[p]
    # back[p]: walk back from x0 while the steps keep p free
    back[:top + 1] = x0
    k = prof_index(times, lo, n, x0)
    if times[k] >= x0 and k > lo:
        k -= 1
    m = free[k] if times[k] < x0 else 0
    if m > top:
        m = top
    while m >= 1:
        start = times[k] if times[k] > t else t
        if k == lo or start <= t:
            back[1:m + 1] = start
            break
        f = free[k - 1]
        if f < m:  # the run of p free, f < p <= m, starts here
            back[max(f, 0) + 1:m + 1] = start
            m = f
        k -= 1
    for a in range(act.shape[0]):
        c = act[a]
        P = csize[c]
        if P > top or seen[P] == INF:
            break  # nor for larger sizes
        if P <= least - given:
            continue
        b = seen[P] - cdlo[c]
        if back[P] > b:
            b = back[P]
        if b < t:
            b = t
        if b < bound[c]:
            bound[c] = b


@njit(cache=True)
def _lower_reach(reach, x, f, processors):
    """p processors are free at instant x for every p <= f: reach[p] = min(reach[p], x)
    (reach is non-decreasing in p, so stop at the first p already reached by x)."""
    p = f if f < processors else processors
    while p >= 1 and reach[p] > x:
        reach[p] = x
        p -= 1


@njit(cache=True)
def replan_queue(times, free, lo, n, t, give_back, place, after, rstart, pend, pplan, size, cls, cdlo):
    """Give back the queued reservations of jobs ``give_back``, then give each job of ``place``
    in turn the earliest reservation at or after max(t, ``after[j]``) (insertion before lower
    priorities, overrun repair). Returns the profile arrays and the earliest new start.

    The same result as a prof_add per job given back, then prof_find_start and prof_add per job
    placed, at a cost that does not grow with the queue times the profile (a priority job's
    arrival replans the whole queue behind it): the reservations are given back in one sweep,
    the placements are made on a linked copy of the profile (the kernels' linked profile, where
    an edit shifts nothing), and a job searches from its class's last fit -- placing only takes
    processors, so no window of (size, shortest time of the class) opens before it (``cls``,
    ``cdlo``: the classes of :func:`simengine.schedulers.conservative.job_classes`).
    """
    nt, nf, L, fs, S = _linked_given_back(times, free, lo, n, place.shape[0], give_back, rstart, pend, size)
    h = S[HEAD]
    bound = np.full(cdlo.shape[0], -INF)
    bnode = np.zeros(cdlo.shape[0], np.int64)
    first = INF
    for q in range(place.shape[0]):
        j = place[q]
        p, d = size[j], pplan[j]
        a = after[j] if after[j] > t else t
        c = cls[j]
        if a > t or d < cdlo[c]:  # the class bound does not apply (suspended, or a resumed job's plan)
            s, x = lp_fit(lp_seek(h, a, nt, L), a, d, p, INF, nt, nf, L)
        else:
            if bound[c] == -INF:
                bound[c], bnode[c] = t, h
            s, x = lp_fit(lp_seek(bnode[c], bound[c], nt, L), bound[c], cdlo[c], p, INF, nt, nf, L)
            if s < INF:
                bound[c], bnode[c] = s, x
                if d != cdlo[c]:
                    s, x = lp_fit(x, s, d, p, INF, nt, nf, L)
        e = s + d
        rstart[j] = s
        pend[j] = e
        if e > s:
            lp_take(lp_at(x, s, nt, nf, L, fs, S), e, -p, nt, nf, L, fs, S)
        if s < first:
            first = s
    # back to arrays (the old ones are free now), one step per change of the free count
    used = nt.shape[0] - S[NFREE]
    if used > times.shape[0]:
        times = np.empty(2 * used)
        free = np.empty(2 * used, np.int64)
    w = 0
    x = h
    while x >= 0:
        if w == 0 or nf[x] != free[w - 1]:
            times[w] = nt[x]
            free[w] = nf[x]
            w += 1
        x = L[NEXT, x]
    return times, free, 0, w, first


@njit(cache=True)
def _linked_given_back(times, free, lo, n, placements, give_back, rstart, pend, size):
    """The profile steps [lo, n) plus the give-back windows, as a linked profile
    (simengine.schedulers._linked_profile: (nt, nf, L, fs, S)) with room for ``placements``
    more reservations (two splits each).

    No sort: each window edge is found by binary search. An edge on a breakpoint is added to its
    step; one inside a step (where a reservation ends and another of the same size begins, the
    profile has no breakpoint) goes to that step's bucket, and a bucket holds a few edges."""
    nsteps = n - lo
    at = np.zeros(nsteps, np.int64)  # processors given back from each step's breakpoint on
    # edges inside step s go to bucket s + 1; bucket 0 holds those before the first step
    ex = np.empty(2 * give_back.shape[0])
    exd = np.empty(2 * give_back.shape[0], np.int64)
    exb = np.empty(2 * give_back.shape[0], np.int64)
    m = 0
    for q in range(give_back.shape[0]):
        j = give_back[q]
        if pend[j] > rstart[j]:
            for x, d in ((rstart[j], size[j]), (pend[j], -size[j])):
                i = prof_index(times, lo, n, x)
                if times[i] == x:
                    at[i - lo] += d
                else:
                    ex[m] = x
                    exd[m] = d
                    exb[m] = 0 if x < times[lo] else i - lo + 1
                    m += 1
    # the inside edges by bucket (a counting sort), each bucket by time (insertion sort: they are few)
    start = np.zeros(nsteps + 2, np.int64)
    for e in range(m):
        start[exb[e] + 1] += 1
    for b in range(nsteps + 1):
        start[b + 1] += start[b]
    fill = start[:nsteps + 1].copy()
    bx = np.empty(m)
    bd = np.empty(m, np.int64)
    for e in range(m):
        b = exb[e]
        w = fill[b]
        fill[b] += 1
        while w > start[b] and bx[w - 1] > ex[e]:
            bx[w] = bx[w - 1]
            bd[w] = bd[w - 1]
            w -= 1
        bx[w] = ex[e]
        bd[w] = exd[e]
    # the nodes, in time order, built where lp_new would hand them out (node 0 is the head)
    nt, nf, L, fs, S = lp_new(nsteps + m + 2 * placements + 2, times[lo] if nsteps > 0 else 0.0, 0)
    used = 0
    add = 0  # the given-back processors at the current point
    for s in range(-1, nsteps):
        if s >= 0:
            add += at[s]
            used = _append_node(times[lo + s], free[lo + s] + add, nt, nf, L, used)
        base = free[lo + s] if s >= 0 else free[lo]
        e = start[s + 1]
        while e < start[s + 2]:
            x = bx[e]
            while e < start[s + 2] and bx[e] == x:
                add += bd[e]
                e += 1
            used = _append_node(x, base + add, nt, nf, L, used)
    S[NFREE] = nt.shape[0] - used  # fs still lists the nodes from ``used`` on, the next one last
    return nt, nf, L, fs, S


@njit(cache=True)
def _append_node(time, value, nt, nf, L, used):
    """Append a step to the linked profile being built (not when it repeats the last count)."""
    if used > 0 and time == nt[used - 1]:  # the last step would have no length: it takes the count
        nf[used - 1] = value
        return used
    if used > 0 and value == nf[used - 1]:
        return used
    nt[used] = time
    nf[used] = value
    L[PREV, used] = used - 1
    L[NEXT, used] = -1
    if used > 0:
        L[NEXT, used - 1] = used
    return used + 1


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
def _min_free_lo(times, free, lo, n, a, b):
    i = prof_index(times, lo, n, a)
    low = free[i]
    i += 1
    while i < n and times[i] < b:
        if free[i] < low:
            low = free[i]
        i += 1
    return low
