"""Shortest-job-first backfilling, a local scheduler for GridWeb written against simengine.policy.

Waiting jobs are taken shortest first (by requested time, or by requested area = time x
processors); they start while they fit. The first that does not fit gets a reservation at the
earliest time enough processors are expected to be free (running jobs end at start + estimate
at the latest); a later job starts now when it fits and cannot delay that reservation: it ends
before it, or it only uses processors the reserved job leaves free (EASY's rule, with the queue
in SJF order instead of arrival order).
"""
from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from simengine.policy import LocalScheduler, register


class SJFParams(BaseModel):
    """How "shortest" is measured."""

    model_config = ConfigDict(strict=True, extra="forbid")
    key: Literal["estimate", "area"] = Field(
        "estimate", description="estimate: the requested time; area: requested time x processors")


@register
class SJFBackfill(LocalScheduler):
    """Shortest job first, with EASY backfilling around the shortest job that does not fit."""

    name = "sjf-backfill"
    Params = SJFParams
    summary = "Shortest job first (requested time or area) with EASY backfilling"

    def schedule(self, now, queue, free, running):
        if self.params.key == "area":
            order = sorted(queue, key=lambda j: (j.estimate * j.size, j.submit, j.id))
        else:
            order = sorted(queue, key=lambda j: (j.estimate, j.submit, j.id))
        started = []
        for k, job in enumerate(order):
            if job.size > free:
                break
            started.append(job)
            free -= job.size
        else:
            return started
        head = order[k]
        # the head's reservation: when the jobs running (and starting now) will have freed enough
        ends = sorted([(max(j.expected_end, now), j.size) for j in running]
                      + [(now + j.estimate, j.size) for j in started])
        shadow, spare = math.inf, free
        for end, size in ends:
            spare += size
            if spare >= head.size:
                shadow = end
                break
        extra = spare - head.size  # processors the head leaves free at its reservation
        for job in order[k + 1:]:
            if job.size > free:
                continue
            if now + job.estimate <= shadow:
                started.append(job)
                free -= job.size
            elif job.size <= extra:
                started.append(job)
                free -= job.size
                extra -= job.size
        return started
