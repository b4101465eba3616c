"""The jobs table of a done run: a page of its job rows, filtered and sorted.

One implementation for both the run page's ``runs/<pk>/jobs.json`` (gridweb/runs/views.py)
and the API's ``GET /api/runs/<id>/jobs/`` (gridweb/api/views.py): both pass their query
parameters to :func:`jobs_page` and answer :class:`BadParameter` with 400 (naming the
parameter) and ``exports.ExportUnavailable`` with 409. Columns: docs/output.md, "jobs".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from simengine.workload import STATUS_NAMES

from .models import Run

#: Short descriptions (with units) of the jobs table's columns (docs/output.md, "jobs").
JOB_COLUMN_HELP: dict[str, str] = {
    "job_id": "the trace's job number, or 1..n per synthetic stream",
    "replication": "replication (0..R−1)",
    "stream": "index of the job stream (workload.streams)",
    "cluster": "cluster that ran it (empty when rejected)",
    "submit": "submit time (s)", "start": "start time (s; empty if it never started)",
    "end": "end time (s; empty if it had not ended)", "processors": "processors requested",
    "runtime": "run time on its cluster (s)", "estimate": "requested time (s)",
    "wait": "start − submit (s)", "response": "end − submit (s)", "slowdown": "response / runtime",
    "bounded_slowdown": "max(response / max(runtime, 10 s), 1)",
    "status": "completed, killed, failed, rejected, unfinished or cancelled",
    "warmup": "in the warm-up (left out of the metrics)",
    "measured": "one of the jobs the job metrics (mean wait, response, slowdowns) average",
    # model-specific columns (docs/grid.md, docs/reservations.md, docs/cao.md)
    "component": "component of a co-allocated job", "deadline": "start deadline (s)",
    "claimed_at": "time its processors were claimed (s)", "tries": "placement tries",
    "kills": "times killed", "placement_time": "time spent placing it (s)",
    "placement_tries": "placement tries", "claiming_tries": "claiming tries", "ftt": "file transfer time (s)",
    "jpt": "job placement time (s)", "jct": "job claiming time (s)", "jst": "job start time (s)",
    "failures": "starts that failed by a soft error (KOALA)",
    "priority": "stream priority", "preemptions": "times preempted",
    "lost_time": "run time lost to kill/requeue (s)", "reservation": "reservation index (−1: a workload job)",
    "workflow": "workflow index", "task": "task index in its workflow", "ready": "time the task became ready (s)",
    "job_class": "job class",
    "batsim_id": "the job's id in its Batsim workload", "profile": "its Batsim profile",
    "user": "the trace's user (SWF field 12; −1 unknown)", "group": "the trace's group (SWF field 13; −1 unknown)",
    "queue": "the trace's queue (SWF field 15; −1 unknown)",
}
JOBS_PAGE_DEFAULT, JOBS_PAGE_MAX = 100, 1000
#: The query parameters :func:`jobs_page` reads (for the API's schema and docs).
PARAMETER_HELP: dict[str, str] = {
    "offset": "rows to skip (default 0)",
    "limit": f"rows to return (default {JOBS_PAGE_DEFAULT}, at most {JOBS_PAGE_MAX})",
    "status": f"only jobs with this status ({', '.join(STATUS_NAMES)})",
    "stream": "only jobs of this stream (its index in workload.streams)",
    "replication": "the replication whose jobs to show (default 0)",
    "sort": "a column name to sort by, '-name' for descending; ties keep submit order, empty values last",
}


class BadParameter(ValueError):
    """A query parameter of the jobs table that is not acceptable (its name and why)."""

    def __init__(self, name: str, reason: str):
        super().__init__(f"{name}: {reason}")
        self.name, self.reason = name, reason


def stream_labels(run: Run) -> dict[str, Any]:
    """Names the Gantt's hover gives a segment's job: ``streams`` (the workload streams' names,
    by index) and, for a run with advance reservations, ``reservationStream`` (the index of the
    stream their job rows are in: after the workload streams) and ``reservations`` (their names,
    job id i+1 is reservation i)."""
    spec = run.spec if isinstance(run.spec, dict) else {}
    streams = (spec.get("workload") or {}).get("streams") if isinstance(spec.get("workload"), dict) else None
    streams = streams if isinstance(streams, list) else []
    names = [str(s.get("name", i)) if isinstance(s, dict) else str(i) for i, s in enumerate(streams)]
    reservations = spec.get("reservations") if isinstance(spec.get("reservations"), list) else []
    out: dict[str, Any] = {"streams": names}
    if reservations:
        out["reservationStream"] = len(names)
        out["reservations"] = [str(r.get("name", i + 1)) if isinstance(r, dict) else str(i + 1)
                               for i, r in enumerate(reservations)]
        out["streams"] = [*names, "reservations"]
    return out


def _int_parameter(params: Mapping[str, str], name: str, default: int | None, low: int | None = None,
                   high: int | None = None) -> int | None:
    text = params.get(name, "")
    if text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise BadParameter(name, f"must be an integer (got {text!r})") from None
    if low is not None and value < low:
        raise BadParameter(name, f"must be at least {low} (got {value})")
    if high is not None and value > high:
        raise BadParameter(name, f"must be at most {high} (got {value})")
    return value


def _json_values(values: np.ndarray) -> list:
    """A column slice as JSON values: NaN and infinities as null."""
    if values.dtype.kind == "f":
        return [v if math.isfinite(v) else None for v in values.tolist()]
    if values.dtype.kind == "S":  # UTF-8 text kept as bytes (a Batsim workload's names)
        return [v.decode("utf-8", "replace") for v in values.tolist()]
    return values.tolist()


def jobs_page(run: Run, params: Mapping[str, str]) -> dict[str, Any]:
    """One page of the run's job rows.

    Parameters
    ----------
    run
        A run; only a done run with a stored result has jobs.
    params
        The query parameters (``request.GET`` or DRF's ``request.query_params``): ``offset``,
        ``limit``, ``status``, ``stream``, ``replication``, ``sort`` (see :data:`PARAMETER_HELP`).

    Returns
    -------
    dict
        ``columns``, ``descriptions``, ``model_columns``, ``rows`` (lists in column order),
        ``total`` (rows after filtering), ``offset``, ``limit``, ``replication``,
        ``replications``, ``statuses`` and ``streams`` (``index`` and ``name``).

    Raises
    ------
    BadParameter
        A parameter is not acceptable (its name and why).
    exports.ExportUnavailable
        The run has no stored result.
    """
    from simengine.results import STANDARD_JOB_COLUMNS  # numba and scipy: imported when used

    from . import exports  # (the runs backend, as above)

    jobs, cluster_names = exports.job_arrays(run)
    offset = _int_parameter(params, "offset", 0, low=0)
    limit = _int_parameter(params, "limit", JOBS_PAGE_DEFAULT, low=1, high=JOBS_PAGE_MAX)
    replications = np.unique(jobs["replication"]).tolist() if len(jobs["replication"]) else [0]
    replication = _int_parameter(params, "replication", 0)
    if replication not in replications:
        raise BadParameter("replication", f"this run keeps the jobs of replication(s) "
                           f"{', '.join(map(str, replications))} (got {replication})")
    columns = [c for c in STANDARD_JOB_COLUMNS if c in jobs]
    standard = len(columns)
    columns += [c for c, v in jobs.items() if c not in columns and c != "killed" and np.ndim(v) == 1]
    # the rows of the replication, in submit order (as stored: replication order, then submit order)
    rows = np.flatnonzero(jobs["replication"] == replication)
    streams_present = sorted(set(np.unique(jobs["stream"][rows]).tolist()))
    status_text = params.get("status", "")
    if status_text:
        if status_text not in STATUS_NAMES:
            raise BadParameter("status", f"must be one of {', '.join(STATUS_NAMES)} (got {status_text!r})")
        rows = rows[jobs["status"][rows] == STATUS_NAMES.index(status_text)]
    stream = _int_parameter(params, "stream", None)
    if stream is not None:
        if stream not in streams_present:
            raise BadParameter("stream", f"this run's jobs are in stream(s) {', '.join(map(str, streams_present))} "
                               f"(got {stream})")
        rows = rows[jobs["stream"][rows] == stream]
    names = np.asarray([*cluster_names, None], dtype=object)  # cluster -1 (rejected): None
    sort = params.get("sort", "")
    if sort:
        name = sort.removeprefix("-")
        if name not in columns:
            raise BadParameter("sort", f"must be a column name, optionally with '-' for descending; "
                               f"the columns are {', '.join(columns)} (got {sort!r})")
        values = jobs[name][rows]
        if name == "cluster":  # by name, as shown
            values = np.asarray(["" if n is None else n for n in names[values]], dtype=str)
        elif name == "status":
            values = np.asarray(STATUS_NAMES, dtype=str)[values]
        if values.dtype.kind in "USO":
            values = np.unique(values, return_inverse=True)[1]  # ranks: numbers can be negated
        key = values.astype(np.float64)
        # stable: ties keep submit order; NaN (never started, not ended) last either way
        rows = rows[np.argsort(-key if sort.startswith("-") else key, kind="stable")]
    page = rows[offset:offset + limit]
    out_columns = []
    for name in columns:
        values = jobs[name][page]
        if name == "cluster":
            out_columns.append(names[values].tolist())
        elif name == "status":
            out_columns.append([STATUS_NAMES[v] for v in values.tolist()])
        else:
            out_columns.append(_json_values(values))
    labels = stream_labels(run)["streams"]
    return {
        "columns": columns,
        "descriptions": {c: JOB_COLUMN_HELP.get(c, "") for c in columns},
        "model_columns": columns[standard:],
        "rows": [list(row) for row in zip(*out_columns)] if len(page) else [],
        "total": int(len(rows)),
        "offset": offset,
        "limit": limit,
        "replication": replication,
        "replications": replications,
        "statuses": list(STATUS_NAMES),
        "streams": [{"index": s, "name": labels[s] if 0 <= s < len(labels) else str(s)} for s in streams_present],
    }
