"""The event-driven cluster simulator as it was written in plain Python before the compiled
event core (simengine/local/core.py) replaced it, kept as the tests' oracle: the core must give
exactly its schedules (tests/simengine/test_local_core.py). Not used by the engine.

The rules it follows are those of simengine/local/cluster.py's docstring and of
docs/reservations.md ("Same-time events").
"""
from __future__ import annotations

import heapq
import math
from typing import Callable

import numpy as np
from numba import njit

from simengine.gantt import KIND_KILLED, KIND_RESERVATION, KIND_RUN, KIND_SUSPENDED
# job and reservation states, and the reservations themselves, are the engine's
from simengine.local.cluster import (AR_ACCEPTED, AR_ACTIVE, AR_DONE, AR_PENDING, AR_REJECTED,  # noqa: F401
                                     DONE, KILLED, QUEUED, RUNNING, SUSPENDED, WAITING, AdvanceReservation)
from simengine.local.profile import _min_free_lo, _steps, first_backfill, queue_delete, queue_insert
from simengine.profile import prof_add, prof_advance, prof_find_start, prof_grow, prof_index
from simengine.preemption import PreemptionMode, choose_victims
from simengine.schedulers.base import planned_end as _compiled_planned_end
from simengine.schedulers.conservative import job_classes

INF = math.inf
NAN = math.nan

# event kinds (heap entries: time, seq, kind, id, generation)
EV_JOB_END, EV_AR_END, EV_OVERRUN = range(3)

POLICIES = ("fcfs", "easy", "conservative")
_NO_TIMES, _NO_FREE = np.empty(0), np.empty(0, np.int64)  # no step function (first_backfill without a fit test)


#: the kernels' rule for when a running job is expected to end, as plain Python (called per
#: job from this Python event loop, where a compiled call would cost more than it saves)
planned_end = _compiled_planned_end.py_func


def _fits(times, free, t: float, d: float, p: int) -> bool:
    """Do p processors stay free on [t, t + d) by plan? A job asking for no time holds
    nothing in the plan (as in the kernels: it ends by any shadow time)."""
    return d <= 0 or min_free(times, free, len(times), t, t + d) >= p


# ---- the step functions the Python loop used (moved here from simengine/local/profile.py)

@njit(cache=True)
def replan_one_by_one(times, free, lo, n, t, give_back, place, after, rstart, pend, pplan, size):
    """The replan this loop used (and the oracle of simengine.local.profile.replan_queue):
    give back the reservations of ``give_back`` one by one, then search each job of ``place``
    from max(t, after[j]) and reserve it. Returns the profile arrays and the earliest new start."""
    for q in range(give_back.shape[0]):
        j = give_back[q]
        if pend[j] > rstart[j]:
            times, free, lo, n = prof_add(times, free, lo, n, rstart[j], pend[j], size[j])
    first = INF
    for q in range(place.shape[0]):
        j = place[q]
        a = after[j] if after[j] > t else t
        s = prof_find_start(times, free, lo, n, a, pplan[j], size[j], INF, 0.0, 0.0, 0)
        e = s + pplan[j]
        rstart[j] = s
        pend[j] = e
        if e > s:
            times, free, lo, n = prof_add(times, free, lo, n, s, e, -size[j])
        if s < first:
            first = s
    return times, free, lo, n, first


# The array compression the event core used before it took the kernel's linked profile and pass
# (simengine.schedulers.conservative.compress): kept with the loop it served, so that the oracle
# stays that loop and the benchmarks' "previous" column measures it.


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


def steps(t: float, processors: int, starts, ends, sizes) -> tuple[np.ndarray, np.ndarray]:
    """(times, free) from time ``t`` on, with ``sizes[k]`` processors taken on [starts[k], ends[k])."""
    return _steps(float(t), int(processors), np.asarray(starts, np.float64), np.asarray(ends, np.float64),
                  np.asarray(sizes, np.int64))


@njit(cache=True)
def view_steps(t, processors, run, run_start, pplan, pend, size, overrun_step, still_running, conservative,
               ar_start, ar_end, ar_size):
    """:func:`steps` of running jobs ``run`` (from t until their planned end: ``pend`` in
    conservative, else the kernels' planned_end) and advance reservations."""
    m = run.shape[0]
    k = ar_start.shape[0]
    s = np.empty(m + k)
    e = np.empty(m + k)
    p = np.empty(m + k, np.int64)
    for i in range(m):
        j = run[i]
        s[i] = t
        e[i] = pend[j] if conservative else _compiled_planned_end(run_start[j], pplan[j], t, overrun_step, still_running)
        p[i] = size[j]
    s[m:] = ar_start
    e[m:] = ar_end
    p[m:] = ar_size
    return _steps(t, processors, s, e, p)


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



#: event times between two on_step calls of ClusterSim.run
STEP_EVENTS = 2048


class ClusterSim:
    """Simulate one cluster.

    Parameters
    ----------
    processors : int
        Processors of the cluster.
    policy : str
        ``fcfs``, ``easy`` or ``conservative``.
    submit, runtime, estimate, size : arrays
        The cluster's jobs sorted by submit time (run times at the cluster's speed).
    priority : array, optional
        Queue priority per job (default all 0).
    reservations : list of AdvanceReservation, optional
    mode : PreemptionMode, optional
        The cluster's preemption mode (default none).
    overrun_step : float
        Plan extension for jobs outliving their estimate (BackfillParams.overrun_step).
    horizon : float
        No event after this time is handled.

    After :meth:`run`: ``first_start``, ``end``, ``state`` (DONE, KILLED, or still
    RUNNING/QUEUED/SUSPENDED/WAITING at the horizon), ``preemptions``, ``lost`` (seconds
    of run lost per job), ``resumes`` per job, and ``pieces``: (owner, t0, t1, kind,
    processor ids) with owner ``("j", job)`` or ``("r", reservation index)`` and t1 NaN
    while still open at the horizon.
    """

    def __init__(self, processors: int, policy: str, submit, runtime, estimate, size, priority=None,
                 reservations: list[AdvanceReservation] | None = None, mode: PreemptionMode | None = None,
                 overrun_step: float = 60.0, horizon: float = INF):
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r}; known: {', '.join(POLICIES)}")
        self.P = int(processors)
        self.policy = policy
        self.submit = [float(x) for x in submit]
        self.runtime = [float(x) for x in runtime]
        self.estimate = [float(x) for x in estimate]
        self.size = [int(x) for x in size]
        n = self.n = len(self.submit)
        if any(self.submit[i] > self.submit[i + 1] for i in range(n - 1)):
            raise ValueError("jobs must be sorted by submit time")
        if n and (max(self.size) > self.P or min(self.size) < 1):
            raise ValueError(f"job sizes must be within 1..{self.P}")
        self.prio = [int(x) for x in priority] if priority is not None else [0] * n
        self.ars = sorted(reservations or [], key=lambda r: (r.request_time, r.index))
        for r in self.ars:
            r.asked_start = r.start
        self.mode = mode or PreemptionMode("none", False, False, False)
        self.step = float(overrun_step)
        self.horizon = float(horizon)
        self.cons = policy == "conservative"
        # planned durations: conservative plans a job asking for no time but running as one step
        self.plan0 = [self.step if (self.cons and e == 0 and r > 0) else e
                      for e, r in zip(self.estimate, self.runtime)]
        self.state = [WAITING] * n
        self.first_start = [NAN] * n
        self.end = [NAN] * n
        self.preemptions = [0] * n
        self.resumes = [0] * n
        self.lost = [0.0] * n
        self.pieces: list[tuple] = []
        self.completed: list[int] = []  # jobs that finished their work, in the order they did
        # the current (or next) run of each job
        self.run_start = [NAN] * n
        self.run_start_a = np.full(n, NAN)  # the same, for compiled views
        self.pplan = np.array(self.plan0, np.float64)  # planned duration
        self.pact = list(self.runtime)  # actual duration
        self.procs: list[tuple] = [()] * n
        self.gen = [0] * n
        self.susp_at = [NAN] * n
        self.pend = np.full(n, INF)  # conservative: queued reservation end / running planned end
        self.rstart = np.full(n, INF)  # conservative: queued reservation start
        self.running: dict[int, None] = {}  # insertion-ordered set
        # the queue: job ids sorted by (-priority, rank, id), rank 0 for a job suspended when it
        # joined, else 1; numpy so the per-pass scans over it run compiled
        self.qbuf = np.empty(max(n, 1), np.int64)  # a job is queued at most once
        self.qn = 0
        self.prio_a = np.array(self.prio, np.int64)
        self.rank = np.ones(n, np.int64)
        self.size_a = np.array(self.size, np.int64)
        self.after = np.full(n, -INF)  # conservative: suspended jobs' earliest restart, set around a replan
        self.suspended: set[int] = set()
        self.procs_a: dict[int, np.ndarray] = {}  # suspended jobs' processors, as arrays
        self.mark = np.zeros(n, np.bool_)
        self._after_set: list[int] = []
        # conservative: job classes (size, planned-time band) for the compression's bounds
        if self.cons and n:
            self.cls, self.csize, self.cdlo = job_classes(self.size_a, self.pplan.copy())
        self.owner = np.full(self.P, -1, np.int64)  # job id, -2 - reservation index, or -1 (free)
        self.pin = np.zeros(self.P, np.int32)  # suspended jobs keeping a checkpoint on each processor
        self.pinned = 0  # suspended jobs in all
        self.nfree = self.P
        self.events: list[tuple] = []
        self.seq = 0
        self.prof = Profile(self.P, self.submit[0] if n else 0.0) if self.cons else None
        self.next_start = INF
        self.early = False
        self.repaired = False
        self._arrived = 0
        self._requested = 0
        self.finished = False

    # ---- helpers --------------------------------------------------------------------------------

    def _push(self, t: float, kind: int, ident: int, gen: int = 0) -> None:
        heapq.heappush(self.events, (t, self.seq, kind, ident, gen))
        self.seq += 1

    @property
    def queue(self) -> list[int]:
        """Queued job ids in queue order."""
        return self.qbuf[:self.qn].tolist()

    @property
    def qj(self) -> np.ndarray:
        """The queue (a view: valid until it changes)."""
        return self.qbuf[:self.qn]

    def _enqueue(self, j: int) -> int:
        """Put j in the queue (after every job ranking before it); its position."""
        self.rank[j] = 0 if self.state[j] == SUSPENDED else 1
        pos = queue_insert(self.qbuf, self.qn, self.prio_a, self.rank, j)
        self.qn += 1
        return pos

    def _dequeue(self, positions) -> None:
        """Take the jobs at these queue positions (ascending) off the queue."""
        self.qn = queue_delete(self.qbuf, self.qn, np.asarray(positions, np.int64))

    def _next_start(self) -> float:
        return float(self.rstart[self.qj].min()) if len(self.qj) else INF

    def _live_ars(self, t: float):
        return [r for r in self.ars if r.status in (AR_ACCEPTED, AR_ACTIVE) and r.end > t]

    def _run_end(self, j: int, t: float, still_running: bool) -> float:
        if self.cons:
            return self.pend[j]
        return planned_end(self.run_start[j], self.pplan[j], t, self.step, still_running)

    def _view(self, t: float, still_running: bool, without=(), skip_ar=None):
        """Profile of running jobs (until their planned end) and accepted reservations."""
        run = np.fromiter((j for j in self.running if j not in without) if without else self.running, np.int64)
        ars = [r for r in self._live_ars(t) if r is not skip_ar]
        return view_steps(float(t), self.P, run, self.run_start_a, self.pplan, self.pend, self.size_a, self.step,
                          still_running, self.cons, np.array([r.start for r in ars], np.float64),
                          np.array([r.end for r in ars], np.float64), np.array([r.processors for r in ars], np.int64))

    def _take(self, k: int) -> tuple:
        """The ``k`` lowest free processors, avoiding suspended jobs' checkpoints when possible."""
        free = self.owner == -1
        if not self.pinned:
            ids = np.flatnonzero(free)[:k]
            if len(ids) == k:
                return tuple(ids.tolist())
        ids = np.flatnonzero(free & (self.pin == 0))
        if len(ids) < k:
            ids = np.concatenate([ids, np.flatnonzero(free & (self.pin > 0))])
            ids.sort()
        if len(ids) < k:
            raise RuntimeError(f"{k} processors needed, {len(ids)} free")
        return tuple(ids[:k].tolist())

    def _hold(self, procs: tuple, who: int) -> None:
        self.owner[list(procs)] = who
        self.nfree -= len(procs)

    def _release(self, procs: tuple) -> None:
        self.owner[list(procs)] = -1
        self.nfree += len(procs)

    def _procs_free(self, j: int, without=()) -> bool:
        for p in self.procs[j]:
            o = self.owner[p]
            if o != -1 and o not in without:
                return False
        return True

    # ---- starting, ending, preempting -----------------------------------------------------------

    def _start(self, j: int, t: float) -> None:
        if self.state[j] == SUSPENDED:
            procs = self.procs[j]
            self.pieces.append((("j", j), self.susp_at[j], t, KIND_SUSPENDED, procs))
            self.pin[list(procs)] -= 1
            self.pinned -= 1
            self.resumes[j] += 1
            self.suspended.discard(j)
            del self.procs_a[j]
        elif self.cons and self.pact[j] == 0:
            # holds nothing: drawn on the lowest free processors (or the first ones)
            ids = np.flatnonzero(self.owner == -1)[:self.size[j]]
            procs = tuple(int(x) for x in ids) if len(ids) == self.size[j] else tuple(range(self.size[j]))
        else:
            procs = self._take(self.size[j])
        if not (self.cons and self.pact[j] == 0):
            self._hold(procs, j)
        self.procs[j] = procs
        self.state[j] = RUNNING
        self.running[j] = None
        self.run_start[j] = t
        self.run_start_a[j] = t
        if math.isnan(self.first_start[j]):
            self.first_start[j] = t
        self.gen[j] += 1
        self._push(t + self.pact[j], EV_JOB_END, j, self.gen[j])
        if self.cons:
            self.pend[j] = t + self.pplan[j]
            self._push(self.pend[j], EV_OVERRUN, j, self.gen[j])

    def _finish(self, j: int, t: float) -> None:
        del self.running[j]
        self.state[j] = DONE
        self.end[j] = t
        self.completed.append(j)
        self.pieces.append((("j", j), self.run_start[j], t, KIND_RUN, self.procs[j]))
        if not (self.cons and self.pact[j] == 0):
            self._release(self.procs[j])
        if self.cons and self.pend[j] > t:
            self.prof.add(t, self.pend[j], self.size[j])
            self.early = True

    def _preemptable(self, t: float) -> list[int]:
        """Running jobs that may be preempted: not those ending at this very instant (a job
        of run time 0 has nothing to lose, and in conservative holds no processor)."""
        return [j for j in self.running if self.run_start[j] + self.pact[j] > t]

    def _preempt(self, j: int, t: float, mode: PreemptionMode) -> None:
        """Stop running job j now and treat it as ``mode`` says."""
        del self.running[j]
        self.gen[j] += 1  # its completion event no longer counts
        self._release(self.procs[j])
        if self.cons and self.pend[j] > t:
            self.prof.add(t, self.pend[j], self.size[j])
            self.early = True
        elapsed = t - self.run_start[j]
        self.preemptions[j] += 1
        if mode.resumes:
            self.pieces.append((("j", j), self.run_start[j], t, KIND_RUN, self.procs[j]))
            rest_plan = self.pplan[j] - elapsed
            self.pact[j] = self.pact[j] - elapsed + mode.overhead
            self.pplan[j] = (rest_plan if rest_plan > 0 else self.step) + mode.overhead
            self.state[j] = SUSPENDED
            self.suspended.add(j)
            self.procs_a[j] = np.array(self.procs[j], np.int64)
            self.susp_at[j] = t
            self.pin[list(self.procs[j])] += 1
            self.pinned += 1
            self._join_queue(j, t)
            return
        self.pieces.append((("j", j), self.run_start[j], t, KIND_KILLED, self.procs[j]))
        self.lost[j] += elapsed
        if mode.restarts:
            self.pact[j] = self.runtime[j] + mode.overhead
            self.pplan[j] = self.plan0[j] + mode.overhead
            self.state[j] = QUEUED
            self._join_queue(j, t)
        else:
            self.state[j] = KILLED
            self.end[j] = t

    def _join_queue(self, j: int, t: float) -> None:
        """Put j in the queue; conservative: it gets the earliest reservation that fits, and the
        queued jobs it now ranks before (lower priority) are placed again after it, in queue order
        (with equal priorities a newcomer ranks last, so nobody moves)."""
        pos = self._enqueue(j)
        if self.cons:
            self._replan(t, self.qj[pos + 1:], self.qj[pos:])

    def _replan(self, t: float, give_back: np.ndarray, place: np.ndarray) -> float:
        """Give back the queued reservations of ``give_back``, then reserve the earliest fit for
        each job of ``place`` in turn (compiled); the earliest new start."""
        self._set_after(t, place)
        prof = self.prof
        prof.times, prof.free, prof.lo, prof.n, first = replan_one_by_one(
            prof.times, prof.free, prof.lo, prof.n, float(t), give_back, place, self.after, self.rstart, self.pend,
            self.pplan, self.size_a)
        self._clear_after()
        self.next_start = min(self.next_start, float(first))
        return first

    def _set_after(self, t: float, place: np.ndarray | None = None) -> None:
        """Set ``after`` (when its processors are expected free) for the suspended jobs a replan
        will place (those of ``place``) or a compression may move (reserved after t)."""
        self._after_set = []
        if not self.suspended:
            return
        if place is not None:
            if len(place) == 1:
                todo = [int(place[0])] if int(place[0]) in self.suspended else []
            else:
                self.mark[place] = True
                todo = [j for j in self.suspended if self.mark[j]]
                self.mark[place] = False
        else:
            todo = [j for j in self.suspended if self.rstart[j] > t]
        for j in todo:
            self.after[j] = self._identity_free_at(j, t)
        self._after_set = todo

    def _clear_after(self) -> None:
        self.after[self._after_set] = -INF

    def _reserve(self, j: int, s: float) -> None:
        self.rstart[j] = s
        self.pend[j] = s + self.pplan[j]
        self.prof.add(s, self.pend[j], -self.size[j])
        self.next_start = min(self.next_start, s)

    def _unreserve(self, j: int) -> None:
        self.prof.add(self.rstart[j], self.pend[j], self.size[j])

    def _identity_free_at(self, j: int, t: float) -> float:
        """When every processor of suspended job j is expected to be free (by plan)."""
        own = self.owner[self.procs_a[j]]
        at = t
        jobs = own[own >= 0]
        if len(jobs):
            if self.cons:
                at = max(at, float(self.pend[jobs].max()))
            else:
                for o in set(jobs.tolist()):
                    at = max(at, self._run_end(o, t, True))
        for o in set(own[own <= -2].tolist()):
            at = max(at, self.ars_by_index[-2 - o].end)
        return at

    # ---- advance reservations -------------------------------------------------------------------

    def _admit(self, r: AdvanceReservation, t: float) -> None:
        times, free = self._view(t, True)
        d = r.length
        if not r.relaxed:
            ok = min_free(times, free, len(times), r.start, r.end) >= r.processors
            s = r.start if ok else INF
        else:
            s = earliest(times, free, r.start, d, r.processors, limit=np.nextafter(r.lft - d, INF))
        if s == INF:
            r.status = AR_REJECTED
            r.note = (f"rejected at {t:g}: {r.processors} processors are not free over [{r.start:g}, {r.end:g})"
                      if not r.relaxed else
                      f"rejected at {t:g}: {r.processors} processors for {d:g} s do not fit in "
                      f"[{r.start:g}, {r.lft:g}]")
            return
        r.status = AR_ACCEPTED
        r.start, r.end = s, s + d
        if self.cons:
            self.prof.add(r.start, r.end, -r.processors)
            self._repair(t, r.end)

    def _slide(self, t: float) -> None:
        """Relaxed reservations not yet started move to the earliest fit at or after max(EST, now)."""
        for r in self.ars:
            if r.status != AR_ACCEPTED or not r.relaxed or r.start <= t:
                continue
            times, free = self._view(t, True, skip_ar=r)
            s = earliest(times, free, max(r.est, t), r.length, r.processors, limit=r.start)
            if s < r.start:
                old = (r.start, r.end)
                r.start, r.end = s, s + r.length
                if self.cons:
                    self.prof.add(old[0], old[1], r.processors)
                    self.prof.add(r.start, r.end, -r.processors)
                    self.early = True  # its old window came free
                    self._repair(t, r.end)

    def _open_window(self, r: AdvanceReservation, t: float) -> None:
        """Reservation r's window starts: take its processors, preempting overrunning jobs if need be."""
        if self.nfree < r.processors:
            mode = self.mode if self.mode.preempts else PreemptionMode("none", False, False, False)
            need = r.processors
            victims = choose_victims(self._preemptable(t), lambda j: self.prio[j], lambda j: self.run_start[j],
                                     lambda v: self.nfree + sum(self.size[j] for j in v) >= need)
            for j in victims or []:
                self._preempt(j, t, mode)
        procs = self._take(r.processors)
        self._hold(procs, -2 - r.index)
        r.procs = procs
        r.status = AR_ACTIVE
        self._push(r.end, EV_AR_END, r.index)
        if r.job_runtime is not None:
            self.pieces.append((("r", r.index), t, t + r.job_runtime, KIND_RUN, procs))

    def _close_window(self, r: AdvanceReservation, t: float) -> None:
        self._release(r.procs)
        r.status = AR_DONE
        self.pieces.append((("r", r.index), r.start, r.end, KIND_RESERVATION, r.procs))

    # ---- conservative bookkeeping ---------------------------------------------------------------

    def _repair(self, t: float, until: float) -> None:
        """If the profile went below zero before ``until``, queued reservations starting before
        it are placed again, in queue order, after all the others (the kernel's overrun repair)."""
        if until <= t or self.prof.min_free(t, until) >= 0:
            return
        evicted = self.qj[self.rstart[self.qj] < until]
        self._replan(t, evicted, evicted)
        self.next_start = self._next_start()
        self.repaired = True

    def _compress(self, t: float) -> None:
        """Move queued reservations earlier where the profile now allows (compiled loop)."""
        if not len(self.qj):
            return
        self._set_after(t)
        prof = self.prof
        prof.times, prof.free, prof.lo, prof.n, first = compress_queue(
            prof.times, prof.free, prof.lo, prof.n, float(t), self.qj, self.after, self.rstart, self.pend,
            self.pplan, self.size_a, self.P, self.cls, self.csize, self.cdlo)
        self._clear_after()
        if first < INF:
            self.next_start = min(self.next_start, float(first))

    # ---- the main loop --------------------------------------------------------------------------

    def run(self, on_step: Callable[[float, float], None] | None = None, until: float = INF) -> "ClusterSim":
        """Simulate until nothing is left to happen or the horizon; ``on_step(fraction of the
        jobs arrived, now)`` is called every STEP_EVENTS event times (progress of a long run).
        With ``until``: stop before the first event at or after it (call again to go on; the
        live Gantt advances every cluster slice by slice). ``finished`` says nothing is left."""
        self.ars_by_index = {r.index: r for r in self.ars}
        n = self.n
        until_step = STEP_EVENTS
        while True:
            t = self.submit[self._arrived] if self._arrived < n else INF
            if self.events and self.events[0][0] < t:
                t = self.events[0][0]
            if self._requested < len(self.ars):
                t = min(t, self.ars[self._requested].request_time)
            for r in self.ars:
                if r.status == AR_ACCEPTED and r.start < t:
                    t = r.start
            if self.cons and self.next_start < t:
                t = self.next_start
            if t == INF or t > self.horizon:
                self.finished = True
                break
            if t >= until:
                break
            if on_step is not None:
                until_step -= 1
                if not until_step:
                    until_step = STEP_EVENTS
                    on_step(self._arrived / n if n else 1.0, t)
            if self.cons:
                self.prof.advance(t)
            self.early = self.repaired = False
            freed = False
            ext_hi = -INF
            # 1. completions and reservation ends; overruns (conservative)
            overruns = []
            while self.events and self.events[0][0] <= t:
                _, _, kind, ident, gen = heapq.heappop(self.events)
                if kind == EV_JOB_END:
                    if gen == self.gen[ident] and self.state[ident] == RUNNING:
                        self._finish(ident, t)
                        freed = True
                elif kind == EV_AR_END:
                    self._close_window(self.ars_by_index[ident], t)
                    freed = True
                else:
                    overruns.append((ident, gen))
            for j, gen in overruns:
                if gen != self.gen[j] or self.state[j] != RUNNING or self.pend[j] != t:
                    continue
                new_end = planned_end(self.run_start[j], self.pplan[j], t, self.step, True)
                self.prof.add(t, new_end, -self.size[j])
                self.pend[j] = new_end
                self._push(new_end, EV_OVERRUN, j, gen)
                ext_hi = max(ext_hi, new_end)
            if ext_hi > t:
                self._repair(t, ext_hi)
            # 2. reservation requests
            while self._requested < len(self.ars) and self.ars[self._requested].request_time <= t:
                self._admit(self.ars[self._requested], t)
                self._requested += 1
            # 3. relaxed reservations slide earlier when processors came free
            if freed:
                self._slide(t)
            # 4. reservation windows starting now
            for r in self.ars:
                if r.status == AR_ACCEPTED and r.start <= t:
                    self._open_window(r, t)
            # 5. arrivals
            new = []
            while self._arrived < n and self.submit[self._arrived] <= t:
                j = self._arrived
                self._arrived += 1
                self.state[j] = QUEUED
                new.append(j)
            # 6. one scheduling pass
            if self.cons:
                self._pass_conservative(t, new)
            else:
                for j in new:
                    self._enqueue(j)
                self._pass_queue(t)
        return self

    # ---- FCFS and EASY --------------------------------------------------------------------------

    def _can_start(self, j: int, t: float, view) -> bool:
        if self.size[j] > self.nfree:
            return False
        if self.state[j] == SUSPENDED and not self._procs_free(j):
            return False
        if view is not None:
            times, free = view
            if not _fits(times, free, t, self.pplan[j], self.size[j]):
                return False
        return True

    def _pass_queue(self, t: float) -> None:
        if not len(self.qj):
            return
        guarded = bool(self._live_ars(t))
        view = self._view(t, False) if guarded else None
        h = 0
        while h < len(self.qj):
            j = int(self.qj[h])
            if not self._can_start(j, t, view):
                # every job before it has started: j is the top waiting job
                if not self._preempt_for(j, t):
                    break
                guarded = bool(self._live_ars(t))
                view = self._view(t, False) if guarded else None
                if not self._can_start(j, t, view):
                    raise RuntimeError("preemption did not make room")
                # the queue may have grown (requeued or suspended victims rank after j)
                h = int(np.flatnonzero(self.qj == j)[0])
            self._start(j, t)
            if view is not None:
                view = add(view[0], view[1], t, t + self.pplan[j], -self.size[j])
            h += 1
        # the started jobs: the first h, and those backfilled
        gone = list(range(h))
        if self.policy == "easy" and h < len(self.qj) and self.nfree > 0:
            self._backfill(t, h, gone)
        if gone:
            self._dequeue(gone)

    def _backfill(self, t: float, h: int, gone: list) -> None:
        """Start the jobs after the blocked head (position h) that fit now without delaying
        it, in queue order; their positions go to ``gone``."""
        qj = self.qj
        head = int(qj[h])
        view = None  # built when the first candidate has enough free processors now
        k = h + 1
        while k < len(qj) and self.nfree > 0:
            if view is None:
                k = first_backfill(qj, k, self.size_a, self.pplan, self.nfree, _NO_TIMES, _NO_FREE, t, False)
            else:
                k = first_backfill(qj, k, self.size_a, self.pplan, self.nfree, view[0], view[1], t, True)
            if k >= len(qj):
                break
            j = int(qj[k])
            p = self.size[j]
            if self.state[j] == SUSPENDED and not self._procs_free(j):
                k += 1
                continue
            if view is None:
                view = self._shadow_view(t, head)
                if not _fits(view[0], view[1], t, self.pplan[j], p):
                    k += 1
                    continue
            self._start(j, t)
            gone.append(k)
            view = add(view[0], view[1], t, t + self.pplan[j], -p)
            k += 1

    def _shadow_view(self, t: float, head: int):
        """The profile of running jobs (this pass's starts too) and reservations, with the
        blocked head's reservation at its shadow time (its earliest fit)."""
        times, free = self._view(t, False)
        after = t
        if self.state[head] == SUSPENDED:
            after = self._identity_free_at(head, t)
        shadow = earliest(times, free, after, self.pplan[head], self.size[head])
        if shadow < INF:
            # a head asking for no time still holds its processors at the shadow instant
            # (as the kernel's extra-processors rule does)
            hold = shadow + self.pplan[head] if self.pplan[head] > 0 else float(np.nextafter(shadow, INF))
            times, free = add(times, free, shadow, hold, -self.size[head])
        return times, free

    def _preempt_for(self, j: int, t: float) -> bool:
        """Preempt lower-priority running jobs so that j starts now; False if that cannot be done."""
        if not self.mode.preempts:
            return False
        p, d = self.size[j], self.pplan[j]
        suspended = self.state[j] == SUSPENDED

        def enough(victims) -> bool:
            gone = set(victims)
            if self.nfree + sum(self.size[v] for v in victims) < p:
                return False
            if suspended and not self._procs_free(j, gone):
                return False
            times, free = self._view(t, True, without=gone)
            return _fits(times, free, t, d, p)

        victims = choose_victims(self._preemptable(t), lambda v: self.prio[v], lambda v: self.run_start[v],
                                 enough, below=self.prio[j])
        if not victims:
            return False
        for v in victims:
            self._preempt(v, t, self.mode)
        return True

    # ---- conservative ---------------------------------------------------------------------------

    def _pass_conservative(self, t: float, new: list) -> None:
        if self.early or self.repaired:
            self._compress(t)
        for j in new:
            self._join_queue(j, t)
        while True:
            self._start_due(t)
            if not len(self.qj):
                break
            top = int(self.qj[0])
            if self.rstart[top] <= t:
                break  # due but blocked (its processors): re-placed by _start_due
            if not self._preempt_top(top, t):
                break

    def _start_due(self, t: float) -> None:
        if self.next_start > t:
            return
        self.next_start = INF
        qj = self.qj
        gone = []
        for q in np.flatnonzero(self.rstart[qj] <= t).tolist():
            j = int(qj[q])
            if self.size[j] > self.nfree and self.pact[j] > 0 or (
                    self.state[j] == SUSPENDED and not self._procs_free(j)):
                # its processors are still busy (a suspended job's own, or an overrun): later
                self._unreserve(j)
                after = self._identity_free_at(j, t) if self.state[j] == SUSPENDED else t
                nxt = min((e[0] for e in self.events if e[0] > t), default=t + self.step)
                self._reserve(j, self.prof.earliest(max(after, nxt), self.pplan[j], self.size[j]))
                continue
            # the reservation becomes the running job's plan: nothing changes in the profile
            plan_end = self.pend[j]
            self._start(j, t)
            self.pend[j] = plan_end
            gone.append(q)
        if gone:
            self._dequeue(gone)
        self.next_start = self._next_start()

    def _preempt_top(self, j: int, t: float) -> bool:
        if not self._preempt_for(j, t):
            return False
        # j starts now: its reservation moves to [t, t + plan); those it now overlaps move
        self._unreserve(j)
        self._dequeue(np.flatnonzero(self.qj == j))
        self._start(j, t)
        self.prof.add(t, self.pend[j], -self.size[j])
        self._repair(t, self.pend[j])
        self._compress(t)
        self.next_start = self._next_start()
        return True
