"""KOALA's claiming policies (CLAIMING): what a placed KOALA job claims at a claiming try, and
what happens when the try does not claim every component (docs/policies/claiming.md).

A placed job's components are only *placed*: their processors look idle to the local
schedulers, which may take them. At the job's claiming tries KOALA claims processors (they are
then held until the job ends) so that every component holds its processors at the job start
time JST = JPT + FTT. A :class:`ClaimingPolicy` decides, at each try:

    first_try(job)             -> the time of the first try (JPT <= t <= JST)
    claim(now, job, grid)      -> None once every component is claimed, else
                                  Retry(at) | Requeue(L) | Fail()

``claim`` acts through ``grid`` (:class:`ClaimingGrid`): it claims components
(``grid.claim``), moves unclaimed ones (``grid.where`` asks the scenario's placement policy,
``grid.move``) and preempts other KOALA jobs (``grid.holders``, ``grid.preempt``); every action
takes effect at once, so ``grid.idle`` always shows what is left.

The built-in ``icp`` is the Incremental Claiming Policy (Algorithm 2 of the thesis) with the
scenario's KOALA parameters (threshold T, L, l_step, l_floor, min_gap, preemption,
max_claim_tries), written against this same API.
"""
from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

import numpy as np

from simengine.policy import PolicyError, PolicyKind, register
from simengine.preemption import choose_victims
from simengine.registry import CLAIMING, NoParams
from simengine.schema_base import scenario_check

__all__ = ["ClaimingPolicy", "ClaimJob", "Component", "ClaimingGrid", "Holder", "Placement", "Retry", "Requeue",
           "Fail", "IncrementalClaiming", "claiming_policy", "DEFAULT_CLAIMING"]

#: the claiming policy of a KOALA scenario that names none (the behaviour before claiming was pluggable)
DEFAULT_CLAIMING = "icp"


# ---- what a claiming try decides when the job is not fully claimed ------------------------------------

class Retry(NamedTuple):
    """Try again at ``at`` (later than now, at the latest at the job's JST); claimed components stay claimed."""

    at: float


class Requeue(NamedTuple):
    """Give every processor back (claimed and placed) and return the job to its placement queue;
    ``L``: the job's L from now on (None: unchanged)."""

    L: float | None = None


class Fail(NamedTuple):
    """Give every processor back; the job fails."""


# ---- what the policy sees ---------------------------------------------------------------------------

class Placement(NamedTuple):
    """Where the placement policy would put a component: ``cluster``, the file ``site`` it reads
    from (-1: no file) and ``ftt``, the transfer time from there."""

    cluster: int
    site: int
    ftt: float


class Component:
    """One component of the claiming job: ``index`` (in the job), ``size``, ``cluster`` (where it
    is placed or claimed), ``site`` and ``ftt`` (its file site and transfer time), ``claimed`` (the
    time it was claimed, None while only placed) and ``fixed`` (the user named its cluster: it
    cannot move)."""

    __slots__ = ("_cp", "index", "fixed")

    def __init__(self, cp: list, index: int, fixed: bool):
        self._cp, self.index, self.fixed = cp, index, fixed

    size = property(lambda self: self._cp[0])
    cluster = property(lambda self: self._cp[1])
    site = property(lambda self: self._cp[2])
    ftt = property(lambda self: self._cp[3])

    @property
    def claimed(self) -> float | None:
        t = self._cp[4]
        return None if math.isnan(t) else t

    def __repr__(self) -> str:
        return (f"Component(index={self.index}, size={self.size}, cluster={self.cluster}, claimed={self.claimed}, "
                f"fixed={self.fixed})")


class ClaimJob:
    """The KOALA job being claimed: ``id`` (its index among the KOALA jobs, in submit order),
    ``submit``, ``priority`` (0 super-high .. 3 super-low, after promotions), ``components``,
    ``placed_at`` (JPT), ``ftt`` (the job's file transfer time, the largest of its components'),
    ``start_time`` (JST = JPT + FTT), ``tries`` (claiming tries so far, this one included),
    ``placements`` (times placed, this placement included), ``preempted`` (times preempted),
    ``L`` (its current L), ``file_size`` (MB) and ``file_sites``."""

    __slots__ = ("id", "submit", "priority", "components", "placed_at", "ftt", "start_time", "tries", "placements",
                 "preempted", "L", "file_size", "file_sites")

    def __init__(self, id: int, k: Any):
        job = k.job
        self.id, self.submit, self.priority = id, job.submit, k.prio
        fixed = job.clusters is not None and not job.flexible
        self.components = [Component(cp, i, fixed and job.clusters[i] >= 0) for i, cp in enumerate(k.comps)]
        self.placed_at, self.ftt, self.start_time = k.jpt, k.ftt, k.jst
        self.tries, self.placements, self.preempted, self.L = k.claim_tries, k.placements, k.preempted, k.L
        self.file_size, self.file_sites = job.file_size, tuple(job.file_sites)

    def __repr__(self) -> str:
        return f"ClaimJob(id={self.id}, priority={self.priority}, components={len(self.components)})"


class Holder:
    """Another KOALA job holding claimed processors: ``id``, ``priority``, ``state`` (claiming,
    claimed or running), ``start_time`` (its JST) and ``held`` (claimed processors per cluster)."""

    __slots__ = ("id", "priority", "state", "start_time", "held")

    def __init__(self, id: int, priority: int, state: str, start_time: float, held: np.ndarray):
        self.id, self.priority, self.state, self.start_time, self.held = id, priority, state, start_time, held

    def __repr__(self) -> str:
        return f"Holder(id={self.id}, priority={self.priority}, state={self.state!r}, held={self.held.tolist()})"


class ClaimingGrid:
    """The grid at one claiming try of one job, and the try's actions (each takes effect at once).

    ``processors`` per cluster; ``idle``: processors neither used by local jobs nor held by KOALA
    (what a claim needs; placed ones count as idle, local jobs may take them); ``available``:
    ``idle`` less the processors placed for KOALA jobs (what a placement sees); ``preemption``:
    the scenario's preemption mode (``.preempts`` False: nobody may be preempted)."""

    def __init__(self, policy: str, now: float, job: ClaimJob, processors: np.ndarray, preemption, engine):
        self._policy, self._now, self._job, self._engine = policy, now, job, engine
        self.processors, self.preemption = processors, preemption

    @property
    def idle(self) -> np.ndarray:
        return self._engine.idle()

    @property
    def available(self) -> np.ndarray:
        return self._engine.available()

    def _refuse(self, what: str) -> PolicyError:
        return PolicyError(f"{self._policy}: at t={self._now:g}, claiming KOALA job {self._job.id}, {what}")

    def _own(self, component: Component, verb: str) -> Component:
        if not (isinstance(component, Component) and component.index < len(self._job.components)
                and self._job.components[component.index] is component):
            raise self._refuse(f"it asked to {verb} {component!r}, which is not one of the job's components")
        return component

    def holders(self, cluster: int) -> list[Holder]:
        """The other KOALA jobs holding claimed processors on ``cluster``, in job order."""
        return self._engine.holders(self._job.id, int(cluster))

    def where(self, component: Component) -> Placement | None:
        """Where the scenario's placement policy would place ``component`` alone now (its own
        placement given up first), or None; the placement policy may update its state (e.g.
        Close-to-Files' history table), as at any placement."""
        c = self._own(component, "re-place")
        if c.claimed is not None:
            raise self._refuse(f"it asked where to re-place component {c.index}, which is claimed")
        return self._engine.where(self._job.id, c)

    def move(self, component: Component, cluster: int, site: int | None = None) -> None:
        """Place unclaimed ``component`` on ``cluster`` instead, reading its file from ``site``
        (one of ``job.file_sites``, -1 for a job without a file; None: the job's file site with the
        shortest transfer). The job's JST stays: a file that arrives after it is the policy's risk."""
        c = self._own(component, "move")
        if c.claimed is not None:
            raise self._refuse(f"it moved component {c.index}, which is claimed")
        if not (isinstance(cluster, (int, np.integer)) and 0 <= cluster < len(self.processors)):
            raise self._refuse(f"it moved component {c.index} to {cluster!r}, not a cluster index "
                               f"0..{len(self.processors) - 1}")
        if c.fixed and cluster != c.cluster:
            raise self._refuse(f"it moved component {c.index}, whose cluster the user fixed")
        why_not = self._engine.move(self._job.id, c, int(cluster), site)
        if why_not:
            raise self._refuse(why_not)

    def claim(self, component: Component) -> None:
        """Claim ``component``'s processors on its cluster now (they must be idle)."""
        c = self._own(component, "claim")
        if c.claimed is not None:
            raise self._refuse(f"it claimed component {c.index} twice")
        idle = self._engine.idle()[c.cluster]
        if idle < c.size:
            raise self._refuse(f"it claimed component {c.index} of {c.size} processors on cluster {c.cluster}, "
                               f"which has {idle} idle")
        self._engine.claim(self._job.id, c, self._now)

    def preempt(self, holder: Holder | int) -> np.ndarray:
        """Preempt KOALA job ``holder`` (a Holder or its id): it gives back every processor and,
        as the scenario's preemption mode says, goes back to its placement queue (requeue) or
        ends (kill). Returns the processors freed per cluster."""
        v = holder.id if isinstance(holder, Holder) else holder
        if not self.preemption.preempts:
            raise self._refuse(f"it preempted KOALA job {v!r}, but the scenario's preemption is "
                               f"'{self.preemption.name}'")
        if not (isinstance(v, (int, np.integer)) and v != self._job.id and self._engine.holds(int(v))):
            raise self._refuse(f"it preempted {v!r}, which is not another KOALA job holding claimed processors")
        return self._engine.preempt(int(v), self._now)


# ---- the kind of policy ------------------------------------------------------------------------------

class ClaimingPolicy(PolicyKind):
    """Subclass this, set ``name`` (``Params``, ``summary``) and write :meth:`claim` (and
    :meth:`first_try` to claim at other times than JCT_0 = JPT + L FTT). One instance claims for
    every KOALA job of one simulation; ``self.koala`` holds the scenario's KOALA parameters
    (``T``, ``L``, ``l_step``, ``l_floor``, ``min_gap``, ``preemption``, ``max_claim_tries``, ...)."""

    kind_registry = CLAIMING
    kind_methods = ("claim",)

    def __init__(self, params, koala):
        self.params, self.koala = params, koala

    def first_try(self, job: ClaimJob) -> float:
        """The time of the job's first claiming try after it was placed (JPT <= t <= JST)."""
        return job.placed_at + job.L * job.ftt

    def claim(self, now: float, job: ClaimJob, grid: ClaimingGrid) -> Retry | Requeue | Fail | None:
        """Claim what to claim now (``grid.claim``); once every component is claimed the job
        starts at its JST and what this returns is ignored; else return :class:`Retry`,
        :class:`Requeue` or :class:`Fail`."""
        raise NotImplementedError


def claiming_policy(name: str, params, koala) -> ClaimingPolicy:
    """The registered claiming policy ``name`` set up for one simulation."""
    entry = CLAIMING.get(name)
    return entry.implementation(entry.validated(params), koala)


# ---- the built-in policies ---------------------------------------------------------------------------

@register
class IncrementalClaiming(ClaimingPolicy):
    """KOALA's Incremental Claiming Policy (Algorithm 2) with the scenario's KOALA parameters."""

    name = "icp"
    Params = NoParams
    summary = ("Incremental Claiming Policy (KOALA): tries at JCT_n = JCT_n-1 + L (JST - JCT_n-1); when at least "
               "T of the components can be claimed, re-place or preempt lower-priority KOALA jobs for the rest "
               "(the deadline policy's threshold, L, l_step, l_floor, min_gap, preemption, max_claim_tries)")

    def claim(self, now, job, grid):
        koala = self.koala
        idle = grid.idle
        claimable, missing = [], []
        for c in job.components:
            if c.claimed is not None:
                continue
            if idle[c.cluster] >= c.size:
                idle[c.cluster] -= c.size
                claimable.append(c)
            else:
                missing.append(c)
        n = len(job.components)
        if (n - len(missing)) / n >= koala.T - 1e-12:
            for c in claimable:
                grid.claim(c)
            for c in missing:
                self._claim_elsewhere(now, job, grid, c)
            if all(c.claimed is not None for c in job.components):
                return None
        if koala.max_claim_tries is not None and job.tries >= koala.max_claim_tries:
            return Fail()
        nxt = now + job.L * (job.start_time - now) if job.L > 0 else job.start_time
        if job.start_time - nxt < koala.min_gap:
            return Requeue(max(koala.l_floor, job.L - koala.l_step))
        return Retry(nxt)

    def _claim_elsewhere(self, now, job, grid, c):
        """A component that cannot be claimed where it is placed: re-placed where its file arrives
        in time, else claimed by preempting lower-priority KOALA jobs (newest JST first) where the
        placement policy would put it (or where it is, when fixed)."""
        target = c.cluster
        if not c.fixed:
            got = grid.where(c)
            if got is not None:
                if now + got.ftt < job.start_time or (got.ftt == 0 and now <= job.start_time):
                    grid.move(c, got.cluster, got.site)
                    grid.claim(c)
                    return
                target = got.cluster
        if not grid.preemption.preempts or job.priority == 3:
            return
        candidates = [h for h in grid.holders(target) if h.priority > job.priority]
        victims = choose_victims(candidates, priority=lambda h: -h.priority, started=lambda h: h.start_time,
                                 enough=lambda vs: grid.idle[target] + sum(h.held[target] for h in vs) >= c.size)
        for h in victims or ():
            grid.preempt(h)
        if victims and grid.idle[target] >= c.size:
            grid.move(c, target)
            grid.claim(c)


# ---- the scenario ------------------------------------------------------------------------------------

@scenario_check(order=91)
def claiming_problems(s: Any, check_policy: Callable | None = None) -> list[tuple[tuple, str]]:
    """A claiming policy is given with KOALA streams only."""
    from simengine.grid.schema import is_koala  # (the grid schema imports this module)

    if getattr(s.grid, "claiming", None) is not None and not is_koala(s):
        return [(("grid", "claiming"), "a claiming policy claims the processors of KOALA jobs: give it with a "
                                       "stream of kind koala (or leave it out)")]
    return []
