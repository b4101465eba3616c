"""What the run page's Gantt and plots read: the cluster layout, a run's segments as compact
columnar JSON, and the stored result arrays.

A finished run's segments come from its stored result (``RunResult.npz``, the engine's
``Result.write_npz``: ``jobs_*``, ``segments_*``, ``series_*`` arrays). A run without a stored
result (cancelled, failed, still running) falls back to the ``segments`` chunks it streamed.
Both give the columns of docs/output.md ("segments"), with ``cluster`` and ``kind`` as codes
(indexes into ``clusters`` and ``kinds``). From a stored result a job is named by ``job_id`` and
``stream``; the streamed chunks name it by ``job``, its row in replication 0 (the Gantt keys
jobs by whichever it gets). A column whose rows all hold one value is sent as
``{"repeat": value}``.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from simengine.gantt import KIND_NAMES, KIND_RESERVATION, SEGMENT_COLUMNS

from .models import Run, RunChunk


def cluster_layout(run: Run) -> list[dict[str, Any]]:
    """The run's clusters in order, ``[{"name", "processors"}]``.

    From the result summary when the run is done; otherwise from the scenario document
    (its ``platform.clusters``, or the named preset's), which needs no validation.
    """
    clusters = (run.summary or {}).get("clusters")
    if clusters:
        return [{"name": str(c["name"]), "processors": int(c["processors"])} for c in clusters]
    platform = (run.spec or {}).get("platform") or {}
    listed = platform.get("clusters")
    if not listed and platform.get("preset"):
        from simengine.presets import PLATFORMS

        listed = (PLATFORMS.get(platform["preset"]) or {}).get("clusters")
    out = []
    for c in listed or []:
        try:
            out.append({"name": str(c["name"]), "processors": int(c["processors"])})
        except (KeyError, TypeError, ValueError):
            continue  # an unvalidated document: skip what cannot be drawn
    return out


def result_arrays(run: Run) -> dict[str, np.ndarray] | None:
    """The arrays of the run's stored result, or None when it has none."""
    try:
        stored = run.result
    except Run.result.RelatedObjectDoesNotExist:
        return None
    with np.load(io.BytesIO(bytes(stored.npz)), allow_pickle=False) as npz:
        return {name: npz[name] for name in npz.files}


def _compact(values: np.ndarray) -> list | dict[str, Any]:
    """A column as a JSON list, whole floats as ints (trace times are whole seconds: shorter),
    or ``{"repeat": value}`` when every row holds the same value (one cluster, kind ``run``)."""
    if len(values) > 1 and values.dtype.kind in "iub" and (values == values[0]).all():
        return {"repeat": values[0].item()}
    if values.dtype.kind == "f":
        finite = np.isfinite(values)
        if finite.all() and (values == np.round(values)).all() and np.abs(values).max(initial=0) < 2**53:
            return values.astype(np.int64).tolist()
        return [None if not ok else v for v, ok in zip(values.tolist(), finite.tolist())]
    return values.tolist()


def segments_from_result(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    columns = {name: arrays[f"segments_{name}"] for name in SEGMENT_COLUMNS if f"segments_{name}" in arrays}
    if "t0" not in columns:
        return {}
    job = columns["job"].astype(np.int64)
    # ``job`` is the job's row in replication 0, which comes first in the jobs arrays.
    columns["job_id"] = arrays["jobs_job_id"][job] if len(job) else np.zeros(0, np.int64)
    columns["stream"] = arrays["jobs_stream"][job] if len(job) else np.zeros(0, np.int64)
    del columns["job"]  # the job id and stream say which job; the row index is not needed
    return columns


def segments_from_chunks(run: Run) -> tuple[dict[str, np.ndarray], int]:
    """The segments the run streamed (every ``segments`` chunk, in order) and the highest
    chunk number read."""
    parts: dict[str, list] = {}
    last_seq = -1
    for seq, kind, payload in RunChunk.objects.filter(run=run).order_by("seq").values_list(
            "seq", "kind", "payload"):
        last_seq = max(last_seq, seq)
        if kind != "segments":
            continue
        for name, values in (payload.get("segments") or {}).items():
            parts.setdefault(name, []).extend(values)
    columns = {name: np.asarray(values) for name, values in parts.items()}
    return columns, last_seq


def segments_payload(run: Run) -> dict[str, Any]:
    """Everything the Gantt needs in one document (served as ``/runs/<id>/segments.json``)."""
    arrays = result_arrays(run)
    columns: dict[str, np.ndarray] = segments_from_result(arrays) if arrays is not None else {}
    last_seq = run.last_seq
    if not columns:
        columns, last_seq = segments_from_chunks(run)
    if "t0" in columns and len(columns["t0"]):
        # sorted by start time: the replay reveals a prefix, the live stream arrives this way;
        # at equal start a reservation window comes first, so the job using it is drawn on top
        kind = np.asarray(columns["kind"]) if "kind" in columns else np.zeros(len(columns["t0"]))
        order = np.lexsort((kind != KIND_RESERVATION, columns["t0"]))
        columns = {name: np.asarray(values)[order] for name, values in columns.items()}
    count = int(len(columns["t0"])) if "t0" in columns else 0
    return {
        "run": run.pk,
        "status": run.status,
        "count": count,
        "last_seq": last_seq,
        "clusters": cluster_layout(run),
        "kinds": list(KIND_NAMES),
        "columns": {name: _compact(np.asarray(values)) for name, values in columns.items()},
    }
