"""Site-allocation policies: which cluster a grid job (``cluster == -1``) goes to.

Registered in :data:`simengine.registry.SITE_ALLOCATION`. A *static* policy is a
function ``allocate(jobs, processors, params, rng) -> int32 array`` that picks a
cluster index for every job of ``jobs`` at once, independently of the system state
(one written in plain Python subclasses simengine.policy.SiteAllocationPolicy).

A *stateful* policy (``deferred``, ``sb_deferred``) looks at the sites' remaining work,
so it cannot route jobs up front: its entry has the ``stateful`` capability, its
implementation is a :class:`StatefulPolicy` and the runner simulates the grid scheduler and the LWR sites
together in one compiled pass (:mod:`simengine.grid_lwr`). One written in plain Python subclasses
simengine.site_state.StatefulSiteAllocation and runs with the same sites, event by event; both
offer the runner a ``stepper``.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from simengine.grid_lwr import POLICY_DEFERRED, POLICY_SB_DEFERRED, grid_lwr_advance, grid_lwr_state
from simengine.jit import njit

from simengine.registry import SITE_ALLOCATION
from simengine.workload import JobTable


class RandomParams(BaseModel):
    """Parameters of the ``random`` site-allocation policy."""

    model_config = ConfigDict(strict=True, extra="forbid")

    #: ``processors``: site k with probability c_k / sum(c) (Zikos & Karatza);
    #: ``equal``: every site equally likely.
    weights: Literal["processors", "equal"] = "processors"


@SITE_ALLOCATION.register(
    "random", RandomParams, summary="Random: site k with probability proportional to its processors (Zikos)"
)
def allocate_random(
    jobs: JobTable,
    processors: np.ndarray,
    params: RandomParams | dict[str, Any] | None,
    rng: np.random.Generator,
) -> np.ndarray:
    """Pick a cluster for every job of ``jobs`` at random.

    Site k is chosen with probability c_k / sum(c) (``weights: processors``) or
    1 / C (``weights: equal``). A job is only sent to clusters with at least as many
    processors as it requests: the weights are renormalized over those clusters
    (with one-processor jobs, as in Zikos & Karatza, this changes nothing).

    Parameters
    ----------
    jobs : JobTable
        The jobs to place (normally those with ``cluster == -1``).
    processors : array of int
        Processors of each cluster, by cluster index.
    params : RandomParams or dict
        The policy's parameters (``PolicyRef.params`` may be passed as is).
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray of int32
        A cluster index per job. Raises ``ValueError`` if a job fits no cluster.
    """
    params = SITE_ALLOCATION.get("random").validated(params)
    procs = np.asarray(processors, dtype=np.int64)
    n = len(jobs)
    base = procs.astype(np.float64) if params.weights == "processors" else np.ones(len(procs))
    out = np.empty(n, dtype=np.int32)
    if n == 0:
        return out
    sizes = np.asarray(jobs.processors, dtype=np.int64)
    if sizes.max() > procs.max():
        bad = int(np.argmax(sizes > procs.max()))
        raise ValueError(
            f"job {int(jobs.job_id[bad])} needs {int(sizes[bad])} processors; "
            f"the largest cluster has {int(procs.max())}"
        )
    # Jobs that fit the same set of clusters share one vectorized draw: the sets are
    # nested ("clusters with >= s processors"), so there are at most C of them.
    thresholds = np.unique(procs)
    if sizes.max() <= thresholds[0]:  # every job fits every cluster (one group): no gather
        choose(rng, base / base.sum(), out)
        return out
    group = np.searchsorted(thresholds, sizes, side="left")  # smallest cluster size >= job size
    for g in np.flatnonzero(np.bincount(group, minlength=len(thresholds))):
        members = np.flatnonzero(group == g)
        eligible = procs >= thresholds[g]
        w = np.where(eligible, base, 0.0)
        picks = np.empty(len(members), np.int32)
        choose(rng, w / w.sum(), picks)
        out[members] = picks
    return out


def choose(rng: np.random.Generator, p: np.ndarray, out: np.ndarray) -> None:
    """``out[:] = rng.choice(len(p), size=len(out), p=p)``, drawn exactly as numpy draws
    it (the same uniforms from ``rng``, looked up in the same normalised cumulative
    weights, so the same picks), without numpy's binary search per draw."""
    cdf = p.cumsum()
    cdf /= cdf[-1]
    _lookup(rng.random(len(out)), cdf, out)


@njit(cache=True, nogil=True)
def _lookup(u, cdf, out):
    """``out[i]`` = number of ``cdf`` entries <= ``u[i]`` (``cdf.searchsorted(u, side="right")``)."""
    for i in range(u.shape[0]):
        x = u[i]
        k = 0
        for c in range(cdf.shape[0]):  # cdf is sorted: count without branching
            k += cdf[c] <= x
        out[i] = k


# ---- stateful policies (Zikos & Karatza: Deferred, SB-Deferred) ------------------------------

class DeferredParams(BaseModel):
    """Parameters of the ``deferred`` site-allocation policy."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)

    #: A_I: queued jobs are dispatched at every multiple of this interval (seconds).
    allocation_interval: float = Field(1.0, gt=0)


class SBDeferredParams(DeferredParams):
    """Parameters of the ``sb_deferred`` site-allocation policy."""

    #: SDT: jobs with a service demand above it are deferred, the others go at random.
    #: The paper sweeps 1..20 and names no single best value; 4 sits in the flat bottom
    #: of its RT-vs-SDT curves.
    sdt: float = Field(4.0, gt=0)
    #: Weights of the random part, as for ``random``.
    weights: Literal["processors", "equal"] = "processors"


class StatefulPolicy:
    """A site-allocation policy that needs the sites' state; run by :mod:`simengine.grid_lwr`."""

    def __init__(self, code: int, name: str, doc: str):
        self.code, self.name, self.__doc__ = code, name, doc

    def kernel_args(self, params: BaseModel | dict[str, Any] | None, processors) -> dict[str, Any]:
        """The kernel's policy arguments: policy, interval, sdt, weights."""
        params = SITE_ALLOCATION.get(self.name).validated(params)
        procs = np.asarray(processors, np.float64)
        weights = procs if getattr(params, "weights", "processors") == "processors" else np.ones(len(procs))
        return {"policy": self.code, "interval": params.allocation_interval,
                "sdt": getattr(params, "sdt", 0.0), "weights": weights}

    def stepper(self, params, processors, speed, names, jobs, work, fixed, rng, site, proc, dispatch, start):
        """``advance(until)``: the compiled pass (grid_lwr_advance) up to ``until``, True once it is
        over; it fills ``site``, ``proc``, ``dispatch`` and ``start``. The random part's uniforms
        are drawn here, one per job of the replication, from ``rng``. (The same interface as a
        Python stateful policy's, simengine.site_state.)"""
        args = self.kernel_args(params, processors)
        w = np.asarray(args["weights"], np.float64)
        cumw = np.cumsum(w / w.sum())
        n = len(jobs)
        u = rng.random(n)
        procs = np.asarray(processors, np.int64)
        state = grid_lwr_state(procs, n)
        code, interval, sdt = args["policy"], float(args["interval"]), float(args["sdt"])

        def advance(until: float) -> bool:
            grid_lwr_advance(jobs.submit, work, fixed, code, interval, sdt, u, cumw, procs, speed, site, proc,
                             dispatch, start, *state, until)
            return bool(state[2][2])

        return advance

    def __call__(self, *args, **kwargs):
        raise TypeError(f"{type(self).__name__} cannot route jobs up front; the runner simulates it")


deferred = SITE_ALLOCATION.register(
    "deferred", DeferredParams,
    summary="Deferred: every A_I, queued jobs go FCFS to the site with least remaining work per processor",
    capabilities=("stateful", "compiled"),
)(StatefulPolicy(POLICY_DEFERRED, "deferred", "Deferred site allocation (Zikos & Karatza)."))

sb_deferred = SITE_ALLOCATION.register(
    "sb_deferred", SBDeferredParams,
    summary="SB-Deferred: demand > SDT -> Deferred, else Random (Zikos & Karatza)",
    capabilities=("stateful", "compiled"),
)(StatefulPolicy(POLICY_SB_DEFERRED, "sb_deferred", "Size-based Deferred site allocation (Zikos & Karatza)."))


def is_stateful(name: str) -> bool:
    """Does the site-allocation policy ``name`` need the combined grid + LWR simulation?"""
    return name in SITE_ALLOCATION and "stateful" in SITE_ALLOCATION.get(name).capabilities
