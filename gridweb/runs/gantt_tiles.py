"""What the Gantt of a run shows at any zoom: level of detail decided on the server.

The page asks for the window it shows (``tile``): when few enough segments lie in it
(``EXACT_ROWS``) it gets them, exactly, for the window padded by half its width on either side
(so a pan does not have to wait); otherwise it gets an occupancy raster of the padded window,
one column per pixel and one processor band per pixel row, per segment kind
(simengine.gantt_lod). Either way it never holds more than ``ROWS_CAP`` rows or one raster.

Where the segments come from (:func:`segment_source`):

- a done run: its stored result's Gantt columns, memory-mapped (gridweb.runs.result_store);
- a run still going: the segment chunks it streamed (their binary frames), read incrementally
  into a table kept in this process (``_ChunkTables``, least recently used first out), plus the
  open rows of the last chunk: segments in progress, drawn up to the simulated time reached;
- a cancelled or failed run (it keeps the Gantt of what it simulated): the same rows, read from
  its chunks once and kept as memory-mapped files beside the results (result_store's ended
  Gantt), as a done run's, so no process holds them.
"""

from __future__ import annotations

import math
import threading
from typing import Any
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

import simengine
from gridweb.scenarios.validation import validate_spec
from simengine.gantt import KIND_NAMES
from simengine.gantt_lod import BLOCK, SegmentTable, bands_for, block_bounds, quantize
from simengine.streaming import LIVE_COLUMNS, LIVE_DTYPES

from . import frames, result_store
from .models import Run, RunChunk, RunResult, Status
from simengine.presets import PLATFORMS

#: at most this many segments in the shown window are sent as rows; more: a raster
EXACT_ROWS = 12_000
#: rows in one answer at most (the padded window)
ROWS_CAP = 30_000
#: the colour of each segment kind (MODELS.md §8 order), here and on the page (gantt_config)
KIND_COLOURS = ("#3b75af", "#f0b429", "#8e6cbf", "#9aa5b1", "#d64545", "#2f9e8f", "#e07b39", "#3a3a3a")
#: kinds in the order a raster pixel paints them (last on top: a suspended job's gap lies under the
#: preemptor running there, claims and reservation windows over everything)
RASTER_ORDER = ("suspended", "run", "stretched", "transfer", "killed", "reservation", "claimed")
#: these show with at least this opacity in any pixel they touch, however little of it they cover
RASTER_FLOOR = {"claimed": 0.85, "reservation": 0.6, "killed": 0.8, "transfer": 0.7}
#: the window asked for is padded by this share of its width on either side (a pan need not wait)
PAD = 0.25
#: raster columns at most
MAX_BINS = 4096
#: points of the strip's lines at most (over the padded window: one per two pixels of the view)
SERIES_BINS = 1000
#: kinds that keep processors busy (a reservation window and a suspended job's gap do not: the
#: job in the window, the preemptor in the gap are drawn over them; a down processor does no work)
BUSY_KINDS = [KIND_NAMES.index(k) for k in KIND_NAMES if k not in ("reservation", "suspended", "down")]
#: kinds other segments lie over: sent first, so that they are drawn underneath
UNDER_KINDS = [KIND_NAMES.index("reservation"), KIND_NAMES.index("suspended")]
#: segment-chunk tables kept in this process, and their rows in all
TABLES_KEPT, TABLE_ROWS_KEPT = 8, 40_000_000


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
        listed = (PLATFORMS.get(platform["preset"]) or {}).get("clusters")
    out = []
    for c in listed or []:
        try:
            out.append({"name": str(c["name"]), "processors": int(c["processors"])})
        except (KeyError, TypeError, ValueError):
            continue  # an unvalidated document: skip what cannot be drawn
    return out


@dataclass
class SegmentSource:
    table: SegmentTable
    open_rows: dict[str, np.ndarray]  # in progress at ``frontier`` (t1 clipped to it)
    frontier: float  # simulated time reached (inf: the run's result is complete)
    seq: int  # the last chunk read (-1: from the stored result)
    kinds: list[int]
    queue: Any = None  # callable: queue lengths [clusters, len(t)] at times t (NaN: unknown), or None

    @property
    def count(self) -> int:
        return self.table.n + len(self.open_rows["t0"])


class _GrowingTable:
    """A run's streamed segment rows, appended chunk by chunk, with the block index kept up to date."""

    def __init__(self) -> None:
        self.columns = {name: np.zeros(1024, dtype) for name, dtype in LIVE_DTYPES.items()}
        self.n = 0
        self.lo = np.zeros(0)
        self.hi = np.zeros(0)
        self.open = {name: np.zeros(0, dtype) for name, dtype in LIVE_DTYPES.items()}
        self.frontier = -math.inf
        self.seq = -1
        self.kinds: set[int] = set()
        self.lock = threading.Lock()
        self.queued_at: list[float] = []  # the chunks' window ends and the queue lengths there
        self.queued: list[list[int]] = []

    def append(self, rows: dict[str, np.ndarray]) -> None:
        m = len(rows["t0"])
        if not m:
            return
        if self.n + m > len(self.columns["t0"]):
            size = max(2 * len(self.columns["t0"]), self.n + m)
            for name, values in self.columns.items():
                grown = np.zeros(size, values.dtype)
                grown[:self.n] = values[:self.n]
                self.columns[name] = grown
        for name in LIVE_COLUMNS:
            self.columns[name][self.n:self.n + m] = rows[name]
        first_block = self.n // BLOCK  # recompute from the block the new rows start in
        self.n += m
        lo, hi = block_bounds(self.columns["t0"][first_block * BLOCK:self.n],
                               self.columns["t1"][first_block * BLOCK:self.n], BLOCK)
        self.lo = np.concatenate([self.lo[:first_block], lo])
        self.hi = np.concatenate([self.hi[:first_block], hi])
        self.kinds.update(np.unique(rows["kind"]).tolist())

    def table(self) -> SegmentTable:
        return SegmentTable({name: values[:self.n] for name, values in self.columns.items()}, (self.lo, self.hi))


class _ChunkTables:
    """The streamed-segment tables of the runs this process serves, least recently used out first."""

    def __init__(self) -> None:
        self._tables: OrderedDict[tuple[int, int, str], _GrowingTable] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, run: Run) -> _GrowingTable:
        # an attempt's chunks never change once stored; started_at tells runs apart whose id a
        # database reused after a deletion
        key = (run.pk, run.attempt, run.started_at.isoformat() if run.started_at else "")
        with self._lock:
            table = self._tables.pop(key, None) or _GrowingTable()
            self._tables[key] = table
            while len(self._tables) > TABLES_KEPT or (
                    len(self._tables) > 1 and sum(t.n for t in self._tables.values()) > TABLE_ROWS_KEPT):
                self._tables.popitem(last=False)
            return table

    def refresh(self, run: Run) -> _GrowingTable:
        table = self.get(run)
        with table.lock:  # one reader per table at a time: chunks are appended once, in order
            _read_chunks(run, table)
        return table

    def clear(self) -> None:
        with self._lock:
            self._tables.clear()


def _read_chunks(run: Run, table: _GrowingTable) -> None:
    """Append the run's segment chunks after ``table.seq`` to ``table``."""
    chunks = RunChunk.objects.filter(run_id=run.pk, kind="segments", seq__gt=table.seq).order_by("seq")
    for seq, data in chunks.values_list("seq", "data").iterator(chunk_size=8):
        header, arrays = frames.decode(bytes(data))
        table.append(frames.rows_of(arrays, "s"))
        if not header.get("keep_open"):
            table.open = frames.rows_of(arrays, "o")
            table.kinds.update(np.unique(table.open["kind"]).tolist())
        if header.get("window"):
            table.frontier = max(table.frontier, float(header["window"][1]))
            if header.get("queued") is not None:
                table.queued_at.append(float(header["window"][1]))
                table.queued.append(list(header["queued"]))
        table.seq = seq


CHUNK_TABLES = _ChunkTables()
_STORED: OrderedDict[str, Any] = OrderedDict()  # memory-mapped tables (an ended run's: and state) by location
_STORED_KEPT = 16


_STORED_LOCK = threading.Lock()


def _kept(key: str, load) -> Any:
    """What ``_STORED`` keeps under ``key``, loaded by ``load()`` when it is not kept (least
    recently used out first)."""
    with _STORED_LOCK:
        value = _STORED.pop(key, None)
    if value is None:
        value = load()
    with _STORED_LOCK:
        _STORED[key] = value
        while len(_STORED) > _STORED_KEPT:
            _STORED.popitem(last=False)
    return value


def _stored_table(stored: RunResult) -> SegmentTable:
    def load() -> SegmentTable:
        table = result_store.gantt_table(stored)
        table.kinds()
        return table

    return _kept(stored.location or f"legacy-{stored.pk}", load)


class ReplicationUnavailable(Exception):
    """Another replication's Gantt cannot be drawn now (the run has no result, or simulating that
    replication again would take too long for a request); the message says which."""


#: another replication's Gantt is simulated again while the request waits when that takes about
#: this many seconds at most (the run's engine time over its replications)
REPLICATION_INLINE_SECONDS = 15.0
_REPLICATION_LOCKS: dict[tuple[int, int], threading.Lock] = {}


def replication_table(run: Run, stored: RunResult, replication: int) -> SegmentTable:
    """Replication ``replication``'s Gantt: kept beside the result once simulated again
    (simengine.replication_segments: the same scenario, seed and engine give the same schedule)."""
    replications = int((run.summary or {}).get("replications", 1))
    if not 0 < replication < replications:
        raise ReplicationUnavailable(f"replication: must be within 0..{replications - 1}")
    with _STORED_LOCK:
        lock = _REPLICATION_LOCKS.setdefault((run.pk, replication), threading.Lock())
    with lock:
        if not result_store.has_replication_gantt(stored, replication):
            seconds = float((run.summary or {}).get("engine_seconds", 0.0)) / replications
            if seconds > REPLICATION_INLINE_SECONDS:
                raise ReplicationUnavailable(
                    f"replication {replication}'s Gantt would take about {seconds:.0f} s to simulate again; "
                    f"only replications that take at most {REPLICATION_INLINE_SECONDS:.0f} s are drawn on demand")
            rows = simengine.replication_segments(validate_spec(run.spec), replication)
            result_store.save_replication_gantt(stored, replication, rows)
    return result_store.gantt_table(stored, replication)


def segment_source(run: Run, replication: int = 0) -> SegmentSource:
    """The segments the run's Gantt shows now (module docstring); another replication than 0:
    a done run's, simulated again on demand (``replication_table``)."""
    stored = None
    if run.status == Status.DONE:
        stored = RunResult.objects.filter(run=run).first()
    if replication:
        if stored is None:
            raise ReplicationUnavailable(f"replication {replication}'s Gantt is drawn once the run is done")
        table = replication_table(run, stored, replication)
        empty = {name: np.zeros(0, dtype) for name, dtype in LIVE_DTYPES.items()}
        return SegmentSource(table, empty, math.inf, -1, table.kinds(), None)
    if stored is not None:
        table = _stored_table(stored)
        empty = {name: np.zeros(0, dtype) for name, dtype in LIVE_DTYPES.items()}
        queue = result_store.queue_arrays(stored)
        return SegmentSource(table, empty, math.inf, -1, table.kinds(),
                             None if queue is None else lambda t: _queue_from_times(queue, t))
    if run.status in (Status.FAILED, Status.CANCELLED):
        return _ended_source(run)
    growing = CHUNK_TABLES.refresh(run)
    return _streamed_source(growing.table(), growing.open, growing.frontier, growing.seq, sorted(growing.kinds),
                            np.array(growing.queued_at), np.array(growing.queued, np.float64))


def _streamed_source(table: SegmentTable, open_rows: dict[str, np.ndarray], frontier: float, seq: int,
                     kinds: list[int], queued_at: np.ndarray, queued: np.ndarray) -> SegmentSource:
    opened = {name: np.array(values) for name, values in open_rows.items()}
    if len(opened["t0"]) and math.isfinite(frontier):
        opened["t1"] = np.minimum(opened["t1"], frontier)  # drawn up to the time reached
        opened["t1"] = np.where(np.isnan(opened["t1"]), frontier, opened["t1"])
    queue = None
    if len(queued_at):
        queue = lambda t: _queue_from_samples(queued_at, queued, t)  # noqa: E731
    return SegmentSource(table, opened, frontier, seq, kinds, queue)


_ENDED_LOCKS: dict[str, threading.Lock] = {}


def _ended_source(run: Run) -> SegmentSource:
    """A failed or cancelled run's streamed Gantt, kept as files the first time it is drawn."""
    folder = result_store.ended_folder(run)
    with _STORED_LOCK:
        lock = _ENDED_LOCKS.setdefault(folder, threading.Lock())

    def load() -> tuple[SegmentTable, dict[str, np.ndarray]]:
        with lock:  # (one writer per process; writers in two processes write the same bytes)
            if not result_store.has_ended_gantt(run):
                read = _GrowingTable()
                _read_chunks(run, read)
                result_store.save_ended_gantt(run, {name: values[:read.n] for name, values in read.columns.items()}, {
                    **{f"open_{name}": values for name, values in read.open.items()},
                    "frontier": np.array(read.frontier), "seq": np.array(read.seq),
                    "kinds": np.array(sorted(read.kinds), np.int64), "queued_at": np.array(read.queued_at, np.float64),
                    "queued": np.array(read.queued, np.float64) if read.queued else np.zeros((0, 0))})
            return result_store.ended_gantt(run)

    table, state = _kept(folder, load)
    open_rows = {name: state[f"open_{name}"] for name in LIVE_COLUMNS}
    return _streamed_source(table, open_rows, float(state["frontier"]), int(state["seq"]),
                            state["kinds"].tolist(), state["queued_at"], state["queued"])


def _queue_from_times(q: dict[str, np.ndarray], t: np.ndarray) -> np.ndarray:
    offsets = q["offsets"]
    out = np.zeros((len(offsets) - 1, len(t)))
    for c in range(len(offsets) - 1):
        a, b = offsets[c], offsets[c + 1]
        out[c] = (np.searchsorted(q["submit"][a:b], t, side="right")
                  - np.searchsorted(q["start"][a:b], t, side="right"))
    return out


def _queue_from_samples(at: np.ndarray, values: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The queue lengths the stream reported last at or before each t (NaN before the first
    report and after the time reached)."""
    k = np.searchsorted(at, t, side="right") - 1
    out = values[np.clip(k, 0, len(at) - 1)].T.copy()
    out[:, (k < 0) | (t > at[-1])] = np.nan
    return out


def _open_in(source: SegmentSource, a: float, b: float) -> np.ndarray:
    o = source.open_rows
    return np.flatnonzero((o["t0"] < b) & (o["t1"] >= a))


def _header(run: Run, source: SegmentSource) -> dict:
    a, b = source.table.span
    if len(source.open_rows["t0"]):
        a = min(a, float(source.open_rows["t0"].min())) if source.table.n else float(source.open_rows["t0"].min())
        b = max(b, float(source.open_rows["t1"].max()))
    return {"run": run.pk, "status": run.status, "count": source.count, "span": [a, b],
            "replications": int((run.summary or {}).get("replications", 1)),
            "frontier": source.frontier if math.isfinite(source.frontier) else None, "seq": source.seq,
            "clusters": cluster_layout(run), "kinds": [KIND_NAMES[k] for k in source.kinds],
            "kind_codes": source.kinds}


def tile(run: Run, a: float | None, b: float | None, width: int, height: int, replication: int = 0) -> bytes:
    """The frame the page draws for the window [a, b) at ``width`` x ``height`` pixels (module
    docstring); a and b default to the whole run."""
    source = segment_source(run, replication)
    header = _header(run, source)
    span_a, span_b = header["span"]
    if a is None or b is None or not b > a:
        a, b = span_a, max(span_b, span_a + 1.0)
    pad = (b - a) * PAD
    pa, pb = a - pad, b + pad
    processors = [c["processors"] for c in header["clusters"]]
    visible = source.table.count(a, b) + len(_open_in(source, a, b))
    if visible <= EXACT_ROWS:
        series = _series(source, pa, pb, int(min(SERIES_BINS, max(16, width))), processors)
        which, total = source.table.select(pa, pb, ROWS_CAP)
        if total > ROWS_CAP:  # the padding brings too many: the shown window only
            pa, pb = a, b
            which, total = source.table.select(pa, pb, ROWS_CAP)
        rows = source.table.rows(which)
        # drawn in this order: windows and suspended gaps first, so what runs in them is on top
        under = np.isin(rows["kind"], UNDER_KINDS)
        if under.any():
            order = np.argsort(~under, kind="stable")
            rows = {k: v[order] for k, v in rows.items()}
        opened = _open_in(source, pa, pb)
        header |= {"mode": "rows", "window": [pa, pb], "n": int(len(which)), "n_open": int(len(opened))}
        arrays = frames.wire_rows(rows, "s") | frames.wire_rows({k: v[opened] for k, v in source.open_rows.items()},
                                                                 "o")
        return frames.encode(frames.json_safe(header), arrays | series)
    pa, pb = a - pad, b + pad
    bins = int(min(MAX_BINS, max(16, (1 + 2 * PAD) * width)))
    bands = bands_for(processors, height)
    occupancy = source.table.raster(pa, pb, bins, bands, processors, source.kinds)
    if len(source.open_rows["t0"]):
        open_table = SegmentTable(source.open_rows)
        occupancy += open_table.raster(pa, pb, bins, bands, processors, source.kinds)
    header |= {"mode": "raster", "window": [pa, pb], "bins": bins, "bands": bands, "visible": int(visible)}
    # the strip from the same raster: one pass over the segments, not two
    series = _series(source, pa, pb, bins, processors, _busy_of(occupancy, source.kinds, bands, processors))
    raster = quantize(occupancy)
    return frames.encode(frames.json_safe(header), {"raster": raster, "rgba": compose_rgba(raster, source.kinds)}
                         | series)


def compose_rgba(raster: np.ndarray, kinds: list[int]) -> np.ndarray:
    """The raster as pixels (uint32 RGBA, little-endian: R in the low byte), one row per band: in
    each pixel the kinds' colours over each other in RASTER_ORDER, each as opaque as the share of
    the pixel it covers (at least its RASTER_FLOOR, when it covers any)."""
    _, bands, bins = raster.shape
    r = np.zeros((bands, bins), np.float32)
    g, b, a = r.copy(), r.copy(), r.copy()
    for name in RASTER_ORDER:
        code = KIND_NAMES.index(name)
        if code not in kinds:
            continue
        occupied = raster[kinds.index(code)].astype(np.float32) / 255
        alpha = occupied * 0.92
        if name in RASTER_FLOOR:
            alpha = np.where(occupied > 0, np.maximum(occupied, RASTER_FLOOR[name]), 0).astype(np.float32)
        colour = int(KIND_COLOURS[code][1:], 16)
        out = alpha + a * (1 - alpha)
        below = a * (1 - alpha)
        with np.errstate(invalid="ignore", divide="ignore"):
            for channel, value in ((r, colour >> 16), (g, (colour >> 8) & 255), (b, colour & 255)):
                channel[:] = np.where(out > 0, (value * alpha + channel * below) / out, 0)
        a = out
    pixel = (np.rint(a * 255).astype(np.uint32) << 24) | (np.rint(b).astype(np.uint32) << 16) \
        | (np.rint(g).astype(np.uint32) << 8) | np.rint(r).astype(np.uint32)
    return np.where(a > 0, pixel, 0).astype(np.uint32)


def _busy_of(occupancy: np.ndarray, kinds: list[int], bands: list[int], processors: list[int]) -> np.ndarray:
    """Busy processors per cluster and column ``[clusters, bins]`` from a Gantt raster's occupancy
    (per kind, band and column: the share of the cell covered; a band holds processors / bands):
    the same numbers ``_series`` gets from the segments."""
    slots = [kinds.index(k) for k in BUSY_KINDS if k in kinds]
    per_band = occupancy[slots].sum(axis=0, dtype=np.float64) if slots else np.zeros(occupancy.shape[1:])
    start = np.concatenate([[0], np.cumsum(bands)])
    return np.stack([per_band[start[c]:start[c + 1]].sum(axis=0) * (processors[c] / bands[c])
                     for c in range(len(processors))])


def _series(source: SegmentSource, a: float, b: float, bins: int, processors: list[int],
            busy: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The strip under the Gantt over [a, b) in ``bins`` columns: ``series.busy`` -- busy
    processors per cluster (mean over each column, from the segments of busy kinds; or ``busy``
    when the caller has it already) -- and ``series.queue`` -- jobs waiting per cluster at each
    column's middle (NaN: unknown); one row per cluster, float32."""
    C = len(processors)
    if busy is None:
        ones = [1] * C
        busy = source.table.raster(a, b, bins, ones, processors, BUSY_KINDS).sum(axis=0)
        if len(source.open_rows["t0"]):
            busy += SegmentTable(source.open_rows).raster(a, b, bins, ones, processors, BUSY_KINDS).sum(axis=0)
        busy *= np.asarray(processors, np.float32)[:, None]
    middles = a + (np.arange(bins) + 0.5) * (b - a) / bins
    queue = np.full((C, bins), np.nan, np.float32)
    if source.queue is not None:
        q = source.queue(middles)
        queue[:min(C, len(q))] = q[:C]
    return {"series.busy": busy.astype(np.float32), "series.queue": queue}


def job_rows(run: Run, stream: int, job_id: int, replication: int = 0) -> bytes:
    """Every segment of one job (its stream and job id), for highlighting it at any zoom."""
    source = segment_source(run, replication)
    rows = source.table.find(lambda c: (c["job_id"] == job_id) & (c["stream"] == stream))
    o = source.open_rows
    mine = (o["job_id"] == job_id) & (o["stream"] == stream)
    opened = {k: v[mine] for k, v in o.items()}
    header = {"run": run.pk, "mode": "job", "stream": stream, "job_id": job_id, "n": int(len(rows["t0"])),
              "n_open": int(mine.sum())}
    return frames.encode(header, frames.wire_rows(rows, "s") | frames.wire_rows(opened, "o"))


def rows_at(run: Run, cluster: int, processor: int, t: float, replication: int = 0) -> bytes:
    """The segments covering one processor of a cluster at time t (what a click in a raster hit)."""
    source = segment_source(run, replication)
    eps = max(abs(t) * 1e-12, 1e-9)
    which, _ = source.table.select(t, t + eps, ROWS_CAP)
    rows = source.table.rows(which)
    keep = ((rows["cluster"] == cluster) & (rows["first_processor"] <= processor)
            & (rows["first_processor"] + rows["processors"] > processor))
    rows = {k: v[keep] for k, v in rows.items()}
    o = source.open_rows
    mine = ((o["cluster"] == cluster) & (o["first_processor"] <= processor)
            & (o["first_processor"] + o["processors"] > processor) & (o["t0"] <= t) & (o["t1"] >= t))
    header = {"run": run.pk, "mode": "at", "n": int(len(rows["t0"])), "n_open": int(mine.sum())}
    return frames.encode(header, frames.wire_rows(rows, "s") | frames.wire_rows({k: v[mine] for k, v in o.items()},
                                                                                   "o"))


_warmed = threading.Event()


def warm_up(**_: Any) -> None:
    """Load the compiled level-of-detail kernels (numba's cache) in a thread of their own, once per
    process, when the server serves its first request: the first tile then does not wait for them."""
    if _warmed.is_set():
        return
    _warmed.set()

    def load() -> None:
        rows = {name: np.zeros(2, dtype) for name, dtype in LIVE_DTYPES.items()}
        rows["t1"][:] = 1.0
        # both array types the kernels see: writeable (streamed chunks) and read-only (a stored
        # result's memory-mapped columns), which numba compiles and caches separately
        frozen = {name: values.copy() for name, values in rows.items()}
        for values in frozen.values():
            values.flags.writeable = False
        for columns in (rows, frozen):
            table = SegmentTable(columns)
            table.select(0.0, 1.0, 1)
            table.raster(0.0, 1.0, 2, [1], [1], [0])

    threading.Thread(target=load, name="gridweb-gantt-warm-up", daemon=True).start()


# --- The three requests and their parameters (the run page's views and the API share them) ------

class BadParameter(ValueError):
    """A query parameter that is missing or out of range: ``name``, ``reason``."""

    def __init__(self, name: str, reason: str):
        super().__init__(f"{name}: {reason}")
        self.name, self.reason = name, reason


def _number(query, name: str, kind: type = float, low: float = -math.inf, high: float = math.inf,
            default: Any = BadParameter) -> Any:
    text = query.get(name)
    if text is None or text == "":
        if default is BadParameter:
            raise BadParameter(name, "required")
        return default
    try:
        value = kind(text)
    except ValueError:
        raise BadParameter(name, f"not a{'n integer' if kind is int else ' number'}: {str(text)[:40]!r}") from None
    if not (math.isfinite(value) and low <= value <= high):
        raise BadParameter(name, f"must be within {low:g}..{high:g}")
    return value


def answer(what: str, run: Run, query) -> bytes:
    """The frame of ``tile``, ``job`` or ``at`` for the query parameters (docs/web.md); raises
    BadParameter or ReplicationUnavailable."""
    replication = _number(query, "replication", int, 0, 10**6, default=0)
    if what == "tile":
        return tile(run, _number(query, "t0", default=None), _number(query, "t1", default=None),
                    _number(query, "width", int, 16, 8000, default=1200),
                    _number(query, "height", int, 16, 4000, default=400), replication)
    if what == "job":
        return job_rows(run, _number(query, "stream", int, 0, 2**31 - 1), _number(query, "job_id", int, -2**53, 2**53),
                        replication)
    return rows_at(run, _number(query, "cluster", int, 0, 2**15 - 1), _number(query, "processor", int, 0, 2**31 - 1),
                   _number(query, "t"), replication)
