"""Claiming policies for GridWeb's KOALA runs, written against simengine.policy (docs/policies/claiming.md).

* ``python-icp`` -- KOALA's Incremental Claiming Policy (Algorithm 2 of Mohamed's thesis) written
  from the thesis's rules with nothing but the public API: the tests check that it claims exactly
  what the built-in ``icp`` claims, at the same times (so the API shows everything the built-in
  uses).
* ``claim-late`` -- a new policy: one try, ``lead`` seconds before the job start time, every
  component or none, never preempting; a failed try sends the job back to placement. With lead 0
  no processor is ever claimed and left idle while the files arrive (no PWT), at the price of
  more returns to placement.
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from simengine.policy import ClaimingPolicy, Fail, Requeue, Retry, register


@register
class PythonICP(ClaimingPolicy):
    """The Incremental Claiming Policy in plain Python, from the scenario's KOALA parameters."""

    name = "python-icp"
    summary = "Incremental Claiming Policy written with the public API (identical to the built-in icp)"

    # first_try is the base class's: JCT_0 = JPT + L * FTT

    def claim(self, now, job, grid):
        T = self.koala.T
        waiting = [c for c in job.components if c.claimed is None]
        # which of them could be claimed where they are placed, taken in component order
        left = grid.idle
        fits = []
        for c in waiting:
            if left[c.cluster] >= c.size:
                left[c.cluster] -= c.size
                fits.append(c)
        share = (len(job.components) - len(waiting) + len(fits)) / len(job.components)
        if share >= T - 1e-12:  # (the tolerance: T = 1/3 of three components)
            for c in fits:
                grid.claim(c)
            for c in waiting:
                if c.claimed is None:
                    self.claim_the_rest(now, job, grid, c)
            if all(c.claimed is not None for c in job.components):
                return None
        return self.after_a_failed_try(now, job)

    def claim_the_rest(self, now, job, grid, c):
        # 1. somewhere else, if its file can still arrive by the job start time
        cluster = c.cluster
        if not c.fixed:
            there = grid.where(c)
            if there is not None:
                in_time = now + there.ftt < job.start_time or (there.ftt == 0 and now <= job.start_time)
                if in_time:
                    grid.move(c, there.cluster, there.site)
                    grid.claim(c)
                    return
                cluster = there.cluster
        # 2. by preempting lower-priority KOALA jobs on that cluster (super-low jobs preempt nobody)
        if job.priority == 3 or not grid.preemption.preempts:
            return
        lower = [h for h in grid.holders(cluster) if h.priority > job.priority]
        lower.sort(key=lambda h: (-h.priority, -h.start_time))  # lowest priority, then newest, first
        idle = grid.idle[cluster]
        freed, victims = 0, []
        for h in lower:
            victims.append(h)
            freed += h.held[cluster]
            if idle + freed >= c.size:
                break
        else:
            return  # preempting all of them would not be enough: preempt none
        for h in victims:
            grid.preempt(h)
        if grid.idle[cluster] >= c.size:
            grid.move(c, cluster)
            grid.claim(c)

    def after_a_failed_try(self, now, job):
        k = self.koala
        if k.max_claim_tries is not None and job.tries >= k.max_claim_tries:
            return Fail()
        # JCT_{n+1} = JCT_n + L (JST - JCT_n); too close to JST: back to placement with a smaller L
        nxt = now + job.L * (job.start_time - now) if job.L > 0 else job.start_time
        if job.start_time - nxt < k.min_gap:
            return Requeue(L=max(k.l_floor, job.L - k.l_step))
        return Retry(nxt)


class ClaimLateParams(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    lead: float = Field(0.0, ge=0, description="the one claiming try comes this many seconds before the job start "
                                               "time (not before the placement)")


@register
class ClaimLate(ClaimingPolicy):
    """One claiming try shortly before the job start time, all or nothing, never preempting."""

    name = "claim-late"
    Params = ClaimLateParams
    summary = "Claim late: one all-or-nothing try `lead` s before the job start time, no preemption; else re-place"

    def first_try(self, job):
        return max(job.placed_at, job.start_time - self.params.lead)

    def claim(self, now, job, grid):
        left = grid.idle
        for c in job.components:
            left[c.cluster] -= c.size
        if (left < 0).any():
            return Requeue()  # L unchanged: it plays no part here
        for c in job.components:
            grid.claim(c)
        return None
