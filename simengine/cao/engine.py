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

import math
from dataclasses import dataclass, fields

#: times closer than this are the same instant (s)
EPS = 1e-6

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


def preemptions_from_slice_start(w: float, L: float, ov: float) -> int:
    """Preemptions of a job with ``w`` s of work that starts at a slice start, slices >= ``L``."""
    if w <= L + EPS:
        return 0
    return math.ceil((w - L) / (L - ov) - EPS)


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


def heft_order(tasks: list) -> list[int]:
    """Task indices by decreasing HEFT upward rank, ties by index."""
    pos = {id(t): i for i, t in enumerate(tasks)}
    edges = [(pos[id(pj)], i, comm) for i, t in enumerate(tasks) for pj, comm in t.preds]
    rank = heft_ranks([t.est for t in tasks], edges)
    return sorted(range(len(tasks)), key=lambda i: (-rank[i], i))
