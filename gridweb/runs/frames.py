"""Binary frames: typed columns for the browser (websocket messages and tile responses).

A frame is ``b"GWF1"``, the length of a JSON header (uint32, little-endian), the header, zero
padding to a multiple of 8 bytes, then the arrays, each little-endian and starting at a multiple
of 8 bytes from the body's start, so that the page reads every column as a typed array over the
received buffer without copying or touching rows one by one (static/runs/frames.js). The
header's ``arrays`` lists ``[name, dtype, offset, shape]`` with numpy dtype strings
(``<f8``, ``<f4``, ``<i4``, ``<i2``, ``|i1``, ``|u1``).

Segment rows travel with the columns of simengine.streaming (``s.<column>`` for closed rows,
``o.<column>`` for open ones), ``job_id`` as float64 (exact below 2**53; JavaScript has no
int64 typed array that Bokeh draws from).
"""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np

from simengine.streaming import LIVE_COLUMNS

MAGIC = b"GWF1"
#: the dtypes segment columns travel as
WIRE_DTYPES = {"cluster": "<i2", "first_processor": "<i4", "processors": "<i4", "t0": "<f8", "t1": "<f8",
               "kind": "|i1", "component": "<i2", "job_id": "<f8", "stream": "<i4"}
_ALLOWED = {"<f8", "<f4", "<i4", "<i2", "|i1", "|u1", "<u2", "<u4"}


def encode(header: dict[str, Any], arrays: dict[str, np.ndarray] | None = None) -> bytes:
    """One frame of ``header`` (JSON-safe) and ``arrays``."""
    meta, parts, offset = [], [], 0
    for name, values in (arrays or {}).items():
        values = np.ascontiguousarray(values)
        dtype = values.dtype.newbyteorder("<") if values.dtype.byteorder == ">" else values.dtype
        if dtype.str not in _ALLOWED:
            raise ValueError(f"{name}: dtype {dtype.str} cannot travel in a frame")
        data = values.astype(dtype, copy=False).tobytes()
        meta.append([name, dtype.str, offset, list(values.shape)])
        parts.append(data)
        pad = -len(data) % 8
        if pad:
            parts.append(b"\0" * pad)
        offset += len(data) + pad
    head = json.dumps({**header, "arrays": meta}, separators=(",", ":"), allow_nan=False).encode()
    prefix = MAGIC + struct.pack("<I", len(head)) + head
    prefix += b"\0" * (-len(prefix) % 8)
    return b"".join([prefix, *parts])


def decode(frame: bytes | memoryview) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(header, arrays) of a frame; the arrays are read-only views of ``frame``."""
    frame = memoryview(frame)
    if bytes(frame[:4]) != MAGIC:
        raise ValueError("not a GridWeb frame")
    (length,) = struct.unpack("<I", frame[4:8])
    header = json.loads(bytes(frame[8:8 + length]))
    body = 8 + length + (-(8 + length) % 8)
    arrays = {}
    for name, dtype, offset, shape in header.pop("arrays"):
        count = int(np.prod(shape)) if shape else 1
        arrays[name] = np.frombuffer(frame, dtype=np.dtype(dtype), count=count, offset=body + offset).reshape(shape)
    return header, arrays


def wire_rows(rows: dict[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    """Segment rows as frame arrays named ``<prefix>.<column>``."""
    return {f"{prefix}.{name}": np.asarray(rows[name]).astype(WIRE_DTYPES[name], copy=False) for name in LIVE_COLUMNS}


def rows_of(arrays: dict[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    """The segment rows ``<prefix>.<column>`` of a decoded frame (empty when absent)."""
    return {name: arrays.get(f"{prefix}.{name}", np.zeros(0, WIRE_DTYPES[name])) for name in LIVE_COLUMNS}


def json_safe(value: Any) -> Any:
    """``value`` with NaN and infinities replaced by None (JSON has no such numbers)."""
    if isinstance(value, float):
        return value if np.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def segments_chunk_frame(chunk: dict[str, Any]) -> tuple[dict[str, Any], bytes, int]:
    """A live ``segments`` chunk of the engine as (header, frame, closed rows)."""
    closed = chunk["segments"]
    opened = chunk.get("open")
    header = {key: chunk[key] for key in ("seq", "kind", "replication", "window", "final", "fraction", "sim_time",
                                          "queued") if key in chunk}
    header = json_safe(header)
    header["n"] = int(len(closed["t0"]))
    header["n_open"] = int(len(opened["t0"])) if opened is not None else 0
    arrays = wire_rows(closed, "s")
    if opened is not None:
        arrays |= wire_rows(opened, "o")
    else:
        header["keep_open"] = True  # a chunk split off before the last one of its window
    return header, encode(header, arrays), header["n"]


def summary_frame(header: dict[str, Any]) -> bytes:
    """A segments chunk without its rows: what a page gets once the run has streamed more rows
    than pages hold (it then asks for tiles instead, gridweb.runs.gantt_tiles)."""
    return encode({**header, "n": 0, "n_open": 0, "omitted": header.get("n", 0), "keep_open": False})


def chunk_as_json(payload: dict[str, Any], data: bytes | memoryview | None) -> dict[str, Any]:
    """A stored chunk as one JSON document (the API's chunks): a segments chunk's rows as
    column lists under ``segments`` and ``open``."""
    if data is None:
        return dict(payload)
    _, arrays = decode(bytes(data))
    out = dict(payload)
    out["segments"] = {name: values.tolist() for name, values in rows_of(arrays, "s").items()}
    if not payload.get("keep_open"):
        out["open"] = {name: values.tolist() for name, values in rows_of(arrays, "o").items()}
    return out
