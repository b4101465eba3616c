"""The compiled event loop of the co-allocation grid layer (MODELS.md §3).

State is numpy arrays: processors free, busy with local jobs, claimed and busy with
global jobs per cluster; each cluster's FCFS queue is a range of its jobs in submit
order (plus, with ``requeue``, a sorted list of killed jobs that go back to its head);
its running local jobs form a doubly linked list in start order (GP kills walk it from
the latest start). Events sit in one binary heap keyed (time, class << 40 | index); at
one instant the classes run in this order:

0. local job ends            1. global job ends
2. claimed global job starts at its deadline (claimed -> running, no processor moves)
3. placement attempts (tries before D, the deadline attempt at D), by global job index
4. local arrivals (merged from the submit-sorted local jobs, not in the heap)
5. FCFS dispatch of the queues of the clusters where something changed (once per instant,
   by cluster index; not a heap event: it runs when the next event is later)

so processors freed at t are seen by the grid scheduler before the local queues (claims
take idle processors even when local jobs are queued), and local jobs only ever start
on free processors (never on claimed ones).

Placement is Worst-Fit compiled in (``PLACE_WORST_FIT``), or any placement policy written in
Python (``PLACE_PYTHON``): then :func:`grid_advance` returns at each attempt and is called again
with the policy's answer, so the rest of the model is this one loop either way.
"""
from __future__ import annotations

import math

import numpy as np

from simengine.jit import njit
from simengine.schedulers._heap import heap_pop, heap_push

EV_LOCAL_END, EV_GLOBAL_END, EV_GLOBAL_START, EV_ATTEMPT, EV_LOCAL_ARRIVAL, EV_DISPATCH = 0, 1, 2, 3, 4, 5
SHIFT = 40
MASK = (1 << SHIFT) - 1

#: local job states
L_WAITING, L_RUNNING, L_DONE, L_KILLED = 0, 1, 2, 3
#: global job states
G_WAITING, G_CLAIMED, G_RUNNING, G_DONE, G_FAILED = 0, 1, 2, 3, 4

#: positions in the state tuple of grid_state / grid_advance (read by simengine.grid.model.GridRun)
ST_QPOS, ST_QARR, ST_RQ_N, ST_HEAP, ST_KILLS, ST_COUNTERS, ST_CLOCK, ST_ASKED_IDLE = 6, 7, 9, 15, 17, 20, 21, 22
#: counters[ASK_JOB]: the global job whose placement attempt waits for a Python policy's answer
#: (-1: none); counters[ASK_ANSWER]: -1 not answered yet, 0 it does not fit, 1 placed (its
#: clusters written into comp_cluster)
ASK_JOB, ASK_ANSWER = 5, 6

#: placement codes (``code`` of the compiled GRID_PLACEMENT entries, simengine.grid.placement)
PLACE_WORST_FIT = 0
#: a placement policy written in Python: the kernel pauses at each attempt for its answer
PLACE_PYTHON = -1


@njit(cache=True, nogil=True)
def _worst_fit(avail, s, nc, out, off):
    """Components of ``s`` processors one at a time to the cluster with the most ``avail``
    (updated after each; ties: lowest index). All or nothing: False leaves ``out`` unspecified."""
    C = avail.shape[0]
    for k in range(nc):
        best = 0
        for c in range(1, C):
            if avail[c] > avail[best]:
                best = c
        if avail[best] < s:
            return False
        avail[best] -= s
        out[off + k] = best
    return True


@njit(cache=True, nogil=True)
def _accumulate(acc, lbusy, claimed, gbusy, a, b):
    """Add each cluster's processor-seconds in [a, b) busy with local jobs, claimed, busy with global jobs."""
    if b > a:
        for c in range(acc.shape[0]):
            acc[c, 0] += lbusy[c] * (b - a)
            acc[c, 1] += claimed[c] * (b - a)
            acc[c, 2] += gbusy[c] * (b - a)


@njit(cache=True, nogil=True)
def _unlink(j, c, prv, nxt, rhead, rtail):
    """Take local job j out of cluster c's list of running jobs (in start order)."""
    if prv[j] >= 0:
        nxt[prv[j]] = nxt[j]
    else:
        rhead[c] = nxt[j]
    if nxt[j] >= 0:
        prv[nxt[j]] = prv[j]
    else:
        rtail[c] = prv[j]


@njit(cache=True, nogil=True)
def grid_state(procs, l_submit, l_cluster, g_submit, g_ncomp, g_deadline, policy, g_state, g_decided):
    """The state of a replication before its first event: queues, running lists, the event
    heap with every global job's first attempt (a job with no attempt at all fails at once).
    Returns the tuple :func:`grid_advance` carries from one call to the next."""
    lp, mp, wait_x, final_attempt = policy[1], policy[2], policy[3], policy[5]
    C = procs.shape[0]
    n = l_submit.shape[0]
    G = g_submit.shape[0]
    # each cluster's local jobs in submit order: cjobs[coff[c]:coff[c+1]]
    coff = np.zeros(C + 1, np.int64)
    for j in range(n):
        coff[l_cluster[j] + 1] += 1
    for c in range(C):
        coff[c + 1] += coff[c]
    cjobs = np.empty(n, np.int64)
    fill = coff[:C].copy()
    for j in range(n):
        c = l_cluster[j]
        cjobs[fill[c]] = j
        fill[c] += 1
    cap = 16 + 2 * C + G + n
    for c in range(C):
        cap += procs[c]
    hk = np.empty(cap)
    hv = np.empty(cap, np.int64)
    hn = 0
    for g in range(G):
        D = g_deadline[g]
        g_state[g] = G_WAITING
        if mp == 0:
            if not final_attempt:
                g_state[g] = G_FAILED
                g_decided[g] = g_submit[g]
                continue
            first = D
        else:
            sp = g_submit[g]
            if D - wait_x > sp:
                sp = D - wait_x
            first = sp + lp * (D - sp)
            if first > D:
                first = D
        hn = heap_push(hk, hv, hn, first, (EV_ATTEMPT << SHIFT) | g)
    kcap = 16 + n // 16
    # heap size, kills logged, next local arrival, clusters pending, done, ASK_JOB, ASK_ANSWER
    counters = np.zeros(7, np.int64)
    counters[5] = -1
    counters[6] = -1
    counters[0] = hn
    clock = np.zeros(2)  # time of the last event handled, end of the measurement
    return (procs.copy(),  # free
            np.zeros(C, np.int64), np.zeros(C, np.int64), np.zeros(C, np.int64),  # busy local, claimed, busy global
            coff, cjobs, coff[:C].copy(), coff[:C].copy(),  # qpos: next never-started job; qarr: arrived up to
            np.empty(n, np.int64), np.zeros(C, np.int64),  # requeued (killed) jobs, sorted, at rq[coff[c]:]; counts
            np.full(n, -1, np.int64), np.full(n, -1, np.int64),  # running local jobs per cluster, in start order
            np.full(C, -1, np.int64), np.full(C, -1, np.int64),
            np.zeros(C, np.bool_),  # clusters whose FCFS queue must be looked at
            hk, hv, np.empty(kcap, np.int64), np.empty(kcap), np.empty(kcap), counters, clock,
            np.zeros(C, np.int64))  # the idle processors a Python placement policy is shown


@njit(cache=True, nogil=True)
def grid_advance(procs, l_submit, l_run, l_size, l_cluster, g_run, g_size, g_ncomp, g_deadline, policy,
                 l_start, l_end, l_state, l_kills, g_state, g_hold, g_tries, g_kills, g_decided, comp_off,
                 comp_cluster, acc, state, until):
    """Handle every event before ``until`` (math.inf: to the end); outputs are written in place.

    Inputs are sorted by submit time. Returns the heap and the kill log (job, start of the lost
    run, kill time), which may have grown: the caller puts them back into ``state``. Once the
    replication is over, ``state``'s counters[4] is 1 and its clock[1] the end of the
    measurement; ``acc[c]`` then holds the processor-seconds of cluster c in [t_warm, end]
    busy with local jobs, claimed and idle, and busy with global jobs.

    With ``PLACE_PYTHON`` it also returns before each placement attempt, the attempt not yet
    made: ``counters[ASK_JOB]`` names the job, ``state[ST_ASKED_IDLE]`` the idle processors it
    may take (simengine.grid.model.GridRun asks the policy and calls again).
    """
    placement, lp, mp, wait_x, gp, final_attempt, latest_first, requeue, bypass, horizon, t_warm, gp_most_idle = policy
    (free, lbusy, claimed, gbusy, coff, cjobs, qpos, qarr, rq, rq_n, prv, nxt, rhead, rtail, pending,
     hk, hv, kl_job, kl_t0, kl_t1, counters, clock, asked_idle) = state
    C = procs.shape[0]
    n = l_submit.shape[0]
    avail = np.zeros(C, np.int64)
    room = np.zeros(C, np.int64)
    need = np.zeros(C, np.int64)
    hn, nk, li, n_pend = counters[0], counters[1], counters[2], counters[3]
    t_last = clock[0]
    if counters[4]:
        return hk, hv, kl_job, kl_t0, kl_t1
    room_needed = C + 8
    for c in range(C):
        room_needed += procs[c]
    finished = False
    while True:
        if hn + room_needed > hk.shape[0]:  # (only with requeued jobs: stale ends pile up)
            k2 = np.empty(hk.shape[0] * 2)
            v2 = np.empty(hk.shape[0] * 2, np.int64)
            k2[:hn] = hk[:hn]
            v2[:hn] = hv[:hn]
            hk = k2
            hv = v2
        ta = l_submit[li] if li < n else math.inf
        from_heap = False
        th = math.inf
        if hn > 0:
            th = hk[0]
            if th < ta or (th == ta and (hv[0] >> SHIFT) < EV_LOCAL_ARRIVAL):
                from_heap = True
        t = th if from_heap else ta
        if n_pend > 0 and t > t_last:
            # EV_DISPATCH: everything at t_last is done; strict FCFS, requeued jobs first
            t = t_last
            for c in range(C):
                if not pending[c]:
                    continue
                pending[c] = False
                while True:
                    if rq_n[c] > 0:
                        j = rq[coff[c]]
                    elif qpos[c] < qarr[c]:
                        j = cjobs[qpos[c]]
                    else:
                        break
                    if l_size[j] > free[c]:
                        break
                    if rq_n[c] > 0:
                        base = coff[c]
                        for p in range(base, base + rq_n[c] - 1):
                            rq[p] = rq[p + 1]
                        rq_n[c] -= 1
                    else:
                        qpos[c] += 1
                    free[c] -= l_size[j]
                    lbusy[c] += l_size[j]
                    l_state[j] = L_RUNNING
                    l_start[j] = t
                    l_end[j] = t + l_run[j]
                    prv[j] = rtail[c]
                    nxt[j] = -1
                    if rtail[c] >= 0:
                        nxt[rtail[c]] = j
                    else:
                        rhead[c] = j
                    rtail[c] = j
                    hn = heap_push(hk, hv, hn, l_end[j], (EV_LOCAL_END << SHIFT) | j)
            n_pend = 0
            continue
        if t == math.inf or t >= horizon:
            finished = True
            break
        if t >= until:  # paused: the next event is not before until
            break
        _accumulate(acc, lbusy, claimed, gbusy, t_last if t_last > t_warm else t_warm, t)
        t_last = t

        if not from_heap:  # a local arrival joins its cluster's queue
            c = l_cluster[li]
            qarr[c] += 1
            li += 1
            if not pending[c]:
                pending[c] = True
                n_pend += 1
            continue

        key = hv[0]
        cls = key >> SHIFT
        idx = key & MASK
        if cls == EV_ATTEMPT and placement == PLACE_PYTHON and counters[5] != idx:
            # a Python policy places this job: pause with the attempt still on the heap and the
            # idle processors it may use in asked_idle; the caller answers (counters[6],
            # comp_cluster) and calls again, which comes back here (at t_last = t: no time passes)
            D = g_deadline[idx]
            for c in range(C):
                empty = rq_n[c] == 0 and qpos[c] == qarr[c]
                asked_idle[c] = free[c] if (bypass or empty or t >= D) else 0
            counters[5] = idx
            counters[6] = -1
            break
        hn = heap_pop(hk, hv, hn)

        if cls == EV_LOCAL_END:
            j = idx
            if l_state[j] != L_RUNNING or l_end[j] != t:
                continue  # killed meanwhile
            c = l_cluster[j]
            free[c] += l_size[j]
            lbusy[c] -= l_size[j]
            l_state[j] = L_DONE
            _unlink(j, c, prv, nxt, rhead, rtail)
            if not pending[c]:
                pending[c] = True
                n_pend += 1

        elif cls == EV_GLOBAL_END:
            g = idx
            s = g_size[g]
            for k in range(comp_off[g], comp_off[g + 1]):
                c = comp_cluster[k]
                gbusy[c] -= s
                free[c] += s
                if not pending[c]:
                    pending[c] = True
                    n_pend += 1
            g_state[g] = G_DONE

        elif cls == EV_GLOBAL_START:
            g = idx
            s = g_size[g]
            for k in range(comp_off[g], comp_off[g + 1]):
                c = comp_cluster[k]
                claimed[c] -= s
                gbusy[c] += s
            g_state[g] = G_RUNNING
            g_decided[g] = t
            hn = heap_push(hk, hv, hn, t + g_run[g], (EV_GLOBAL_END << SHIFT) | g)

        elif cls == EV_ATTEMPT:
            g = idx
            D = g_deadline[g]
            s = g_size[g]
            nc = g_ncomp[g]
            off = comp_off[g]
            g_tries[g] += 1
            for c in range(C):
                empty = rq_n[c] == 0 and qpos[c] == qarr[c]
                avail[c] = free[c] if (bypass or empty or t >= D) else 0
            if placement == PLACE_PYTHON:
                ok = counters[6] == 1
                counters[5] = -1
                counters[6] = -1
            else:
                ok = _worst_fit(avail, s, nc, comp_cluster, off)
            if t < D:  # a placement try: claim at once, start at D
                if ok:
                    for k in range(off, off + nc):
                        c = comp_cluster[k]
                        claimed[c] += s
                        free[c] -= s
                    g_state[g] = G_CLAIMED
                    g_hold[g] = t
                    hn = heap_push(hk, hv, hn, D, (EV_GLOBAL_START << SHIFT) | g)
                elif g_tries[g] < mp:
                    nt = t + lp * (D - t)
                    if nt > D:
                        nt = D
                    hn = heap_push(hk, hv, hn, nt, (EV_ATTEMPT << SHIFT) | g)
                elif final_attempt:
                    hn = heap_push(hk, hv, hn, D, (EV_ATTEMPT << SHIFT) | g)
                else:
                    g_state[g] = G_FAILED
                    g_decided[g] = t
                continue
            # the attempt at the deadline
            if not ok and gp:
                # GP: idle processors first (Worst-Fit); a component that fits nowhere idle goes to
                # the cluster with most idle + local-occupied processors, where local jobs are killed
                # (gp_most_idle, the paper's literal reading: to the cluster with most idle ones)
                for c in range(C):
                    avail[c] = free[c]
                    room[c] = lbusy[c]
                    need[c] = 0
                ok = True
                for k in range(off, off + nc):
                    best = 0
                    for c in range(1, C):
                        if avail[c] > avail[best]:
                            best = c
                    if avail[best] >= s:
                        avail[best] -= s
                        comp_cluster[k] = best
                        continue
                    if not gp_most_idle:  # (else best is already the cluster with most idle ones)
                        best = 0
                        for c in range(1, C):
                            if avail[c] + room[c] > avail[best] + room[best]:
                                best = c
                    if avail[best] + room[best] < s:
                        ok = False
                        break
                    short = s - avail[best]
                    avail[best] = 0
                    room[best] -= short
                    need[best] += short
                    comp_cluster[k] = best
                if ok:
                    for c in range(C):
                        if need[c] <= 0:
                            continue
                        freed = 0
                        j = rtail[c] if latest_first else rhead[c]
                        while freed < need[c] and j >= 0:
                            after = prv[j] if latest_first else nxt[j]
                            freed += l_size[j]
                            # kill j: unlink, free its processors, log the lost part
                            _unlink(j, c, prv, nxt, rhead, rtail)
                            prv[j] = -1
                            nxt[j] = -1
                            free[c] += l_size[j]
                            lbusy[c] -= l_size[j]
                            if nk == kl_job.shape[0]:
                                kl_job = np.concatenate((kl_job, np.empty(nk, np.int64)))
                                kl_t0 = np.concatenate((kl_t0, np.empty(nk)))
                                kl_t1 = np.concatenate((kl_t1, np.empty(nk)))
                            kl_job[nk] = j
                            kl_t0[nk] = l_start[j]
                            kl_t1[nk] = t
                            nk += 1
                            l_kills[j] += 1
                            g_kills[g] += 1
                            if requeue:
                                l_state[j] = L_WAITING
                                l_end[j] = math.nan
                                base = coff[c]
                                p = base + rq_n[c]
                                while p > base and rq[p - 1] > j:
                                    rq[p] = rq[p - 1]
                                    p -= 1
                                rq[p] = j
                                rq_n[c] += 1
                            else:
                                l_state[j] = L_KILLED
                                l_end[j] = t
                            j = after
                        if not pending[c]:
                            pending[c] = True
                            n_pend += 1
            if ok:
                for k in range(off, off + nc):
                    c = comp_cluster[k]
                    free[c] -= s
                    gbusy[c] += s
                g_state[g] = G_RUNNING
                g_hold[g] = t
                g_decided[g] = t
                hn = heap_push(hk, hv, hn, t + g_run[g], (EV_GLOBAL_END << SHIFT) | g)
            else:
                g_state[g] = G_FAILED
                g_decided[g] = t


    counters[0], counters[1], counters[2], counters[3] = hn, nk, li, n_pend
    clock[0] = t_last
    if finished:
        counters[4] = 1
        t_end = horizon if horizon < math.inf else t_last
        clock[1] = t_end
        _accumulate(acc, lbusy, claimed, gbusy, t_last if t_last > t_warm else t_warm, t_end)
    return hk, hv, kl_job, kl_t0, kl_t1
