"""Grid placement: where a grid job's components go (GRID_PLACEMENT).

The built-in policies are :class:`simengine.policy.PlacementPolicy` subclasses, written against
the same API as a researcher's own (docs/write-a-policy.md): ``place(job, idle)`` returns a
cluster per component, or a (cluster, file site) pair, or None. :func:`place` is the engine's
side, used by KOALA (simengine.grid.koala): fixed components first, flexible jobs split by FCM
whatever the policy, the policy's answer checked, file sites and transfer times filled in.

Worst-Fit is also compiled into the co-allocation kernel (capability ``compiled``, ``code``:
the branch of simengine.grid.kernel), where the Repeated Placement Policy runs; every other
policy runs there too, called from Python at each attempt (simengine.grid.model.GridRun).
"""
from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from simengine.policy import Grid, GridJob, PlacementPolicy, PolicyError, policy_raised, register
from simengine.registry import GRID_PLACEMENT

__all__ = ["place", "placement_policy", "best_site", "WorstFit", "CloseToFiles", "ClusterMinimization",
           "FlexibleClusterMinimization"]


# ---- the built-in policies ------------------------------------------------------------------------

def each_component(job: GridJob, idle: np.ndarray, pick) -> list[int] | None:
    """Components one at a time, in the job's order: ``pick(size)`` names a cluster (seeing
    ``idle`` as the earlier components left it); None, all or nothing, when that cluster has too
    few idle processors."""
    out = []
    for s in job.sizes:
        c = pick(s)
        if idle[c] < s:
            return None
        idle[c] -= s
        out.append(c)
    return out


class WorstFitParams(BaseModel):
    """Parameters of Worst-Fit placement."""

    model_config = ConfigDict(strict=True, extra="forbid")

    tie_break: Literal["lowest_index"] = Field(
        "lowest_index", description="clusters with equally many idle processors: the lowest index wins")


@register
class WorstFit(PlacementPolicy):
    """Components one at a time to the cluster with the most idle processors, the counts
    updated after each; several components may share a cluster; all or nothing."""

    name = "worst-fit"
    Params = WorstFitParams
    summary = "Worst-Fit: each component in turn to the cluster with the most idle processors (all or nothing)"
    capabilities = ("compiled",)
    code = 0  # simengine.grid.kernel.PLACE_WORST_FIT

    def place(self, job, idle):
        return each_component(job, idle, lambda s: int(np.argmax(idle)))


class CloseToFilesParams(BaseModel):
    """Parameters of Close-to-Files (Algorithm 1)."""

    model_config = ConfigDict(strict=True, extra="forbid")

    history: Literal["all_pairs", "empty"] = Field(
        "all_pairs", description="the history table H at the start: every (cluster, file site) pair (the thesis's "
                                 "experiments) or empty (then only clusters holding the file are used)")
    pick: Literal["alphabetical"] = Field("alphabetical", description="among file sites with enough idle "
                                                                      "processors, the first by name")


@register
class CloseToFiles(PlacementPolicy):
    """KOALA's Algorithm 1: a component goes to a file site with room (the first by name), else
    to the (cluster, file site) pair of the history table H with the least transfer time, and
    (E, F') enters H for every file site F' of the job. A job without files: Worst-Fit."""

    name = "close-to-files"
    Params = CloseToFilesParams
    summary = ("Close-to-Files (KOALA): components on a file site with room, else the (cluster, file site) pair "
               "of the history table with the least transfer time")

    def __init__(self, params, grid):
        super().__init__(params, grid)
        files = grid.files
        #: H, the (cluster, file site) pairs transfers have used
        self.history = {(e, f) for e in range(len(grid.processors)) for f in range(len(files.site_cluster))} \
            if files is not None and params.history == "all_pairs" else set()

    def place(self, job, idle):
        files = self.grid.files
        if files is None or job.file_size <= 0 or not job.file_sites:
            return WorstFit.place(self, job, idle)
        out = []
        for s in job.sizes:
            here = [f for f in job.file_sites if files.site_cluster[f] >= 0 and idle[files.site_cluster[f]] >= s]
            if here:
                site = min(here, key=lambda f: files.names[f])
                c = files.site_cluster[site]
            else:
                pairs = [(files.time(job.file_size, f, e), e, f) for (e, f) in self.history
                         if f in job.file_sites and idle[e] >= s]
                if not pairs:
                    return None
                _, c, site = min(pairs)
                for f in job.file_sites:
                    self.history.add((c, f))
            idle[c] -= s
            out.append((c, site))
        return out


class ClusterMinParams(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    tie_break: Literal["lowest_index"] = "lowest_index"


@register
class ClusterMinimization(PlacementPolicy):
    """Components (largest first) to the first cluster, in decreasing idle order at the start of
    the placement, where they fit: as few clusters as possible."""

    name = "cluster-minimization"
    Params = ClusterMinParams
    summary = "Cluster Minimization (KOALA): components fill the clusters with the most idle processors first"

    def place(self, job, idle):
        order = sorted(range(len(idle)), key=lambda c: (-idle[c], c))
        return each_component(job, idle, lambda s: next((e for e in order if idle[e] >= s), 0))


class FlexibleClusterMinParams(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    min_component: int = Field(1, ge=1, description="FCM does not split off components smaller than this "
                                                    "(unless it is the rest of the job)")


@register
class FlexibleClusterMinimization(ClusterMinimization):
    """CM for flexible jobs: the total size is split over the clusters in decreasing idle order
    (the engine's split, :func:`place`); a job with fixed components is placed as by CM."""

    name = "flexible-cluster-minimization"
    Params = FlexibleClusterMinParams
    summary = ("Flexible Cluster Minimization (KOALA): a flexible job's total size split greedily over the "
               "emptiest clusters")


# ---- the engine's side ----------------------------------------------------------------------------

def placement_policy(name: str, params: dict | BaseModel | None, processors, files=None) -> PlacementPolicy:
    """The registered placement policy ``name`` set up for one simulation."""
    entry = GRID_PLACEMENT.get(name)
    return entry.implementation(entry.validated(params), Grid(np.asarray(processors, np.int64), files))


def best_site(files, job, cluster: int) -> tuple[int, float]:
    """The job's file site with the shortest transfer to ``cluster`` (ties: lowest index) and
    that time; (-1, 0) for a job without files."""
    if files is None or job.file_size <= 0 or not job.file_sites:
        return -1, 0.0
    best = min(job.file_sites, key=lambda f: (files.time(job.file_size, f, cluster), f))
    return best, files.time(job.file_size, best, cluster)


def place(job, avail: np.ndarray, policy: PlacementPolicy, files,
          only: list[int] | None = None) -> list[tuple[int, int, int, float]] | None:
    """Place KOALA job ``job`` (or its components ``only``) atomically on ``avail`` idle
    processors with ``policy``.

    Returns (size, cluster, file site, transfer time) per component, in component order, or
    None. ``avail`` is not modified. Flexible jobs are split by FCM (no component below
    ``min_component`` unless it is the rest: the FCM placement's parameter, 1 under any other
    policy) whatever the policy; fixed components go to their cluster; the policy places the
    others, largest first."""
    min_component = getattr(policy.params, "min_component", 1)
    a = avail.astype(np.int64).copy()
    C = len(a)
    if job.flexible and only is None:
        order = sorted(range(C), key=lambda c: (-a[c], c))
        rem, out = job.sizes[0], []
        for c in order:
            chunk = min(rem, int(a[c]))
            if chunk <= 0 or (chunk < min_component and chunk < rem):
                continue
            site, t = best_site(files, job, c)
            out.append((chunk, c, site, t))
            a[c] -= chunk
            rem -= chunk
            if rem == 0:
                return out
        return None
    idx = list(range(len(job.sizes))) if only is None else list(only)
    fixed = [k for k in idx if job.clusters is not None and job.clusters[k] >= 0 and not job.flexible]
    free = sorted((k for k in idx if k not in fixed), key=lambda k: -job.sizes[k])
    res: dict[int, tuple[int, int, int, float]] = {}
    for k in fixed:  # fixed components first, then the others in decreasing size
        c, s = job.clusters[k], job.sizes[k]
        if a[c] < s:
            return None
        a[c] -= s
        res[k] = (s, c, *best_site(files, job, c))
    if free:
        sizes = tuple(job.sizes[k] for k in free)
        try:
            got = policy.place(GridJob(sizes, job.submit, job.priority, job.file_size, tuple(job.file_sites)), a.copy())
        except Exception as exc:  # noqa: BLE001 - the researcher's code: any failure
            raise policy_raised(policy.name, f"place() for a job of {len(sizes)} components submitted at "
                                             f"t={job.submit:g}", exc) from exc
        if got is None:
            return None
        if len(got) != len(free):
            raise PolicyError(f"{policy.name}: placed {len(got)} components of a job with {len(free)} to place")
        for k, choice in zip(free, got):
            s = job.sizes[k]
            c, site = (choice, None) if isinstance(choice, (int, np.integer)) else choice
            if not (isinstance(c, (int, np.integer)) and 0 <= c < C):
                raise PolicyError(f"{policy.name}: a component of {s} processors was placed on {c!r}, not a "
                                  f"cluster index 0..{C - 1}")
            if a[c] < s:
                raise PolicyError(f"{policy.name}: components were placed on cluster {c} beyond its {avail[c]} idle "
                                  f"processors")
            if site is None:
                site, t = best_site(files, job, c)
            elif site not in job.file_sites:
                raise PolicyError(f"{policy.name}: file site {site!r} does not hold the job's file")
            else:
                t = files.time(job.file_size, site, c)
            a[c] -= s
            res[k] = (s, int(c), int(site), t)
    return [res[k] for k in idx]
