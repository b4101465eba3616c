"""Downloads of a finished run, written by the engine's own writers (docs/output.md).

A done run keeps its arrays in the results storage (``simengine.Result.write_npz``,
gridweb.runs.result_store) and its
summary (``Result.summary()``) in ``Run.summary``. :func:`result_of` puts a
``simengine.results.Result`` back together from those two, so the jobs CSV, the SWF
schedule and the segments come out of exactly the code the command line uses.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpResponse, StreamingHttpResponse
from django.utils.cache import patch_vary_headers

from simengine.gantt import KIND_NAMES, SEGMENT_COLUMNS, segment_jobs
from simengine.batsim import batsim_csv
from simengine.results import Metric, Result

from . import result_store
from .models import Run, RunResult, Status
from gridweb.scenarios.validation import SpecInvalid, validate_spec
import csv
import io

_NPZ_GROUPS = ("jobs", "segments", "series")


class ExportUnavailable(Exception):
    """The run has no stored result (not done yet, failed, cancelled, or its result is missing)."""


def _metric(name: str, stored: dict[str, Any]) -> Metric:
    mean = stored.get("mean")
    values = [math.nan if v is None else float(v) for v in stored.get("values") or []]
    batch_half = stored.get("half_width") if len(values) == 1 else None  # (a batch-means interval)
    return Metric(name, math.nan if mean is None else float(mean), stored.get("ci_low"), stored.get("ci_high"),
                  values, batch_half)


def scenario_document(run: Run) -> dict[str, Any]:
    """The run's scenario as the engine validated it (defaults filled in, as in the engine's
    ``scenario.json``); the document as submitted when it no longer validates (e.g. its
    uploaded trace was deleted since)."""
    try:
        return validate_spec(run.spec).model_dump(mode="json")
    except SpecInvalid:
        return run.spec


def result_of(run: Run) -> Result:
    """The engine's ``Result`` of a done run, from its stored arrays and summary.

    Raises :class:`ExportUnavailable` when the run has no stored result.
    """
    try:
        stored = run.result
    except RunResult.DoesNotExist:
        stored = None
    if stored is None or run.status != Status.DONE:
        raise ExportUnavailable(f"run {run.pk} has no result to export (status {run.status})")
    arrays = _stored_arrays(stored, _NPZ_GROUPS)
    summary = run.summary or {}
    scenario = scenario_document(run)
    clusters = summary.get("clusters") or [
        {"name": c["name"], "processors": c["processors"]} for c in scenario["platform"]["clusters"]]
    return Result(
        scenario=scenario,
        scenario_hash=run.scenario_hash or summary.get("scenario_hash", ""),
        seed=run.seed if run.seed is not None else summary.get("seed", 0),
        engine_version=run.engine_version or summary.get("engine_version", ""),
        cluster_names=[c["name"] for c in clusters],
        cluster_processors=[int(c["processors"]) for c in clusters],
        jobs=arrays["jobs"],
        segments=arrays["segments"],
        metrics={name: _metric(name, m) for name, m in (summary.get("metrics") or {}).items()},
        series=arrays["series"],
        replications=int(summary.get("replications", 1)),
        engine_seconds=float(summary.get("engine_seconds", 0.0)),
        notes=list(summary.get("notes") or []),
        time_origins=dict(summary.get("time_origins") or {}),
    )


def _stored_arrays(stored: RunResult, groups: tuple[str, ...]) -> dict[str, dict[str, np.ndarray]]:
    """The stored result's arrays of ``groups`` (only those are decompressed)."""
    arrays: dict[str, dict[str, np.ndarray]] = {group: {} for group in groups}
    with result_store.open_npz(stored) as npz:
        for key in npz.files:
            group, _, column = key.partition("_")
            if group in arrays:
                arrays[group][column] = npz[key]
    return arrays


def job_arrays(run: Run) -> tuple[dict[str, np.ndarray], list[str]]:
    """The job columns of a done run's stored result (``Result.jobs``, without segments or
    series) and its cluster names, for the run page's jobs table.

    Raises :class:`ExportUnavailable` when the run has no stored result.
    """
    try:
        stored = run.result
    except RunResult.DoesNotExist:
        stored = None
    if stored is None or run.status != Status.DONE:
        raise ExportUnavailable(f"run {run.pk} has no jobs yet (status {run.status}): the table is available "
                                "when the run finishes")
    jobs = _stored_arrays(stored, ("jobs",))["jobs"]
    summary = run.summary or {}
    clusters = summary.get("clusters") or [
        {"name": c["name"]} for c in scenario_document(run)["platform"]["clusters"]]
    return jobs, [c["name"] for c in clusters]


def _packed(parts, gzip: bool):
    """``parts`` (bytes) as they come, gzip-compressed on the way when ``gzip``."""
    packer = zlib.compressobj(1, zlib.DEFLATED, 31) if gzip else None  # (level 1: CSV still shrinks 5-8x)
    for part in parts:
        part = packer.compress(part) if packer else part
        if part:
            yield part
    if packer:
        yield packer.flush()


class Written:
    """A file the engine's writer produced in a temporary folder of its own, to be sent a chunk at a
    time (never whole in memory) and removed once sent (:func:`download`)."""

    CHUNK = 1 << 20

    def __init__(self, write: Callable[[Path], None], name: str):
        self.folder = Path(tempfile.mkdtemp(prefix="gridweb-export-"))
        self.path = self.folder / name
        try:
            write(self.path)
        except BaseException:
            self.close()
            raise

    @property
    def size(self) -> int:
        return self.path.stat().st_size

    def _parts(self):
        with open(self.path, "rb") as fh:
            while part := fh.read(self.CHUNK):
                yield part

    def chunks(self, gzip: bool):
        """The file's bytes a chunk at a time, gzip-compressed on the way when ``gzip``."""
        return _packed(self._parts(), gzip)

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


class Generated:
    """An export the engine makes a slice at a time (``simengine.batsim.batsim_csv``): streamed as it
    is made, so the first bytes of a big file leave before its last are made; no file, no size."""

    size = None

    def __init__(self, parts):
        self.parts = parts

    def chunks(self, gzip: bool):
        return _packed(self.parts, gzip)

    def close(self) -> None:
        getattr(self.parts, "close", lambda: None)()


class _Chunks:
    """A body's chunks (packed as asked) and, once the response is closed, the body let go."""

    def __init__(self, body: Written | Generated, gzip: bool):
        self.body, self.sync = body, body.chunks(gzip)

    def close(self) -> None:
        self.sync.close()
        self.body.close()


class _SyncChunks(_Chunks):
    """For a WSGI server (and Django's test client)."""

    def __iter__(self):
        return self.sync


class _AsyncChunks(_Chunks):
    """For an ASGI server: each chunk made (read, packed) off the event loop (a synchronous iterator
    would be read whole into memory before the first byte left). No ``__iter__``: Django would take it."""

    async def __aiter__(self):
        done = object()
        while (chunk := await sync_to_async(next, thread_sensitive=False)(self.sync, done)) is not done:
            yield chunk


def download(request, body: bytes | Written | Generated, content_type: str, filename: str):
    """The response that sends an export: bytes as they are; a written file or a generated one
    streamed, gzip-compressed when the client accepts it (the browser stores it uncompressed), what
    it held removed at the end."""
    request = getattr(request, "_request", request)  # (a REST framework request wraps Django's)
    if isinstance(body, bytes):
        response = HttpResponse(body, content_type=content_type)
    else:
        gzip = "gzip" in request.headers.get("Accept-Encoding", "")
        chunks = (_AsyncChunks if isinstance(request, ASGIRequest) else _SyncChunks)(body, gzip)
        response = StreamingHttpResponse(chunks, content_type=content_type)
        patch_vary_headers(response, ("Accept-Encoding",))
        if gzip:
            response["Content-Encoding"] = "gzip"
        elif body.size is not None:
            response["Content-Length"] = str(body.size)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def jobs_csv(run: Run) -> Written:
    """``jobs.csv``: one row per job and replication (docs/output.md, "jobs")."""
    return Written(result_of(run).write_jobs_csv, "jobs.csv")


def segments_csv(run: Run) -> Written:
    """``segments.csv``: the Gantt rows of replication 0 with cluster names, job ids, kind names."""
    return Written(result_of(run).write_segments_csv, "segments.csv")


def schedule_swf(run: Run, precision: int | None = 0) -> Written:
    """``schedule.swf``: the simulated schedule of replication 0 in SWF 2.2, times at
    ``precision`` decimals (0: integer seconds, as SWF readers expect; None: exact)."""
    result = result_of(run)
    return Written(lambda path: result.write_swf(path, precision), "schedule.swf")


def batsim_jobs_csv(run: Run, precision: int | None = None) -> Generated:
    """``batsim_jobs.csv``: replication 0's finished and rejected jobs as Batsim's ``_jobs.csv``
    (evalys reads it), times at ``precision`` decimals (None: exact, as simulated); made as it is sent."""
    return Generated(batsim_csv(result_of(run), precision))


def users_csv(run: Run) -> Written:
    """``users.csv``: per user, replication 0's measured jobs, mean wait and bounded slowdown
    (docs/output.md); only for runs whose jobs carry users."""
    result = result_of(run)
    if result.users() is None:
        raise ExportUnavailable(f"Run {run.pk}'s jobs carry no users (only traces that name them do).")
    return Written(result.write_users_csv, "users.csv")


#: the exports that take a ``precision`` query parameter, and its default: SWF readers expect
#: integer seconds; Batsim writes its times as simulated
PRECISION_DEFAULT = {"schedule.swf": 0, "batsim_jobs.csv": None}


def precision(export: str, value: str | None) -> int | None:
    """The ``precision`` query parameter of ``export`` (PRECISION_DEFAULT): absent -> its default,
    ``exact`` -> None, else an integer 0..9 (ValueError with the reason otherwise)."""
    if value is None or value == "":
        return PRECISION_DEFAULT[export]
    if value == "exact":
        return None
    if not (value.isascii() and value.isdigit()) or not 0 <= int(value) <= 9:
        raise ValueError(f"precision: must be an integer from 0 to 9 or 'exact'; got {value[:20]!r}")
    return int(value)


def scenario_json(run: Run) -> bytes:
    """``scenario.json``: the validated scenario (re-importable into the builder and the API)."""
    return (json.dumps(scenario_document(run), indent=2) + "\n").encode()


def metrics_json(run: Run) -> bytes:
    """``metrics.json``: the engine's summary (metrics with 95% CIs, job counts, scenario_hash,
    seed, engine_version) plus which run it is. Only for done runs."""
    if run.status != Status.DONE or not run.summary:
        raise ExportUnavailable(f"run {run.pk} has no metrics to export (status {run.status})")
    document = {"run": {"id": run.pk, "name": run.name}, **result_of(run).summary()}
    return (json.dumps(document, indent=2, allow_nan=False) + "\n").encode()


def segments_columns(run: Run) -> dict[str, list]:
    """The Gantt rows of replication 0 as columns (lists), ready for a Bokeh ColumnDataSource.

    The raw columns are those of the streamed ``segments`` chunks (``cluster`` index, ``job``
    row index into the jobs table, ``kind`` code), so rows from the stream and from here
    line up; ``cluster_name``, ``job_id`` and ``kind_name`` say the same in words.
    """
    result = result_of(run)
    segments = result.segments
    columns: dict[str, list] = {c: np.asarray(segments[c]).tolist() for c in SEGMENT_COLUMNS if c in segments}
    cluster = np.asarray(segments.get("cluster", []), dtype=np.int64)
    job = np.asarray(segments.get("job", []), dtype=np.int64)
    kind = np.asarray(segments.get("kind", []), dtype=np.int64)
    names = np.asarray(result.cluster_names, dtype=object)
    columns["cluster_name"] = names[cluster].tolist() if len(cluster) else []
    columns["job_id"] = segment_jobs(result.jobs["job_id"], result.jobs["stream"], job)[0].tolist()
    columns["kind_name"] = np.asarray(KIND_NAMES, dtype=object)[kind].tolist() if len(kind) else []
    return columns


# --- sweeps --------------------------------------------------------------------------------------

#: what each metric of a sweep point carries in the exports, in this order
SWEEP_METRIC_FIELDS = ("mean", "ci_low", "ci_high", "replications", "shaky")


def sweep_table(sweep, points: list[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """(header, rows) of a sweep: one row per point -- its parameters, run, status, then for each
    metric its mean, interval, replications and shaky flag (``metric.field`` columns)."""
    parameters = list(sweep.parameters or {})
    metrics = sorted({name for p in points for name in p["metrics"]})
    header = ["point", *parameters, "run", "status"] + [f"{m}.{f}" if f != "mean" else m
                                                        for m in metrics for f in SWEEP_METRIC_FIELDS]
    rows = []
    for index, point in enumerate(points):
        run = point["run"]
        row: list[Any] = [index, *(point["values"].get(k) for k in parameters), run.pk if run else None,
                          point["status"] or (run.status if run else "")]
        for m in metrics:
            cell = point["metrics"].get(m) or {}
            row += [cell.get(f) for f in SWEEP_METRIC_FIELDS]
        rows.append(row)
    return header, rows


def sweep_csv(sweep, points: list[dict[str, Any]]) -> bytes:
    header, rows = sweep_table(sweep, points)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow(["" if v is None else (json.dumps(v) if isinstance(v, (list, dict)) else v) for v in row])
    return out.getvalue().encode()


def sweep_json(sweep, points: list[dict[str, Any]], scenario_url: str | None) -> bytes:
    """The sweep (name, owner, parameters, base scenario and where it is saved) and its points."""
    document = {
        "sweep": {"id": sweep.pk, "name": sweep.name, "owner": sweep.owner.username, "status": sweep.status,
                  "parameters": sweep.parameters, "scenario": sweep.scenario_id, "scenario_url": scenario_url,
                  "base_scenario": sweep.spec},
        "points": [{"point": i, "parameters": p["values"], "run": p["run"].pk if p["run"] else None,
                    "status": p["status"] or (p["run"].status if p["run"] else ""),
                    "engine_version": p["run"].engine_version if p["run"] else None,
                    "seed": p["run"].seed if p["run"] else None, "metrics": p["metrics"]}
                   for i, p in enumerate(points)],
    }
    return (json.dumps(document, indent=2, allow_nan=False) + "\n").encode()
