"""Compiled core of the evolving-application scheduler (Klein & Pérez, MODELS.md §7).

An evolution profile (EP) of resource occupation is a step function stored as two
parallel arrays: ``bt[k]`` (breakpoint time) and ``bv[k]`` (busy nodes on
``[bt[k], bt[k+1])``), ``m`` steps in use; the last step lasts forever. ``bt[0]`` is 0.
Every interval is half-open: a stage on ``[a, b)`` does not collide with a stage that
starts at ``b``.

``fit`` is the paper's Algorithm 3 written as a loop (the recursion only ever goes one
stage forward or backward); ``plan_applications`` is Algorithm 2 over a range of one test's
applications (a run plans its one test in slices of them, reporting progress between);
``schedule_tests`` runs it over many independent tests in one call, so the 1000-test
reproduction needs one compiled call per algorithm.
"""
from __future__ import annotations

import math

import numpy as np

from simengine.jit import njit

INF = math.inf


@njit(cache=True)
def ep_index(bt, m, t):
    """Index of the step containing ``t`` (largest k < m with bt[k] <= t; 0 if t < bt[0])."""
    a, b = 0, m - 1
    if t < bt[0]:
        return 0
    while a < b:
        mid = (a + b + 1) >> 1
        if bt[mid] <= t:
            a = mid
        else:
            b = mid - 1
    return a


@njit(cache=True)
def ep_max(bt, bv, m, a, b):
    """max(ep, a, b): the largest value on [a, b); 0 when a >= b."""
    if a >= b:
        return 0
    k = ep_index(bt, m, a)
    best = bv[k]
    k += 1
    while k < m and bt[k] < b:
        if bv[k] > best:
            best = bv[k]
        k += 1
    return best


@njit(cache=True)
def ep_loc(bt, bv, m, a, b):
    """loc(ep, a, b): the end of the last step attaining max(ep, a, b) on [a, b), at most b."""
    if a >= b:
        return b
    k = ep_index(bt, m, a)
    best = bv[k]
    last = k
    k += 1
    while k < m and bt[k] < b:
        if bv[k] >= best:
            best = bv[k]
            last = k
        k += 1
    if last + 1 < m and bt[last + 1] < b:
        return bt[last + 1]
    return b


@njit(cache=True)
def ep_earliest(bt, bv, m, t, d, cap):
    """Earliest s >= t with ep <= cap on all of [s, s + d); inf if there is none.

    Same result as the paper's placement loop (lines 8-11: jump to loc(ep, s, s + d)
    while max(ep, s, s + d) exceeds cap): that loop only skips start times whose window
    contains the blocking maximum, so the first start it accepts is the earliest.
    """
    s = t
    k = ep_index(bt, m, s)
    while True:
        # scan the steps overlapping [s, s + d)
        j = k
        blocked = -1
        while j < m and (j == k or bt[j] < s + d):
            if bv[j] > cap:
                blocked = j
            j += 1
        if blocked < 0:
            return s
        if blocked + 1 >= m:
            return INF  # the last step lasts forever and is too full
        s = bt[blocked + 1]
        k = blocked + 1


@njit(cache=True)
def ep_add(bt, bv, m, a, b, n):
    """Add ``n`` busy nodes on [a, b) in place (capacity checked by the caller); new m."""
    if a >= b or n == 0:
        return m
    for t in (a, b):
        k = ep_index(bt, m, t)
        if bt[k] != t:
            # split step k at t
            for q in range(m, k + 1, -1):
                bt[q] = bt[q - 1]
                bv[q] = bv[q - 1]
            bt[k + 1] = t
            bv[k + 1] = bv[k]
            m += 1
    k = ep_index(bt, m, a)
    while k < m and bt[k] < b:
        bv[k] += n
        k += 1
    return m


@njit(cache=True)
def fit(bt, bv, m, d, n, nmax, limit, t_start, move_first, hold):
    """Algorithm 3 (base fit): place stages ``d``, ``n`` into the EP (bt, bv, m).

    Writes the hold start of stage i into ``hold[i]`` and the completion into
    ``hold[N]`` (stage i holds n[i] nodes on [hold[i], hold[i+1])). Returns False when
    no placement exists (only possible if the EP's last step is too full forever).

    The stages are tried in order; a stage that cannot start where its predecessor
    ended stretches that predecessor up to ``limit`` times its duration, if the
    predecessor's nodes stay free meanwhile; otherwise the predecessor is re-placed
    later (at the earliest allowed start, or after the blocking maximum) and the search
    resumes from there. With ``move_first`` the first stage is moved right instead of
    stretched (the paper's lines 30-33).
    """
    N = d.shape[0]
    ts = np.empty(N)
    t0 = np.empty(N)
    i = 0
    t0[0] = t_start
    ts[0] = t_start
    while True:
        s = ep_earliest(bt, bv, m, ts[i], d[i], nmax - n[i])
        if s == INF:
            return False
        ts[i] = s
        if i > 0:
            dp = d[i - 1]
            teas = s - limit * dp  # earliest allowed start of the previous stage
            # the paper compares with t0 - d(i-1), the previous stage's start ts[i-1]. With real-valued
            # times (ts + d) - d can round an ulp off ts and the search would creep by ulps (or never
            # advance): a stretch within 1e-12 (relative) of the limit is accepted
            if teas > ts[i - 1] + 1e-12 * max(1.0, abs(s)):  # the previous stage would exceed the limit
                i -= 1
                ts[i] = teas
                continue
            if nmax - ep_max(bt, bv, m, t0[i], s) < n[i - 1]:  # no room to stretch it
                back = ep_loc(bt, bv, m, t0[i], s)
                i -= 1
                ts[i] = back
                continue
        if i == N - 1:
            break
        t0[i + 1] = s + d[i]
        ts[i + 1] = t0[i + 1]
        i += 1
    for k in range(N):
        hold[k] = ts[k]
    hold[N] = ts[N - 1] + d[N - 1]
    if move_first and N > 1:
        # max(): with real-valued times, ts[1] - d[0] may round below the placement that was checked
        hold[0] = max(ts[0], ts[1] - d[0])
    return True


@njit(cache=True)
def compact(bt, bv, m, d, n, nmax, limit, move_first, hold, rbt, rbv, rhold):
    """The +c post-processing: re-place the stages right to left, ending at hold[N].

    Runs the base fit on the mirror image (time C - t, stages reversed) of the EP
    restricted to [0, C], C = hold[N]; before 0 (after C in mirror time) nothing may
    run. The mirrored fit finds the latest start that still ends by C. Updates ``hold``
    in place; keeps the base placement if the mirror finds none (it always finds the
    base placement at worst). ``rbt``/``rbv``/``rhold`` are scratch arrays.
    """
    N = d.shape[0]
    C = hold[N]
    # mirror of the EP on [0, C]: steps [bt[k], bt[k+1]) -> [C - bt[k+1], C - bt[k])
    kc = ep_index(bt, m, C)
    if bt[kc] == C and kc > 0:
        kc -= 1  # the step starting at C is not inside [0, C)
    rm = 0
    for k in range(kc, -1, -1):
        hi = bt[k + 1] if k + 1 < m else INF
        if hi > C:
            hi = C
        rbt[rm] = C - hi
        rbv[rm] = bv[k]
        rm += 1
    rbt[rm] = C  # real times before 0: blocked
    rbv[rm] = nmax + 1
    rm += 1
    rd = d[::-1].copy()
    rn = n[::-1].copy()
    if not fit(rbt, rbv, rm, rd, rn, nmax, limit, 0.0, move_first, rhold):
        return
    if rhold[N] > C:
        return
    tol = 1e-13 * max(1.0, C)
    for k in range(N + 1):
        x = C - rhold[k]
        # C - (C - b) need not round back to b: snap to the real breakpoint it came from, so the
        # stage meets its neighbours in the resource EP exactly
        j = ep_index(bt, m, x)
        for q in (j, j + 1):
            if q < m and abs(bt[q] - x) <= tol:
                x = bt[q]
        hold[N - k] = x


@njit(cache=True)
def plan_scratch(stages, app_off):
    """The EP and scratch arrays for planning up to ``stages`` stages (each adds at most two
    breakpoints), the EP empty (one step: nothing busy from 0)."""
    cap = 2 * stages + 4
    bt = np.empty(cap)
    bv = np.empty(cap, np.int64)
    bt[0] = 0.0
    bv[0] = 0
    longest = 0
    for a in range(app_off.shape[0] - 1):
        if app_off[a + 1] - app_off[a] > longest:
            longest = app_off[a + 1] - app_off[a]
    return bt, bv, np.empty(cap), np.empty(cap, np.int64), np.empty(longest + 1), np.empty(longest + 1)


@njit(cache=True)
def plan_applications(a0, a1, app_off, d, n, nmax, limit, do_compact, move_first, bt, bv, m, rbt, rbv, h, rh,
                      hold, app_start, app_end):
    """Algorithm 2 for applications a0 .. a1-1 of one test, in order, each fitted into the
    resource EP (bt, bv, m) and added to it; returns the EP's new step count. Called on
    consecutive ranges, it plans as one call over all of them would: the EP is the whole state.
    ``rbt``/``rbv`` (as long as bt) and ``h``/``rh`` (longest application + 1) are scratch."""
    for a in range(a0, a1):
        lo, hi = app_off[a], app_off[a + 1]
        N = hi - lo
        da = d[lo:hi]
        na = n[lo:hi]
        hv = h[:N + 1]
        fit(bt, bv, m, da, na, nmax, limit, 0.0, move_first, hv)
        if do_compact:
            compact(bt, bv, m, da, na, nmax, limit, move_first, hv, rbt, rbv, rh[:N + 1])
        for i in range(N):
            hold[lo + i] = hv[i]
            m = ep_add(bt, bv, m, hv[i], hv[i + 1], na[i])
        app_start[a] = hv[0]
        app_end[a] = hv[N]
    return m


@njit(cache=True)
def schedule_tests(test_off, app_off, d, n, nmax, limit, do_compact, move_first, hold, app_start, app_end):
    """Algorithm 2 for each test: applications in order, each fitted into the resource EP.

    Flat input: test t has applications test_off[t] .. test_off[t+1]-1; application a
    has stages app_off[a] .. app_off[a+1]-1 of durations ``d`` and nodes ``n``.
    Output: ``hold[app_off[a] + i]`` is the hold start of stage i of application a
    (its hold ends where the next stage's starts; the last stage ends at app_end[a]).
    """
    ntests = test_off.shape[0] - 1
    max_stages = 0
    for t in range(ntests):
        s = app_off[test_off[t + 1]] - app_off[test_off[t]]
        if s > max_stages:
            max_stages = s
    bt, bv, rbt, rbv, h, rh = plan_scratch(max_stages, app_off)
    for t in range(ntests):
        bt[0] = 0.0
        bv[0] = 0
        plan_applications(test_off[t], test_off[t + 1], app_off, d, n, nmax, limit, do_compact, move_first,
                          bt, bv, 1, rbt, rbv, h, rh, hold, app_start, app_end)
