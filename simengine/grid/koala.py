"""KOALA: placement queues, placement policies and the Incremental Claiming Policy.

Mohamed's thesis (seed 004, chapters 4-5), as MODELS.md §4 condenses and decides it.
A plain-Python event loop over one heap: the thesis's experiments are 200 KOALA jobs
over a few hours, so speed is not an issue (docs/grid.md, KOALA).

The model, per instant (ties are taken in this order): local and KOALA job ends, KOALA
jobs starting at their JST, claiming tries, the placement scan, KOALA arrivals, local
arrivals, the background band controller; then every cluster's FCFS local queue.

* Clusters hold ``local`` processors (local and background jobs), ``held`` processors
  (claimed or running KOALA components) and KOALA's bookkeeping of ``placed`` processors
  (placed, not yet claimed). KOALA places on P - local - held - placed; the local
  scheduler and claiming see P - local - held, so local jobs may take placed processors:
  that is what makes claims fail.
* Placement: four queues (0 super-high, 1 high, 2 low, 3 super-low), one queue scanned
  per scan tick in the weighted round-robin of §4.2 (empty queues skipped), head to tail
  with unlimited overtaking; promotion one level up after ``promote_after`` tries
  (high and low only); failure after ``max_place_tries``.
* Claiming: JST = JPT + FTT; the scenario's claiming policy (CLAIMING, simengine.grid.claiming)
  decides when to try and what to claim, this loop keeps the books. The default, ``icp``:
  JCT_0 = JPT + L FTT, JCT_{n+1} = JCT_n + L (JST - JCT_n);
  when JST - JCT_{n+1} < ``min_gap`` the job goes back to placement with L - ``l_step``
  (floor ``l_floor``); claims use the ICP (Algorithm 2) with threshold T and preemption of
  lower-priority KOALA jobs (newest JST first, back to their placement queue).
* Soft errors (§3.2.2, §5.2.4; :class:`SoftErrors`): when a job starts, each component fails with
  its cluster's probability; one failed component fails the whole job, which gives its processors
  back and returns to its placement queue (its failures counted). KOALA counts each cluster's
  consecutive soft errors and stops placing on a cluster once they reach ``exclude_after``.
* Cluster failures (``outages``: (cluster, start, end), docs/failures.md): a cluster fails whole.
  Its local jobs are killed (requeued at the head of its queue, or lost: ``local_requeue``, per
  cluster or for all; the
  background band's are killed), every KOALA job with a component claimed there fails whole and
  returns to its placement queue (a running one counts a failure), and until the repair the
  cluster has no processor for placement, claiming or local jobs. At an instant: ends, repairs,
  failures, then the rest.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Callable

import numpy as np

from simengine.grid.claiming import DEFAULT_CLAIMING, ClaimingGrid, ClaimJob, Fail, Holder, Placement, Requeue, Retry, \
    claiming_policy
from simengine.grid.placement import best_site, place, placement_policy
from simengine.policy import PolicyError, policy_raised
from simengine.preemption import PreemptionMode, preemption_mode

__all__ = ["KoalaJob", "KoalaPolicy", "Band", "Files", "SoftErrors", "KoalaOutcome", "simulate_koala", "PRIORITIES"]

PRIORITIES = ("super-high", "high", "low", "super-low")

# event order within one instant
_END, _UP, _DOWN, _START, _CLAIM, _SCAN, _ARRIVE, _LOCAL, _BAND = range(9)


@dataclass
class KoalaJob:
    """One KOALA job. ``sizes``: component sizes (a flexible job: one entry, its total size);
    ``clusters``: per component a cluster index (fixed) or -1 (the scheduler chooses);
    ``priority``: 0 super-high .. 3 super-low; ``file_size`` in MB at ``file_sites``."""

    submit: float
    runtime: float
    sizes: list[int]
    clusters: list[int] | None = None
    priority: int = 1
    flexible: bool = False
    file_size: float = 0.0
    file_sites: list[int] = field(default_factory=list)


@dataclass
class Files:
    """File sites and bandwidths: ``site_cluster[F]`` is the cluster site F is located at (-1: none),
    ``bandwidth[F, E]`` MB/s from site F to cluster E; ``names`` for Close-to-Files' alphabetical pick."""

    site_cluster: list[int]
    bandwidth: np.ndarray
    names: list[str]

    def time(self, size: float, site: int, cluster: int) -> float:
        # (within a site too: the platform's intra-site bandwidth, MODELS.md §4; inf: at once)
        if size <= 0 or site < 0:
            return 0.0
        return float(size / self.bandwidth[site, cluster])


@dataclass
class Band:
    """The background-load band controller: every ``interval`` s, in every cluster whose local
    load is below ``low`` inject background jobs (sizes and runtimes from the samplers) on idle
    processors up to ``low`` (never beyond ``high``); above ``high`` kill background jobs,
    newest first, until it is at most ``high``."""

    low: float = 0.3
    high: float = 0.4
    interval: float = 60.0
    size: Callable[[], int] = lambda: 1
    runtime: Callable[[], float] = lambda: 600.0


@dataclass
class KoalaPolicy:
    placement: str = "worst-fit"        # a GRID_PLACEMENT entry (simengine.grid.placement)
    placement_params: dict = field(default_factory=dict)
    scan_interval: float = 60.0
    first_scan: float = 0.0
    weights: tuple = (1, 1, 1, 1, 1, 1)  # N_h, N_l, n1, n2, n3, n4
    promote_after: int | None = None    # P (None: never)
    max_place_tries: int | None = None  # None: unlimited
    L: float = 0.75
    l_step: float = 0.25
    l_floor: float = 0.0
    min_gap: float = 1.0
    T: float = 1.0
    #: what happens to a KOALA job the ICP preempts (simengine.preemption): none, kill or requeue
    preemption: PreemptionMode = field(default_factory=lambda: preemption_mode("requeue"))
    max_claim_tries: int | None = None
    claiming: str = DEFAULT_CLAIMING    # a CLAIMING entry (simengine.grid.claiming)
    claiming_params: dict = field(default_factory=dict)
    #: a cluster with this many consecutive soft errors is no longer placed on (None: never)
    exclude_after: int | None = None


@dataclass
class SoftErrors:
    """Soft errors of job components (thesis §3.2.2: misconfigured nodes, bugs of the local
    resource manager): ``probability[c]`` that a component fails when its job starts on cluster c;
    ``rng`` draws one uniform per component of every job start, in component order."""

    probability: np.ndarray
    rng: np.random.Generator


def wrr_sequence(weights) -> list[int]:
    """The queue scanned at each scan of one round of the weighted round-robin (§4.2)."""
    nh, nl, n1, n2, n3, n4 = weights
    return ([0] * n1 + [1] * n2) * nh + ([2] * n3 + [3] * n4) * nl


# ---- the simulation -------------------------------------------------------------------------------

@dataclass
class _K:
    """A KOALA job's state."""

    job: KoalaJob
    prio: int
    L: float
    state: str = "new"  # queued, claiming, claimed, running, done, failed
    epoch: int = 0
    place_tries: int = 0
    tries_since_promotion: int = 0
    claim_tries: int = 0
    placement_time: float = 0.0
    enqueued: float = math.nan
    placements: int = 0
    preempted: int = 0
    extra_run: float = 0.0  # requeue overhead added to the next run
    comps: list = field(default_factory=list)  # [size, cluster, site, ftt, claim time or nan]
    jpt: float = math.nan
    jct: float = math.nan
    jst: float = math.nan
    jst0: float = math.nan
    ftt: float = math.nan
    start: float = math.nan
    end: float = math.nan
    pgt: float = 0.0
    failures: int = 0  # starts that failed by a soft error (the job went back to placement)


@dataclass
class KoalaOutcome:
    """What happened. KOALA jobs in the order given; ``local`` rows are the local jobs given
    followed by the background jobs injected (``local_background``)."""

    jobs: list  # _K per KOALA job
    local_submit: np.ndarray
    local_start: np.ndarray
    local_end: np.ndarray
    local_size: np.ndarray
    local_cluster: np.ndarray
    local_runtime: np.ndarray
    local_state: np.ndarray  # 0 waiting, 1 running, 2 done, 3 killed
    local_background: np.ndarray
    holdings: list  # (cluster, t0, t1, size, owner, kind, holding): owner ("L", i) or ("K", j, comp);
    # kind run/claimed/killed; holding: the index in ``starts`` of the hold the record is part of
    transfers: list  # (cluster, t0, t1, size, j, comp)
    busy: np.ndarray  # per cluster: background+local, koala run, claimed-idle (PWT) processor-seconds
    t_end: float
    max_queue: int
    queue_trace: list = field(default_factory=list)  # (time, placement queue length)
    # every hold of processors, in the order it began: (cluster, t0, size, owner, transfer from);
    # a claimed component whose files were still coming shows them from ``transfer from`` to t0
    starts: list = field(default_factory=list)
    hold_end: list = field(default_factory=list)  # when each hold ended
    #: KOALA jobs that failed at arrival: their placement policy cannot place them even on the idle grid
    #: (or, once clusters were excluded, on the clusters left)
    unplaceable: list = field(default_factory=list)
    #: per cluster: its components' soft errors; and (cluster, time) of each cluster KOALA excluded
    soft_errors: np.ndarray | None = None
    excluded: list = field(default_factory=list)
    #: (cluster, start, end) of each time a cluster was down (overlapping outages merged; cut at t_end)
    down: list = field(default_factory=list)


def simulate_koala(processors, jobs: list[KoalaJob], policy: KoalaPolicy, files: Files | None = None,
                   local: tuple | None = None, band: Band | None = None, horizon: float = math.inf,
                   warmup: float = 0.0, soft_errors: SoftErrors | None = None, outages: list | None = None,
                   local_requeue: bool = True) -> KoalaOutcome:
    """Simulate KOALA jobs over clusters of ``processors``; ``local`` = (submit, runtime, size,
    cluster) arrays of local jobs; ``outages``: (cluster, start, end) of cluster failures. Runs
    until every KOALA job is done or failed (or ``horizon``)."""
    run = KoalaRun(processors, jobs, policy, files, local, band, horizon, warmup, soft_errors, outages,
                   local_requeue)
    run.advance(math.inf)
    return run.outcome


class KoalaRun:
    """A replication simulated in slices of simulated time (the live Gantt): after
    ``advance(T)`` every event before T has been handled; ``view`` shows the holds begun
    (``starts``) and when they ended (``hold_end``), the records of the ended ones
    (``holdings``), the KOALA jobs' states, the local jobs' runtimes and the local queues (``queues``).
    ``outcome`` is set once the replication is over."""

    def __init__(self, *args):
        self.until = [math.inf]
        self.view: dict = {}
        self.outcome: KoalaOutcome | None = None
        self._steps = _koala_steps(*args, until=self.until, view=self.view)

    def advance(self, until: float) -> bool:
        """Handle every event before ``until``; True once the replication is over."""
        if self.outcome is not None:
            return True
        self.until[0] = until
        try:
            next(self._steps)
        except StopIteration as stop:
            self.outcome = stop.value
        return self.outcome is not None


def _koala_steps(processors, jobs, policy, files, local, band, horizon, warmup, soft=None, outages=None,
                 local_requeue=True, *, until, view):
    """The event loop of :func:`simulate_koala`, a generator that pauses (yields) before an
    event at or after ``until[0]`` and returns the KoalaOutcome."""
    P = np.asarray(processors, np.int64)
    C = len(P)
    cap = P.copy()  # processors up (0 while a cluster is down)
    outages = list(outages or [])
    ndown = np.zeros(C, np.int64)  # outages in progress per cluster
    down_hold = [-1] * C  # the hold of a cluster down
    down_at: list = []  # (cluster, start, end) of each time a cluster was down
    loc = np.zeros(C, np.int64)
    held = np.zeros(C, np.int64)
    placed = np.zeros(C, np.int64)
    busy = np.zeros((C, 3))
    if local is None:
        local = (np.zeros(0), np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64))
    l_sub, l_rt, l_size, l_cl = (list(map(float, local[0])), list(map(float, local[1])),
                                 list(map(int, local[2])), list(map(int, local[3])))
    n_given = len(l_sub)
    l_start = [math.nan] * n_given
    l_end = [math.nan] * n_given
    l_state = [0] * n_given
    l_bg = [False] * n_given
    l_hold = [-1] * n_given  # each local job's hold (index into starts)
    starts: list = []
    hold_end: list = []  # when each hold ended (NaN: held)
    queues_local: list[list[int]] = [[] for _ in range(C)]
    running_local: list[list[int]] = [[] for _ in range(C)]  # in start order
    placer = placement_policy(policy.placement, policy.placement_params, P, files)
    # a second instance (its state apart) tells at arrival whether a job fits even the idle grid
    probe = placement_policy(policy.placement, policy.placement_params, P, files)
    unplaceable: list[int] = []
    K = [_K(j, j.priority, policy.L) for j in jobs]
    pq: list[list[int]] = [[], [], [], []]
    holdings: list = []
    transfers: list = []
    heap: list = []
    seq = [0]
    wrr = wrr_sequence(policy.weights)
    wrr_pos = [0]
    undecided = [len(K)]
    max_q = [0]
    qtrace: list = []
    excluded = np.zeros(C, bool)  # clusters KOALA no longer places on (soft errors)
    consecutive = np.zeros(C, np.int64)  # each cluster's soft errors since its last good component
    cluster_errors = np.zeros(C, np.int64)
    excluded_at: list = []

    def push(t, kind, payload):
        seq[0] += 1
        heapq.heappush(heap, (t, kind, seq[0], payload))

    def account(c, t0, t1, size, col):
        a, b = max(t0, warmup), t1
        if b > a:
            busy[c, col] += size * (b - a)

    for i in range(n_given):
        push(l_sub[i], _LOCAL, i)
    for j, k in enumerate(K):
        push(k.job.submit, _ARRIVE, j)
    if K:
        push(policy.first_scan, _SCAN, None)
    if band is not None:
        push(0.0, _BAND, None)
    for k, (c, a, b) in enumerate(outages):
        push(a, _DOWN, k)
        push(b, _UP, k)

    def qlen():
        return sum(len(q) for q in pq)

    def enqueue(j, t):
        k = K[j]
        if excluded.any() and place(k.job, usable(), probe, files) is None:
            fail_unplaceable(j)  # back from a failure or a preemption, it fits only where KOALA left
            return
        k.state, k.enqueued = "queued", t
        pq[k.prio].append(j)
        max_q[0] = max(max_q[0], qlen())

    def begin_hold(c, t, size, owner, transfer_from=math.nan) -> int:
        starts.append((c, t, size, owner, transfer_from))
        hold_end.append(math.nan)
        return len(starts) - 1

    def start_local(i, t):
        c = l_cl[i]
        loc[c] += l_size[i]
        l_start[i], l_state[i] = t, 1
        l_hold[i] = begin_hold(c, t, l_size[i], ("L", i))
        running_local[c].append(i)
        push(t + l_rt[i], _END, ("L", i))

    def dispatch(t):
        for c in range(C):
            q = queues_local[c]
            while q and cap[c] - loc[c] - held[c] >= l_size[q[0]]:
                start_local(q.pop(0), t)

    def release_placed(k):
        for comp in k.comps:
            if math.isnan(comp[4]):
                placed[comp[1]] -= comp[0]

    def abort(j, t, kill: bool):
        """Give back a KOALA job's processors (claimed components, and the run when ``kill``)."""
        k = K[j]
        for ci, comp in enumerate(k.comps):
            s, c, ct = comp[0], comp[1], comp[4]
            if math.isnan(ct):
                placed[c] -= s
                continue
            held[c] -= s
            hold_end[comp[5]] = t
            to = min(t, k.jst) if not math.isnan(k.jst) else t
            if to > ct:
                holdings.append((c, ct, to, s, ("K", j, ci), "claimed", comp[5]))
                account(c, ct, to, s, 2)
            if kill and t > k.jst:
                holdings.append((c, k.jst, t, s, ("K", j, ci), "killed", comp[5]))
                account(c, k.jst, t, s, 1)
        k.comps = []
        k.epoch += 1

    def try_place(j, t, avail) -> bool:
        k = K[j]
        got = place(k.job, avail, placer, files)
        if got is None:
            return False
        k.placement_time += t - k.enqueued
        k.placements += 1
        k.comps = [[s, c, site, ftt, math.nan, -1] for (s, c, site, ftt) in got]  # (size, cluster, site, FTT,
        # claim time, hold)
        for s, c, _, _ in got:
            placed[c] += s
            avail[c] -= s
        k.jpt, k.ftt = t, max(g[3] for g in got)
        k.jst = t + k.ftt
        if math.isnan(k.jst0):
            k.jst0 = k.jst
        k.jct = first_try(j, t)
        k.state = "claiming"
        for s, c, _, ftt in got:
            if ftt > 0:
                transfers.append((c, t, t + ftt, s, j, len(transfers)))
        push(k.jct, _CLAIM, (j, k.epoch))
        return True

    def koala_avail():
        return np.where(excluded, 0, np.maximum(cap - loc - held - placed, 0))

    def usable():
        """The processors of the clusters KOALA still places on."""
        return np.where(excluded, 0, P)

    def fail_unplaceable(j):
        K[j].state = "failed"  # it could never be placed: queued, it would keep the run going forever
        undecided[0] -= 1
        unplaceable.append(j)

    # ---- claiming: the policy decides (simengine.grid.claiming), the engine keeps the books
    claimer = claiming_policy(policy.claiming, policy.claiming_params, policy)
    claimer_name = claimer.name

    def claimed_on(v) -> np.ndarray:
        out = np.zeros(C, np.int64)
        for cp in K[v].comps:
            if not math.isnan(cp[4]):
                out[cp[1]] += cp[0]
        return out

    def holders(j, e) -> list:
        # (a done job keeps its components: only jobs between placement and their end hold processors)
        found = []
        for v, kv in enumerate(K):
            if v != j and kv.state in ("claimed", "running", "claiming") \
                    and any(cp[1] == e and not math.isnan(cp[4]) for cp in kv.comps):
                found.append(Holder(v, kv.prio, kv.state, kv.jst, claimed_on(v)))
        return found

    def where(j, comp) -> Placement | None:
        k, s = K[j], comp.size
        av = np.where(excluded, 0, cap - loc - held - placed)
        if not excluded[comp.cluster] and cap[comp.cluster] > 0:  # its own placement given up first (not on a
            # cluster KOALA left, or one down)
            av[comp.cluster] += s
        one = KoalaJob(k.job.submit, k.job.runtime, [s], None, k.prio, False, k.job.file_size, k.job.file_sites)
        got = place(one, np.maximum(av, 0), placer, files)
        return None if got is None else Placement(*got[0][1:])

    def move(j, comp, e, site) -> str | None:
        """Moves the component; else says why not."""
        k, cp = K[j], comp._cp
        if site is None:
            site, ftt = best_site(files, k.job, e)
        elif files is None or k.job.file_size <= 0 or not k.job.file_sites:
            if site != -1:
                return f"it moved component {comp.index} to read from file site {site!r}; the job has no file (-1)"
            ftt = 0.0
        elif site not in k.job.file_sites:
            return f"it moved component {comp.index} to read from file site {site!r}, which does not hold the file"
        else:
            ftt = files.time(k.job.file_size, site, e)
        placed[cp[1]] -= cp[0]
        cp[1], cp[2], cp[3] = e, int(site), ftt
        placed[e] += cp[0]
        return None

    def claim_component(j, comp, t):
        k, cp = K[j], comp._cp
        placed[cp[1]] -= cp[0]
        held[cp[1]] += cp[0]
        cp[4] = t
        cp[5] = begin_hold(cp[1], t, cp[0], ("K", j, comp.index), k.jpt if cp[3] > 0 and t > k.jpt else math.nan)

    def holds(v) -> bool:
        return 0 <= v < len(K) and K[v].state in ("claimed", "running", "claiming") and claimed_on(v).any()

    def preempt(v, t) -> np.ndarray:
        freed = claimed_on(v)
        abort(v, t, kill=True)
        K[v].preempted += 1
        if policy.preemption.restarts:
            K[v].extra_run += policy.preemption.overhead
            enqueue(v, t)
        else:  # kill: the job ends here, its run is lost
            K[v].state = "killed"
            undecided[0] -= 1
        return freed

    engine = SimpleNamespace(idle=lambda: cap - loc - held, available=lambda: np.where(excluded, 0, cap - loc - held - placed),
                             holders=holders, where=where, move=move, claim=claim_component, holds=holds,
                             preempt=preempt)

    def first_try(j, t) -> float:
        k = K[j]
        try:
            at = claimer.first_try(ClaimJob(j, k))
        except PolicyError:
            raise
        except Exception as exc:  # noqa: BLE001 - the researcher's code: any failure
            raise policy_raised(claimer_name, f"first_try() for KOALA job {j} placed at t={t:g}", exc) from exc
        if not (isinstance(at, (int, float, np.floating)) and t <= at <= k.jst):
            raise PolicyError(f"{claimer_name}: the first claiming try of KOALA job {j}, placed at t={t:g}, was set "
                              f"at {at!r}; it must be between the placement and the job start time {k.jst:g}")
        return float(at)

    def claim(j, t):
        k = K[j]
        k.claim_tries += 1
        job = ClaimJob(j, k)
        try:
            decision = claimer.claim(t, job, ClaimingGrid(claimer_name, t, job, P, policy.preemption, engine))
        except PolicyError:
            raise
        except Exception as exc:  # noqa: BLE001 - the researcher's code: any failure
            raise policy_raised(claimer_name, f"claim() for KOALA job {j} at t={t:g} (try {k.claim_tries})",
                                exc) from exc
        if all(not math.isnan(cp[4]) for cp in k.comps):
            k.state = "claimed"
            k.pgt = t - k.jpt
            if t >= k.jst:
                begin(j, t)
            else:
                push(k.jst, _START, (j, k.epoch))
            return
        # the try did not claim every component
        if isinstance(decision, Retry):
            at = decision.at
            if not (isinstance(at, (int, float, np.floating)) and t < at <= k.jst):
                raise PolicyError(f"{claimer_name}: KOALA job {j}, claiming at t={t:g}, was to try again at {at!r}; "
                                  f"a retry comes after now and by the job start time {k.jst:g} (else Requeue)")
            k.jct = float(at)
            push(k.jct, _CLAIM, (j, k.epoch))
        elif isinstance(decision, Requeue):
            if decision.L is not None and not (isinstance(decision.L, (int, float)) and 0 <= decision.L <= 1):
                raise PolicyError(f"{claimer_name}: KOALA job {j} went back to placement at t={t:g} with L = "
                                  f"{decision.L!r}; L is between 0 and 1")
            abort(j, t, kill=False)
            if decision.L is not None:
                k.L = decision.L
            enqueue(j, t)
        elif isinstance(decision, Fail):
            abort(j, t, kill=False)
            k.state = "failed"
            undecided[0] -= 1
        else:
            raise PolicyError(f"{claimer_name}: KOALA job {j}, claiming at t={t:g}, is not fully claimed and claim() "
                              f"returned {decision!r}, not Retry(at), Requeue() or Fail()")

    def begin(j, t):
        k = K[j]
        if soft is not None and soft_error(k, t):
            k.failures += 1
            abort(j, t, kill=True)
            enqueue(j, t)  # back to its placement queue, as KOALA's runners restart a failed job
            return
        k.state, k.start = "running", t
        push(t + k.job.runtime + k.extra_run, _END, ("K", j, k.epoch))

    def soft_error(k, t) -> bool:
        """Draw the soft errors of a starting job's components (one draw each); count each
        cluster's consecutive errors and exclude a cluster at ``exclude_after``. True if any failed."""
        failed = False
        for cp in k.comps:
            c = cp[1]
            if soft.rng.random() < soft.probability[c]:
                failed = True
                cluster_errors[c] += 1
                consecutive[c] += 1
                if policy.exclude_after is not None and consecutive[c] >= policy.exclude_after and not excluded[c]:
                    exclude(c, t)
            else:
                consecutive[c] = 0
        return failed

    def exclude(c, t):
        excluded[c] = True
        excluded_at.append((c, t))
        room = usable()
        for q in pq:  # a queued job the clusters left can never hold fails now (else the run never ends)
            gone = [j for j in q if place(K[j].job, room, probe, files) is None]
            for j in gone:
                q.remove(j)
                fail_unplaceable(j)

    def finish_koala(j, t):
        k = K[j]
        for ci, cp in enumerate(k.comps):
            s, c, ct = cp[0], cp[1], cp[4]
            held[c] -= s
            hold_end[cp[5]] = t
            if k.jst > ct:
                holdings.append((c, ct, k.jst, s, ("K", j, ci), "claimed", cp[5]))
                account(c, ct, k.jst, s, 2)
            holdings.append((c, k.jst, t, s, ("K", j, ci), "run", cp[5]))
            account(c, k.jst, t, s, 1)
        k.state, k.end = "done", t
        undecided[0] -= 1

    def scan(t):
        if not any(pq):
            return
        for _ in range(len(wrr)):
            qi = wrr[wrr_pos[0] % len(wrr)]
            wrr_pos[0] += 1
            if pq[qi]:
                break
        q = pq[qi]
        keep, up = [], []
        avail = koala_avail()
        for j in q:
            k = K[j]
            k.place_tries += 1
            k.tries_since_promotion += 1
            if try_place(j, t, avail):
                continue
            if policy.max_place_tries is not None and k.place_tries >= policy.max_place_tries:
                k.state = "failed"
                undecided[0] -= 1
                continue
            if policy.promote_after is not None and qi in (1, 2) and k.tries_since_promotion >= policy.promote_after:
                k.tries_since_promotion = 0
                k.prio = qi - 1
                up.append(j)
                continue
            keep.append(j)
        pq[qi] = keep
        if up:
            pq[qi - 1].extend(up)

    def band_tick(t):
        for c in range(C):
            lo, hi = band.low * P[c], band.high * P[c]
            while loc[c] < lo and cap[c] - loc[c] - held[c] > 0:
                s = min(int(band.size()), int(cap[c] - loc[c] - held[c]), int(math.floor(hi)) - int(loc[c]))
                if s <= 0:
                    break
                i = len(l_sub)
                l_sub.append(t)
                l_rt.append(float(band.runtime()))
                l_size.append(s)
                l_cl.append(c)
                l_start.append(math.nan)
                l_end.append(math.nan)
                l_state.append(0)
                l_bg.append(True)
                l_hold.append(-1)
                start_local(i, t)
            while loc[c] > hi:
                bg = [i for i in running_local[c] if l_bg[i]]
                if not bg:
                    break
                i = bg[-1]
                kill_local(i, t)

    def go_down(c, k, t):
        """Cluster c fails: its local jobs are killed (requeued or lost), KOALA jobs holding
        processors there fail whole and go back to placement, its processors are held down."""
        again = []
        for i in list(running_local[c]):
            kill_local(i, t)
            if (local_requeue if isinstance(local_requeue, bool) else local_requeue[c]) and not l_bg[i]:
                l_end[i], l_state[i] = math.nan, 0
                again.append(i)
        queues_local[c][:0] = again  # (they ran before the ones waiting: they start first again)
        for j, kj in enumerate(K):
            if kj.state in ("claiming", "claimed", "running") and any(
                    cp[1] == c and not math.isnan(cp[4]) for cp in kj.comps):
                if kj.state == "running":
                    kj.failures += 1
                abort(j, t, kill=kj.state == "running")
                enqueue(j, t)
        cap[c] = 0
        down_hold[c] = begin_hold(c, t, int(P[c]), ("D", k))

    def go_up(c, t):
        cap[c] = P[c]
        h = down_hold[c]
        hold_end[h] = t
        holdings.append((c, starts[h][1], t, int(P[c]), starts[h][3], "down", h))
        down_at.append((c, starts[h][1], t))

    def kill_local(i, t):
        c = l_cl[i]
        loc[c] -= l_size[i]
        running_local[c].remove(i)
        l_end[i], l_state[i] = t, 3
        holdings.append((c, l_start[i], t, l_size[i], ("L", i), "killed", l_hold[i]))
        hold_end[l_hold[i]] = t
        account(c, l_start[i], t, l_size[i], 0)

    view.update(starts=starts, hold_end=hold_end, holdings=holdings, jobs=K, local_runtime=l_rt, queues=queues_local,
                outages=outages)
    t = 0.0
    while heap:
        if until[0] <= heap[0][0] < horizon:
            yield
            continue
        t, kind, _, payload = heapq.heappop(heap)
        if t >= horizon:
            t = horizon
            break
        if kind == _END:
            if payload[0] == "L":
                i = payload[1]
                if l_state[i] != 1 or abs(l_start[i] + l_rt[i] - t) > 1e-9:
                    continue  # killed before
                c = l_cl[i]
                loc[c] -= l_size[i]
                running_local[c].remove(i)
                l_end[i], l_state[i] = t, 2
                holdings.append((c, l_start[i], t, l_size[i], ("L", i), "run", l_hold[i]))
                hold_end[l_hold[i]] = t
                account(c, l_start[i], t, l_size[i], 0)
            else:
                _, j, ep = payload
                if K[j].epoch == ep and K[j].state == "running":
                    finish_koala(j, t)
        elif kind == _DOWN:
            c = outages[payload][0]
            ndown[c] += 1
            if ndown[c] == 1:
                go_down(c, payload, t)
        elif kind == _UP:
            c = outages[payload][0]
            ndown[c] -= 1
            if ndown[c] == 0:
                go_up(c, t)
        elif kind == _START:
            j, ep = payload
            if K[j].epoch == ep and K[j].state == "claimed":
                begin(j, t)
        elif kind == _CLAIM:
            j, ep = payload
            if K[j].epoch == ep and K[j].state == "claiming":
                claim(j, t)
        elif kind == _SCAN:
            scan(t)
            qtrace.append((t, qlen()))
            if undecided[0] > 0:
                push(t + policy.scan_interval, _SCAN, None)
        elif kind == _ARRIVE:
            if place(K[payload].job, usable(), probe, files) is None:
                fail_unplaceable(payload)
            else:
                enqueue(payload, t)
        elif kind == _LOCAL:
            queues_local[l_cl[payload]].append(payload)
        elif kind == _BAND:
            band_tick(t)
            if undecided[0] > 0:
                push(t + band.interval, _BAND, None)
        dispatch(t)
        if K and undecided[0] == 0:
            break
    t_end = t
    # work still held at the end is cut there
    for c in range(C):
        if ndown[c] > 0:
            go_up(c, t_end)
    for c in range(C):
        for i in running_local[c]:
            holdings.append((c, l_start[i], t_end, l_size[i], ("L", i), "run", l_hold[i]))
            account(c, l_start[i], t_end, l_size[i], 0)
    for j, k in enumerate(K):
        if k.state in ("claiming", "claimed", "running"):
            for ci, cp in enumerate(k.comps):
                s, c, ct = cp[0], cp[1], cp[4]
                if math.isnan(ct):
                    continue
                a = min(k.jst, t_end)
                if a > ct:
                    holdings.append((c, ct, a, s, ("K", j, ci), "claimed", cp[5]))
                    account(c, ct, a, s, 2)
                if k.state == "running" and t_end > k.jst:
                    holdings.append((c, k.jst, t_end, s, ("K", j, ci), "run", cp[5]))
                    account(c, k.jst, t_end, s, 1)
    for h, end in enumerate(hold_end):
        if math.isnan(end):
            hold_end[h] = t_end
    arr = np.asarray
    return KoalaOutcome(K, arr(l_sub, float), arr(l_start, float), arr(l_end, float), arr(l_size, np.int64),
                        arr(l_cl, np.int64), arr(l_rt, float), arr(l_state, np.int8), arr(l_bg, bool),
                        holdings, transfers, busy, t_end, max_q[0], qtrace, starts, hold_end, unplaceable,
                        cluster_errors if soft is not None else None, excluded_at, down_at)
