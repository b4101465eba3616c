"""Placement policies for co-allocated jobs with start deadlines (Ballier's Repeated Placement
Policy), written against simengine.policy (docs/policies/deadline-placement.md).

``best-fit-deadline`` packs: each component goes where it leaves the fewest idle processors, so
large holes stay for large jobs. A claim made long before the deadline holds its processors idle
until then, and local jobs arriving meanwhile could have used them, so early tries keep
``headroom`` processors idle per cluster; the headroom shrinks with the time left and is gone at
the attempt at the deadline, which may take everything.

``python-worst-fit`` is the compiled built-in Worst-Fit written out in plain Python: it gives the
kernel's placements exactly (the tests compare every job's), which shows the Python path loses
nothing.

Both also place KOALA jobs (a job without a deadline: no headroom).
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from simengine.policy import PlacementPolicy, register


class BestFitDeadlineParams(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    headroom: int = Field(0, ge=0, description="processors kept idle per cluster at a try made as early as the job's "
                                               "submission; it shrinks in proportion to the time left before the "
                                               "deadline (none at the deadline)")


@register
class BestFitDeadline(PlacementPolicy):
    """Best-Fit whose headroom for local jobs shrinks as the start deadline nears."""

    name = "best-fit-deadline"
    Params = BestFitDeadlineParams
    summary = ("Best-Fit for start deadlines: each component where it leaves the fewest idle processors, keeping "
               "a headroom for local jobs that shrinks to nothing at the deadline")

    def keep(self, job) -> int:
        """Processors to leave idle on a cluster at this attempt."""
        deadline = getattr(job, "deadline", None)  # (KOALA jobs have none)
        if deadline is None or deadline <= job.submit:
            return 0
        left = max(deadline - job.now, 0.0) / (deadline - job.submit)  # 1 at submission, 0 at the deadline
        return int(self.params.headroom * left)

    def place(self, job, idle):
        keep = self.keep(job)
        clusters = []
        for size in job.sizes:
            fits = [c for c in range(len(idle)) if idle[c] - size >= keep]
            if not fits:
                return None  # a later try (or the deadline) decides
            best = min(fits, key=lambda c: (idle[c] - size, c))
            idle[best] -= size
            clusters.append(best)
        return clusters


@register
class PythonWorstFit(PlacementPolicy):
    """Worst-Fit in plain Python: the compiled built-in's placements, through the public API."""

    name = "python-worst-fit"
    summary = "Worst-Fit written in plain Python (the same placements as the compiled worst-fit, slower)"

    def place(self, job, idle):
        clusters = []
        for size in job.sizes:
            most = max(range(len(idle)), key=lambda c: (idle[c], -c))  # ties: the lowest index
            if idle[most] < size:
                return None  # all or nothing
            idle[most] -= size
            clusters.append(most)
        return clusters
