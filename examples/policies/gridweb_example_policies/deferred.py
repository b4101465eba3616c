"""Zikos & Karatza's Deferred and SB-Deferred site allocation, written against simengine.policy's
StatefulSiteAllocation (docs/policies/site-allocation.md).

Deferred: grid jobs wait in the grid scheduler's queue until the next multiple of the allocation
interval A_I; then the queued jobs leave in arrival order, each to the site with the least
remaining work per processor (the first such site on a tie), a site's load counting the jobs sent
earlier in the same batch. SB-Deferred defers only the jobs whose service demand exceeds SDT and
sends the others at random, site k with probability c_k / sum(c).

They give the built-in ``deferred`` and ``sb_deferred`` (compiled with the sites,
simengine.grid_lwr) the same schedule, job for job (tests/simengine/test_policy_site_state.py).
"""
from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from simengine.policy import StatefulSiteAllocation, register


class DeferredParams(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)
    allocation_interval: float = Field(1.0, gt=0, description="A_I: queued jobs leave at every multiple of it")


class SBDeferredParams(DeferredParams):
    sdt: float = Field(4.0, gt=0, description="SDT: jobs with a service demand above it are deferred, the others "
                                              "go at random")
    weights: Literal["processors", "equal"] = Field(
        "processors", description="the random part: site k with probability c_k / sum(c), or every site alike")


def next_multiple(t: float, interval: float) -> float:
    """The first multiple of ``interval`` at or after ``t`` (a job arriving exactly on one is in that batch)."""
    b = math.ceil(t / interval) * interval
    return b + interval if b < t else b  # (t / interval rounded down)


def least_loaded(sites) -> int:
    """The site with the least remaining work per processor; the first one on a tie."""
    best, best_load = 0, math.inf
    for site in sites:
        load = site.remaining_work / site.processors
        if load < best_load:
            best, best_load = site.index, load
    return best


@register
class Deferred(StatefulSiteAllocation):
    """Deferred (Zikos & Karatza), in Python: every A_I, queued jobs go FCFS to the least-loaded site."""

    name = "python-deferred"
    Params = DeferredParams
    summary = "Deferred in plain Python: every A_I, queued jobs go FCFS to the site with least remaining work " \
              "per processor"

    def __init__(self, params, processors, speed, rng):
        super().__init__(params, processors, speed, rng)
        self.batch = None  # when the queued jobs leave (None: nothing queued)

    def choose(self, now, job, sites):
        if self.batch is None:  # the first job of a batch: it leaves at the next multiple of A_I
            self.batch = next_multiple(now, self.params.allocation_interval)
            self.wake_at(self.batch)
        return None  # hold it

    def release(self, now, job, sites):
        self.batch = None  # the whole queue leaves now
        return least_loaded(sites)  # (sites shows the jobs sent before this one)


@register
class SBDeferred(Deferred):
    """SB-Deferred (Zikos & Karatza), in Python: demand above SDT -> Deferred, else Random."""

    name = "python-sb-deferred"
    Params = SBDeferredParams
    summary = "SB-Deferred in plain Python: demand > SDT -> Deferred, else Random"

    def __init__(self, params, processors, speed, rng):
        super().__init__(params, processors, speed, rng)
        w = np.asarray(processors, np.float64) if params.weights == "processors" else np.ones(len(processors))
        self.cumulative = np.cumsum(w / w.sum()).tolist()

    def choose(self, now, job, sites):
        u = self.rng.random()  # one uniform per grid job, deferred or not, as the built-in draws them
        if job.work > self.params.sdt:
            return super().choose(now, job, sites)
        k = 0
        while k < len(self.cumulative) - 1 and u >= self.cumulative[k]:
            k += 1
        return k
