"""The whole 2-level grid (grid scheduler + LWR sites) in one compiled pass.

Stateful site-allocation policies (Deferred, SB-Deferred; Zikos & Karatza, MODELS.md
§5) choose a site from the sites' current remaining work, so they cannot route jobs
up front like ``random``. Because every site runs LWR (per-processor FCFS queues,
clairvoyant demands), a site's state is just the time each processor's queue drains,
and the grid scheduler plus all sites are one pass over the arrivals:

* a job with a fixed cluster (a stream that targets a cluster) joins it on arrival;
* a *random* grid job joins site k with probability ``cumw`` (pre-drawn uniform ``u``);
* a *deferred* grid job waits in the grid scheduler's FCFS queue until the next multiple
  of the allocation interval A_I at or after its arrival (a job arriving exactly at
  k*A_I is in that batch). Then the queued jobs leave in arrival order, each to the
  site with the least remaining work per processor, ``sum_p max(0, drain_p - t) / c_k``
  (ties: lowest site index); a site's load includes the jobs dispatched earlier in the
  same batch. An arrival at the very instant of a batch is handled before the batch.

Inside a site the job goes to the processor with the least remaining work (ties:
lowest index) and starts when that processor's queue drains. Run times are
``work / speed`` of the site.

:func:`lwr_sites` is the same pass for jobs already routed (a static site-allocation
policy such as ``random``): every site is LWR, one pass over the arrivals schedules
them all.

The kernels release the GIL, so the runner simulates replications in a thread pool.
"""
from __future__ import annotations

import math

import numpy as np

from simengine.jit import njit

#: ``policy`` codes of the kernel.
POLICY_RANDOM, POLICY_DEFERRED, POLICY_SB_DEFERRED = 0, 1, 2


@njit(cache=True, nogil=True)
def lwr_sites(submit, runtime, cluster, off, horizon, start, proc):
    """LWR at every site, jobs already routed: ``cluster[j]`` is job j's site (< 0: not
    scheduled), site k owns processors ``off[k]..off[k+1]-1``. ``submit`` sorted. Fills
    ``proc`` (processor within the site) and ``start`` (left as is when later than
    ``horizon``), exactly as :func:`simengine.schedulers.lwr.lwr_kernel` on each site's jobs."""
    drain = np.full(off[off.shape[0] - 1], -math.inf)  # when each processor's queue empties
    for j in range(submit.shape[0]):
        t = submit[j]
        if t > horizon:
            break
        k = cluster[j]
        if k < 0:
            continue
        first, last = off[k], off[k + 1]
        # the first processor with the least remaining work max(0, drain - t): the first
        # idle one if any (no work left), else the first with the least drain - t
        best = -1
        for p in range(first, last):
            if drain[p] <= t:
                best = p
                break
        if best < 0:
            best = first
            best_work = drain[first] - t
            for p in range(first + 1, last):
                w = drain[p] - t
                if w < best_work:
                    best = p
                    best_work = w
        s = max(t, drain[best])
        drain[best] = s + runtime[j]
        proc[j] = best - first
        if s <= horizon:
            start[j] = s


@njit(cache=True)
def _place(j, k, t, work, speed, off, drain, site, proc, dispatch, start):
    best = off[k]
    best_w = max(0.0, drain[best] - t)
    for p in range(off[k] + 1, off[k + 1]):
        w = max(0.0, drain[p] - t)
        if w < best_w:
            best, best_w = p, w
    s = max(t, drain[best])
    drain[best] = s + work[j] / speed[k]
    site[j] = k
    proc[j] = best - off[k]
    dispatch[j] = t
    start[j] = s


@njit(cache=True)
def _flush(queue, count, t, work, speed, procs, off, drain, site, proc, dispatch, start):
    K = procs.shape[0]
    for i in range(count):
        j = queue[i]
        best, best_load = 0, math.inf
        for k in range(K):
            rem = 0.0
            for p in range(off[k], off[k + 1]):
                rem += max(0.0, drain[p] - t)
            load = rem / procs[k]
            if load < best_load:
                best, best_load = k, load
        _place(j, best, t, work, speed, off, drain, site, proc, dispatch, start)


def grid_lwr_state(procs: np.ndarray, n: int) -> tuple:
    """The state of a replication before its first arrival (for :func:`grid_lwr_advance`):
    when each processor's queue drains, the grid scheduler's queue, (next arrival, jobs queued,
    done), the time of the pending batch."""
    return (np.full(int(np.sum(procs)), -math.inf), np.empty(max(n, 1), np.int64), np.zeros(3, np.int64),
            np.zeros(1))


@njit(cache=True, nogil=True)
def grid_lwr_advance(submit, work, fixed, policy, interval, sdt, u, cumw, procs, speed,
                     site, proc, dispatch, start, drain, queue, counters, batch, until):
    """Take every arrival and batch before ``until`` (math.inf: all). ``submit`` sorted (may end
    in ``inf`` padding); ``fixed[j] >= 0`` pins job j to that cluster, ``-1`` lets the policy
    choose, ``-2`` skips it. Fills ``site``, ``proc``, ``dispatch``, ``start``. Every job starting
    before ``until`` has its start afterwards (a start is decided when the job is placed and a
    job is placed when it arrives, or at its batch: neither after its start)."""
    K = procs.shape[0]
    off = np.zeros(K + 1, np.int64)
    for k in range(K):
        off[k + 1] = off[k] + procs[k]
    j, count, batch_t = counters[0], counters[1], batch[0]
    while j < submit.shape[0]:
        t = submit[j]
        if not t < math.inf:
            break
        if count > 0 and batch_t < t:
            if batch_t >= until:
                break
            _flush(queue, count, batch_t, work, speed, procs, off, drain, site, proc, dispatch, start)
            count = 0
        if t >= until:
            break
        j += 1
        if fixed[j - 1] < -1:  # rejected (fits no site)
            continue
        if fixed[j - 1] >= 0:
            _place(j - 1, fixed[j - 1], t, work, speed, off, drain, site, proc, dispatch, start)
        elif policy == POLICY_DEFERRED or (policy == POLICY_SB_DEFERRED and work[j - 1] > sdt):
            if count == 0:
                batch_t = math.ceil(t / interval) * interval
                if batch_t < t:  # rounding
                    batch_t += interval
            queue[count] = j - 1
            count += 1
        else:
            k = 0
            while k < K - 1 and u[j - 1] >= cumw[k]:
                k += 1
            _place(j - 1, k, t, work, speed, off, drain, site, proc, dispatch, start)
    arrivals_over = j >= submit.shape[0] or not submit[j] < math.inf
    if arrivals_over and count > 0 and batch_t < until:
        _flush(queue, count, batch_t, work, speed, procs, off, drain, site, proc, dispatch, start)
        count = 0
    counters[0], counters[1], batch[0] = j, count, batch_t
    if arrivals_over and count == 0:
        counters[2] = 1


def grid_lwr_kernel(submit, work, fixed, policy, interval, sdt, u, cumw, procs, speed, site, proc, dispatch, start):
    """One replication in one go (:func:`grid_lwr_advance` to the end)."""
    grid_lwr_advance(submit, work, fixed, policy, interval, sdt, u, cumw, procs, speed, site, proc, dispatch, start,
                     *grid_lwr_state(procs, submit.shape[0]), math.inf)


def simulate(submit, work, fixed, policy: int, interval: float, sdt: float, u, weights, processors,
             speed=None):
    """Run :func:`grid_lwr_kernel` on 1-D inputs; returns (site, proc, dispatch, start) arrays.

    ``weights`` are the random part's site weights (normalized here).
    """
    n = len(submit)
    procs = np.asarray(processors, np.int64)
    speed = np.ones(len(procs)) if speed is None else np.asarray(speed, np.float64)
    w = np.asarray(weights, np.float64)
    cumw = np.cumsum(w / w.sum())
    site = np.full(n, -1, np.int64)
    proc = np.full(n, -1, np.int64)
    dispatch = np.full(n, np.nan)
    start = np.full(n, np.nan)
    grid_lwr_kernel(np.asarray(submit, np.float64), np.asarray(work, np.float64),
                    np.asarray(fixed, np.int64), policy, float(interval), float(sdt),
                    np.asarray(u, np.float64), cumw, procs, speed, site, proc, dispatch, start)
    return site, proc, dispatch, start
