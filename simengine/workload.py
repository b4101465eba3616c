"""The job table: the one in-memory form every workload takes.

Synthetic streams and trace readers both produce a :class:`JobTable` (a struct of
numpy arrays, one row per job); schedulers consume it. Keeping columns as arrays
keeps memory linear and lets the hot loops run compiled.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: Job status codes used in result arrays (``Result.jobs['status']``).
STATUS_COMPLETED, STATUS_KILLED, STATUS_FAILED, STATUS_REJECTED, STATUS_UNFINISHED, STATUS_CANCELLED = 0, 1, 2, 3, 4, 5
#: (cancelled: a trace's job withdrawn or killed at its cancellation time, docs/traces.md)
STATUS_NAMES = ("completed", "killed", "failed", "rejected", "unfinished", "cancelled")


@dataclass
class JobTable:
    """Jobs sorted by submit time.

    Attributes
    ----------
    job_id : int64  -- the trace's job number, or 1..n for synthetic jobs
    submit : float64 -- submit time, seconds
    runtime : float64 -- actual run time at speed 1
    estimate : float64 -- requested (user-estimated) time, used by backfilling
    processors : int64 -- processors requested
    cluster : int32 -- target cluster index, or -1 when a site-allocation policy chooses
    stream : int32 -- index of the job stream that produced the job
    extra : optional further columns (user, group, queue, partition ...)
    """

    job_id: np.ndarray
    submit: np.ndarray
    runtime: np.ndarray
    estimate: np.ndarray
    processors: np.ndarray
    cluster: np.ndarray
    stream: np.ndarray
    extra: dict[str, np.ndarray] = field(default_factory=dict)

    COLUMNS = ("job_id", "submit", "runtime", "estimate", "processors", "cluster", "stream")
    #: extra columns kept when only some tables of a concat have them (the others get this value);
    #: other extras are kept only when every table has them
    FILLED = {"cancel_after": np.nan, "batsim_id": b"", "profile": b""}

    def __post_init__(self) -> None:
        self.job_id = np.asarray(self.job_id, dtype=np.int64)
        self.submit = np.asarray(self.submit, dtype=np.float64)
        self.runtime = np.asarray(self.runtime, dtype=np.float64)
        self.estimate = np.asarray(self.estimate, dtype=np.float64)
        self.processors = np.asarray(self.processors, dtype=np.int64)
        self.cluster = np.asarray(self.cluster, dtype=np.int32)
        self.stream = np.asarray(self.stream, dtype=np.int32)
        n = len(self.job_id)
        for name in self.COLUMNS[1:]:
            if len(getattr(self, name)) != n:
                raise ValueError(f"JobTable column {name} has {len(getattr(self, name))} rows, expected {n}")

    def __len__(self) -> int:
        return len(self.job_id)

    @classmethod
    def empty(cls) -> "JobTable":
        z = np.zeros(0)
        return cls(z, z, z, z, z, z, z)

    def take(self, index: np.ndarray) -> "JobTable":
        """Rows ``index`` (an integer or boolean array), in that order."""
        return JobTable(
            *(getattr(self, c)[index] for c in self.COLUMNS),
            extra={k: v[index] for k, v in self.extra.items()},
        )

    def sorted_by_submit(self) -> "JobTable":
        if len(self.submit) < 2 or bool((self.submit[1:] >= self.submit[:-1]).all()):
            return self
        # Stable sort keeps the original order of simultaneous submissions (FCFS tie rule).
        return self.take(np.argsort(self.submit, kind="stable"))

    @staticmethod
    def concat(tables: list["JobTable"]) -> "JobTable":
        if not tables:
            return JobTable.empty()
        if len(tables) == 1:
            return tables[0]
        keys = set.intersection(*(set(t.extra) for t in tables)) if tables else set()
        keys |= {k for t in tables for k in t.extra if k in JobTable.FILLED}
        return JobTable(
            *(np.concatenate([getattr(t, c) for t in tables]) for c in JobTable.COLUMNS),
            extra={k: np.concatenate([t.extra[k] if k in t.extra else np.full(len(t), JobTable.FILLED[k])
                                      for t in tables]) for k in keys},
        )
