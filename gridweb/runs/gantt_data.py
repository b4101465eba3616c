"""What the run page's Gantt and plots read: the cluster layout, a run's segments as compact
columnar JSON, and the stored result arrays (gridweb.runs.result_store).

The segments JSON has the live columns of docs/output.md (job named by ``job_id`` and
``stream``), with ``cluster`` and ``kind`` as codes (indexes into ``clusters`` and ``kinds``); a
column whose rows all hold one value is sent as ``{"repeat": value}``. The run page itself draws
from level-of-detail tiles (gridweb.runs.gantt_tiles).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simengine.gantt import KIND_NAMES, KIND_RESERVATION
from simengine.streaming import LIVE_COLUMNS

from . import result_store
from .gantt_tiles import cluster_layout, segment_source
from .models import Run


def result_arrays(run: Run) -> dict[str, np.ndarray] | None:
    """The arrays of the run's stored result, or None when it has none."""
    try:
        stored = run.result
    except Run.result.RelatedObjectDoesNotExist:
        return None
    with result_store.open_npz(stored) as npz:
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


def segments_payload(run: Run) -> dict[str, Any]:
    """Every segment of the run in one JSON document (``/runs/<id>/segments.json``, for scripts;
    the page draws from tiles, gridweb.runs.gantt_tiles): the stored result's of a done run,
    else what it streamed (segments in progress drawn up to the simulated time reached)."""
    source = segment_source(run)
    table = source.table
    columns = {name: np.concatenate([np.asarray(table.columns[name]), source.open_rows[name]])
               for name in LIVE_COLUMNS}
    if len(columns["t0"]):
        # sorted by start time; at equal start a reservation window comes first, so the job
        # using it is drawn on top
        order = np.lexsort((columns["kind"] != KIND_RESERVATION, columns["t0"]))
        columns = {name: values[order] for name, values in columns.items()}
    return {
        "run": run.pk,
        "status": run.status,
        "count": int(len(columns["t0"])),
        "last_seq": run.last_seq,
        "clusters": cluster_layout(run),
        "kinds": list(KIND_NAMES),
        "columns": {name: _compact(values) for name, values in columns.items()},
    }
