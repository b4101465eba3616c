"""Round-robin site allocation for GridWeb, written against simengine.policy.

Grid-target jobs go to the clusters in turn (0, 1, 2, ... and around again), skipping a
cluster too small for the job: the deterministic baseline beside Zikos & Karatza's random
allocation, which sends jobs in proportion to the clusters' processors.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from simengine.policy import SiteAllocationPolicy, register


class RoundRobinParams(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    start: Literal["first", "random"] = Field(
        "first", description="first: the first job goes to cluster 0; random: to a cluster drawn from the run's "
                             "generator (so replications differ)")


@register
class RoundRobin(SiteAllocationPolicy):
    """Round-robin: grid jobs to the clusters in turn, skipping clusters too small for a job."""

    name = "round-robin"
    Params = RoundRobinParams
    summary = "Round-robin: grid jobs to the clusters in turn, skipping those too small for the job"

    def __init__(self, params, processors, rng):
        super().__init__(params, processors, rng)
        self.next = int(rng.integers(len(processors))) if params.start == "random" else 0

    def choose(self, job):
        C = len(self.processors)
        for step in range(C):
            c = (self.next + step) % C
            if self.processors[c] >= job.size:
                self.next = (c + 1) % C
                return c
        raise ValueError(f"job {job.id} needs {job.size} processors; no cluster has that many")
