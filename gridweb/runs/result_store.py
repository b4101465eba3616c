"""A done run's result arrays in the "results" storage (settings.STORAGES), not in the database.

Under ``runs/<run id>/<token>/`` (a fresh token per stored result, so a rerun never overwrites
files a reader may hold open):

- ``result.npz`` -- ``simengine.Result.write_npz`` (jobs, segments, series), for the plots, the
  jobs table and the exports;
- ``gantt/<column>.npy`` -- replication 0's segment rows as the live stream's columns
  (simengine.streaming.LIVE_COLUMNS), sorted by start, uncompressed so that the level-of-detail
  views (gridweb.runs.gantt_tiles) memory-map them, and ``gantt/index.npy``, the block index of
  simengine.gantt_lod.SegmentTable;
- ``gantt/queue.npz`` -- for the queue-length strip under the Gantt: replication 0's workload jobs'
  submit and start times, sorted within each cluster (``offsets`` of the clusters' blocks).

A failed or cancelled run has no stored result; the Gantt it streamed is kept under
``runs/<run id>/ended-a<attempt>-<end>/`` the first time it is drawn, in the same column files and index
(and ``ended.npz``: the rows still open when it ended, the simulated time it reached, its queue
lengths), so every process memory-maps it instead of holding its rows.

A storage that has no local paths (an object store) is read through a local copy of each file,
kept under ``GRIDWEB_DATA_DIR/cache`` (files never change once written).
"""

from __future__ import annotations

import io
import os
import secrets
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import numpy as np
from django.conf import settings
from django.core.files.base import ContentFile, File
from django.core.files.storage import storages
from django.db import transaction

from simengine.gantt import segment_jobs
from simengine.gantt_lod import SegmentTable
from simengine.streaming import LIVE_COLUMNS, live_rows

from .models import Run, RunResult


def results_storage():
    return storages["results"]


def segment_rows(result) -> dict[str, np.ndarray]:
    """Replication 0's segments of a Result as live rows (the job named by job id and stream),
    sorted by start."""
    seg = result.segments
    n = len(seg["t0"])
    columns = dict(seg)
    job = np.asarray(seg["job"], np.int64)
    columns["job_id"], columns["stream"] = segment_jobs(result.jobs["job_id"], result.jobs["stream"], job)
    rows = live_rows(columns, n)
    order = np.argsort(rows["t0"], kind="stable")
    return {k: v[order] for k, v in rows.items()}


def save(run: Run, result) -> tuple[str, int]:
    """Write a Result's files; returns (location, bytes written). Nothing is left behind when
    writing fails."""
    storage = results_storage()
    location = f"runs/{run.pk}/{secrets.token_hex(6)}"
    written: list[str] = []
    size = 0

    def put(name: str, data: bytes | File) -> None:
        nonlocal size
        path = storage.save(f"{location}/{name}", data if isinstance(data, File) else ContentFile(data))
        written.append(path)
        size += storage.size(path)

    try:
        with tempfile.TemporaryFile() as tmp:  # the npz may be large: through a file, not memory
            result.write_npz(tmp)
            tmp.seek(0)
            put("result.npz", File(tmp, name="result.npz"))
        for name, data in gantt_files(segment_rows(result)).items():
            put(f"gantt/{name}", data)
        put("gantt/queue.npz", _queue_npz(result))
    except BaseException:
        for path in written:
            storage.delete(path)
        raise
    return location, size


def queue_times(jobs: dict[str, np.ndarray], clusters: int) -> dict[str, np.ndarray]:
    """Submit and start times (never started: inf) of replication 0's workload jobs, sorted
    within each cluster, and the clusters' offsets: queue length at t is the jobs submitted by t
    less those started by t."""
    mine = (jobs["replication"] == 0) & (jobs["cluster"] >= 0)
    if "reservation" in jobs:
        mine &= jobs["reservation"] < 0  # a reservation's row waits for its window, not in a queue
    cluster = jobs["cluster"][mine].astype(np.int64)
    submit = jobs["submit"][mine].astype(np.float64)
    start = np.where(np.isnan(jobs["start"][mine]), np.inf, jobs["start"][mine]).astype(np.float64)
    by_submit = np.lexsort((submit, cluster))
    by_start = np.lexsort((start, cluster))
    offsets = np.searchsorted(cluster[by_submit], np.arange(clusters + 1))
    return {"submit": submit[by_submit], "start": start[by_start], "offsets": offsets.astype(np.int64)}


def _queue_npz(result) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **queue_times(result.jobs, len(result.cluster_processors)))
    return buffer.getvalue()


def queue_arrays(stored: RunResult) -> dict[str, np.ndarray] | None:
    """The stored queue times (None for results stored without them)."""
    if not stored.location:
        return None
    try:
        with results_storage().open(f"{stored.location}/gantt/queue.npz", "rb") as f, \
                np.load(f, allow_pickle=False) as npz:
            return {name: npz[name] for name in npz.files}
    except FileNotFoundError:
        return None


def gantt_files(rows: dict[str, np.ndarray]) -> dict[str, bytes]:
    """The files of a Gantt folder: each column (rows sorted by start) and the block index."""
    order = np.argsort(rows["t0"], kind="stable")
    rows = {k: np.asarray(v)[order] for k, v in rows.items()}
    table = SegmentTable(rows)
    files = {f"{name}.npy": _npy(rows[name]) for name in LIVE_COLUMNS}
    files["index.npy"] = _npy(np.stack([table.lo, table.hi]))
    return files


def _save_gantt_folder(folder: str, files: dict[str, bytes]) -> None:
    """Write a Gantt folder whole before it is read: the index file goes last and says the folder
    is complete (files of the same name are replaced: two writers write the same bytes)."""
    storage = results_storage()
    index = files.pop("index.npy")
    for name, data in files.items():
        if storage.exists(f"{folder}/{name}"):
            storage.delete(f"{folder}/{name}")
        storage.save(f"{folder}/{name}", ContentFile(data))
    if not storage.exists(f"{folder}/index.npy"):
        storage.save(f"{folder}/index.npy", ContentFile(index))


def _gantt_folder_table(folder: str) -> SegmentTable:
    columns = {name: np.load(_local_path(f"{folder}/{name}.npy"), mmap_mode="r", allow_pickle=False)
               for name in LIVE_COLUMNS}
    index = np.load(_local_path(f"{folder}/index.npy"), allow_pickle=False)
    return SegmentTable(columns, (index[0], index[1]))


def save_replication_gantt(stored: RunResult, replication: int, rows: dict[str, np.ndarray]) -> None:
    """Keep another replication's Gantt beside the result (``gantt_r<replication>/``)."""
    _save_gantt_folder(f"{stored.location}/gantt_r{replication}", gantt_files(rows))


def has_replication_gantt(stored: RunResult, replication: int) -> bool:
    return bool(stored.location) and results_storage().exists(f"{stored.location}/gantt_r{replication}/index.npy")


def ended_folder(run: Run) -> str:
    """Where the Gantt a failed or cancelled run streamed is kept (it has no stored result; its
    chunks never change once it has ended). Its end is in the name: a database may give the id
    of a run whose creation was rolled back to another."""
    ended = int(run.finished_at.timestamp() * 1e6) if run.finished_at else 0
    return f"runs/{run.pk}/ended-a{run.attempt}-{ended}"


def has_ended_gantt(run: Run) -> bool:
    return results_storage().exists(f"{ended_folder(run)}/index.npy")


def save_ended_gantt(run: Run, rows: dict[str, np.ndarray], state: dict[str, np.ndarray]) -> None:
    """Keep an ended run's streamed rows as Gantt columns (``rows``, any order) and ``state``:
    the rows still open at its end and what else its last chunks said (``ended.npz``)."""
    buffer = io.BytesIO()
    np.savez(buffer, **state)
    _save_gantt_folder(ended_folder(run), gantt_files(rows) | {"ended.npz": buffer.getvalue()})


def ended_gantt(run: Run) -> tuple[SegmentTable, dict[str, np.ndarray]]:
    """An ended run's kept Gantt (memory-mapped) and state (save_ended_gantt)."""
    folder = ended_folder(run)
    with np.load(_local_path(f"{folder}/ended.npz"), allow_pickle=False) as npz:
        state = {name: npz[name] for name in npz.files}
    return _gantt_folder_table(folder), state


def _npy(values: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(values), allow_pickle=False)
    return buffer.getvalue()


def delete(location: str) -> None:
    """Remove a stored result's files (a deleted run)."""
    if not location:
        return
    storage = results_storage()
    try:
        folders, _ = storage.listdir(location)
    except (FileNotFoundError, NotImplementedError, OSError):
        folders = []
    for folder in [f"{location}/{name}" for name in folders] + [location]:
        try:
            _, files = storage.listdir(folder)
        except (FileNotFoundError, NotImplementedError, OSError):
            continue
        for name in files:
            storage.delete(f"{folder}/{name}")
    try:
        path = storage.path(location)
    except NotImplementedError:
        return
    shutil.rmtree(path, ignore_errors=True)


def _local_path(name: str) -> Path:
    """A path on this machine to read a stored file from (the file itself when the storage has
    local paths; else a cached copy)."""
    storage = results_storage()
    try:
        return Path(storage.path(name))
    except NotImplementedError:
        cached = Path(settings.GRIDWEB_DATA_DIR) / "cache" / name
        if not cached.exists():
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_name(f".{cached.name}.{os.getpid()}")
            with storage.open(name, "rb") as source, open(tmp, "wb") as target:
                shutil.copyfileobj(source, target, 1 << 20)
            os.replace(tmp, cached)
        return cached


@contextmanager
def open_npz(stored: RunResult) -> Iterator[np.lib.npyio.NpzFile]:
    """The stored ``Result.write_npz`` arrays (each read only when asked for)."""
    if stored.location:
        with results_storage().open(f"{stored.location}/result.npz", "rb") as f, \
                np.load(f, allow_pickle=False) as npz:
            yield npz
    else:  # a result stored before the results storage existed
        with np.load(io.BytesIO(bytes(stored.npz)), allow_pickle=False) as npz:
            yield npz


def gantt_table(stored: RunResult, replication: int = 0) -> SegmentTable:
    """A replication's segments of a stored result (replication 0's, or another one kept by
    save_replication_gantt), memory-mapped."""
    if not stored.location:
        with open_npz(stored) as npz:
            arrays = {name: npz[name] for name in npz.files if name.startswith(("segments_", "jobs_job_id",
                                                                                 "jobs_stream"))}
        return SegmentTable(_legacy_rows(arrays))
    return _gantt_folder_table(f"{stored.location}/gantt" + (f"_r{replication}" if replication else ""))


def _legacy_rows(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    seg = {k[len("segments_"):]: v for k, v in arrays.items() if k.startswith("segments_")}
    if "t0" not in seg:
        return live_rows({"t0": np.zeros(0)}, 0)
    job = np.asarray(seg["job"], np.int64)
    seg["job_id"], seg["stream"] = segment_jobs(arrays["jobs_job_id"], arrays["jobs_stream"], job)
    rows = live_rows(seg)
    order = np.argsort(rows["t0"], kind="stable")
    return {k: v[order] for k, v in rows.items()}


def on_run_deleted(sender: type, instance: Run, **kwargs: object) -> None:
    """``post_delete`` of a Run: the Gantt kept for it as an ended run goes once the deletion commits."""
    folder = ended_folder(instance)
    transaction.on_commit(lambda: delete(folder))


def on_result_deleted(sender: type, instance: RunResult, **kwargs: object) -> None:
    """``post_delete`` of a RunResult (a deleted run): its files go once the deletion commits."""
    location = instance.location
    transaction.on_commit(lambda: delete(location))
