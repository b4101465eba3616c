"""Site-allocation policies: which cluster a grid job (``cluster == -1``) goes to.

Registered in :data:`simengine.registry.SITE_ALLOCATION`. A *static* policy is a
function ``allocate(jobs, processors, params, rng) -> int32 array`` that picks a
cluster index for every job of ``jobs`` at once, independently of the system state.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from simengine.registry import SITE_ALLOCATION
from simengine.workload import JobTable


class RandomParams(BaseModel):
    """Parameters of the ``random`` site-allocation policy."""

    model_config = ConfigDict(extra="forbid")

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
    if params is None:
        params = RandomParams()
    elif not isinstance(params, RandomParams):
        params = RandomParams.model_validate(params)
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
    group = np.searchsorted(thresholds, sizes, side="left")  # smallest cluster size >= job size
    for g in np.unique(group):
        members = np.flatnonzero(group == g)
        eligible = procs >= thresholds[g]
        w = np.where(eligible, base, 0.0)
        out[members] = rng.choice(len(procs), size=len(members), p=w / w.sum())
    return out
