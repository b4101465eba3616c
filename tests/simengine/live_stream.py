"""Checks of the live Gantt stream (simengine.streaming) that every model path must pass."""
from __future__ import annotations

import numpy as np

from simengine.streaming import LIVE_COLUMNS, LIVE_DTYPES


def segment_chunks(chunks: list[dict]) -> list[dict]:
    return [c for c in chunks if c["kind"] == "segments"]


def streamed_rows(chunks: list[dict]) -> dict[str, np.ndarray]:
    seg = segment_chunks(chunks)
    return {k: np.concatenate([c["segments"][k] for c in seg]) for k in LIVE_COLUMNS}


def result_rows(result) -> dict[str, np.ndarray]:
    """The Result's segments as streamed rows (the job named by job id and stream)."""
    seg = result.segments
    rows = {k: np.asarray(seg[k]) for k in ("cluster", "first_processor", "processors", "t0", "t1", "kind",
                                            "component")}
    job = np.asarray(seg["job"], np.int64)
    none = job < 0  # a processor down: no job (job id 0, stream -1)
    rows["job_id"] = np.where(none, 0, result.jobs["job_id"][np.where(none, 0, job)])
    rows["stream"] = np.where(none, -1, result.jobs["stream"][np.where(none, 0, job)])
    return rows


def as_multiset(rows: dict[str, np.ndarray]) -> list[tuple]:
    return sorted(zip(*(np.asarray(rows[k]).tolist() for k in LIVE_COLUMNS)))


def check_live_stream(chunks: list[dict], result, *, during: bool = False, late_rows: bool = False) -> list[dict]:
    """The stream is numbered without gaps; its segment chunks cover contiguous windows of
    simulated time, each row closing inside its chunk's window, open rows started before the
    window's end, the last chunk marked final; together the rows are the Result's segments.
    ``during``: some rows were streamed before the last chunk (the model fed the live Gantt
    while it simulated, not only at the end); ``late_rows``: the model may name a row after its
    window went out (Cao's late reservation frames). Returns the segment chunks."""
    assert [c["seq"] for c in chunks] == list(range(len(chunks)))
    seg = segment_chunks(chunks)
    assert seg, "no segments chunk"
    for a, b in zip(seg, seg[1:]):
        assert a["window"][1] == b["window"][0], (a["window"], b["window"])
    for c in seg:
        w0, w1 = c["window"]
        assert w0 <= w1
        for name, values in c["segments"].items():
            assert values.dtype == LIVE_DTYPES[name], name
        t1 = c["segments"]["t1"]
        assert (t1 < w1).all(), (c["window"], t1.max(initial=-np.inf))
        if not late_rows:  # else: a row a model could only name late comes in a later window
            assert (t1 >= w0).all(), (c["window"], t1.min(initial=np.inf))
        if "open" in c and len(c["open"]["t0"]):
            assert (c["open"]["t0"] < w1).all()
    assert seg[-1]["final"] and not any(c.get("final") for c in seg[:-1])
    assert len(seg[-1]["open"]["t0"]) == 0
    assert as_multiset(streamed_rows(chunks)) == as_multiset(result_rows(result))
    if during:
        assert sum(len(c["segments"]["t0"]) for c in seg[:-1]) > 0, "every row came in the final chunk"
    return seg
