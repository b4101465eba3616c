"""Gantt segments (MODELS.md §8): which processors each job held, and when.

Local schedulers decide *when* a job runs and on how many processors; this pass
decides *which* processors, so the browser can draw one row per processor. Each job
takes the lowest-numbered free processors when it starts (ends are handled before
starts at the same instant), which is a valid assignment because no schedule ever
uses more processors than the cluster has. A job whose processors are not contiguous
gives one segment per contiguous block.
"""
from __future__ import annotations

import numpy as np

from simengine.jit import njit
from simengine.schedulers._heap import heap_pop, heap_push

#: Segment kinds, in the order of MODELS.md §8; stored as int8 codes.
KIND_NAMES = ("run", "claimed", "reservation", "suspended", "killed", "stretched", "transfer", "down")
KIND_RUN, KIND_CLAIMED, KIND_RESERVATION, KIND_SUSPENDED, KIND_KILLED, KIND_STRETCHED, KIND_TRANSFER, KIND_DOWN = range(8)

SEGMENT_COLUMNS = ("cluster", "first_processor", "processors", "t0", "t1", "job", "component", "kind")
SEGMENT_DTYPES = {"cluster": np.int32, "first_processor": np.int32, "processors": np.int32, "t0": np.float64,
                  "t1": np.float64, "job": np.int64, "component": np.int16, "kind": np.int8}


def segment_jobs(job_ids: np.ndarray, streams: np.ndarray, rows) -> tuple[np.ndarray, np.ndarray]:
    """(job id, stream) of segments given their job rows; a segment of no job (row -1: a
    processor down, docs/failures.md) gets job id 0 and stream -1."""
    rows = np.asarray(rows, np.int64)
    if not len(rows):
        return np.zeros(0, np.int64), np.zeros(0, np.int32)
    none = rows < 0
    at = np.where(none, 0, rows)
    ids = np.asarray(job_ids)[at] if len(job_ids) else np.zeros(len(rows), np.int64)
    st = np.asarray(streams)[at] if len(streams) else np.zeros(len(rows), np.int32)
    return np.where(none, 0, ids), np.where(none, -1, st)


def ordered_segments(seg) -> dict[str, np.ndarray]:
    """A Result's segments: the columns in their dtypes, rows ordered by (t0, cluster, first
    processor) -- the one order every model's Gantt is stored in (ties keep the given order)."""
    seg = {k: np.asarray(seg[k], SEGMENT_DTYPES[k]) for k in SEGMENT_COLUMNS}
    order = np.lexsort((seg["first_processor"], seg["cluster"], seg["t0"]))
    return {k: v[order] for k, v in seg.items()}

#: order of events at one instant: ends, then zero-length jobs (they hand their processors
#: straight back), then the other starts; ties by job index
EVENT_END, EVENT_ZERO, EVENT_START = 0, 1, 2


@njit(cache=True)
def _assign(size, hk, hv, state, held, offset, order_events, kinds):
    """Hand out processors for a batch of events (job ``order_events[e]`` of kind ``kinds[e]``)
    in the order given; the free-processor heap (``hk``, ``hv``, its size in ``state[0]``) and
    the processors each job holds (``held[offset[j]:offset[j + 1]]``) carry over from one batch
    to the next. Returns the blocks (event, first processor, count) the starts take."""
    total = 0
    for e in range(order_events.shape[0]):
        if kinds[e] != EVENT_END:
            total += size[order_events[e]]
    seg_event = np.empty(total, np.int64)
    seg_first = np.empty(total, np.int64)
    seg_count = np.empty(total, np.int64)
    ns = 0
    hn = state[0]
    taken = np.empty(hk.shape[0], np.int64)
    for e in range(order_events.shape[0]):
        j = order_events[e]
        if kinds[e] == EVENT_END:
            for k in range(offset[j], offset[j + 1]):
                hn = heap_push(hk, hv, hn, float(held[k]), held[k])
            continue
        m = size[j]
        for k in range(m):
            taken[k] = hv[0]
            hn = heap_pop(hk, hv, hn)
        # heap pops come out sorted: cut them into contiguous blocks
        first = taken[0]
        count = 1
        for k in range(1, m + 1):
            if k < m and taken[k] == taken[k - 1] + 1:
                count += 1
                continue
            seg_event[ns] = e
            seg_first[ns] = first
            seg_count[ns] = count
            ns += 1
            if k < m:
                first = taken[k]
                count = 1
        for k in range(m):
            held[offset[j] + k] = taken[k]
        if kinds[e] == EVENT_ZERO:  # zero-length: gives its processors back at once
            for k in range(m):
                hn = heap_push(hk, hv, hn, float(taken[k]), taken[k])
    state[0] = hn
    return seg_event[:ns], seg_first[:ns], seg_count[:ns]


class ProcessorAssigner:
    """Which processors the jobs of one cluster hold, decided in batches of events.

    Each job takes the lowest-numbered free processors when it starts (see the module
    docstring). ``events(jobs, kinds, times)`` takes the events of a batch -- every event of
    the batch must come after every event of the batches before it in (time, kind, job)
    order -- and returns the blocks (job, first processor, count) of the jobs it starts. One
    batch of all events gives :func:`assign_processors`; the live Gantt gives them slice by
    slice of simulated time and gets the same blocks. A job is a slot: it may start again
    after it has ended (a killed job that is requeued).
    """

    def __init__(self, size: np.ndarray, processors: int):
        self.size = np.asarray(size, np.int64)
        self.offset = np.zeros(len(self.size) + 1, np.int64)
        np.cumsum(self.size, out=self.offset[1:])
        self.held = np.empty(int(self.offset[-1]), np.int64)
        P = int(processors)
        # free processor ids in a min-heap (ids in order already form one)
        self.hk = np.empty(P + 1)
        self.hv = np.empty(P + 1, np.int64)
        self.hk[:P] = np.arange(P)
        self.hv[:P] = np.arange(P)
        self.state = np.array([P], np.int64)

    def add_jobs(self, size: np.ndarray) -> np.ndarray:
        """Append jobs of ``size`` processors (for a model that learns its jobs as it runs);
        returns their indices."""
        size = np.asarray(size, np.int64)
        first = len(self.size)
        self.size = np.concatenate([self.size, size])
        self.offset = np.concatenate([self.offset, self.offset[-1] + np.cumsum(size)])
        self.held = np.concatenate([self.held, np.empty(int(size.sum()), np.int64)])
        return np.arange(first, first + len(size))

    def events(self, jobs: np.ndarray, kinds: np.ndarray, times: np.ndarray):
        """The blocks (job, first processor, count) the batch's starts take."""
        event, first, count = self.events_indexed(jobs, kinds, times)
        return jobs[event], first, count

    def events_indexed(self, jobs: np.ndarray, kinds: np.ndarray, times: np.ndarray):
        """As :meth:`events`, each block named by the index of its start event in the batch."""
        order = np.lexsort((jobs, kinds, times))
        event, first, count = _assign(self.size, self.hk, self.hv, self.state, self.held, self.offset,
                                      jobs[order], kinds[order])
        return order[event], first, count


def job_events(start: np.ndarray, end: np.ndarray, jobs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(jobs, kinds, times) of the start events of ``jobs`` (started ones) and their end events."""
    positive = jobs[end[jobs] > start[jobs]]
    times = np.concatenate([end[positive], start[jobs]])
    kinds = np.concatenate([np.full(len(positive), EVENT_END, np.int8),
                            np.where(end[jobs] > start[jobs], EVENT_START, EVENT_ZERO).astype(np.int8)])
    return np.concatenate([positive, jobs]), kinds, times


def assign_processors(start: np.ndarray, end: np.ndarray, size: np.ndarray, processors: int):
    """Segments (job index, first processor, processor count) for one cluster's schedule.

    ``start``/``end`` are NaN for jobs that never started; those get no segment.
    """
    start = np.asarray(start, np.float64)
    end = np.asarray(end, np.float64)
    assigner = ProcessorAssigner(np.where(np.isnan(start), 0, size), processors)
    return assigner.events(*job_events(start, end, np.flatnonzero(~np.isnan(start))))
