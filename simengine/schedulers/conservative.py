"""Conservative backfilling: every queued job holds a reservation on the cluster's
availability profile, made at submission at the earliest time it fits; a job starts
when its reservation comes (MODELS.md §2).

When a job ends before its requested time, the schedule is compressed: queued jobs,
in arrival order, move their reservations to the earliest time they now fit (one
pass, as Mu'alem & Feitelson describe).

When a running job outlives its requested time (walltime not enforced), its plan
is extended (see ``BackfillParams.overrun_step``); reservations the extension
collides with are placed again, in arrival order, after all the others.

How compression stays cheap (docs/performance.md): take a queued job whose
reservation [s, s + d) holds p processors, and count its own processors as free.
A start before s fits iff (a) at least p processors are free just before s -- the
job then *slides* back to where that free run begins (or to now) -- or (b) a window
of d seconds with p free lies wholly before s -- a *jump*, whose earliest place is
the earliest fit of (p, d) on the profile as it stands (past s its own processors
make room). The new start is the earlier of the two. (a) is read off the node just
before the job's start node in the linked profile (``_linked_profile``); (b) needs
a search only when the job's class bound -- a time before which no window of the
class begins -- is below the start. Both are exact, so the schedules are those of
searching every reservation's earliest fit.

The search looks for a window of the class's shortest requested time (DLO) first,
then, from there, for the job's own. The size's active class of shortest DLO is
searched before any other class of the size: no longer window begins before its
earliest fit, so one search there serves every class of the size (the bound it
leaves is also the one that most often says "nothing before your start" at once).
Finer classes make the second search shorter but give ``lp_lower_bounds`` more
classes to lower; the ratio (1.05, ``CLASS_RATIO``) was measured on
DAS2, LCG, HPC2N and NASA (docs/performance.md, benchmarks/conservative_classes.py).
"""
from __future__ import annotations

import math

import numpy as np

from simengine.jit import load_own_copies, njit
from simengine.registry import LOCAL_SCHEDULERS
from simengine.schedulers._heap import heap_pop, heap_push
from simengine.schedulers._linked_profile import (
    DLO, FIRST, HEAD, LB, MINACT, NEXT, PREV, REF, group_durations, lp_activate, lp_add, lp_advance, lp_at, lp_at_back,
    lp_bound_node, lp_deactivate, lp_fit, lp_lower_bounds, lp_new, lp_new_classes, lp_release, lp_seek,
    lp_set_bound, lp_take,
)
from simengine.schedulers.base import (BackfillParams, ClusterSchedule, ClusterSteps, check_inputs, compact_queue,
                                      planned_end)

QUEUED, RUNNING, DONE = 1, 2, 3
# Durations within this factor of a class's shortest share its class (and bound); the
# kernel and the event core (simengine.local) use the same (see the module docstring).
CLASS_RATIO = 1.05


@njit(cache=True)
def take_window(x, a, b, p, nt, nf, L, fs, S):
    """Take p processors on [a, b) (x: a node at or before a); the start and end nodes, each
    holding a reference (-1 for the end of an empty window: it holds nothing)."""
    na = lp_at(x, a, nt, nf, L, fs, S)
    L[REF, na] += 1
    nb = -1
    if b > a:
        nb = lp_take(na, b, -p, nt, nf, L, fs, S)
        L[REF, nb] += 1
    return na, nb


@njit(cache=True)
def reserve(j, s, x, d, p, pstart, pend, snode, enode, nt, nf, L, fs, S):
    """Reserve p processors for job j on [s, s + d); x is the node containing s."""
    snode[j], enode[j] = take_window(x, s, s + d, p, nt, nf, L, fs, S)
    pstart[j] = s
    pend[j] = s + d


@njit(cache=True)
def end_plan(j, t, pend, size, enode, nt, nf, L, fs, S, CI, CF, act, nact):
    """Running job j stops at t (the head's time): the rest of its plan, [t, pend), comes back
    and the class bounds it may open are lowered; its end node is let go. True if anything came
    back (an early completion: the queue is compressed)."""
    back = pend[j] > t
    if back:
        h = S[HEAD]
        lp_add(h, pend[j], size[j], nt, nf, L)
        lp_lower_bounds(h, t, pend[j], size[j], t, act, nact, CI, CF, nt, nf, L, fs, S)
    if enode[j] >= 0:
        lp_release(enode[j], nt, nf, L, fs, S)
        enode[j] = -1
    return back


@njit(cache=True)
def plan_from_now(j, t, pend, size, enode, nt, nf, L, fs, S):
    """Running job j's plan [t, pend[j]) goes on the profile (an overrun's extension, a start
    outside its reservation); the end node it held before is let go."""
    old = enode[j]
    enode[j] = -1
    if pend[j] > t:
        e = lp_take(S[HEAD], pend[j], -size[j], nt, nf, L, fs, S)
        L[REF, e] += 1
        enode[j] = e
    if old >= 0:
        lp_release(old, nt, nf, L, fs, S)


@njit(cache=True)
def conservative_kernel(submit, runtime, estimate, size, processors, horizon, overrun_step, cls, csize, cdlo, start,
                        until):
    """Start times (into ``start``) of jobs sorted by submit time; ``cls`` is each job's class
    (classes sorted by size, ``csize``/``cdlo`` their size and shortest requested time). A
    generator that pauses before each event at or after ``until[0]`` (ClusterSteps)."""
    n = submit.shape[0]
    nclass = csize.shape[0]
    pstart = np.full(n, math.inf)  # reserved start of queued jobs
    pend = np.full(n, math.inf)  # reservation end (queued) or planned end (running)
    state = np.zeros(n, np.int8)
    # nodes: each job holds at most two, each class one, plus the head and a split in flight
    nt, nf, L, fs, S = lp_new(2 * n + nclass + 8, submit[0] if n > 0 else 0.0, processors)
    snode = np.full(n, -1, np.int64)  # a queued job's start node
    enode = np.full(n, -1, np.int64)  # its end node; a running job's planned end
    CI, CF = lp_new_classes(csize, cdlo)
    ccount = np.zeros(nclass, np.int64)  # queued jobs per class
    act = np.empty(nclass, np.int64)  # classes with queued jobs, sorted
    nact = 0
    ck, cv = np.empty(n + 1), np.empty(n + 1, np.int64)  # completions (actual end)
    # planned ends of running jobs (overrun checks); lazily invalidated: an entry counts
    # only while it matches the job's current plan
    ok_, ov = np.empty(4 * n + 16), np.empty(4 * n + 16, np.int64)
    cn = on = 0
    next_start = math.inf  # earliest reservation of a queued job
    queue = np.empty(n, np.int64)
    qpos = np.empty(n, np.int64)
    qn = 0
    removed = 0
    arrived = 0
    actual_free = processors
    evicted = np.empty(n, np.int64)
    ev_lo = np.empty(n)
    ev_hi = np.empty(n)
    never = np.full(n, -math.inf)  # no job waits for anything but its reservation (compress's after)
    while True:
        while on > 0 and (state[ov[0]] != RUNNING or pend[ov[0]] != ok_[0]):
            on = heap_pop(ok_, ov, on)
        t = math.inf
        if arrived < n:
            t = submit[arrived]
        if cn > 0 and ck[0] < t:
            t = ck[0]
        if next_start < t:
            t = next_start
        if on > 0 and ok_[0] < t:
            t = ok_[0]
        if t == math.inf or t > horizon:
            break
        while t >= until[0]:
            yield t
        lp_advance(t, nt, L, fs, S)
        h = S[HEAD]
        early_completion = False
        # 1. completions: give back the unused rest of each reservation
        while cn > 0 and ck[0] <= t:
            j = cv[0]
            cn = heap_pop(ck, cv, cn)
            state[j] = DONE
            if runtime[j] > 0:
                actual_free += size[j]
            if end_plan(j, t, pend, size, enode, nt, nf, L, fs, S, CI, CF, act, nact):
                early_completion = True
        # 2. overruns: a running job outlived its plan, so its plan is extended
        ext_hi = -math.inf
        while on > 0 and ok_[0] <= t:
            j = ov[0]
            on = heap_pop(ok_, ov, on)
            if state[j] != RUNNING or pend[j] != t:
                continue
            new_end = planned_end(start[j], estimate[j], t, overrun_step, True)
            pend[j] = new_end
            plan_from_now(j, t, pend, size, enode, nt, nf, L, fs, S)
            on = heap_push(ok_, ov, on, new_end, j)
            ext_hi = max(ext_hi, new_end)
        repaired = False
        if ext_hi > t:
            low = nf[h]
            x = L[NEXT, h]
            while x >= 0 and nt[x] < ext_hi:
                low = min(low, nf[x])
                x = L[NEXT, x]
            if low < 0:
                # the extension overlaps reservations: those starting before ext_hi are
                # placed again, in arrival order, after the others
                m = 0
                for q in range(qn):
                    j = queue[q]
                    if j >= 0 and pstart[j] < ext_hi:
                        if enode[j] >= 0:
                            lp_add(snode[j], pend[j], size[j], nt, nf, L)
                            lp_release(enode[j], nt, nf, L, fs, S)
                            enode[j] = -1
                        lp_release(snode[j], nt, nf, L, fs, S)
                        evicted[m] = j
                        ev_lo[m] = pstart[j]
                        ev_hi[m] = pend[j]
                        m += 1
                for k in range(m):
                    j = evicted[k]
                    s, x = lp_fit(h, t, estimate[j], size[j], math.inf, nt, nf, L)
                    reserve(j, s, x, estimate[j], size[j], pstart, pend, snode, enode, nt, nf, L, fs, S)
                for k in range(m):  # the evictions freed processor time
                    if ev_hi[k] > ev_lo[k]:
                        x = lp_seek(h, ev_lo[k], nt, L)
                        lp_lower_bounds(x, ev_lo[k], ev_hi[k], processors + 1, t, act, nact, CI, CF,
                                        nt, nf, L, fs, S)
                next_start = math.inf
                for q in range(qn):
                    j = queue[q]
                    if j >= 0 and pstart[j] < next_start:
                        next_start = pstart[j]
                repaired = True
        if early_completion or repaired:
            # 3. compression: one pass in arrival order, each reservation moved to the
            # earliest time it fits now (see the module docstring)
            first = compress(t, queue, qn, never, pstart, pend, estimate, size, cls, snode, enode,
                             nt, nf, L, fs, S, CI, CF, act, nact, False)  # repairs leave nothing below zero
            if first < next_start:
                next_start = first
        # 4. arrivals get the earliest reservation that fits
        while arrived < n and submit[arrived] <= t:
            j = arrived
            arrived += 1
            s, x = lp_fit(h, t, estimate[j], size[j], math.inf, nt, nf, L)
            reserve(j, s, x, estimate[j], size[j], pstart, pend, snode, enode, nt, nf, L, fs, S)
            state[j] = QUEUED
            queue[qn] = j
            qpos[j] = qn
            qn += 1
            c = cls[j]
            ccount[c] += 1
            if ccount[c] == 1:  # bounds are not kept for classes without queued jobs
                CF[c, LB] = -math.inf
                nact = lp_activate(c, act, nact, CI)
            if s < next_start:
                next_start = s
        # 5. jobs whose reservation has come start now
        if next_start <= t:
            next_start = math.inf
            for q in range(qn):
                j = queue[q]
                if j < 0:
                    continue
                if pstart[j] > t:
                    if pstart[j] < next_start:
                        next_start = pstart[j]
                    continue
                state[j] = RUNNING
                start[j] = t
                lp_release(snode[j], nt, nf, L, fs, S)
                snode[j] = -1
                c = cls[j]
                ccount[c] -= 1
                if ccount[c] == 0:
                    nact = lp_deactivate(c, act, nact, CI)
                if runtime[j] > 0:  # a zero-length job holds its processors for no time at all
                    actual_free -= size[j]
                    if actual_free < 0:
                        raise RuntimeError("conservative backfilling over-committed processors")
                cn = heap_push(ck, cv, cn, t + runtime[j], j)
                on = heap_push(ok_, ov, on, pend[j], j)
                queue[q] = -1
                removed += 1
        if removed > 64 and 2 * removed > qn:
            qn = compact_queue(queue, qn, qpos)
            removed = 0
        # the overrun heap only grows by lazy entries; rebuild it if it gets too big
        if on > 3 * n + 8:
            on = 0
            for j in range(n):
                if state[j] == RUNNING:
                    on = heap_push(ok_, ov, on, pend[j], j)



@njit(cache=True)
def compress(t, queue, qn, after, pstart, pend, plan, size, cls, snode, enode, nt, nf, L, fs, S, CI, CF, act, nact,
             below_zero):
    """Compression: one pass in queue order (``queue[:qn]``, -1 for a gap), each reservation
    starting after t moved to the earliest time it fits at or after max(t, ``after[j]``), its
    own processors counted free (see the module docstring). Returns the earliest new start
    (inf when nothing moved).

    The kernel and the event core (simengine.local.core) both compress with this. ``after``
    (a suspended job waits for its own processors) and a plan shorter than the class's
    shortest (a resumed job's rest) only occur in the event core: such a job searches from
    ``after`` without its class's bound. So can ``below_zero`` (the profile may go below zero:
    an overrun's extension into an advance reservation, which no replan undoes): a slide then
    holds only if its new window ends before the first instant of its old one that is below zero
    (its own processors count as free there, but the count stays below p).
    """
    h = S[HEAD]
    first = math.inf
    for q in range(qn):
        j = queue[q]
        if j < 0:
            continue
        s_old = pstart[j]
        if s_old <= t:
            continue
        a = after[j] if after[j] > t else t
        if a >= s_old:
            continue
        p = size[j]
        u = snode[j]
        v = L[PREV, u]
        best = s_old
        bn = u
        if nf[v] >= p:  # slide back to the start of the free run before s_old (not before a)
            while v != h and nt[v] > a and nf[L[PREV, v]] >= p:
                v = L[PREV, v]
            best = nt[v] if nt[v] > a else a
            bn = v
            if below_zero:
                y = u
                while y >= 0 and nt[y] < best + plan[j]:
                    if nf[y] < 0:
                        best = s_old
                        bn = u
                        break
                    y = L[NEXT, y]
        c = cls[j]
        d = plan[j]
        dlo = CF[c, DLO]
        stale = -1
        stale_m = -1
        m = CI[CI[c, FIRST], MINACT]  # the size's active class of shortest DLO
        if a > t or d < dlo:  # the class bound does not apply: search from a
            x = u
            while nt[x] > a:  # a < s_old: the step holding a is found walking back from the job's start
                x = L[PREV, x]
            e, k = lp_fit(x, a, d, p, best, nt, nf, L)
            if e < best:
                best = e
                bn = k
        elif CF[c, LB] < best and CF[m, LB] < best:  # a window of the class may begin before best
            start, x = lp_bound_node(c, t, CI, CF, nt, L, S)
            if m != c:
                # no window of the class begins before the earliest fit of m's shorter one:
                # find that first, and it also serves m's own jobs
                am, xm = lp_bound_node(m, t, CI, CF, nt, L, S)
                em, km = lp_fit(xm, am, CF[m, DLO], p, best, nt, nf, L)
                stale_m = lp_set_bound(m, em, km, CI, CF, nt, nf, L, fs, S)
                if em > start:
                    start = em
                    x = km
            e, k = lp_fit(x, start, dlo, p, best, nt, nf, L)
            stale = lp_set_bound(c, e, k, CI, CF, nt, nf, L, fs, S)
            if e < best:
                if d != dlo:
                    e, k = lp_fit(k, e, d, p, best, nt, nf, L)
                if e < best:
                    best = e
                    bn = k
        if best < s_old:
            # move the reservation to [best, e_new) (written out here: as a function taking
            # all these arrays the call cost more than the move)
            e_old = pend[j]
            oe = enode[j]
            e_new = best + d
            sn = lp_at(bn, best, nt, nf, L, fs, S)
            L[REF, sn] += 1
            en = -1
            if e_new >= s_old and oe >= 0:
                # the windows overlap (a slide): p more are taken on [best, s_old)
                # and given back on [e_new, e_old); nothing changes in between
                lp_add(sn, s_old, -p, nt, nf, L)
                en = lp_at_back(oe, e_new, nt, nf, L, fs, S)
                L[REF, en] += 1
                lp_add(en, e_old, p, nt, nf, L)
                lp_lower_bounds(en, e_new, e_old, p, t, act, nact, CI, CF, nt, nf, L, fs, S)
            elif e_new > best and oe >= 0:  # disjoint windows (a jump)
                en = lp_take(sn, e_new, -p, nt, nf, L, fs, S)
                L[REF, en] += 1
                lp_add(u, e_old, p, nt, nf, L)
                lp_lower_bounds(u, s_old, e_old, p, t, act, nact, CI, CF, nt, nf, L, fs, S)
            else:  # an empty window (zero requested time) on either side
                if oe >= 0:
                    lp_add(u, e_old, p, nt, nf, L)
                if e_new > best:
                    en = lp_take(sn, e_new, -p, nt, nf, L, fs, S)
                    L[REF, en] += 1
                if oe >= 0:
                    lp_lower_bounds(u, s_old, e_old, p, t, act, nact, CI, CF, nt, nf, L, fs, S)
            lp_release(u, nt, nf, L, fs, S)
            if oe >= 0:
                lp_release(oe, nt, nf, L, fs, S)
            snode[j] = sn
            enode[j] = en
            pstart[j] = best
            pend[j] = e_new
            if best < first:
                first = best
        if stale >= 0:  # released only now: bn may have been that node
            lp_release(stale, nt, nf, L, fs, S)
        if stale_m >= 0:
            lp_release(stale_m, nt, nf, L, fs, S)
    return first


def job_classes(size: np.ndarray, plan: np.ndarray, ratio: float = CLASS_RATIO):
    """(class of each job, class sizes, class shortest requested times); classes sorted by size."""
    # the distinct (size, plan) pairs in order, and each job's: two numeric sorts (np.unique with
    # an axis sorts the pairs as records, 20x slower and holding the interpreter)
    size = np.asarray(size, np.int64)
    plan = np.asarray(plan, np.float64)
    order = np.lexsort((plan, size))
    s, d = size[order], plan[order]
    first = np.ones(len(order), bool)
    first[1:] = (s[1:] != s[:-1]) | (d[1:] != d[:-1])
    inverse = np.empty(len(order), np.int64)
    inverse[order] = np.cumsum(first) - 1
    pcls, csize, cdlo = group_durations(s[first], d[first].copy(), float(ratio))
    return pcls[inverse], csize, cdlo


def steps(submit, runtime, estimate, size, processors, params, horizon=math.inf) -> ClusterSteps:
    check_inputs(submit, size, processors)
    # A zero-length reservation holds nothing, so a job that asks for no time but runs
    # is planned as asking for one overrun step (traces only give 0 for 0-runtime jobs).
    plan = np.where((estimate == 0) & (runtime > 0), float(params.overrun_step), estimate).astype(np.float64)
    size = np.asarray(size, np.int64)
    cls, csize, cdlo = job_classes(size, plan)
    start, until = ClusterSteps.outputs(len(submit))
    load_own_copies(compress)  # before the kernel loads: it then calls compress's own object (simengine.jit)
    return ClusterSteps(conservative_kernel(submit, runtime, plan, size, processors, horizon,
                                            float(params.overrun_step), cls, csize, cdlo, start, until), start, until)


def schedule(submit, runtime, estimate, size, processors, params, horizon=math.inf) -> ClusterSchedule:
    return steps(submit, runtime, estimate, size, processors, params, horizon).to_end()


schedule.steps = steps
LOCAL_SCHEDULERS.register("conservative", BackfillParams,
                           "Conservative backfilling (a reservation for every queued job)",
                           capabilities=("compiled", "event_driven"))(schedule)
