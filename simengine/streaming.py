"""The numbered chunks a run streams to its ``on_progress`` callback (docs/output.md, Streaming).

One emitter for every simulation path, so the chunk format is written once.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

#: Gantt segments per chunk
CHUNK_SEGMENTS = 5000

ProgressCallback = Callable[[dict[str, Any]], None]


class ChunkEmitter:
    """Numbers every chunk sent to the progress callback (``seq`` from 0, no gaps)."""

    def __init__(self, callback: ProgressCallback | None):
        self.callback, self.seq = callback, 0
        self.sent_segments = False

    def send(self, chunk: dict[str, Any]) -> None:
        if self.callback is not None:
            chunk["seq"] = self.seq
            self.seq += 1
            self.callback(chunk)

    def progress(self, fraction: float, sim_time: float) -> None:
        self.send({"kind": "progress", "fraction": fraction, "sim_time": sim_time})

    def segments(self, seg: dict[str, np.ndarray], jobs: dict[str, np.ndarray] | None = None) -> None:
        """Replication 0's segments in blocks; ``job`` indexes ``jobs`` rows, and each row also
        carries the job's ``job_id`` and ``stream`` so a client can name the job."""
        self.sent_segments = True
        if self.callback is None:
            return
        columns = dict(seg)
        rows = seg["job"].astype(np.int64)
        if jobs is not None:
            columns["job_id"] = jobs["job_id"][rows] if len(rows) else np.zeros(0, np.int64)
            columns["stream"] = jobs["stream"][rows] if len(rows) else np.zeros(0, np.int64)
        for a in range(0, len(rows), CHUNK_SEGMENTS):
            self.send({"kind": "segments", "replication": 0,
                       "segments": {k: v[a:a + CHUNK_SEGMENTS].tolist() for k, v in columns.items()}})

    def metrics(self, metrics: dict[str, Any]) -> None:
        self.send({"kind": "metrics", "metrics": {k: m.as_dict() for k, m in metrics.items()}, "fraction": 1.0})
