"""Algorithm 1: map the scheduled EPs to node ids, and the Gantt segments that follow.

At every change point of any application (in time order) the applications that shrink
(or end) free nodes first -- the application chooses which (condition C4 of the paper):
with ``release="last_acquired"`` it frees the nodes it acquired most recently, so the
node it started on (its driver) is the last it gives up; with ``"highest"`` it frees
its highest-numbered nodes. Then the applications that grow (or start) take the
lowest-numbered free nodes (the paper takes them at random; lowest-first is
deterministic and gives the Gantt long contiguous rows). Because the scheduled EPs
never add up to more than n_max, there are always enough free nodes.

Segments follow docs/output.md: cluster 0, one row per contiguous node block per held
stage, ``component`` = stage index, kind ``run`` for the computation (the start of
the hold) and ``stretched`` for the held-but-idle rest of a stretched stage.
"""
from __future__ import annotations

import heapq
import math
from typing import Protocol

import numpy as np

from simengine.gantt import KIND_RUN, KIND_STRETCHED, SEGMENT_COLUMNS

class Schedule(Protocol):
    """What the mapping reads of a schedule (:class:`simengine.evolving.schedule.Schedule`)."""

    n_max: int
    stage_nodes: list[np.ndarray]
    stage_work: list[np.ndarray]
    holds: list[np.ndarray]
    release: str

    @property
    def applications(self) -> int: ...


class Mapping:
    """Algorithm 1 walked in time order and resumable (the live Gantt follows it):
    :meth:`advance` maps every change point before a time; ``rows`` are the segments of the
    held stages begun so far (tuples in SEGMENT_COLUMNS order, in the order they began)."""

    def __init__(self, schedule: Schedule):
        self.schedule = schedule
        events: dict[float, list[tuple[int, int, int]]] = {}
        for a, (h, n) in enumerate(zip(schedule.holds, schedule.stage_nodes)):
            for i in range(len(n)):
                events.setdefault(float(h[i]), []).append((a, i, int(n[i])))
            events.setdefault(float(h[-1]), []).append((a, len(n), 0))
        self.events = events
        self.times = sorted(events)
        self.next = 0  # the first change point not mapped yet
        self.free = list(range(schedule.n_max))
        heapq.heapify(self.free)
        self.held: list[list[int]] = [[] for _ in range(schedule.applications)]  # acquisition order
        self.sets: list[list[list[int]]] = [[[] for _ in n] for n in schedule.stage_nodes]
        self.rows: list[tuple] = []

    @property
    def done(self) -> bool:
        return self.next == len(self.times)

    def advance(self, until: float) -> bool:
        """Map every change point before ``until``; True when none is left."""
        times, release = self.times, self.schedule.release
        free, held = self.free, self.held
        while self.next < len(times) and times[self.next] < until:
            t = times[self.next]
            self.next += 1
            changes = self.events[t]
            for a, i, want in changes:  # shrink first: the application frees nodes of its choice
                have = held[a]
                if len(have) > want:
                    if release == "highest":
                        have.sort()
                    gone = have[want:]
                    del have[want:]
                    for node in gone:
                        heapq.heappush(free, node)
            for a, i, want in changes:  # then grow: take the lowest-numbered free nodes
                have = held[a]
                if len(have) < want:
                    if len(free) < want - len(have):
                        raise RuntimeError(f"schedule exceeds n_max at t={t}")  # pragma: no cover
                    have.extend(sorted(heapq.heappop(free) for _ in range(want - len(have))))
            for a, i, want in changes:
                if i < len(self.sets[a]):
                    self.sets[a][i] = ids = sorted(held[a])
                    self._stage_rows(a, i, ids)
        return self.done

    def _stage_rows(self, a: int, i: int, ids: list[int]) -> None:
        h, work = self.schedule.holds[a], self.schedule.stage_work[a]
        busy_end = h[i] + work[i]
        for first, count in _blocks(ids):
            self.rows.append((0, first, count, h[i], busy_end, a, i, KIND_RUN))
            if h[i + 1] > busy_end:
                self.rows.append((0, first, count, busy_end, h[i + 1], a, i, KIND_STRETCHED))

    def segments(self) -> dict[str, np.ndarray]:
        """Every segment, once the walk is done (columns of SEGMENT_COLUMNS; kind as int8 codes)."""
        self.advance(math.inf)
        rows = sorted(self.rows, key=lambda r: (r[3], r[1]))
        cols = list(zip(*rows)) if rows else [()] * len(SEGMENT_COLUMNS)
        dtypes = (np.int64, np.int64, np.int64, np.float64, np.float64, np.int64, np.int64, np.int8)
        return {name: np.asarray(col, dtype=dt) for name, col, dt in zip(SEGMENT_COLUMNS, cols, dtypes)}


def node_sets(schedule: Schedule) -> list[list[list[int]]]:
    """``sets[a][i]``: the node ids application a holds during its held stage i."""
    m = Mapping(schedule)
    m.advance(math.inf)
    return m.sets


def _blocks(ids: list[int]) -> list[tuple[int, int]]:
    """Sorted ids as (first, count) runs of consecutive ids."""
    out: list[tuple[int, int]] = []
    for x in ids:
        if out and out[-1][0] + out[-1][1] == x:
            out[-1] = (out[-1][0], out[-1][1] + 1)
        else:
            out.append((x, 1))
    return out


def segments(schedule: Schedule) -> dict[str, np.ndarray]:
    """Gantt segments (columns of ``simengine.gantt.SEGMENT_COLUMNS``; kind as int8 codes)."""
    return Mapping(schedule).segments()
