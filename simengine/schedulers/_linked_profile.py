"""The availability profile conservative backfilling keeps: a doubly linked list of
reference-counted breakpoints, plus lower bounds on the earliest fit of each job class.

Why not the sorted arrays of ``simengine.profile``: under compression a reservation
slides earlier millions of times, and each slide asks two local questions -- are
processors free just before my start, and where does that free run begin? -- then
edits a few steps. With a node per breakpoint that every reservation holding it
references, both are O(1) from the job's own start node and an edit costs the steps
it touches (no search, no shifting of array tails).

Nodes live in a pool of arrays:

* ``nt[x]``, ``nf[x]``: the node's time and the free processor count on
  ``[nt[x], nt[next])``; the last node's step lasts forever.
* ``L[PREV, x]``, ``L[NEXT, x]``: links; ``L[REF, x]``: how many references hold the
  node (a reservation's start or end, a running job's planned end, a class bound);
  ``L[GEN, x]``: bumped when the node is freed, so a stale handle can be detected.
* ``fs`` and ``S[NFREE]``: the stack of free node ids; ``S[HEAD]``: the head node,
  whose time is the current event time.

A node no reference holds is unlinked at once; its free count then equals its
predecessor's, since only reservations change the count. Nodes referenced by nothing
but a class bound may repeat the previous free count; searches do not care, they
depend only on the step function.

Earliest-fit bounds: jobs are grouped in classes of equal size and similar requested
time; class c keeps ``CF[c, LB]``, a time before which no window of ``CF[c, DLO]``
seconds with ``CI[c, SIZE]`` free processors begins (DLO is the shortest requested
time in the class). Consuming processor time can only keep it true; freeing can
break it, so every release of processor time calls :func:`lp_lower_bounds`, which
lowers the bound of each class that could fit a window holding freed time. Classes
are numbered by size, then DLO; ``CI[c, FIRST]`` is the first class of c's size,
whose row also holds the size's cached walk ends (DIPL, DIPR) and its active class
of shortest DLO (MINACT, kept by :func:`lp_activate` / :func:`lp_deactivate`): a
window of any class of the size holds one of that class, so its bound bounds them all. A bound
only ever needs to be right for the current profile, so that window can be judged
on the profile as it is when the function is called, any time after the release.
"""
from __future__ import annotations

import math

import numpy as np

from simengine.jit import njit

INF = math.inf
PREV, NEXT, REF, GEN = 0, 1, 2, 3  # rows of L
HEAD, NFREE = 0, 1  # entries of S
# columns of CI (int) and CF (float) for each job class
SIZE, LBNODE, LBGEN, DIPL, DIPLGEN, DIPR, DIPRGEN, FIRST, MINACT = 0, 1, 2, 3, 4, 5, 6, 7, 8
DLO, LB, GMAX = 0, 1, 2
CI_COLUMNS, CF_COLUMNS = 9, 3


@njit(cache=True)
def lp_new(capacity, origin, processors):
    """An empty profile (all ``processors`` free from ``origin`` on) with room for
    ``capacity`` nodes. Returns (nt, nf, L, fs, S)."""
    nt = np.empty(capacity)
    nf = np.empty(capacity, np.int64)
    L = np.zeros((4, capacity), np.int64)
    fs = np.empty(capacity, np.int64)
    for k in range(capacity):
        fs[k] = capacity - 1 - k
    S = np.zeros(2, np.int64)
    S[NFREE] = capacity - 1
    h = fs[capacity - 1]
    nt[h] = origin
    nf[h] = processors
    L[PREV, h] = -1
    L[NEXT, h] = -1
    S[HEAD] = h
    return nt, nf, L, fs, S


@njit(cache=True)
def _insert_after(x, time, nt, nf, L, fs, S):
    """A new node at ``time`` right after x, with x's free count; no reference yet."""
    if S[NFREE] == 0:
        raise RuntimeError("linked profile: node pool exhausted")
    S[NFREE] -= 1
    y = fs[S[NFREE]]
    nx = L[NEXT, x]
    nt[y] = time
    nf[y] = nf[x]
    L[PREV, y] = x
    L[NEXT, y] = nx
    L[REF, y] = 0
    L[NEXT, x] = y
    if nx >= 0:
        L[PREV, nx] = y
    return y


@njit(cache=True)
def lp_seek(x, time, nt, L):
    """The node whose step contains ``time``, walking forward from x (nt[x] <= time)."""
    while True:
        nx = L[NEXT, x]
        if nx < 0 or nt[nx] > time:
            return x
        x = nx


@njit(cache=True)
def lp_at(x, time, nt, nf, L, fs, S):
    """The node at exactly ``time`` (splitting a step if needed), from x with nt[x] <= time."""
    x = lp_seek(x, time, nt, L)
    if nt[x] == time:
        return x
    return _insert_after(x, time, nt, nf, L, fs, S)


@njit(cache=True)
def lp_at_back(x, time, nt, nf, L, fs, S):
    """The node at exactly ``time`` (splitting a step if needed), walking back from x
    (nt[x] >= time; the head must not be later than ``time``)."""
    while nt[x] > time:
        x = L[PREV, x]
    if nt[x] == time:
        return x
    return _insert_after(x, time, nt, nf, L, fs, S)


@njit(cache=True)
def lp_add(x, end, delta, nt, nf, L):
    """Add ``delta`` free processors on the steps from node x up to time ``end``
    (a node must start at ``end``, or the list end before it)."""
    while x >= 0 and nt[x] < end:
        nf[x] += delta
        x = L[NEXT, x]


@njit(cache=True)
def lp_take(x, end, delta, nt, nf, L, fs, S):
    """``lp_add`` on [nt[x], end) in one walk that also makes the node at ``end``; returns it."""
    while True:
        nx = L[NEXT, x]
        if nx < 0 or nt[nx] > end:
            if nt[x] == end:
                return x
            before = nf[x]
            nf[x] += delta
            y = _insert_after(x, end, nt, nf, L, fs, S)
            nf[y] = before
            return y
        nf[x] += delta
        x = nx


@njit(cache=True)
def lp_release(x, nt, nf, L, fs, S):
    """Drop one reference to node x; unlink it when none is left (never the head)."""
    L[REF, x] -= 1
    if L[REF, x] == 0 and x != S[HEAD]:
        pv = L[PREV, x]
        nx = L[NEXT, x]
        L[NEXT, pv] = nx
        if nx >= 0:
            L[PREV, nx] = pv
        L[GEN, x] += 1
        fs[S[NFREE]] = x
        S[NFREE] += 1


@njit(cache=True)
def lp_advance(t, nt, L, fs, S):
    """Forget the steps that ended by ``t``; the head then starts at ``t``.

    Only class bounds can still hold the nodes dropped here; they notice by the
    generation and fall back to the head.
    """
    h = S[HEAD]
    while True:
        nx = L[NEXT, h]
        if nx < 0 or nt[nx] > t:
            break
        L[GEN, h] += 1
        fs[S[NFREE]] = h
        S[NFREE] += 1
        h = nx
    L[PREV, h] = -1
    if nt[h] < t:
        nt[h] = t
    S[HEAD] = h


@njit(cache=True)
def lp_fit(x, after, duration, size, limit, nt, nf, L):
    """Earliest s >= ``after`` with ``size`` processors free on [s, s + duration)
    (at the instant s if duration is 0); x is the node containing ``after``.

    Only starts before ``limit`` are tried: if none fits, returns the first untried
    start, which is >= limit and before which no window fits; (inf, -1) when the last
    step blocks (it cannot in a kernel: every reservation ends). Returns (s, node
    containing s). The same answer as ``simengine.profile.prof_find_start``.
    """
    s = after
    k = x
    while s < limit:
        end = s + duration
        j = k
        while True:
            if nf[j] < size:
                break
            nx = L[NEXT, j]
            if nx < 0 or nt[nx] >= end:
                return s, k
            j = nx
        # nothing can start before the blocking step ends
        k = L[NEXT, j]
        if k < 0:
            return INF, -1
        s = nt[k]
    return s, k


@njit(cache=True)
def lp_set_bound(c, value, node, CI, CF, nt, nf, L, fs, S):
    """Set class c's earliest-fit bound to ``value`` (node contains it); returns the
    node the old bound held, or -1, for the caller to release when it no longer
    uses that node."""
    old = CI[c, LBNODE]
    if old >= 0 and L[GEN, old] != CI[c, LBGEN]:
        old = -1
    L[REF, node] += 1
    CF[c, LB] = value
    g = CI[c, FIRST]
    if value + CF[c, DLO] > CF[g, GMAX]:
        CF[g, GMAX] = value + CF[c, DLO]
    CI[c, LBNODE] = node
    CI[c, LBGEN] = L[GEN, node]
    return old


@njit(cache=True)
def lp_bound_node(c, t, CI, CF, nt, L, S):
    """(after, node containing it) to resume class c's search from: its bound, or
    the head if the bound is in the past or its node is gone."""
    after = CF[c, LB]
    x = CI[c, LBNODE]
    if after <= t or x < 0 or L[GEN, x] != CI[c, LBGEN]:
        return t, S[HEAD]
    return after, lp_seek(x, after, nt, L)


@njit(cache=True)
def lp_new_classes(csize, cdlo):
    """CI and CF for classes of sizes ``csize`` and shortest requested times ``cdlo``
    (sorted by size, then time), bounds unknown (-inf)."""
    nclass = csize.shape[0]
    CI = np.full((nclass, CI_COLUMNS), -1, np.int64)
    CF = np.empty((nclass, CF_COLUMNS))
    for c in range(nclass):
        CI[c, SIZE] = csize[c]
        CI[c, FIRST] = c if c == 0 or csize[c - 1] != csize[c] else CI[c - 1, FIRST]
        CF[c, DLO] = cdlo[c]
        CF[c, LB] = -INF
        CF[c, GMAX] = -INF
    return CI, CF


@njit(cache=True)
def _pin(old, x, nt, nf, L, fs, S):
    """Hold node x instead of ``old`` (-1: none); returns x."""
    if old != x:
        L[REF, x] += 1
        if old >= 0:
            lp_release(old, nt, nf, L, fs, S)
    return x


@njit(cache=True)
def lp_lower_bounds(x0, f0, f1, freed, t, act, nact, CI, CF, nt, nf, L, fs, S):
    """``freed`` processors were just given back on [f0, f1) (x0 contains f0): lower
    the bound of every active class that might now fit a window holding some of it.

    Only a class of size p with free count below p somewhere in [f0, f1) before and
    at least p after can gain a window; for the others the time with p free did not
    grow. Such a window lies in a run of steps with at least p free, reaching into
    [f0, f1), and starts after f0 - DLO. The run is found by walking from the freed
    steps, once per size: the classes of a size are consecutive in ``act`` and sorted
    by DLO, and as DLO grows the window's earliest start max(run start, f0 - DLO) only
    moves back and its end (that plus DLO) only moves on, so the walks back and on
    resume where the previous class left them, and once a class's window does not fit
    in the run no larger class of the size does. The steps that ended the last
    unsuccessful walk of a size (free count below p) are kept, in the row of the
    size's first class, and while they still hold they settle later calls between
    them without walking. (Called later than the release, pass a large ``freed``.)
    """
    if f1 <= f0 or nact == 0:
        return
    h = S[HEAD]
    maxf = nf[x0]
    minf = nf[x0]
    r = x0  # last node in [f0, f1)
    while True:
        nx = L[NEXT, r]
        if nx < 0 or nt[nx] >= f1:
            break
        r = nx
        if nf[r] > maxf:
            maxf = nf[r]
        if nf[r] < minf:
            minf = nf[r]
    pmin = minf - freed  # classes no larger than this gained nothing
    # lowering a bound can release the node it held: from the first bound set on, keep the
    # region's ends, and the walks' current nodes (px, py), alive
    pinned = False
    px = -1
    py = -1
    a = 0
    b = nact
    while a < b:  # the first active class larger than pmin (act is sorted by size)
        mid = (a + b) >> 1
        if CI[act[mid], SIZE] <= pmin:
            a = mid + 1
        else:
            b = mid
    while a < nact:  # active classes, by size, then DLO
        p = CI[act[a], SIZE]
        if p > maxf:
            break
        g = CI[act[a], FIRST]  # the size's row: the steps that stopped its last walk, GMAX
        if CF[g, GMAX] <= f0:  # every window of the size's classes ends by f0: none can gain
            while a < nact and CI[act[a], SIZE] == p:
                a += 1
            continue
        drt = INF
        dlt = -INF
        dr = CI[g, DIPR]
        if dr >= 0 and L[GEN, dr] == CI[g, DIPRGEN] and nf[dr] < p and nt[dr] >= f1:
            drt = nt[dr]
            dl = CI[g, DIPL]
            if dl >= 0 and L[GEN, dl] == CI[g, DIPLGEN] and nf[dl] < p and nt[dl] < f0:
                dlt = nt[dl]
        inrun = nf[x0] >= p
        x = x0  # run start: walked back while at least p are free (no further than needed)
        back_done = not inrun
        y = r  # run end: walked on while at least p are free
        dr = r if nf[r] < p else -1
        failed = False
        gmax = -INF  # the size's GMAX anew, if all its classes are seen
        while a < nact:
            c = act[a]
            if CI[c, SIZE] != p:
                break
            a += 1
            dlo = CF[c, DLO]
            if CF[c, LB] + dlo > gmax:
                gmax = CF[c, LB] + dlo
            floor = f0 - dlo
            if floor < t:
                floor = t
            if CF[c, LB] <= floor:
                continue
            # the steps that stopped the last walk still bound the run: nothing to do
            if (floor if floor > dlt else dlt) + dlo > drt:
                failed = True
                break
            if inrun:
                while not back_done and nt[x] > floor:
                    if x == h or nf[L[PREV, x]] < p:
                        back_done = True
                    else:
                        x = L[PREV, x]
                ls = nt[x] if nt[x] > floor else floor
            else:
                ls = f0
            need = ls + dlo
            if need > f1:
                if dr < 0:
                    while True:
                        ny = L[NEXT, y]
                        if ny < 0 or nt[ny] >= need:
                            break
                        if nf[ny] < p:
                            dr = ny
                            break
                        y = ny
                if dr >= 0 and nt[dr] < need:  # no room for the window: remember what stopped it
                    dl = -1
                    if not inrun:
                        dl = x0
                    elif back_done and x != h:
                        dl = L[PREV, x]
                    CI[g, DIPL] = dl
                    CI[g, DIPLGEN] = L[GEN, dl] if dl >= 0 else 0
                    CI[g, DIPR] = dr
                    CI[g, DIPRGEN] = L[GEN, dr]
                    failed = True
                    break
            if ls < CF[c, LB]:
                if not pinned:
                    L[REF, x0] += 1
                    L[REF, r] += 1
                    pinned = True
                px = _pin(px, x, nt, nf, L, fs, S)
                py = _pin(py, y, nt, nf, L, fs, S)
                old = lp_set_bound(c, ls, x, CI, CF, nt, nf, L, fs, S)
                if old >= 0:
                    lp_release(old, nt, nf, L, fs, S)
        if failed:  # nor does any larger class of this size
            while a < nact and CI[act[a], SIZE] == p:
                a += 1
        else:
            CF[g, GMAX] = gmax
    if px >= 0:
        lp_release(px, nt, nf, L, fs, S)
    if py >= 0:
        lp_release(py, nt, nf, L, fs, S)
    if pinned:
        lp_release(r, nt, nf, L, fs, S)
        lp_release(x0, nt, nf, L, fs, S)


@njit(cache=True)
def lp_activate(c, act, nact, CI):
    """Insert class c into the active list (kept sorted by class id, so by size, then
    DLO); returns its length. Keeps the size's first active class (MINACT)."""
    k = nact
    while k > 0 and act[k - 1] > c:
        act[k] = act[k - 1]
        k -= 1
    act[k] = c
    if k == 0 or CI[act[k - 1], SIZE] != CI[c, SIZE]:
        CI[CI[c, FIRST], MINACT] = c
    return nact + 1


@njit(cache=True)
def lp_deactivate(c, act, nact, CI):
    """Remove class c from the active list; returns its length."""
    k = 0
    while act[k] != c:
        k += 1
    for m in range(k, nact - 1):
        act[m] = act[m + 1]
    g = CI[c, FIRST]
    if CI[g, MINACT] == c:
        CI[g, MINACT] = act[k] if k < nact - 1 and CI[act[k], SIZE] == CI[c, SIZE] else -1
    return nact - 1


@njit(cache=True)
def group_durations(psize, pdur, ratio):
    """Class of each (size, duration) pair, pairs sorted by size then duration: a new
    class starts at a new size, at the first positive duration, or when the duration
    exceeds ``ratio`` times the class's shortest. Returns (pair class, class size,
    class shortest duration)."""
    m = psize.shape[0]
    pcls = np.empty(m, np.int64)
    csize = np.empty(m, np.int64)
    cdlo = np.empty(m)
    nc = 0
    for k in range(m):
        if (nc == 0 or psize[k] != csize[nc - 1] or pdur[k] > cdlo[nc - 1] * ratio
                or (cdlo[nc - 1] == 0.0 and pdur[k] > 0.0)):
            csize[nc] = psize[k]
            cdlo[nc] = pdur[k]
            nc += 1
        pcls[k] = nc - 1
    return pcls, csize[:nc].copy(), cdlo[:nc].copy()
