"""What every local scheduler receives and returns, and the rules they share."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit
from pydantic import BaseModel, ConfigDict, Field


@dataclass
class ClusterSchedule:
    """Outcome of simulating one cluster: a start time per job (NaN = never started)
    and, for schedulers that pin jobs to processors (LWR), the processor of each job."""

    start: np.ndarray
    processor: np.ndarray | None = None


class BackfillParams(BaseModel):
    """Parameters shared by the queue-based schedulers."""

    model_config = ConfigDict(extra="forbid")
    overrun_step: float = Field(
        60.0, gt=0,
        description="A job still running when its requested time is up is planned to end this many "
                    "seconds later, then twice as long again each time it outlives the new plan "
                    "(60, 120, 240 s ...). Only used when walltime is not enforced.")


@njit(cache=True)
def planned_end(start, estimate, now, overrun_step, still_running):
    """When the scheduler expects a running job to end, seen at time ``now``.

    Until its estimate is up that is start + estimate; a job that outlives it is given
    extensions of overrun_step, 2*overrun_step, ... so the plan stays in the future.
    A plan ending exactly now counts as ending now unless the job is known to be
    ``still_running`` (its completion may simply be the next event at this instant).
    """
    end = start + estimate
    if end > now or (end == now and not still_running):
        return end
    ext = overrun_step
    while end + ext <= now:
        end += ext
        ext *= 2.0
    return end + ext


def check_inputs(submit: np.ndarray, processors: np.ndarray, cluster_processors: int) -> None:
    if len(submit) > 1 and np.any(np.diff(submit) < 0):
        raise ValueError("jobs must be sorted by submit time")
    if len(processors) and (processors.max() > cluster_processors or processors.min() < 1):
        raise ValueError(f"job sizes must be within 1..{cluster_processors}")



@njit(cache=True)
def compact_queue(queue, qn, qpos):
    """Drop started jobs (marked -1) from an arrival-ordered queue; return its new length.

    ``qpos[j]``, each job's place in the queue, is kept up to date.
    """
    m = 0
    for q in range(qn):
        if queue[q] >= 0:
            queue[m] = queue[q]
            qpos[queue[m]] = m
            m += 1
    return m
