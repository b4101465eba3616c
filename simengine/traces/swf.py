"""Standard Workload Format (SWF v2.2) reader and writer.

SWF is the format of the Parallel Workloads Archive
(https://www.cs.huji.ac.il/labs/parallel/workload/swf.html): header comment lines
start with ``;``, then one line per job with 18 whitespace-separated numeric fields,
``-1`` meaning unknown.

The reader streams the (optionally gzipped) file in blocks of a few MB, indexes
each block's lines with numpy and parses its numbers with one ``np.loadtxt`` call,
so a 200k-job trace reads in well under a second and no per-line Python object
outlives its block. Only when a block does not parse does a line-by-line scan run,
to name the first bad line and field exactly.

This module also holds :class:`Trace` and the helpers the GWF reader shares
(GWF is SWF extended with grid columns).
"""
from __future__ import annotations

import gzip
import io
import os
import re
import warnings
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np

from ..errors import TraceError
from ..text_columns import integer_text
from ..workload import JobTable

#: Names of the 18 SWF fields, in file order (field ``i`` is ``SWF_FIELDS[i - 1]``).
SWF_FIELDS = (
    "job number",
    "submit time",
    "wait time",
    "run time",
    "allocated processors",
    "average cpu time",
    "used memory",
    "requested processors",
    "requested time",
    "requested memory",
    "status",
    "user id",
    "group id",
    "executable",
    "queue",
    "partition",
    "preceding job",
    "think time",
)
N_FIELDS = len(SWF_FIELDS)

#: Header key under which readers report how many jobs had an unknown (negative) run time.
UNKNOWN_RUNTIME_KEY = "gridweb.unknown_runtime"
#: At most this many line numbers of skipped jobs are kept in ``Trace.skipped_lines``.
MAX_SKIPPED_LINES = 1000
#: Header keys that are always lists: the SWF spec lets them repeat (one per queue, note ...).
MULTI_KEYS = frozenset({"Conversion", "Information", "Note", "Partition", "Queue"})

# Extra columns (name, 0-based SWF field) the reader keeps and the writer accepts.
_ID_COLUMNS = (("user", 11), ("group", 12), ("executable", 13), ("queue", 14), ("partition", 15))
# Fields the reader stores as integers; a fractional value there is malformed.
_INT_FIELDS = (0, 4, 7, 10) + tuple(i for _, i in _ID_COLUMNS)
# Allocated and requested processors (0-based).
_PROC_FIELDS = (4, 7)
#: The most processors a job, or a trace's MaxProcs, may name (every reader refuses more, naming the
#: line and field): the largest 32-bit integer, what a PostgreSQL ``integer`` column and the Gantt's
#: int32 columns hold, and far more than any machine has.
MAX_PROCESSORS = 2**31 - 1
# An integer field this large (or larger) does not fit the int64 column it is stored in.
_INT64_END = 2.0**63

# Blocks of about this many bytes are parsed at once: big enough for numpy to
# amortise its call overhead, small enough to keep temporaries at a few tens of MB
# (a block of comment lines holds half a million of them; 4 MB blocks cost a
# comments bomb 136 MB of peak memory, 1 MB blocks 33 MB, and read LCG as fast)
_BLOCK_BYTES = 1 << 20


@dataclass(frozen=True)
class ReadCaps:
    """Bounds on what a reader takes in, for files from untrusted hands (a server's uploads:
    docs/deploy.md); None: no bound (the CLI and the Python API read whatever they are given).
    A file past one is refused with a :class:`TraceError` as soon as the reader gets there, so
    memory stays bounded whatever the file (a gzip bomb, one endless line, endless comments)."""

    bytes: int | None = None  # decompressed
    line_bytes: int | None = None  # longest line
    comment_lines: int | None = None
    jobs: int | None = None  # data lines (skipped ones included); Batsim: jobs, and profiles too
    element_bytes: int | None = None  # Batsim JSON: longest job, profile or other top-level value

    def check_comments(self, path: str, count: int) -> None:
        if self.comment_lines is not None and count > self.comment_lines:
            raise TraceError(path, None, None, f"more than {self.comment_lines:,} comment lines")

    def check_jobs(self, path: str, count: int) -> None:
        if self.jobs is not None and count > self.jobs:
            raise TraceError(path, None, None, f"more than {self.jobs:,} jobs")


NO_CAPS = ReadCaps()
# ``; Key: value`` -- the colon must be followed by a blank or the line end so that
# continuation lines holding a URL (``;   http://...``) are not read as a key "http".
_HEADER_RE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_.\-]*)\s*:(?:\s+(.*?))?\s*$")


@dataclass
class Trace:
    """A workload trace read from a file.

    Attributes
    ----------
    jobs : JobTable
        Jobs sorted by submit time (stable, so file order breaks ties). ``cluster`` is
        -1 unless a GWF site assigned one; ``stream`` is 0.
    path : str
        The file read.
    format : str
        ``"swf"`` or ``"gwf"``.
    header : dict
        Header comment fields (``"MaxProcs": "64"``); keys in :data:`MULTI_KEYS` and any
        key that repeats map to a list of values. The reader adds
        :data:`UNKNOWN_RUNTIME_KEY` (a count, as a string).
    comments : list of str
        Raw header comment lines (without the line break), kept as metadata.
    max_procs : int or None
        Leading integer of the ``MaxProcs`` header (else ``MaxNodes``), None if absent.
    skipped : int
        Jobs skipped because they give no processor count.
    skipped_lines : list of int
        Line numbers (1-based) of the first :data:`MAX_SKIPPED_LINES` skipped jobs.
    sites : list of str
        GWF: distinct site names in order of first appearance; ``[]`` for SWF.
    """

    jobs: JobTable
    path: str
    format: str
    header: dict[str, str | list[str]]
    comments: list[str]
    max_procs: int | None
    skipped: int
    skipped_lines: list[int]
    sites: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------
# Shared helpers (also used by the GWF reader)
# ---------------------------------------------------------------------------


def field_label(names: Sequence[str], index: int) -> str:
    """``"4 (run time)"`` for 0-based ``index`` into ``names``; ``"19 (extra)"`` past the end."""
    name = names[index] if index < len(names) else "extra"
    return f"{index + 1} ({name})"


def _open_binary(path: str) -> IO[bytes]:
    """Open ``path`` for reading bytes, transparently un-gzipping it.

    The gzip magic number decides, not the suffix, so a misnamed file still reads.
    """
    f = open(path, "rb")
    if f.read(2) == b"\x1f\x8b":
        f.seek(0)
        return gzip.GzipFile(fileobj=f)  # type: ignore[return-value]
    f.seek(0)
    return f


def iter_blocks(path: str, block_bytes: int = _BLOCK_BYTES, caps: ReadCaps = NO_CAPS) -> Iterator[tuple[bytes, int]]:
    """Yield ``(block, first_line_number)``: whole lines of the decompressed file.

    Every block but possibly the last ends with a line break. Read and
    decompression failures, and a file past ``caps.bytes`` or ``caps.line_bytes``,
    become :class:`TraceError` naming the file.
    """
    try:
        f = _open_binary(path)
    except FileNotFoundError:
        raise TraceError(path, None, None, "file not found") from None
    except OSError as exc:
        raise TraceError(path, None, None, f"cannot open: {exc.strerror or exc}") from None
    line = 1
    rest = b""
    total = 0
    with f:
        while True:
            try:
                chunk = f.read(block_bytes)
            except (OSError, EOFError, zlib.error) as exc:
                # Corrupt or truncated gzip streams surface here, mid-file.
                raise TraceError(path, None, None, f"cannot read: {exc}") from None
            total += len(chunk)
            if caps.bytes is not None and total > caps.bytes:
                raise TraceError(path, None, None, f"more than {caps.bytes:,} bytes (decompressed)")
            if not chunk:
                if rest:
                    yield rest, line
                return
            data = rest + chunk
            cut = data.rfind(b"\n") + 1
            if caps.line_bytes is not None and len(data) - cut > caps.line_bytes:
                raise TraceError(path, line + data.count(b"\n", 0, cut), None,
                                 f"a line longer than {caps.line_bytes:,} bytes")
            if cut == 0:  # a single line longer than a block: keep reading
                rest = data
                continue
            block, rest = data[:cut], data[cut:]
            yield block, line
            line += block.count(b"\n")


def decode_comment(raw: bytes) -> str:
    """A comment line as text: trailing blanks and CR dropped, odd bytes replaced."""
    return raw.rstrip().decode("utf-8", errors="replace")


def parse_header(comments: Sequence[str], marker: str) -> dict[str, str | list[str]]:
    """Parse ``<marker> Key: value`` comment lines into a dict.

    Keys in :data:`MULTI_KEYS`, and any key seen more than once, map to the list of
    their values in file order; other keys map to a string. Lines without a
    ``Key:`` (free text, continuation lines, column legends) stay only in ``comments``.
    """
    header: dict[str, str | list[str]] = {}
    for line in comments:
        m = _HEADER_RE.match(line.lstrip()[len(marker):])
        if not m:
            continue
        key, value = m.group(1), m.group(2) or ""
        old = header.get(key)
        if isinstance(old, list):
            old.append(value)
        elif old is not None:
            header[key] = [old, value]
        else:
            header[key] = [value] if key in MULTI_KEYS else value
    return header


def max_procs_from_header(header: dict[str, str | list[str]], path: str = "") -> int | None:
    """Leading integer of ``MaxProcs`` (else ``MaxNodes``): ``"32 (dual CPU)"`` -> 32.

    A count above :data:`MAX_PROCESSORS` raises :class:`TraceError` naming the header key."""
    for key in ("MaxProcs", "MaxNodes"):
        value = header.get(key)
        if isinstance(value, list):
            value = value[0] if value else None
        m = re.match(r"\s*(\d+)", value or "")
        if m:
            count = int(m.group(1))
            if count > MAX_PROCESSORS:
                raise TraceError(path, None, f"{key} (header)",
                                 f"{count:,} processors, more than the {MAX_PROCESSORS:,} a trace may name")
            return count
    return None


@dataclass
class _BlockLines:
    """Where the lines of one block are, found with vectorised byte scans."""

    start: np.ndarray  # byte offset of each line
    end: np.ndarray  # byte offset of its line break (or block end)
    ntok: np.ndarray  # whitespace-separated tokens on the line
    comment: np.ndarray  # bool: first token starts with the comment marker
    data: np.ndarray  # bool: non-blank, non-comment


def index_lines(block: bytes, marker: int) -> _BlockLines:
    """Index the lines of ``block``; ``marker`` is the comment byte (``ord(';')``)."""
    buf = np.frombuffer(block, dtype=np.uint8)
    # ASCII whitespace as bytes.split() sees it: space, \t \n \v \f \r.
    ws = (buf == 32) | ((buf >= 9) & (buf <= 13))
    tok = ~ws
    tok[1:] &= ws[:-1]  # a token starts where non-blank follows blank
    starts = np.flatnonzero(tok)
    del ws, tok
    breaks = np.flatnonzero(buf == 10)
    line_start = np.concatenate(([0], breaks + 1))
    line_end = np.append(breaks, len(buf))
    if len(line_start) > 1 and line_start[-1] == len(buf):  # no empty line after a final break
        line_start, line_end = line_start[:-1], line_end[:-1]
    first = np.searchsorted(starts, line_start)
    ntok = np.searchsorted(starts, line_end) - first
    nonblank = ntok > 0
    comment = np.zeros(len(line_start), dtype=bool)
    comment[nonblank] = buf[starts[first[nonblank]]] == marker
    return _BlockLines(line_start, line_end, ntok, comment, nonblank & ~comment)


def ids_or_strings(tokens: np.ndarray) -> np.ndarray:
    """int64 when every token is an integer, else the tokens as str (GWF ids may be names)."""
    try:
        return tokens.astype(np.int64)
    except (ValueError, OverflowError):
        return tokens.astype(str)


# ---------------------------------------------------------------------------
# SWF reader
# ---------------------------------------------------------------------------


class _BadLine(Exception):
    """First malformed line of a block: its index there, field label and reason."""

    def __init__(self, index: int, field: str | None, reason: str):
        super().__init__(reason)
        self.index, self.field, self.reason = index, field, reason


def _scan_numbers(block: bytes, lines: _BlockLines, rows: np.ndarray) -> _BadLine | None:
    """Slow path: the first token in data lines ``rows`` that is not a finite number."""
    for i in rows:
        for j, token in enumerate(block[lines.start[i]:lines.end[i]].split()):
            try:
                if b"_" in token:  # float() takes "1_000", numpy does not
                    raise ValueError
                value = float(token)
            except ValueError:
                return _BadLine(int(i), field_label(SWF_FIELDS, j), f"not a number: {_show(token)}")
            if not np.isfinite(value):
                return _BadLine(int(i), field_label(SWF_FIELDS, j), f"not a finite number: {_show(token)}")
    return None


def _show(token: bytes) -> str:
    return repr(token.decode("utf-8", errors="replace")[:40])


def _load(block: bytes, lines: _BlockLines, rows: np.ndarray) -> np.ndarray:
    """Numbers of data lines ``rows`` (contiguous in the block) as an (n, 18) array."""
    if len(rows) == 0:
        return np.empty((0, N_FIELDS))
    body = block[lines.start[rows[0]]:lines.end[rows[-1]]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "input contained no data"
        # comments=";" drops comment lines lying between data lines. Most traces hold
        # only integers, and numpy parses those ~8x faster than floats: try that first.
        try:
            values = np.loadtxt(io.BytesIO(body), dtype=np.int64, comments=";", ndmin=2).astype(np.float64)
        except (ValueError, OverflowError):
            values = np.loadtxt(io.BytesIO(body), dtype=np.float64, comments=";", ndmin=2)
    if values.shape != (len(rows), N_FIELDS):  # cannot happen after the token-count check
        raise ValueError(f"parsed {values.shape}, expected {(len(rows), N_FIELDS)}")
    return values


def _parse_block(path: str, block: bytes, lines: _BlockLines) -> tuple[np.ndarray, np.ndarray, _BadLine | None]:
    """Parse the data lines of one block up to its first malformed line.

    Returns the (n, 18) values of the good data lines before the first bad line,
    their line indexes in the block, and the bad line (or None).
    """
    rows = np.flatnonzero(lines.data)
    bad: _BadLine | None = None
    wrong = rows[lines.ntok[rows] != N_FIELDS]
    if len(wrong):
        i = int(wrong[0])
        n = int(lines.ntok[i])
        what = "fewer" if n < N_FIELDS else "more"
        # Name the first missing field, or "19 (extra)" for a long line.
        bad = _BadLine(i, field_label(SWF_FIELDS, min(n, N_FIELDS)),
                       f"{n} fields, {what} than the {N_FIELDS} SWF fields")
        rows = rows[rows < i]
    try:
        values = _load(block, lines, rows)
        if not np.isfinite(values).all():
            raise ValueError("nan or inf")
    except ValueError as exc:
        numeric = _scan_numbers(block, lines, rows)
        if numeric is None:  # loadtxt and float() disagree: report without a line
            raise TraceError(path, None, None, f"cannot parse numbers: {exc}") from None
        bad = numeric
        rows = rows[rows < numeric.index]
        values = _load(block, lines, rows)
    # Fields stored as integers must hold integers (8.0 is fine, 8.5 is not) that fit their int64
    # column, and processor counts must be at most MAX_PROCESSORS (10**18 would overflow later).
    cols = list(_INT_FIELDS)
    ints = values[:, cols]
    procs = np.isin(cols, _PROC_FIELDS)
    size = np.where(procs, ints, np.abs(ints))  # (a negative count means unknown)
    wrong = (ints != np.floor(ints)) | (size >= np.where(procs, MAX_PROCESSORS + 1.0, _INT64_END))
    if wrong.any():
        r, c = np.argwhere(wrong)[0]
        value, j = float(values[r, cols[c]]), cols[c]
        if value != np.floor(value):
            reason = f"not an integer: {value!r}"
        elif j in _PROC_FIELDS:
            reason = f"{value:,.0f} processors, more than the {MAX_PROCESSORS:,} a job may have"
        else:
            reason = f"{value:g} does not fit a 64-bit integer"
        bad = _BadLine(int(rows[r]), field_label(SWF_FIELDS, j), reason)
        rows, values = rows[:r], values[:r]
    return values, rows, bad


class _Columns:
    """Per-block column arrays, concatenated once at the end."""

    def __init__(self, names: Sequence[str]):
        self.parts: dict[str, list[np.ndarray]] = {n: [] for n in names}

    def add(self, **arrays: np.ndarray) -> None:
        for name, arr in arrays.items():
            self.parts[name].append(arr)

    def get(self, name: str, dtype: type) -> np.ndarray:
        parts = self.parts[name]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


def make_trace(cols: _Columns, extra_names: Sequence[str], *, path: str, fmt: str, comments: list[str],
               marker: str, skipped: int, skipped_lines: list[int], unknown_runtime: int,
               sites: list[str], cluster: np.ndarray | None = None) -> Trace:
    """Assemble a :class:`Trace` from the collected columns (shared by SWF and GWF)."""
    submit = cols.get("submit", np.float64)
    n = len(submit)
    jobs = JobTable(
        job_id=cols.get("job_id", np.int64),
        submit=submit,
        runtime=cols.get("runtime", np.float64),
        estimate=cols.get("estimate", np.float64),
        processors=cols.get("processors", np.int64),
        cluster=np.full(n, -1, dtype=np.int32) if cluster is None else cluster,
        stream=np.zeros(n, dtype=np.int32),
        extra={name: cols.get(name, np.int64) for name in extra_names},
    )
    # Archive traces are already in submit order; skip the copy then.
    if n > 1 and (np.diff(submit) < 0).any():
        jobs = jobs.sorted_by_submit()
    header = parse_header(comments, marker)
    header[UNKNOWN_RUNTIME_KEY] = str(unknown_runtime)
    return Trace(
        jobs=jobs,
        path=path,
        format=fmt,
        header=header,
        comments=comments,
        max_procs=max_procs_from_header(header, path),
        skipped=skipped,
        skipped_lines=skipped_lines,
        sites=sites,
    )


def read_swf(path: str | os.PathLike[str], limit: int | None = None, caps: ReadCaps = NO_CAPS) -> Trace:
    """Read a Standard Workload Format (v2.2) trace, plain or gzipped.

    Parameters
    ----------
    path : str or path-like
        The ``.swf`` or ``.swf.gz`` file (gzip is detected from the content).
    limit : int, optional
        Keep only the first ``limit`` jobs (skipped jobs do not count); reading
        stops there, and lines after the last job kept are not checked.
    caps : ReadCaps, optional
        Bounds on the file (none by default).

    Returns
    -------
    Trace
        ``jobs.job_id`` is field 1; ``submit`` field 2; ``runtime`` field 4 (a negative,
        i.e. unknown, run time becomes 0 and is counted in
        ``header["gridweb.unknown_runtime"]``); ``processors`` field 8 if > 0 else
        field 5 (jobs with neither are skipped and counted); ``estimate`` field 9 if
        > 0 else the run time. ``jobs.extra`` holds ``wait`` (float, field 3),
        ``status`` (field 11), ``user``, ``group``, ``executable``, ``queue`` and
        ``partition`` (fields 12-16, int64).

    Raises
    ------
    TraceError
        The file cannot be read, a data line does not have exactly 18 fields, a field
        is not a (finite) number, an integer field is fractional or past 64 bits, a
        processor count (field 5 or 8, or the MaxProcs header) is above
        :data:`MAX_PROCESSORS`, or a job has a negative submit time. The error names the
        file, the 1-based line number (counting comment lines) and the field, e.g.
        ``"4 (run time)"``.
    """
    path = os.fspath(path)
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    extra_names = ("wait", "status") + tuple(name for name, _ in _ID_COLUMNS)
    cols = _Columns(("job_id", "submit", "runtime", "estimate", "processors") + extra_names)
    comments: list[str] = []
    skipped = unknown_runtime = kept = 0
    skipped_lines: list[int] = []

    for block, line0 in iter_blocks(path, caps=caps):
        lines = index_lines(block, ord(";"))
        values, rows, bad = _parse_block(path, block, lines)
        line_no = rows + line0
        comment_rows = np.flatnonzero(lines.comment)

        procs = np.where(values[:, 7] > 0, values[:, 7], values[:, 4])
        keep = procs > 0
        # Index in the block of the first line not consumed: comments past it are not read.
        cut = len(lines.start) if bad is None else bad.index
        done = False
        if limit is not None and len(rows) and kept + int(keep.sum()) >= limit:
            # Stop right after the limit-th kept job; a bad line after it does not matter.
            last = int(np.flatnonzero(keep)[limit - kept - 1]) + 1 if limit > kept else 0
            cut = int(rows[last - 1]) + 1 if last else int(rows[0])
            values, rows, line_no, procs, keep = values[:last], rows[:last], line_no[:last], procs[:last], keep[:last]
            bad, done = None, True
        comment_rows = comment_rows[comment_rows < cut]
        caps.check_comments(path, len(comments) + len(comment_rows))
        comments.extend(decode_comment(block[lines.start[i]:lines.end[i]]) for i in comment_rows)
        caps.check_jobs(path, kept + skipped + len(rows))

        skip_lines = line_no[~keep]
        skipped += len(skip_lines)
        room = MAX_SKIPPED_LINES - len(skipped_lines)
        if room > 0:
            skipped_lines.extend(int(x) for x in skip_lines[:room])

        v = values[keep]
        neg = np.flatnonzero(v[:, 1] < 0)
        if len(neg):
            raise TraceError(path, int(line_no[keep][neg[0]]), field_label(SWF_FIELDS, 1),
                             f"negative submit time ({v[neg[0], 1]:g}): a job must have a submit time")
        runtime = v[:, 3]
        unknown = runtime < 0
        unknown_runtime += int(unknown.sum())
        runtime = np.where(unknown, 0.0, runtime)
        cols.add(
            job_id=v[:, 0].astype(np.int64),
            submit=v[:, 1].copy(),
            runtime=runtime,
            estimate=np.where(v[:, 8] > 0, v[:, 8], runtime),
            processors=procs[keep].astype(np.int64),
            wait=v[:, 2].copy(),
            status=v[:, 10].astype(np.int64),
            **{name: v[:, i].astype(np.int64) for name, i in _ID_COLUMNS},
        )
        kept += len(v)
        if bad is not None:
            raise TraceError(path, line0 + bad.index, bad.field, bad.reason)
        if done:
            break

    return make_trace(cols, extra_names, path=path, fmt="swf", comments=comments, marker=";",
                      skipped=skipped, skipped_lines=skipped_lines, unknown_runtime=unknown_runtime,
                      sites=[])


# ---------------------------------------------------------------------------
# SWF writer
# ---------------------------------------------------------------------------

#: Keys ``write_swf(extra=...)`` accepts, with the 0-based SWF field each fills.
WRITE_EXTRA_FIELDS: dict[str, int] = {
    "average_cpu": 5,
    "used_memory": 6,
    "requested_memory": 9,
    **dict(_ID_COLUMNS),
    "preceding_job": 16,
    "think_time": 17,
}


def swf_status(engine_status: np.ndarray) -> np.ndarray:
    """Map engine job status codes (``simengine.workload.STATUS_*``) to SWF status codes.

    completed -> 1, killed and failed -> 0 (SWF "failed"), rejected -> 5 (cancelled:
    never ran), unfinished -> -1 (unknown), cancelled -> 5.
    """
    table = np.array([1, 0, 0, 5, -1, 5], dtype=np.int64)
    return table[np.asarray(engine_status, dtype=np.int64)]


def _rounded_times(arrays: dict[str, np.ndarray], precision: int) -> dict[str, np.ndarray]:
    """submit, wait, runtime and estimate at ``precision`` decimals (see write_swf)."""
    if not 0 <= precision <= 9:
        raise ValueError(f"write_swf: precision must be within 0..9; got {precision}")
    submit, wait, runtime, estimate = (np.asarray(arrays[k], np.float64)
                                       for k in ("submit", "wait", "runtime", "estimate"))
    start = submit + wait
    s0, s1 = np.round(submit, precision), np.round(start, precision)
    end = np.round(start + runtime, precision)
    scale = 10.0 ** precision
    return {"submit": s0, "wait": np.round(s1 - s0, precision), "runtime": np.round(end - s1, precision),
            "estimate": np.ceil(np.round(estimate * scale, 6)) / scale}


def _format_column(values: np.ndarray) -> np.ndarray:
    """ASCII text of one column, right-aligned in an (n, width) byte matrix padded with NUL
    bytes: integers without a decimal point, NaN/inf as -1 (simengine.text_columns)."""
    v = np.asarray(values)
    if v.dtype.kind in "iub":
        return integer_text(v)
    v = v.astype(np.float64)
    v = np.where(np.isfinite(v), v, -1.0)
    integral = v == np.round(v)
    if integral.all():
        return integer_text(v)
    # Shortest repr that reads back to the same float, so write -> read is exact.
    text = np.array([repr(x).encode() for x in v.tolist()], dtype=object)
    text[integral] = v[integral].astype(np.int64).astype(np.bytes_)
    text = text.astype(np.bytes_)
    width = text.dtype.itemsize
    return np.ascontiguousarray(np.char.rjust(text, width).astype(f"S{width}")).view(np.uint8).reshape(len(v), width)


def _render_rows(text_cols: list[np.ndarray]) -> np.ndarray:
    """The data lines as one (n, width) byte matrix: right-aligned columns (the matrices of
    :func:`_format_column`), one blank apart. Built with array copies rather than per-value
    Python strings, so writing a 200k-job schedule takes a fraction of a second."""
    n = len(text_cols[0])
    if n == 0:
        return np.empty((0, 0), dtype=np.uint8)
    out = np.zeros((n, sum(t.shape[1] for t in text_cols) + len(text_cols)), dtype=np.uint8)
    pos = 0
    for text in text_cols:
        out[:, pos:pos + text.shape[1]] = text
        pos += text.shape[1] + 1
    out[out == 0] = ord(" ")  # the padding and the gaps: blanks, right-aligned like archive traces
    out[:, -1] = ord("\n")
    return out


def write_swf(
    path: str | os.PathLike[str],
    *,
    job_id: np.ndarray,
    submit: np.ndarray,
    wait: np.ndarray,
    runtime: np.ndarray,
    processors: np.ndarray,
    estimate: np.ndarray,
    status: np.ndarray,
    header_comments: Sequence[str] = (),
    extra: dict[str, np.ndarray] | None = None,
    precision: int | None = None,
) -> None:
    """Write a schedule as a valid SWF 2.2 file (gzipped when ``path`` ends with ``.gz``).

    Parameters
    ----------
    path : str or path-like
        Output file; written to a temporary file first and renamed, so readers never
        see half a file.
    job_id, submit, wait, runtime, processors, estimate, status : array-like
        One value per job, all the same length. ``processors`` fills both allocated
        (5) and requested (8) processors, ``estimate`` the requested time (9),
        ``status`` field 11 in SWF codes (see :func:`swf_status` to convert engine
        codes). NaN or infinite values are written as -1 (unknown).
    header_comments : sequence of str
        Header lines, e.g. ``"MaxProcs: 128"``; a leading ``;`` is added when missing.
        ``Version: 2.2``, ``MaxJobs`` and ``MaxRecords`` are added unless given.
    extra : dict, optional
        Further fields by name: see :data:`WRITE_EXTRA_FIELDS` (``user``, ``group``,
        ``executable``, ``queue``, ``partition``, ``average_cpu``, ``used_memory``,
        ``requested_memory``, ``preceding_job``, ``think_time``). Fields not given are -1.
    precision : int, optional
        Decimals of the times (submit, wait, run time, requested time); 0 gives the integer
        seconds the SWF standard and most SWF readers expect. The submit, start and end
        times are rounded, and wait and run time taken between them, so the schedule stays
        consistent (a job starting when another ends still does); requested times are
        rounded up. None (the default): exact, every value read back as written.

    Raises
    ------
    ValueError
        Columns of different lengths, or an unknown ``extra`` key.
    """
    path = os.fspath(path)
    given = {"job_id": job_id, "submit": submit, "wait": wait, "runtime": runtime,
             "processors": processors, "estimate": estimate, "status": status}
    arrays = {k: np.asarray(v) for k, v in given.items()}
    n = len(arrays["job_id"])
    extra = dict(extra or {})
    unknown = sorted(set(extra) - set(WRITE_EXTRA_FIELDS))
    if unknown:
        raise ValueError(f"write_swf: unknown extra field(s) {unknown}; accepted: {sorted(WRITE_EXTRA_FIELDS)}")
    for name, arr in list(arrays.items()) + [(k, np.asarray(v)) for k, v in extra.items()]:
        if arr.ndim != 1 or len(arr) != n:
            raise ValueError(f"write_swf: column {name} has shape {arr.shape}, expected ({n},)")

    if precision is not None:
        arrays.update(_rounded_times(arrays, int(precision)))
    columns: list[np.ndarray | None] = [None] * N_FIELDS
    for name, i in (("job_id", 0), ("submit", 1), ("wait", 2), ("runtime", 3), ("processors", 4),
                    ("processors", 7), ("estimate", 8), ("status", 10)):
        columns[i] = arrays[name]
    for name, arr in extra.items():
        columns[WRITE_EXTRA_FIELDS[name]] = np.asarray(arr)
    minus_one = integer_text(np.full(n, -1))
    rows = _render_rows([minus_one if col is None else _format_column(col) for col in columns])

    # One comment per line: an embedded line break must not start a bogus data line.
    lines = [line for entry in header_comments for line in (entry.splitlines() or [""])]
    header = [line if line.lstrip().startswith(";") else f"; {line}" for line in lines]
    keys = {m.group(1) for line in header if (m := _HEADER_RE.match(line.lstrip()[1:]))}
    defaults = [("Version", "2.2"), ("MaxJobs", str(n)), ("MaxRecords", str(n))]
    header = [f"; {k}: {v}" for k, v in defaults if k not in keys] + header

    tmp = Path(path).with_name(f".{Path(path).name}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as raw:
            # mtime=0 and no file name in the gzip header: the same schedule gives the same bytes.
            out: IO[bytes] = (gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=6, mtime=0)
                              if path.endswith(".gz") else raw)
            with out:
                out.write("".join(line.rstrip("\n") + "\n" for line in header).encode("utf-8"))
                for lo in range(0, n, 65536):  # slices: no second full copy of the text
                    out.write(rows[lo:lo + 65536].tobytes())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
