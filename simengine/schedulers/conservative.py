"""Conservative backfilling: every queued job holds a reservation on the cluster's
availability profile, made at submission at the earliest time it fits; a job starts
when its reservation comes (MODELS.md §2).

When a job ends before its requested time, the schedule is compressed: queued jobs,
in arrival order, move their reservations to the earliest time they now fit (one
pass, as Mu'alem & Feitelson describe). Compression looks only near processor time
freed since a job was last placed, instead of rescanning the profile for every
queued job; that is exact, because a reservation sat at its earliest fit when it
was last placed and only freed processor time can make an earlier fit.

When a running job outlives its requested time (walltime not enforced), its plan
is extended (see ``BackfillParams.overrun_step``); reservations the extension
collides with are placed again, in arrival order, after all the others.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from simengine.profile import prof_add, prof_advance, prof_find_start, prof_index
from simengine.registry import LOCAL_SCHEDULERS
from simengine.schedulers._heap import heap_pop, heap_push
from simengine.schedulers.base import BackfillParams, ClusterSchedule, check_inputs, compact_queue, planned_end

QUEUED, RUNNING, DONE = 1, 2, 3


@njit(cache=True)
def _region_range(times, free, lo, n, a, b):
    """(min, max) free count over the profile steps that overlap [a, b)."""
    i = prof_index(times, lo, n, a)
    low = high = free[i]
    i += 1
    while i < n and times[i] < b:
        low = min(low, free[i])
        high = max(high, free[i])
        i += 1
    return low, high


@njit(cache=True)
def _rebuild_start_heap(sk, sv, queue, qn, pstart):
    sn = 0
    for q in range(qn):
        if queue[q] >= 0:
            sn = heap_push(sk, sv, sn, pstart[queue[q]], queue[q])
    return sn


@njit(cache=True)
def conservative_kernel(submit, runtime, estimate, size, processors, horizon, overrun_step):
    n = submit.shape[0]
    start = np.full(n, np.nan)
    pstart = np.full(n, math.inf)  # reserved start of queued jobs
    pend = np.full(n, math.inf)  # reservation end (queued) or planned end (running)
    state = np.zeros(n, np.int8)
    times = np.empty(64, np.float64)
    free = np.empty(64, np.int64)
    times[0] = submit[0] if n > 0 else 0.0
    free[0] = processors
    lo, pn = 0, 1
    ck, cv = np.empty(n + 1), np.empty(n + 1, np.int64)  # completions (actual end)
    # reservation starts, and planned ends of running jobs (overrun checks); both lazily
    # invalidated: an entry counts only while it matches the job's current plan
    sk, sv = np.empty(4 * n + 16), np.empty(4 * n + 16, np.int64)
    ok_, ov = np.empty(4 * n + 16), np.empty(4 * n + 16, np.int64)
    cn = sn = on = 0
    queue = np.empty(n, np.int64)
    qpos = np.empty(n, np.int64)
    qn = 0
    removed = 0
    arrived = 0
    actual_free = processors
    carry_lo, carry_hi = math.inf, -math.inf
    evicted = np.empty(n, np.int64)
    while True:
        while sn > 0 and (state[sv[0]] != QUEUED or pstart[sv[0]] != sk[0]):
            sn = heap_pop(sk, sv, sn)
        while on > 0 and (state[ov[0]] != RUNNING or pend[ov[0]] != ok_[0]):
            on = heap_pop(ok_, ov, on)
        t = math.inf
        if arrived < n:
            t = submit[arrived]
        if cn > 0 and ck[0] < t:
            t = ck[0]
        if sn > 0 and sk[0] < t:
            t = sk[0]
        if on > 0 and ok_[0] < t:
            t = ok_[0]
        if t == math.inf or t > horizon:
            break
        env_lo, env_hi = math.inf, -math.inf  # span of processor time freed at t
        early_completion = False
        # 1. completions: give back the unused rest of each reservation
        while cn > 0 and ck[0] <= t:
            j = cv[0]
            cn = heap_pop(ck, cv, cn)
            state[j] = DONE
            if runtime[j] > 0:
                actual_free += size[j]
            if pend[j] > t:
                times, free, lo, pn = prof_add(times, free, lo, pn, t, pend[j], size[j])
                env_lo = min(env_lo, t)
                env_hi = max(env_hi, pend[j])
                early_completion = True
        # 2. overruns: a running job outlived its plan, so its plan is extended
        ext_hi = -math.inf
        while on > 0 and ok_[0] <= t:
            j = ov[0]
            on = heap_pop(ok_, ov, on)
            if state[j] != RUNNING or pend[j] != t:
                continue
            new_end = planned_end(start[j], estimate[j], t, overrun_step, True)
            times, free, lo, pn = prof_add(times, free, lo, pn, t, new_end, -size[j])
            pend[j] = new_end
            on = heap_push(ok_, ov, on, new_end, j)
            ext_hi = max(ext_hi, new_end)
        lo = prof_advance(times, lo, pn, t)
        repaired = False
        if ext_hi > t and _region_range(times, free, lo, pn, t, ext_hi)[0] < 0:
            # the extension overlaps reservations: those starting before ext_hi are
            # placed again, in arrival order, after the others
            m = 0
            for q in range(qn):
                j = queue[q]
                if j >= 0 and pstart[j] < ext_hi:
                    times, free, lo, pn = prof_add(times, free, lo, pn, pstart[j], pend[j], size[j])
                    carry_lo = min(carry_lo, pstart[j])
                    carry_hi = max(carry_hi, pend[j])
                    evicted[m] = j
                    m += 1
            for k in range(m):
                j = evicted[k]
                s = prof_find_start(times, free, lo, pn, t, estimate[j], size[j], math.inf, 0.0, 0.0, 0)
                times, free, lo, pn = prof_add(times, free, lo, pn, s, s + estimate[j], -size[j])
                pstart[j] = s
                pend[j] = s + estimate[j]
                sn = heap_push(sk, sv, sn, s, j)
            if sn > 3 * n + 8:
                sn = _rebuild_start_heap(sk, sv, queue, qn, pstart)
            repaired = True
        if early_completion or repaired:
            # 3. compression: one pass in arrival order, each reservation moved to the
            # earliest time it fits now. A reservation already sat at its earliest fit when
            # it was last looked at, so only starts whose window touches processor time
            # freed since then can be new: the freed envelope [env_lo, env_hi), which
            # includes what moves behind it in the previous pass freed (carry_*).
            env_lo = min(env_lo, carry_lo)
            env_hi = max(env_hi, carry_hi)
            env_max = _region_range(times, free, lo, pn, max(env_lo, t), env_hi)[1]
            carry_lo, carry_hi = math.inf, -math.inf
            for q in range(qn):
                j = queue[q]
                if j < 0 or pstart[j] <= t:
                    continue
                s_old = pstart[j]
                d = estimate[j]
                sz = size[j]
                a = max(t, env_lo - d)
                b = min(env_hi, s_old)
                if a >= b:
                    continue
                if env_max < sz and not (s_old < env_hi and s_old + d > env_lo):
                    continue
                best = prof_find_start(times, free, lo, pn, a, d, sz, b, s_old, s_old + d, sz)
                if best < s_old:
                    times, free, lo, pn = prof_add(times, free, lo, pn, s_old, s_old + d, sz)
                    times, free, lo, pn = prof_add(times, free, lo, pn, best, best + d, -sz)
                    pstart[j] = best
                    pend[j] = best + d
                    sn = heap_push(sk, sv, sn, best, j)
                    if sn > 3 * n + 8:
                        sn = _rebuild_start_heap(sk, sv, queue, qn, pstart)
                    if d > 0:
                        # later jobs in this pass may use the old window; earlier ones
                        # will look at it in the next compression
                        env_max = max(env_max, _region_range(times, free, lo, pn, s_old, s_old + d)[1])
                        env_lo = min(env_lo, s_old)
                        env_hi = max(env_hi, s_old + d)
                        carry_lo = min(carry_lo, s_old)
                        carry_hi = max(carry_hi, s_old + d)
        # 4. arrivals get the earliest reservation that fits
        while arrived < n and submit[arrived] <= t:
            j = arrived
            arrived += 1
            s = prof_find_start(times, free, lo, pn, t, estimate[j], size[j], math.inf, 0.0, 0.0, 0)
            times, free, lo, pn = prof_add(times, free, lo, pn, s, s + estimate[j], -size[j])
            pstart[j] = s
            pend[j] = s + estimate[j]
            state[j] = QUEUED
            queue[qn] = j
            qpos[j] = qn
            qn += 1
            sn = heap_push(sk, sv, sn, s, j)
        # 5. jobs whose reservation has come start now
        while sn > 0 and sk[0] <= t:
            j = sv[0]
            key = sk[0]
            sn = heap_pop(sk, sv, sn)
            if state[j] != QUEUED or pstart[j] != key:
                continue
            state[j] = RUNNING
            start[j] = t
            if runtime[j] > 0:  # a zero-length job holds its processors for no time at all
                actual_free -= size[j]
                if actual_free < 0:
                    raise RuntimeError("conservative backfilling over-committed processors")
            cn = heap_push(ck, cv, cn, t + runtime[j], j)
            on = heap_push(ok_, ov, on, pend[j], j)
            queue[qpos[j]] = -1
            removed += 1
        if removed > 64 and 2 * removed > qn:
            qn = compact_queue(queue, qn, qpos)
            removed = 0
        # heaps only grow by lazy entries; rebuild them if they get too big
        if sn > 3 * n + 8:
            sn = _rebuild_start_heap(sk, sv, queue, qn, pstart)
        if on > 3 * n + 8:
            on = 0
            for j in range(n):
                if state[j] == RUNNING:
                    on = heap_push(ok_, ov, on, pend[j], j)
    return start


@LOCAL_SCHEDULERS.register("conservative", BackfillParams,
                           "Conservative backfilling (a reservation for every queued job)")
def schedule(submit, runtime, estimate, size, processors, params, horizon=math.inf) -> ClusterSchedule:
    check_inputs(submit, size, processors)
    # A zero-length reservation holds nothing, so a job that asks for no time but runs
    # is planned as asking for one overrun step (traces only give 0 for 0-runtime jobs).
    plan = np.where((estimate == 0) & (runtime > 0), float(params.overrun_step), estimate)
    return ClusterSchedule(conservative_kernel(submit, runtime, plan, size, processors, horizon,
                                               float(params.overrun_step)))
