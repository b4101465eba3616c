"""Arrays in, outcome out: one replication of the co-allocation grid layer.

:func:`simulate` takes the platform (processors per cluster), the local jobs, the global
jobs and the policy, runs the compiled event loop (:mod:`simengine.grid.kernel`; a placement
policy written in Python answers from :meth:`GridRun.advance` at each attempt) and
returns a :class:`GridOutcome` in the order the jobs were given. Tests and the
reproduction recipe call it directly; :mod:`simengine.grid.run` builds its inputs from a
scenario.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simengine.grid import kernel as K
from simengine.grid.deadline_job import DeadlineJob, placed
from simengine.grid.placement import placement_policy
from simengine.grid.schema import RPPParams
from simengine.registry import GRID_PLACEMENT

__all__ = ["LocalJobs", "GlobalJobs", "GridPolicy", "GridOutcome", "GridRun", "simulate", "warm_up"]


@dataclass
class LocalJobs:
    """Local single-component jobs: each goes to its own cluster's FCFS queue."""

    submit: np.ndarray
    runtime: np.ndarray
    size: np.ndarray
    cluster: np.ndarray

    def __post_init__(self):
        self.submit = np.asarray(self.submit, np.float64)
        self.runtime = np.asarray(self.runtime, np.float64)
        self.size = np.asarray(self.size, np.int64)
        self.cluster = np.asarray(self.cluster, np.int64)

    def __len__(self) -> int:
        return len(self.submit)


@dataclass
class GlobalJobs:
    """Global co-allocated jobs: ``components`` components of ``size`` processors each, all
    starting at the absolute start deadline ``deadline`` (>= submit) and running ``runtime``."""

    submit: np.ndarray
    runtime: np.ndarray
    size: np.ndarray
    components: np.ndarray
    deadline: np.ndarray

    def __post_init__(self):
        self.submit = np.asarray(self.submit, np.float64)
        self.runtime = np.asarray(self.runtime, np.float64)
        self.size = np.asarray(self.size, np.int64)
        self.components = np.asarray(self.components, np.int64)
        self.deadline = np.asarray(self.deadline, np.float64)

    def __len__(self) -> int:
        return len(self.submit)

    @staticmethod
    def empty() -> "GlobalJobs":
        z = np.zeros(0)
        return GlobalJobs(z, z, z, z, z)


@dataclass
class GridPolicy:
    """The grid's policies (parameters as in :class:`~simengine.grid.schema.RPPParams`).
    ``placement``: any GRID_PLACEMENT entry; a ``compiled`` one runs inside the kernel, any
    other is called from Python at each attempt (``placement_params``: its parameters)."""

    placement: str = "worst-fit"
    placement_params: dict[str, Any] | None = None
    lp: float = 0.7
    mp: int = 10
    final_attempt: bool = True
    wait_x: float | None = None
    priority: str = "GP"
    kill_order: str = "latest_started_first"
    killed_jobs: str = "drop"
    claims_bypass_local_queue: bool = True
    gp_cluster: str = "most_idle_plus_local"

    @classmethod
    def from_params(cls, placement: str = "worst-fit", placement_params: dict[str, Any] | None = None,
                    deadline_params: dict[str, Any] | None = None) -> "GridPolicy":
        GRID_PLACEMENT.get(placement).validated(placement_params)
        p = RPPParams.model_validate(deadline_params or {})
        mp, final_attempt = p.mp, p.final_attempt
        if p.priority == "LP" and p.lp_failure == "first_failed_try" and mp >= 1:
            mp, final_attempt = 1, False  # the first try decides: placed, or the job fails
        return cls(placement=placement, placement_params=placement_params, lp=p.lp, mp=mp, final_attempt=final_attempt, wait_x=p.wait_x,
                   priority=p.priority, kill_order=p.kill_order, killed_jobs=p.killed_jobs,
                   claims_bypass_local_queue=p.claims_bypass_local_queue, gp_cluster=p.gp_cluster)


@dataclass
class GridOutcome:
    """One replication's schedule, in the order the jobs were given.

    Local jobs: ``local_start`` (last start; NaN if never), ``local_end`` (completion, or
    the kill time of a dropped killed job; NaN otherwise), ``local_state`` (kernel codes
    L_WAITING, L_RUNNING, L_DONE, L_KILLED at the stop), ``local_kills`` (times killed).
    Global jobs: ``global_state`` (G_WAITING .. G_FAILED), ``global_hold`` (when its
    processors were taken: claim time, or D), ``global_decided`` (start at D, or the time
    it failed), ``global_tries`` (placement attempts, the deadline attempt included),
    ``global_kills`` (local jobs it killed), ``component_cluster`` (cluster of each
    component, ``component_offset[g]:component_offset[g+1]``; meaningful once placed).
    ``kills``: every kill as (local job, start of the lost run, kill time).
    ``busy``: per cluster, processor-seconds in [t_warm, t_end] busy with local jobs,
    claimed and idle, and busy with global jobs.
    """

    local_start: np.ndarray
    local_end: np.ndarray
    local_state: np.ndarray
    local_kills: np.ndarray
    global_state: np.ndarray
    global_hold: np.ndarray
    global_decided: np.ndarray
    global_tries: np.ndarray
    global_kills: np.ndarray
    component_offset: np.ndarray
    component_cluster: np.ndarray
    kills: dict[str, np.ndarray] = field(default_factory=dict)
    busy: np.ndarray | None = None
    t_end: float = 0.0

    def components_of(self, g: int) -> list[int]:
        """Clusters of global job ``g``'s components."""
        return self.component_cluster[self.component_offset[g]:self.component_offset[g + 1]].tolist()


def _order(submit: np.ndarray) -> np.ndarray | None:
    if len(submit) < 2 or bool((submit[1:] >= submit[:-1]).all()):
        return None
    return np.argsort(submit, kind="stable")


class GridRun:
    """One replication of the grid layer, simulated at once (:func:`simulate`) or in slices of
    simulated time (:meth:`advance`: the live Gantt, simengine.grid.live). The schedule does not
    depend on how it was sliced. Arguments as :func:`simulate`'s."""

    def __init__(self, processors, local: LocalJobs, global_jobs: GlobalJobs | None = None,
                 policy: GridPolicy | None = None, *, horizon: float = math.inf, warmup: float = 0.0):
        procs = np.asarray(processors, np.int64)
        gj = global_jobs if global_jobs is not None else GlobalJobs.empty()
        pol = policy or GridPolicy()
        C = len(procs)
        if len(local) and (local.cluster.min() < 0 or local.cluster.max() >= C):
            raise ValueError("a local job's cluster is not one of the clusters")
        if len(local) and (local.size > procs[local.cluster]).any():
            raise ValueError("a local job is larger than its cluster")
        if len(gj) and ((gj.deadline < gj.submit).any() or (gj.components < 1).any() or (gj.size < 1).any()):
            raise ValueError("global jobs need deadline >= submit, at least one component and size >= 1")
        entry = GRID_PLACEMENT.get(pol.placement)
        if "compiled" in entry.capabilities:
            code, self.placer = entry.implementation.code, None
        else:  # a policy object, asked at each attempt (advance)
            code = K.PLACE_PYTHON
            self.placer = placement_policy(pol.placement, pol.placement_params, procs)
        self.given_local, self.given_global = local, gj
        self.local_order, self.global_order = _order(local.submit), _order(gj.submit)
        lo, go = self.local_order, self.global_order
        # the jobs as the kernel sees them (sorted by submit): what advance() fills in
        self.local = L = local if lo is None else LocalJobs(local.submit[lo], local.runtime[lo], local.size[lo],
                                                            local.cluster[lo])
        self.glob = Gj = gj if go is None else GlobalJobs(gj.submit[go], gj.runtime[go], gj.size[go],
                                                          gj.components[go], gj.deadline[go])
        n, G = len(L), len(Gj)
        self.processors, self.horizon = procs, float(horizon)
        self.l_start, self.l_end = np.full(n, np.nan), np.full(n, np.nan)
        self.l_state, self.l_kills = np.zeros(n, np.int8), np.zeros(n, np.int32)
        self.g_state, self.g_hold = np.zeros(G, np.int8), np.full(G, np.nan)
        self.g_tries, self.g_kills = np.zeros(G, np.int32), np.zeros(G, np.int32)
        self.g_decided = np.full(G, np.nan)
        self.comp_off = np.zeros(G + 1, np.int64)
        np.cumsum(Gj.components, out=self.comp_off[1:])
        self.comp_cluster = np.full(int(self.comp_off[-1]), -1, np.int64)
        self.acc = np.zeros((C, 3))
        wait_x = math.inf if pol.wait_x is None else float(pol.wait_x)
        self.policy = (code, float(pol.lp), int(pol.mp), wait_x, pol.priority == "GP",
                       bool(pol.final_attempt), pol.kill_order == "latest_started_first",
                       pol.killed_jobs == "requeue", bool(pol.claims_bypass_local_queue), float(horizon),
                       float(warmup), pol.gp_cluster == "most_idle")
        self.state = K.grid_state(procs, L.submit, L.cluster, Gj.submit, Gj.components, Gj.deadline, self.policy,
                                  self.g_state, self.g_decided)

    @property
    def done(self) -> bool:
        return bool(self.state[K.ST_COUNTERS][4])

    @property
    def kill_log(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every kill so far: (local job, start of the lost run, kill time), in kill order."""
        nk = int(self.state[K.ST_COUNTERS][1])
        return tuple(a[:nk] for a in self.state[K.ST_KILLS:K.ST_KILLS + 3])

    def queued(self) -> np.ndarray:
        """Local jobs waiting in each cluster's queue now."""
        st = self.state
        return st[K.ST_QARR] - st[K.ST_QPOS] + st[K.ST_RQ_N]

    def advance(self, until: float) -> bool:
        """Handle every event before ``until``; True once the replication is over."""
        L, Gj = self.local, self.glob
        # (the same arrays every call: a Python placement makes one call per attempt)
        args = (self.processors, L.submit, L.runtime, L.size, L.cluster, Gj.runtime, Gj.size, Gj.components,
                Gj.deadline, self.policy, self.l_start, self.l_end, self.l_state, self.l_kills, self.g_state,
                self.g_hold, self.g_tries, self.g_kills, self.g_decided, self.comp_off, self.comp_cluster, self.acc)
        counters = self.state[K.ST_COUNTERS]
        until = float(until)
        while True:
            state = self.state
            grown = K.grid_advance(*args, state, until)
            self.state = state[:K.ST_HEAP] + grown + state[K.ST_COUNTERS:]
            g = int(counters[K.ASK_JOB])
            if g < 0 or counters[K.ASK_ANSWER] >= 0:
                return self.done
            self._answer(g)

    def _answer(self, g: int) -> None:
        """Ask the Python placement policy where global job ``g``'s components go at this attempt."""
        Gj = self.glob
        nc, s = int(Gj.components[g]), int(Gj.size[g])
        job = DeadlineJob(g, (s,) * nc, float(Gj.submit[g]), float(Gj.deadline[g]),
                          float(self.state[K.ST_CLOCK][0]), int(self.g_tries[g]))
        got = placed(self.placer, job, self.state[K.ST_ASKED_IDLE])
        if got is not None:
            off = self.comp_off[g]
            self.comp_cluster[off:off + nc] = got
        self.state[K.ST_COUNTERS][K.ASK_ANSWER] = got is not None

    def outcome(self) -> GridOutcome:
        """The replication's schedule, in the order the jobs were given (after the last advance)."""
        if not self.done:
            raise RuntimeError("the replication has not been simulated to its end")
        kl_job, kl_t0, kl_t1 = (a.copy() for a in self.kill_log)
        out = GridOutcome(self.l_start, self.l_end, self.l_state, self.l_kills, self.g_state, self.g_hold,
                          self.g_decided, self.g_tries, self.g_kills, self.comp_off, self.comp_cluster,
                          {"job": kl_job, "start": kl_t0, "time": kl_t1}, self.acc, float(self.state[K.ST_CLOCK][1]))
        lo, go = self.local_order, self.global_order
        if lo is not None:  # back to the order the jobs were given in
            for name in ("local_start", "local_end", "local_state", "local_kills"):
                a = getattr(out, name)
                b = np.empty_like(a)
                b[lo] = a
                setattr(out, name, b)
            out.kills["job"] = lo[kl_job]
        if go is not None:
            for name in ("global_state", "global_hold", "global_decided", "global_tries", "global_kills"):
                a = getattr(out, name)
                b = np.empty_like(a)
                b[go] = a
                setattr(out, name, b)
            G = len(self.glob)
            off = np.zeros(G + 1, np.int64)
            np.cumsum(self.given_global.components, out=off[1:])
            cl = np.empty_like(self.comp_cluster)
            for i, g in enumerate(go):
                cl[off[g]:off[g + 1]] = self.comp_cluster[self.comp_off[i]:self.comp_off[i + 1]]
            out.component_offset, out.component_cluster = off, cl
        return out


def simulate(processors, local: LocalJobs, global_jobs: GlobalJobs | None = None, policy: GridPolicy | None = None,
             *, horizon: float = math.inf, warmup: float = 0.0) -> GridOutcome:
    """Simulate one replication of the grid layer.

    Parameters
    ----------
    processors : array of int
        Processors of each cluster.
    local, global_jobs : LocalJobs, GlobalJobs
        The jobs, in any order (simultaneous submissions keep the given order).
    policy : GridPolicy
        Default: Worst-Fit, RPP with L_p 0.7, M_p 10, final attempt, Wait-inf, GP.
    horizon : float
        Events at or after this time are not simulated.
    warmup : float
        The busy-time accumulators start here.
    """
    run = GridRun(processors, local, global_jobs, policy, horizon=horizon, warmup=warmup)
    run.advance(math.inf)
    return run.outcome()


def warm_up() -> None:
    """Compile (or load from numba's cache) the kernel on a tiny input."""
    simulate([2, 2], LocalJobs([0.0, 1.0], [1.0, 1.0], [1, 2], [0, 1]),
             GlobalJobs([0.0], [1.0], [1], [2], [0.5]))
