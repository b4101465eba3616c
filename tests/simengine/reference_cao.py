"""Cao's system as it was written in plain Python before the compiled event loop
(simengine/cao/core.py) replaced it, kept as the tests' oracle: the core must give exactly its
schedules (tests/simengine/test_cao_core.py). Not used by the engine.

The rules are those of simengine/cao/engine.py's docstring (docs/cao.md). ``simulate`` takes
the same inputs as simengine.cao.simulate.simulate and returns the same CaoResult.
"""
from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right
from typing import Callable

import numpy as np

from simengine.cao.engine import (DONE, EPS, EV_ARRIVE, EV_DONE, EV_GRID, EV_SLICE, EV_WAKE, LONG, MEDIUM,  # noqa: F401
                                  QUEUED, RUNNING, SHORT, STEP_EVENTS, SUSPENDED, CaoParams, Workflow,
                                  heft_order, preemptions_from_slice_start, relaxed_frame)
from simengine.cao.simulate import LOCAL, TASK, CaoResult, _clusters_for, blocks, metrics
from simengine.gantt import KIND_RESERVATION, KIND_RUN, KIND_SUSPENDED, SEGMENT_COLUMNS
from simengine.workload import JobTable


class Profile:
    """Step function of free processors over virtual time, from ``t[0]`` on."""

    __slots__ = ("t", "f", "cap")

    def __init__(self, cap: int, origin: float = 0.0):
        self.cap = cap
        self.t = [origin]
        self.f = [cap]

    @classmethod
    def from_intervals(cls, cap: int, origin: float, intervals: list[tuple[float, float, int]]) -> "Profile":
        """The profile with ``n`` processors taken on each ``[s, e)`` (s >= origin)."""
        prof = cls(cap, origin)
        ev = []
        for s, e, n in intervals:
            if e - s > EPS and n:
                ev.append((s, -n))
                ev.append((e, n))
        if not ev:
            return prof
        ev.sort()
        t, f = prof.t, prof.f
        cur = cap
        for x, d in ev:
            cur += d
            if x - t[-1] <= EPS:
                f[-1] = cur
            else:
                t.append(x)
                f.append(cur)
        return prof

    def _split(self, x: float) -> int:
        t = self.t
        if x <= t[0]:
            return 0
        i = bisect_left(t, x)
        if i < len(t) and t[i] - x <= EPS:
            return i
        if t[i - 1] >= x - EPS:  # x is within EPS after a breakpoint: use it
            return i - 1
        t.insert(i, x)
        self.f.insert(i, self.f[i - 1])
        return i

    def add(self, s: float, e: float, n: int) -> None:
        """Add ``n`` free processors on ``[s, e)`` (negative ``n`` allocates)."""
        if e - s <= EPS or n == 0:
            return
        i = self._split(s)
        j = self._split(e)
        f = self.f
        for k in range(i, j):
            f[k] += n

    def alloc(self, s: float, e: float, n: int) -> None:
        self.add(s, e, -n)

    def release(self, s: float, e: float, n: int) -> None:
        self.add(max(s, self.t[0]), e, n)

    def free_at(self, x: float) -> int:
        return self.f[max(0, bisect_right(self.t, x + EPS) - 1)]

    def min_free(self, s: float, e: float) -> int:
        t, f = self.t, self.f
        i = max(0, bisect_right(t, s + EPS) - 1)
        m = f[i]
        i += 1
        while i < len(t) and t[i] < e - EPS:
            if f[i] < m:
                m = f[i]
            i += 1
        return m

    def any_free(self, s: float, e: float, n: int) -> bool:
        """Whether ``n`` processors are free at some instant of ``[s, e)``."""
        t, f = self.t, self.f
        i = max(0, bisect_right(t, s + EPS) - 1)
        if f[i] >= n:
            return True
        i += 1
        nt = len(t)
        while i < nt and t[i] < e - EPS:
            if f[i] >= n:
                return True
            i += 1
        return False

    def fit(self, lb: float, n: int, d_first: float, d_later: float, first: float) -> tuple[float, float]:
        """Earliest ``(s, e)`` with ``s >= lb`` and ``n`` processors free on ``[s, e)``.

        The duration is ``d_first`` for a start at ``first`` (or before) and ``d_later`` for any
        later start (it depends only on whether the start's phase in the slices is known).
        """
        t, f = self.t, self.f
        s = max(lb, t[0])
        i = max(0, bisect_right(t, s + EPS) - 1)
        nt = len(t)
        while True:
            e = s + (d_first if s <= first + EPS else d_later)
            k = i
            ok = True
            while True:
                if f[k] < n:
                    ok = False
                    break
                k += 1
                if k >= nt or t[k] >= e - EPS:
                    break
            if ok:
                return s, e
            # blocked on segment k: the next candidate start is where it ends
            s = t[k + 1]
            i = k + 1

    def trim(self, now: float) -> None:
        """Forget breakpoints before ``now``."""
        i = bisect_right(self.t, now + EPS) - 1
        if i > 0:
            del self.t[:i]
            del self.f[:i]
        if self.t[0] < now:
            self.t[0] = now



class Job:
    """A local job or a workflow task inside the simulation."""

    __slots__ = ("idx", "job_id", "cls", "n", "runtime", "est", "submit", "rem", "rem_est", "lb", "lbv", "seq",
                 "vstart", "vend", "layer", "procs", "pieces", "preemptions", "state", "run_t0", "foreign",
                 "cluster", "wf", "task", "preds", "succs", "st", "est_frame", "lft", "ready", "start", "end")

    def __init__(self, idx, job_id, cls, n, runtime, est, submit, cluster):
        self.idx = idx
        self.job_id = job_id
        self.cls = cls
        self.n = n
        self.runtime = runtime
        self.est = est
        self.submit = submit
        self.rem = runtime
        self.rem_est = est
        self.lb = submit
        self.lbv = 0.0  # the same bound in the class's virtual time (set when queued)
        self.seq = 0
        self.vstart = self.vend = 0.0
        self.layer = cls
        self.procs = None
        self.pieces = []
        self.preemptions = 0
        self.state = QUEUED
        self.run_t0 = 0.0
        self.foreign = False
        self.cluster = cluster
        self.wf = -1
        self.task = -1
        self.preds = ()
        self.succs = ()
        self.st = self.est_frame = self.lft = math.nan
        self.ready = submit
        self.start = self.end = math.nan


class Cluster:
    """One SCOJO-PECT cluster: three class layers, their plans in virtual time, the slice calendar."""

    def __init__(self, idx: int, p: CaoParams, sim: "Simulation"):
        self.idx = idx
        self.p = p
        self.sim = sim
        P = p.processors
        self.I = p.interval
        # nominal calendar of a future interval, with the longest short slice so that plans
        # (and the grid's predictions) are upper bounds: real slices are never shorter
        S = p.short_slice_max
        med = p.medium_share * (p.interval - S)
        self.Lnom = [S if S > 0 else p.interval, med, p.interval - S - med]
        self.off = [0.0, S, S + med]
        self.now = 0.0
        self.vnow = [0.0, 0.0, 0.0]
        self.slice_v0 = 0.0
        self.plan = [Profile(P, 0.0) for _ in range(3)]
        self.queue: list[list[Job]] = [[], [], []]
        self.active: list[list[Job]] = [[], [], []]  # own-class jobs started, not done (running or suspended)
        self.foreign: list[list[Job]] = [[], [], []]  # jobs of other classes running in this layer
        self.free = [list(range(P)) for _ in range(3)]
        self.cur = -1
        self.slices: list[tuple[int, float, float]] = []
        self.slice_idx = -1
        self.interval_start = 0.0
        self.interval_end = 0.0
        self.slice_end = 0.0
        self.short_slices = 0
        self.wake_at = math.inf
        self.seq = 0
        self.in_dispatch = False

    # ---- time ---------------------------------------------------------------------------------

    def advance(self, t: float) -> None:
        if t > self.now:
            if self.cur >= 0:
                self.vnow[self.cur] += t - self.now
            self.now = t

    def v_of(self, c: int, t: float) -> float:
        """Virtual time of class ``c`` at real time ``t`` (calendar: this interval, then nominal)."""
        if t <= self.now:
            return self.vnow[c]
        v = self.vnow[c]
        for k, a, b in self.slices:
            if k == c:
                lo = a if a > self.now else self.now
                hi = b if b < t else t
                if hi > lo:
                    v += hi - lo
        if t <= self.interval_end:
            return v
        r = t - self.interval_end
        k = math.floor(r / self.I)
        rr = r - k * self.I
        L = self.Lnom[c]
        return v + k * L + min(max(rr - self.off[c], 0.0), L)

    def t_of(self, c: int, v: float, end: bool = False) -> float:
        """Real time of class ``c``'s virtual ``v`` (a start maps to a slice start, an end to a slice end)."""
        r = v - self.vnow[c]
        if r < 0:
            r = 0.0
        for k, a, b in self.slices:
            if k != c or b <= self.now:
                continue
            a2 = a if a > self.now else self.now
            ln = b - a2
            if r < ln - EPS or (end and r <= ln + EPS):
                return a2 + r
            r -= ln
        L = self.Lnom[c]
        k = math.floor(r / L + EPS)
        rr = r - k * L
        if rr < EPS:
            rr = 0.0
            if end and k > 0:
                k -= 1
                rr = L
        return self.interval_end + k * self.I + self.off[c] + rr

    def dur(self, c: int, s: float, w: float) -> float:
        """Upper bound on the virtual time a job of class ``c`` with ``w`` s of work needs from ``s``.

        Real slices are never shorter than the nominal ones, so the bound holds whatever the
        calendar turns out to be: from now in the running slice the rest of the slice is known;
        at the start of the class's next slice (a suspended job) every piece starts a slice;
        at a later, unknown phase the first piece may be cut at once (one more preemption).
        """
        if w <= 0:
            return 0.0
        L = self.Lnom[c]
        ov = self.p.overhead
        if s <= self.vnow[c] + EPS:
            if self.cur == c:
                a = self.slice_end - self.now
                if w <= a + EPS:
                    return w
                x = w - a + ov
                return a + x + ov * preemptions_from_slice_start(x, L, ov)
            return w + ov * preemptions_from_slice_start(w, L, ov)
        x = w + ov
        return x + ov * preemptions_from_slice_start(x, L, ov)

    # ---- planning -----------------------------------------------------------------------------

    def vbound(self, j: Job) -> float:
        """Earliest virtual start the plan may give ``j``: its frame's EST (kept in virtual time,
        so it moves with the plan when slices turn out longer) and its predecessors' predicted
        finish + comm (real time, converted now)."""
        c = j.cls
        b = max(j.lbv, self.vnow[c])
        if j.preds:
            d = self.sim.dep_time(j, predicted=True)
            if d > self.now:
                b = max(b, self.v_of(c, d))
        return b

    def place(self, j: Job, cap: float = math.inf, lb: float | None = None) -> None:
        """Plan ``j`` at its earliest fit from its bound (or ``lb``); a slot it holds (``cap``)
        caps the bound: a job is never moved later, a task whose predecessors end late waits in its slot."""
        c = j.cls
        lb = min(self.vbound(j) if lb is None else lb, cap)
        vn = self.vnow[c]
        s, e = self.plan[c].fit(lb, j.n, self.dur(c, vn, j.rem_est), self.dur(c, math.inf, j.rem_est), vn)
        self.plan[c].alloc(s, e, j.n)
        j.vstart, j.vend = s, e

    def _held(self, c: int) -> list[tuple[float, float, int]]:
        """Virtual intervals of class ``c``'s layer held from now by started (active, foreign) jobs."""
        vn = self.vnow[c]
        taken = []
        for j in self.active[c]:
            e = vn + self.dur(c, vn, j.rem_est) if j.state == SUSPENDED else vn + self._running_dur(j)
            taken.append((vn, e, j.n))
            j.vend = e
        for j in self.foreign[c]:
            left = max(j.rem_est - (self.now - j.run_t0), 0.0)
            taken.append((vn, vn + left, j.n))
            j.vend = vn + left
        return taken

    def replan(self, c: int, late: tuple = ()) -> None:
        """Plan class ``c``'s queue again from scratch: started jobs from now, then each queued
        job in queue order at its earliest fit from its bound, whatever its slot was (so a job
        may move later, but only behind jobs queued before it). A task of ``late`` whose
        predecessors' predicted finish has passed waits one virtual second, as in _dispatch."""
        vn = self.vnow[c]
        self.plan[c] = Profile.from_intervals(self.p.processors, vn, self._held(c))
        for j in self.queue[c]:
            b = self.vbound(j)
            if b <= vn + EPS and any(j is x for x in late):
                b = vn + 1.0
            self.place(j, lb=b)

    def rebuild(self, c: int) -> None:
        """Compress class ``c``'s plan: active and foreign jobs from now, then each queued job
        (in queue order) to its earliest fit, never later than its current slot."""
        vn = self.vnow[c]
        taken = self._held(c)
        # every queued job keeps its slot (its duration recomputed there), then in queue order
        # moves to its earliest fit: never later than its slot while the slot stays feasible
        queue = self.queue[c]
        for j in queue:
            s = max(j.vstart, vn)
            j.vstart, j.vend = s, s + self.dur(c, s, j.rem_est)
            taken.append((j.vstart, j.vend, j.n))
        prof = Profile.from_intervals(self.p.processors, vn, taken)
        self.plan[c] = prof
        for j in queue:
            b = self.vbound(j)
            if ((j.vstart <= b + EPS or not prof.any_free(b, j.vstart, j.n))
                    and prof.min_free(j.vstart, j.vend) >= 0):
                continue  # its slot holds and nothing is free before it: it cannot move
            prof.release(j.vstart, j.vend, j.n)
            self.place(j, cap=j.vstart)

    def _running_dur(self, j: Job) -> float:
        left = j.rem_est - (self.now - j.run_t0)
        return self.dur(j.cls, self.vnow[j.cls], max(left, 0.0))

    def submit(self, j: Job) -> None:
        """A local job or a reserved task joins its class queue (planned at its earliest fit)."""
        self.seq += 1
        j.seq = self.seq
        j.lbv = self.v_of(j.cls, j.lb)
        self.queue[j.cls].append(j)
        self.place(j)

    def predict(self, c: int, n: int, work: float, t_lb: float) -> tuple[float, float, float, float]:
        """Predicted (start, end) real times and virtual slot of a new job planned from ``t_lb``."""
        vn = self.vnow[c]
        s, e = self.plan[c].fit(max(self.v_of(c, t_lb), vn), n, self.dur(c, vn, work), self.dur(c, math.inf, work), vn)
        return self.t_of(c, s), self.t_of(c, e, end=True), s, e

    # ---- slices -------------------------------------------------------------------------------

    def new_interval(self, t: float) -> None:
        p = self.p
        waiting = [j.est for j in self.queue[SHORT]] + [j.rem_est for j in self.active[SHORT]]
        S = min(p.short_slice_max, max(waiting)) if waiting else 0.0
        rest = self.I - S
        m = p.medium_share * rest
        self.interval_start, self.interval_end = t, t + self.I
        self.slices = ([(SHORT, t, t + S)] if S > 0 else []) + [(MEDIUM, t + S, t + S + m),
                                                                 (LONG, t + S + m, t + self.I)]
        if S > 0:
            self.short_slices += 1
        self.slice_idx = -1

    def next_slice(self, t: float) -> float:
        """End the current slice (suspending its running jobs) and begin the next; returns its end."""
        self.advance(t)
        if self.cur >= 0:
            self.end_slice(t)
        self.slice_idx += 1
        if self.slice_idx >= len(self.slices):
            self.new_interval(t)
            self.slice_idx = 0
        c, a, b = self.slices[self.slice_idx]
        self.cur = c
        self.slice_end = b
        self.slice_v0 = self.vnow[c]
        self.wake_at = math.inf
        for j in self.active[c]:
            j.state = RUNNING
            j.run_t0 = t
            if j.rem <= b - t + EPS:
                self.sim.push(min(t + j.rem, b), EV_DONE, self.idx, j)  # never after the slice end
        self.dispatch()
        return b

    def end_slice(self, t: float) -> None:
        c = self.cur
        ov = self.p.overhead
        self.vnow[c] = self.slice_v0 + (t - self.slices[self.slice_idx][1])  # no drift
        for j in self.active[c]:
            if j.state != RUNNING:
                continue
            ran = t - j.run_t0
            if ran > EPS:
                j.pieces.append((j.run_t0, t))
            j.rem -= ran
            j.rem_est -= ran
            j.state = SUSPENDED
            j.rem += ov
            j.rem_est += ov
            j.preemptions += 1
        if self.foreign[c]:  # cannot happen: foreign jobs end within the slice by construction
            raise RuntimeError(f"cluster {self.idx}: foreign job still running at the end of a slice")

    # ---- jobs ---------------------------------------------------------------------------------

    def _take(self, c: int, n: int) -> list[int]:
        fr = self.free[c]
        got = fr[:n]
        del fr[:n]
        return got

    def _give(self, c: int, procs: list[int]) -> None:
        fr = self.free[c]
        fr.extend(procs)
        fr.sort()

    def start(self, j: Job, layer: int) -> None:
        t = self.now
        j.layer = layer
        j.procs = self._take(layer, j.n)
        j.state = RUNNING
        j.run_t0 = t
        j.start = t
        j.cluster = self.idx
        if layer == j.cls:
            self.active[layer].append(j)
            if j.rem <= self.slice_end - t + EPS:
                self.sim.push(min(t + j.rem, self.slice_end), EV_DONE, self.idx, j)
        else:
            j.foreign = True
            self.foreign[layer].append(j)
            self.sim.push(min(t + j.rem, self.slice_end), EV_DONE, self.idx, j)

    def complete(self, j: Job) -> None:
        t = self.now
        if t - j.run_t0 > EPS:
            j.pieces.append((j.run_t0, t))
        j.rem = 0.0
        j.state = DONE
        j.end = t
        c = j.layer
        self._give(c, j.procs)
        early = j.vend - self.vnow[c] > EPS
        if j.foreign:
            self.foreign[c].remove(j)
        else:
            self.active[c].remove(j)
        if early:
            self.rebuild(c)  # processors freed before the plan expected: compress
        self.sim.job_done(j)

    def dispatch(self) -> None:
        """Start what the plan of the active class says is due, then cross-slice backfill."""
        if self.in_dispatch:
            return
        self.in_dispatch = True
        try:
            self._dispatch()
        finally:
            self.in_dispatch = False

    def _dispatch(self) -> None:
        c = self.cur
        t = self.now
        vn = self.vnow[c]
        q = self.queue[c]
        replan_late = self.p.late_task == "replan"
        for attempt in range(3):
            mismatch = False
            late = []
            i = 0
            while i < len(q):
                j = q[i]
                if j.vstart > vn + EPS:
                    i += 1
                    continue
                if j.preds and not self.sim.deps_met(j, t):
                    if all(pj.state == DONE for pj, _ in j.preds):
                        # only the communication is left: it waits in its slot
                        i += 1
                        continue
                    if replan_late:  # it keeps its queue position: the class is re-planned below
                        late.append(j)
                        i += 1
                        continue
                    # a reservation due before its predecessors have finished: it gives up
                    # its slot for its earliest fit after their predicted finish (+ comm),
                    # around everybody else's slots (it keeps its place in the queue)
                    self.plan[c].release(j.vstart, j.vend, j.n)
                    self.place(j)
                    if j.vstart <= vn + EPS:  # predicted finish already passed: wait for it
                        self.plan[c].release(j.vstart, j.vend, j.n)
                        j.vstart, j.vend = vn + 1.0, vn + 1.0 + self.dur(c, vn + 1.0, j.rem_est)
                        self.plan[c].alloc(j.vstart, j.vend, j.n)
                    i += 1
                    continue
                if len(self.free[c]) < j.n:
                    mismatch = True  # the plan no longer matches the layer: re-plan
                    i += 1
                    continue
                q.pop(i)
                if abs(j.vstart - vn) > EPS:  # started off its planned slot (a late task)
                    plan = self.plan[c]
                    plan.release(j.vstart, j.vend, j.n)
                    j.vstart, j.vend = vn, vn + self.dur(c, vn, j.rem_est)
                    plan.alloc(j.vstart, j.vend, j.n)
                    if plan.min_free(j.vstart, j.vend) < 0:
                        mismatch = True  # it overlaps later slots: they move
                self.start(j, c)
            if late:
                self.replan(c, tuple(late))  # the late tasks now start after their predecessors
                if attempt < 2:
                    continue  # start what the re-plan made due
                break
            if not mismatch or attempt == 2:
                break
            self.rebuild(c)
        if self.p.cross_slice_backfill:
            self._cross_backfill(c, t, vn)
        self._schedule_wake(c, t, vn)

    def _cross_backfill(self, c: int, t: float, vn: float) -> None:
        left = self.slice_end - t
        plan = self.plan[c]
        shortest = (0.0, self.p.short_limit, self.p.medium_limit)  # least estimate of each class
        for d in (SHORT, MEDIUM, LONG):
            if d == c or shortest[d] > left + EPS or not self.queue[d]:
                continue
            q = self.queue[d]
            moved = False
            i = 0
            while i < len(q):
                j = q[i]
                nf = len(self.free[c])
                if nf == 0:
                    break
                if (j.est <= left + EPS and j.n <= nf
                        and (j.lbv <= self.vnow[d] + EPS or self.t_of(d, j.lbv) <= t + EPS)
                        and (not j.preds or self.sim.deps_met(j, t))
                        and plan.min_free(vn, vn + j.est) >= j.n):
                    q.pop(i)
                    self.plan[d].release(j.vstart, j.vend, j.n)
                    plan.alloc(vn, vn + j.est, j.n)
                    j.vstart, j.vend = vn, vn + j.est
                    self.start(j, c)
                    moved = True
                    continue
                i += 1
            if moved:
                self.rebuild(d)

    def _schedule_wake(self, c: int, t: float, vn: float) -> None:
        nxt = math.inf
        for j in self.queue[c]:
            if vn + EPS < j.vstart < nxt:
                nxt = j.vstart
        if nxt < math.inf:
            w = t + (nxt - vn)
            if w < self.slice_end - EPS and w < self.wake_at - EPS:
                self.wake_at = w
                self.sim.push(w, EV_WAKE, self.idx, None)


class Simulation:
    """The event loop over clusters, local jobs and workflows."""

    def __init__(self, p: CaoParams):
        self.p = p
        self.clusters = [Cluster(i, p, self) for i in range(p.clusters)]
        self.events: list = []
        self.evseq = 0
        self.jobs: list[Job] = []
        self.workflows: list[dict] = []
        self.unfinished = 0
        self.now = 0.0
        self.begun = False
        #: on_step(fraction of jobs finished, now), every STEP_EVENTS events (progress of a long run)
        self.on_step: Callable[[float, float], None] | None = None

    def push(self, t: float, kind: int, a, b) -> None:
        self.evseq += 1
        heapq.heappush(self.events, (t, kind, self.evseq, a, b))

    # ---- dependencies --------------------------------------------------------------------------

    def deps_met(self, j: Job, t: float) -> bool:
        r = -math.inf
        for pj, comm in j.preds:
            if pj.state != DONE:
                return False
            r = max(r, pj.end + comm)
        return r <= t + EPS

    def predicted_end(self, j: Job) -> float:
        if j.state == DONE:
            return j.end
        cl = self.clusters[j.cluster]
        return cl.t_of(j.layer, j.vend, end=True)

    def dep_time(self, j: Job, predicted: bool) -> float:
        d = -math.inf
        for pj, comm in j.preds:
            if pj.state == DONE:
                d = max(d, pj.end + comm)
            elif predicted:
                d = max(d, self.predicted_end(pj) + comm)
            else:
                return math.inf
        return d

    def job_done(self, j: Job) -> None:
        self.unfinished -= 1
        for s in j.succs:
            if s.state != QUEUED or not all(pj.state == DONE for pj, _ in s.preds):
                continue
            s.ready = self.dep_time(s, predicted=False)
            cl = self.clusters[s.cluster]
            cl.advance(self.now)
            if self.p.propagation:
                # Algorithm 2: the successor's EST becomes its predecessors' finish + comm
                s.lb = s.ready
                s.lbv = cl.v_of(s.cls, s.ready)
                s.est_frame = s.ready
                if s in cl.queue[s.cls]:
                    if self.p.propagation_replan == "queue":
                        cl.replan(s.cls)  # it takes the place its queue position gives it
                    else:
                        cl.rebuild(s.cls)  # it may slide earlier into holes (never later than its slot)
            if s.ready > self.now + EPS:
                self.push(s.ready, EV_WAKE, cl.idx, None)
            elif cl is not self.clusters[j.cluster]:
                cl.dispatch()

    # ---- RARS-HEFT ----------------------------------------------------------------------------

    def schedule_workflow(self, w: int) -> None:
        """Reserve every task of workflow ``w`` (RARS-HEFT) at its arrival ``self.now``."""
        p = self.p
        now = self.now
        tasks: list[Job] = self.workflows[w]["tasks"]
        for cl in self.clusters:
            cl.advance(now)
        for idx in heft_order(tasks):
            t = tasks[idx]
            st_dep = now if not t.preds else max(pj.lft + comm for pj, comm in t.preds)  # eq. (6)
            c = t.cls
            nbp = p.nbp_long if c == LONG else (p.nbp_medium if c == MEDIUM else 0.0)
            best = None
            for cl in self.clusters:
                st, prt, s, e = cl.predict(c, t.n, t.est, st_dep)
                est, lft = relaxed_frame(st, prt, t.est, now, nbp, p)
                if best is None or lft < best[0] - EPS:
                    best = (lft, est, st, cl)
            lft, est, st, cl = best
            t.lft, t.est_frame, t.st, t.lb = lft, est, st, est
            t.cluster = cl.idx
            cl.submit(t)
        for cl in self.clusters:
            cl.dispatch()

    # ---- loop ---------------------------------------------------------------------------------

    def run(self, until: float = math.inf) -> bool:
        """Handle the events, in order, until none is left (returns True) or the next is at or
        after ``until`` (returns False; call again to go on: the live Gantt advances slice by slice)."""
        ev = self.events
        if not self.begun:
            self.begun = True
            for cl in self.clusters:
                self.push(0.0, EV_SLICE, cl.idx, None)
        on_step, total, until_step = self.on_step, len(self.jobs), STEP_EVENTS
        while ev and self.unfinished > 0:
            if ev[0][0] >= until:
                return False
            t, kind, _, a, b = heapq.heappop(ev)
            self.now = t
            if on_step is not None:
                until_step -= 1
                if not until_step:
                    until_step = STEP_EVENTS
                    on_step(1.0 - self.unfinished / total, t)
            if kind == EV_DONE:
                cl = self.clusters[a]
                cl.advance(t)
                if b.state == DONE:
                    continue
                cl.complete(b)
                cl.dispatch()
            elif kind == EV_SLICE:
                cl = self.clusters[a]
                end = cl.next_slice(t)
                self.push(end, EV_SLICE, a, None)
            elif kind == EV_ARRIVE:
                cl = self.clusters[a]
                cl.advance(t)
                cl.submit(b)
                cl.dispatch()
            elif kind == EV_GRID:
                self.schedule_workflow(a)
            else:
                cl = self.clusters[a]
                cl.advance(t)
                if cl.wake_at <= t + EPS:
                    cl.wake_at = math.inf
                cl.dispatch()
        for cl in self.clusters:
            cl.advance(self.now)
        return True


def simulate(jobs: JobTable, workflows: list[Workflow] | None = None, params: CaoParams | None = None,
             on_step: Callable[[float, float], None] | None = None,
             drive: Callable[[Simulation], None] | None = None) -> CaoResult:
    """Simulate Cao's system: what simengine.cao.simulate.simulate does, with this loop
    (``drive`` gets the :class:`Simulation`)."""
    p = params or CaoParams()
    workflows = workflows or []
    sim = Simulation(p)
    sim.on_step = on_step
    P = p.processors
    cl = _clusters_for(jobs, p) if len(jobs) else np.zeros(0, np.int64)
    for k in range(len(jobs)):
        n = int(jobs.processors[k])
        if not 1 <= n <= P:
            raise ValueError(f"jobs.processors[{k}]: {n} is not in 1..{P}")
        rt = float(jobs.runtime[k])
        if not rt >= 0:
            raise ValueError(f"jobs.runtime[{k}]: must not be negative")
        est = max(float(jobs.estimate[k]), rt)
        j = Job(len(sim.jobs), int(jobs.job_id[k]), p.job_class(est), n, rt, est, float(jobs.submit[k]), int(cl[k]))
        sim.jobs.append(j)
        sim.push(j.submit, EV_ARRIVE, j.cluster, j)
    for w, wf in enumerate(workflows):
        ests = wf.estimate or wf.runtime
        tasks = []
        for i, (n, rt, est) in enumerate(zip(wf.processors, wf.runtime, ests)):
            n = int(n)
            if not 1 <= n <= P:
                raise ValueError(f"workflows[{w}].processors[{i}]: {n} is not in 1..{P}")
            est = max(float(est), float(rt))
            j = Job(len(sim.jobs), int(wf.job_id), p.job_class(est), n, float(rt), est, float(wf.submit), -1)
            j.wf, j.task = w, i
            j.preds, j.succs = [], []
            tasks.append(j)
            sim.jobs.append(j)
        for a, b, comm in wf.edges:
            if not (0 <= a < len(tasks) and 0 <= b < len(tasks)) or a == b:
                raise ValueError(f"workflows[{w}].edges: ({a}, {b}) does not join two tasks")
            tasks[b].preds.append((tasks[a], float(comm)))
            tasks[a].succs.append(tasks[b])
        sim.workflows.append({"tasks": tasks, "submit": float(wf.submit), "job_id": int(wf.job_id)})
        sim.push(float(wf.submit), EV_GRID, w, None)
    sim.unfinished = len(sim.jobs)
    if sim.jobs:
        if drive is not None:
            drive(sim)
        else:
            sim.run()
    return _collect(sim, p)


def _collect(sim: Simulation, p: CaoParams) -> CaoResult:
    J = sim.jobs
    n = len(J)
    f = lambda attr: np.array([getattr(j, attr) for j in J], dtype=np.float64)  # noqa: E731
    rows = {
        "job_id": np.array([j.job_id for j in J], dtype=np.int64),
        "kind": np.array([TASK if j.wf >= 0 else LOCAL for j in J], dtype=np.int8),
        "workflow": np.array([j.wf for j in J], dtype=np.int64),
        "task": np.array([j.task for j in J], dtype=np.int64),
        "cls": np.array([j.cls for j in J], dtype=np.int8),
        "cluster": np.array([j.cluster for j in J], dtype=np.int64),
        "processors": np.array([j.n for j in J], dtype=np.int64),
        "submit": f("ready"),
        "start": f("start"),
        "end": f("end"),
        "runtime": f("runtime"),
        "estimate": f("est"),
        "preemptions": np.array([j.preemptions for j in J], dtype=np.int64),
        "foreign": np.array([j.foreign for j in J], dtype=bool),
        "est": f("est_frame"),
        "st": f("st"),
        "lft": f("lft"),
    }
    rows["rr"] = (rows["end"] - rows["submit"]) / np.maximum(rows["runtime"], 1.0)
    W = sim.workflows
    wf = {"job_id": np.array([w["job_id"] for w in W], dtype=np.int64),
          "submit": np.array([w["submit"] for w in W], dtype=np.float64),
          "first_start": np.array([min(t.start for t in w["tasks"]) for w in W], dtype=np.float64),
          "last_end": np.array([max(t.end for t in w["tasks"]) for w in W], dtype=np.float64)}
    wf["makespan"] = wf["last_end"] - wf["first_start"]
    submits = np.array([j.submit for j in J]) if n else np.zeros(1)
    w0, w1 = float(submits.min()), float(submits.max())
    end_all = float(np.nanmax(rows["end"])) if n else 0.0
    busy = np.zeros(p.clusters)
    busy_all = np.zeros(p.clusters)
    for j in J:
        for a, b in j.pieces:
            busy_all[j.cluster] += j.n * (b - a)
            lo, hi = max(a, w0), min(b, w1)
            if hi > lo:
                busy[j.cluster] += j.n * (hi - lo)
    cap = p.processors
    util = busy / (cap * (w1 - w0)) if w1 > w0 else np.full(p.clusters, math.nan)
    util_all = busy_all / (cap * (end_all - w0)) if end_all > w0 else np.full(p.clusters, math.nan)
    res = CaoResult(p, rows, wf, util, util_all, (w0, w1), [list(j.pieces) for j in J], [j.procs for j in J],
                    [c.short_slices for c in sim.clusters], sim.evseq)
    res.metrics = metrics(res)
    return res


def segments(result, t0: float = -math.inf, t1: float = math.inf) -> dict:
    """CaoResult.segments as it was written, job by job in Python (the check of the
    vectorised one)."""
    out = {c: [] for c in SEGMENT_COLUMNS}

    def emit(cl, procs, a, b, job, comp, kind):
        if b < t0 or a > t1 or b - a <= 0:
            return
        for first, count in blocks(procs):
            out["cluster"].append(cl)
            out["first_processor"].append(first)
            out["processors"].append(count)
            out["t0"].append(a)
            out["t1"].append(b)
            out["job"].append(job)
            out["component"].append(comp)
            out["kind"].append(kind)

    J = result.jobs
    for r in range(len(J["job_id"])):
        procs = result.procs[r]
        if procs is None:
            continue
        cl, job = int(J["cluster"][r]), int(J["job_id"][r])
        comp = int(J["task"][r]) if J["kind"][r] == TASK else 0
        if J["kind"][r] == TASK:
            emit(cl, procs, float(J["est"][r]), float(J["lft"][r]), job, comp, KIND_RESERVATION)
        prev = None
        for a, b in result.pieces[r]:
            if prev is not None and a > prev:
                emit(cl, procs, prev, a, job, comp, KIND_SUSPENDED)
            emit(cl, procs, a, b, job, comp, KIND_RUN)
            prev = b
    return {c: np.asarray(v, dtype=np.float64 if c in ("t0", "t1") else np.int64) for c, v in out.items()}
