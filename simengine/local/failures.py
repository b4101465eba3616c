"""Resource failures and maintenance of a cluster (docs/failures.md): the schema part
(``platform.clusters[].failures``) and the down intervals a replication draws from it.

A cluster's processors fail in units of ``group`` (1: each processor alone; a node of g
processors; the cluster's size: the whole cluster). Each unit alternates between up, for a
time drawn from ``mtbf``, and down, for a time drawn from ``mttr`` (an alternating renewal
process, up at time 0), independently of the others; ``down`` adds fixed intervals
(maintenance windows, or a failure trace's down times). The event core (simengine.local.core)
takes each down interval as an outage on the unit's processors: the jobs there are killed
and requeued from scratch (``jobs: requeue``) or lost (``jobs: lose``), reservations there
are broken, and the schedulers see the processors unavailable until the repair.
"""
from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field, model_serializer, model_validator

from simengine.distributions import Distribution
from simengine.schema_base import StrictModel

__all__ = ["DownInterval", "Failures", "draw_outages", "down_time"]


class DownInterval(StrictModel):
    """Processors ``first`` .. ``first + processors - 1`` of the cluster are down over [start, end)."""

    start: float = Field(ge=0, description="When the processors go down (s, ≥ 0)")
    end: float = Field(gt=0, description="When they are back up (s, after start)")
    first: int = Field(0, ge=0, description="The first processor down (0-based, ≥ 0)")
    processors: int | None = Field(None, gt=0, description="How many processors from first (> 0); empty: all "
                                                           "from first to the cluster's last")
    notice: float = Field(0.0, ge=0, description="Announced this many seconds before start (≥ 0), as a "
                                                 "maintenance reservation: from then on the schedulers plan around "
                                                 "it. 0 (default): unforeseen, as a failure")

    @model_serializer(mode="wrap")
    def _leave_out_no_notice(self, handler):
        data = handler(self)  # (the default is left out: intervals written before it keep their hash)
        if data.get("notice") == 0.0:
            del data["notice"]
        return data

    @model_validator(mode="after")
    def _ordered(self):
        if self.end <= self.start:
            raise ValueError(f"end must be after start ({self.start:g}); got {self.end:g}")
        return self


class Failures(StrictModel):
    """How a cluster's processors fail and are repaired (docs/failures.md)."""

    mtbf: Distribution | None = Field(
        None, description="Time a unit stays up between failures (s): its mean is the MTBF. Give mttr too; "
                          "empty: no drawn failures (down intervals only)")
    mttr: Distribution | None = Field(
        None, description="Time a failed unit takes to be repaired (s): its mean is the MTTR")
    group: int = Field(1, gt=0, description="Processors that fail together (> 0): 1, each processor alone; a "
                                            "node's processors; the cluster's processors, the whole cluster")
    jobs: Literal["requeue", "lose"] = Field(
        "requeue", description="A job running on a processor that fails: requeue (killed, back in the queue, "
                               "restarted from scratch) or lose (killed for good)")
    down: list[DownInterval] = Field([], description="Fixed down intervals: maintenance windows, or the down "
                                                     "times of a failure trace")

    @model_validator(mode="after")
    def _both(self):
        if (self.mtbf is None) != (self.mttr is None):
            missing = "mttr" if self.mttr is None else "mtbf"
            raise ValueError(f"{missing} is missing: drawn failures need both mtbf and mttr")
        if self.mtbf is None and not self.down:
            raise ValueError("no failures: give mtbf and mttr, or down intervals (or leave failures out)")
        for name in ("mtbf", "mttr"):
            d = getattr(self, name)
            if d is not None and d.min_value() < 0:
                raise ValueError(f"{name} must not draw negative times (this distribution can draw "
                                 f"{d.min_value():g})")
        if self.mtbf is not None and self.mtbf.mean() <= 0:
            raise ValueError("mtbf must have a mean above 0")
        return self


def problems(failures: Failures, processors: int) -> list[tuple[tuple, str]]:
    """What does not fit the cluster, as (path below ``failures``, message)."""
    found = []
    if failures.group > processors:
        found.append((("group",), f"must be at most the cluster's {processors} processors; got {failures.group}"))
    for i, d in enumerate(failures.down):
        if d.first >= processors:
            found.append((("down", i, "first"), f"must be below the cluster's {processors} processors; got {d.first}"))
        elif d.processors is not None and d.first + d.processors > processors:
            found.append((("down", i, "processors"), f"processors {d.first} .. {d.first + d.processors - 1} do not "
                                                     f"exist: the cluster has {processors}"))
    return found


def draw_outages(failures: Failures, processors: int, until: float, rng: np.random.Generator,
                 limit: int | None = None) -> np.ndarray:
    """Down intervals over [0, until) as rows (start, end, first processor, processors, announced
    at), ordered by start (then first processor); the fixed ones are kept whole, wherever they lie
    (a drawn failure is announced at its start). Past ``limit`` rows the drawing stops (the caller
    refuses the scenario: more than it can simulate)."""
    parts: list[np.ndarray] = []
    rows = [(d.start, d.end, d.first, d.processors if d.processors is not None else processors - d.first,
             max(d.start - d.notice, 0.0)) for d in failures.down]
    if failures.mtbf is not None and until > 0:
        g = failures.group
        units = -(-processors // g)
        firsts = np.arange(units) * g
        sizes = np.minimum(firsts + g, processors) - firsts
        t = np.zeros(units)  # each unit's time: up from 0
        cycle = failures.mtbf.mean() + failures.mttr.mean()
        while True:
            live = np.flatnonzero(t < until)
            if not len(live):
                break
            k = int(min(max(4, math.ceil(1.2 * (until - t[live].min()) / cycle) + 2), max(4, (1 << 22) // len(live))))
            up = failures.mtbf.sample(rng, len(live) * k).reshape(len(live), k)
            down = failures.mttr.sample(rng, len(live) * k).reshape(len(live), k)
            ends = t[live, None] + np.cumsum(up + down, axis=1)  # each cycle's repair
            starts = ends - down
            keep = (starts < until) & (down > 0)
            u = np.broadcast_to(live[:, None], keep.shape)[keep]
            parts.append(np.column_stack([starts[keep], ends[keep], firsts[u], sizes[u], starts[keep]]))
            t[live] = ends[:, -1]
            if limit is not None and sum(len(p) for p in parts) > limit:
                break
    fixed = np.array(rows, float).reshape(-1, 5)
    out = np.concatenate([fixed] + parts) if failures.mtbf is not None and until > 0 and parts else fixed
    order = np.lexsort((out[:, 2], out[:, 0]))
    return out[order]


def down_time(outages: np.ndarray, processors: int, t0: float, t1: float) -> float:
    """Processor-seconds down within [t0, t1): intervals overlapping on a processor count once."""
    if not len(outages) or t1 <= t0:
        return 0.0
    a = np.clip(outages[:, 0], t0, t1)
    b = np.clip(outages[:, 1], t0, t1)
    first, count = outages[:, 2].astype(np.int64), outages[:, 3].astype(np.int64)
    total = 0.0
    # per block of processors sharing their intervals: the union of the intervals, times the block's size
    cuts = np.unique(np.concatenate([first, first + count, [0, processors]]))
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        on = (first <= lo) & (first + count >= hi)
        if not on.any():
            continue
        s, e = a[on], b[on]
        order = np.argsort(s, kind="stable")
        s, e = s[order], e[order]
        reach = np.maximum.accumulate(e)
        new = np.ones(len(s), bool)
        new[1:] = s[1:] > reach[:-1]
        starts = s[new]
        ends = np.append(reach[np.flatnonzero(new)[1:] - 1], reach[-1])
        total += float((ends - starts).sum()) * (hi - lo)
    return total
