"""Cao's system (MODELS.md §6, seed 001): SCOJO-PECT clusters under a RARS-HEFT grid scheduler.

One discrete-event loop drives ``clusters`` SCOJO-PECT local schedulers and, when workflows
are given, the grid scheduler that places their tasks with relaxed advance reservations.
Every rule the thesis leaves open is a :class:`CaoParams` field and is described in
docs/cao.md; the short version:

* **Slices.** Time is cut into ``interval`` (3600 s) intervals starting at t = 0. At an
  interval start a short slice is opened only if short jobs wait (queued or suspended); its
  length is the largest remaining estimate among them, capped at ``short_slice_max``
  (600 s). The rest of the interval is split ``medium_share`` (30 %) medium, then long.
* **Layers and virtual time.** Each class owns a layer of ``processors`` processors that
  only runs during the class's slices; the class's virtual clock advances only then. Jobs of
  the class are planned in that virtual time by conservative backfilling (FCFS order, each
  job at its earliest fit given every job before it), so a suspended job keeps one
  contiguous virtual interval and its processors. A preemption adds ``overhead`` (60 s) to
  the job's remaining time; planned durations include the preemptions the nominal calendar
  predicts (future intervals assumed without a short slice).
* **Cross-slice backfilling.** During a slice of class c, a waiting job of another class may
  run in layer c if it will finish before the slice ends (by its estimate) and the
  processors are free in layer c's plan for that whole time, so it delays no job of class c
  and needs no preemption. It leaves its own class's plan, which is then compressed.
* **Compression.** A class's plan is rebuilt (every queued job re-placed at its earliest
  fit, in queue order) when a job ends before its planned end, when a queued job leaves the
  class (cross-slice backfill), when the calendar changes a slice length, and when a start
  conflicts with the plan.
* **RARS-HEFT.** Workflow tasks are placed at grid-job arrival in HEFT upward-rank order;
  for each cluster the task's start is predicted by its class plan from ST = max over
  predecessors of LFT + comm (eq. 6), EST by eq. (5) clamped >= now, LFT by eq. (4); the
  cluster with the smallest LFT gets the reservation. The task is queued there at its
  predicted start with the frame [EST, LFT]; compressions may slide it earlier, never
  before EST nor before its predecessors' (predicted) finish + comm. A task whose planned
  start comes before its predecessors have finished slips to its earliest fit after their
  predicted finish (``late_task="behind"``) or keeps its queue position while the class is
  planned again in queue order (``"replan"``, the default). Reservations are best effort:
  never cancelled, LFT is not enforced.
* **Propagation** (when on): when a task's last predecessor finishes, its EST becomes
  max(predecessor finish + comm) and its class is planned again from scratch in queue order
  (``propagation_replan="queue"``, the default: it takes the place its queue position gives
  it, jobs queued after it may move later) or only compressed (``"gaps"``: it moves into holes).
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, fields
from typing import Callable


from simengine.cao.profile import EPS, Profile

SHORT, MEDIUM, LONG = 0, 1, 2
CLASS_NAMES = ("short", "medium", "long")

QUEUED, RUNNING, SUSPENDED, DONE = 0, 1, 2, 3

# event kinds, in the order they are handled at one instant
EV_DONE, EV_SLICE, EV_ARRIVE, EV_GRID, EV_WAKE = range(5)
#: events between two on_step calls (a few milliseconds of simulation)
STEP_EVENTS = 4096


@dataclass(frozen=True)
class CaoParams:
    """Parameters of Cao's system; the defaults are the thesis's (Tables 4, §4.4.5, Figures 22-27).

    Parameters
    ----------
    clusters, processors : int
        Grid of ``clusters`` clusters of ``processors`` processors (4 x 128).
    interval : float
        Length of one round of slices, s (3600).
    short_limit, medium_limit : float
        Class limits on the (estimated) runtime: short < 600 s, medium < 3 h, long otherwise.
    short_slice_max : float
        Cap on the dynamic short slice (600 s).
    medium_share : float
        Medium slice's share of the interval after the short slice (0.3; long gets the rest).
    overhead : float
        Added to a job's remaining time at each preemption (suspend at a slice end), s (60).
    cross_slice_backfill : bool
        Let waiting jobs of other classes backfill into a slice when that delays nobody.
    slpa, slpb, maf : float
        Slack portions ahead (eq. 5) and behind (eq. 4) and the move-ahead factor (1, 0, 4).
    nbp_medium, nbp_long : float
        Non-type backfilling probability of medium (0.025) and long (0.04) tasks, eq. (5).
    propagation : bool
        Propagation heuristics (Algorithm 2) on task completion.
    propagation_replan : {"queue", "gaps"}
        How the class is re-planned when propagation lowers a queued task's EST (the thesis:
        "When there are enough resources, this task will be rescheduled"). ``"queue"``: the
        class's queue is planned again from scratch in queue order, each job at its earliest
        fit from its bound, so the task takes the place its queue position gives it and jobs
        queued after it may move later (never jobs queued before it). ``"gaps"``: the ordinary
        compression, every job kept in its slot and moved earlier only into holes. No effect
        without ``propagation``.
    late_task : {"behind", "replan"}
        A task whose slot comes before its predecessors have finished: ``"behind"`` gives up
        its slot for its earliest fit after their predicted finish around every other slot;
        ``"replan"`` keeps its queue position and the class is planned again in queue order
        (as ``propagation_replan="queue"``), with the task from its predecessors' predicted finish.
    distribution : {"round_robin", "random"}
        How local jobs without a cluster are spread over the clusters: job i to cluster
        i mod clusters in submit order, or uniformly at random (``seed``).
    seed : int
        Seed of the random distribution (only used with ``distribution="random"``).
    """

    clusters: int = 4
    processors: int = 128
    interval: float = 3600.0
    short_limit: float = 600.0
    medium_limit: float = 3 * 3600.0
    short_slice_max: float = 600.0
    medium_share: float = 0.3
    overhead: float = 60.0
    cross_slice_backfill: bool = True
    slpa: float = 1.0
    slpb: float = 0.0
    maf: float = 4.0
    nbp_medium: float = 0.025
    nbp_long: float = 0.04
    propagation: bool = False
    propagation_replan: str = "queue"
    late_task: str = "replan"
    distribution: str = "round_robin"
    seed: int = 0

    def __post_init__(self) -> None:
        problems = []
        if self.clusters < 1:
            problems.append(("clusters", "must be at least 1"))
        if self.processors < 1:
            problems.append(("processors", "must be at least 1"))
        if not self.interval > 0:
            problems.append(("interval", "must be positive"))
        if not 0 < self.short_limit <= self.medium_limit:
            problems.append(("short_limit", "must be positive and at most medium_limit"))
        if not 0 <= self.short_slice_max < self.interval:
            problems.append(("short_slice_max", "must be in [0, interval)"))
        if not 0 < self.medium_share < 1:
            problems.append(("medium_share", "must be strictly between 0 and 1"))
        if self.overhead < 0:
            problems.append(("overhead", "must not be negative"))
        else:
            shortest = min(self.medium_share, 1 - self.medium_share) * (self.interval - self.short_slice_max)
            if self.overhead >= shortest:
                problems.append(("overhead", f"must be shorter than the shortest slice ({shortest:g} s)"))
        for name in ("slpa", "slpb", "maf", "nbp_medium", "nbp_long"):
            if getattr(self, name) < 0:
                problems.append((name, "must not be negative"))
        if self.propagation_replan not in ("queue", "gaps"):
            problems.append(("propagation_replan", f"must be queue or gaps, not {self.propagation_replan!r}"))
        if self.late_task not in ("behind", "replan"):
            problems.append(("late_task", f"must be behind or replan, not {self.late_task!r}"))
        if self.distribution not in ("round_robin", "random"):
            problems.append(("distribution", "must be round_robin or random"))
        if problems:
            raise ValueError("; ".join(f"cao.{p}: {why}" for p, why in problems))

    def replace(self, **kw) -> "CaoParams":
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d.update(kw)
        return CaoParams(**d)

    def job_class(self, estimate: float) -> int:
        if estimate < self.short_limit:
            return SHORT
        return MEDIUM if estimate < self.medium_limit else LONG


@dataclass
class Workflow:
    """A workflow grid job: tasks with processors and runtimes, edges (pred, succ, comm)."""

    submit: float
    processors: list[int]
    runtime: list[float]
    edges: list[tuple[int, int, float]]
    job_id: int = 0
    estimate: list[float] | None = None


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


def preemptions_from_slice_start(w: float, L: float, ov: float) -> int:
    """Preemptions of a job with ``w`` s of work that starts at a slice start, slices >= ``L``."""
    if w <= L + EPS:
        return 0
    return math.ceil((w - L) / (L - ov) - EPS)


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


def relaxed_frame(st: float, prt: float, exc: float, now: float, nbp: float, p: CaoParams) -> tuple[float, float]:
    """A task's relaxed reservation frame (EST, LFT) from its predicted start and finish.

    EST = ST - EXC * SLPA - MAF * NBP * (ST - now), clamped to >= now (eq. 5);
    LFT = PRT + EXC * SLPB (eq. 4). ST itself is the cluster's predicted start from
    max over predecessors of LFT + comm (eq. 6).
    """
    est = st - exc * p.slpa - p.maf * nbp * (st - now)
    return max(est, now), prt + exc * p.slpb


def heft_ranks(est: list[float], edges: list[tuple[int, int, float]]) -> list[float]:
    """HEFT upward ranks (eq. 3) on identical clusters: rank(t) = W(t) + max over successors
    of (comm + rank(succ)); W(t) is the task's estimate (eq. 1), the mean comm is the edge's (eq. 2)."""
    succ: list[list[tuple[int, float]]] = [[] for _ in est]
    for a, b, comm in edges:
        succ[a].append((b, float(comm)))
    rank: list[float | None] = [None] * len(est)

    def r(i: int) -> float:
        if rank[i] is None:
            rank[i] = float(est[i]) + max((comm + r(b) for b, comm in succ[i]), default=0.0)
        return rank[i]

    return [r(i) for i in range(len(est))]


def heft_order(tasks: list[Job]) -> list[int]:
    """Task indices by decreasing HEFT upward rank, ties by index."""
    pos = {id(t): i for i, t in enumerate(tasks)}
    edges = [(pos[id(pj)], i, comm) for i, t in enumerate(tasks) for pj, comm in t.preds]
    rank = heft_ranks([t.est for t in tasks], edges)
    return sorted(range(len(tasks)), key=lambda i: (-rank[i], i))
