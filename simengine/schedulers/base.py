"""What every local scheduler receives and returns, and the rules they share."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simengine.jit import njit
from pydantic import BaseModel, ConfigDict, Field


@dataclass
class ClusterSchedule:
    """Outcome of simulating one cluster: a start time per job (NaN = never started)
    and, for schedulers that pin jobs to processors (LWR), the processor of each job."""

    start: np.ndarray
    processor: np.ndarray | None = None


class ClusterSteps:
    """One cluster's compiled scheduler, advanced in slices of simulated time.

    The kernels are numba generators: they fill ``start`` (and ``processor``) as they go
    and pause before handling any event at or after ``until[0]``. After
    ``advance(T)`` every event before T has been handled, so every job starting before T
    has its start, and none starting at T or later has one yet (what the live Gantt,
    simengine.streaming, streams while a replication runs). ``to_end()`` runs the rest in
    one go: the schedule does not depend on how it was sliced.
    """

    def __init__(self, kernel, start: np.ndarray, until: np.ndarray, processor: np.ndarray | None = None):
        self.kernel, self.start, self.until, self.processor = kernel, start, until, processor
        self.done = False

    @staticmethod
    def outputs(n: int) -> tuple[np.ndarray, np.ndarray]:
        """A ``start`` column (NaN: not started) and the ``until`` cell for n jobs."""
        return np.full(n, np.nan), np.full(1, np.inf)

    def advance(self, until: float) -> None:
        """Handle every event before ``until``."""
        if self.done:
            return
        self.until[0] = until
        for _ in self.kernel:  # the kernel yields when its next event is at or after until
            return
        self.done = True

    def to_end(self) -> ClusterSchedule:
        self.advance(math.inf)
        return ClusterSchedule(self.start, self.processor)


class BackfillParams(BaseModel):
    """Parameters shared by the queue-based schedulers."""

    model_config = ConfigDict(strict=True, extra="forbid")
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
