"""Best-Fit with headroom, a grid placement policy for GridWeb's KOALA runs, written against
simengine.policy.

Each component (largest first) goes to the cluster where it fits with the fewest idle
processors left over: it packs busy clusters and keeps large holes for large components, the
opposite of KOALA's Worst-Fit. ``headroom`` keeps that many processors idle on a cluster after
a component is placed there: local jobs may take placed-but-unclaimed processors, so headroom
trades a later placement for fewer failed claims.
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from simengine.policy import PlacementPolicy, register


class BestFitParams(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    headroom: int = Field(0, ge=0, description="processors that must stay idle on a cluster after a component "
                                               "is placed there (room for local jobs)")


@register
class BestFit(PlacementPolicy):
    """Best-Fit: each component to the cluster it leaves with the fewest idle processors."""

    name = "best-fit"
    Params = BestFitParams
    summary = "Best-Fit: each component to the cluster it fills most tightly, keeping `headroom` processors idle"

    def place(self, job, idle):
        clusters = []
        for size in job.sizes:
            fits = [c for c in range(len(idle)) if idle[c] - size >= self.params.headroom]
            if not fits:
                return None  # the job waits for the next placement try
            best = min(fits, key=lambda c: (idle[c] - size, c))
            idle[best] -= size
            clusters.append(best)
        return clusters
