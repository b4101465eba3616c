"""Storing uploaded SWF/GWF workload traces (the builder's upload and the API's).

``store_trace`` checks the size before reading the upload, reads it with the engine's own
trace reader (so a trace that is stored is one the engine can replay), and keeps the bytes
in the database under a unique ``stored_name`` that scenarios use as a trace stream's
``path``. Any problem raises :class:`TraceInvalid` naming the field and, for malformed
content, the line; nothing is stored then.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import zlib
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from gridweb.safe_json import text_error
from gridweb.sharing import Visibility, default_group
from simengine.errors import TraceError
from simengine.traces import ReadCaps, read_trace

from .models import TraceFile

FORMATS = ("swf", "gwf", "batsim")
#: the file suffix of each format, as the engine tells formats from names (simengine.traces.format_of)
SUFFIX = {"swf": "swf", "gwf": "gwf", "batsim": "json"}
# Header comment lines kept in the metadata (the rest is counted, not kept).
MAX_COMMENT_LINES = 200
# Line numbers of skipped jobs kept in the metadata.
MAX_SKIPPED_LINES = 50
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class TraceInvalid(Exception):
    """An upload was refused; ``errors`` maps field names (``file``, ``format``, ...) to messages."""

    def __init__(self, errors: dict[str, list[str]]):
        self.errors = errors
        super().__init__("; ".join(f"{k}: {', '.join(v)}" for k, v in errors.items()))


def max_trace_bytes() -> int:
    return int(settings.GRIDWEB_MAX_TRACE_BYTES)


def size_error(size: int) -> str:
    return f"the file is {size:,} bytes, larger than the limit of {max_trace_bytes():,} bytes"


def format_from_name(name: str) -> str | None:
    """``"swf"`` / ``"gwf"`` / ``"batsim"`` from a file name ending in .swf, .gwf or .json (optionally
    .gz); else None."""
    lower = name.lower()
    if lower.endswith(".gz"):
        lower = lower[:-3]
    for fmt in FORMATS:
        if lower.endswith("." + SUFFIX[fmt]):
            return fmt
    return None


def safe_file_name(name: str, fmt: str) -> str:
    """The base name of ``name`` with only letters, digits, ``.``, ``_``, ``-``; it ends in a
    suffix the engine reads the format from (``.swf``/``.gwf``/``.json``, optionally ``.gz``)."""
    base = os.path.basename(name.replace("\\", "/")) or "trace"
    base = _UNSAFE.sub("_", base).lstrip(".") or "trace"
    if format_from_name(base) != fmt:
        base += "." + SUFFIX[fmt]
    if len(base) > 180:  # keep room for the hash prefix; keep the suffix
        base = base[-180:].lstrip(".")
    return base


def _read_upload(uploaded_file, limit: int) -> bytes:
    """The upload's bytes, read in chunks and refused as soon as they pass ``limit``
    (the declared size may be missing or wrong)."""
    parts: list[bytes] = []
    total = 0
    chunks = uploaded_file.chunks() if hasattr(uploaded_file, "chunks") else iter([uploaded_file.read()])
    for chunk in chunks:
        total += len(chunk)
        if total > limit:
            raise TraceInvalid({"file": [size_error(total)]})
        parts.append(chunk)
    return b"".join(parts)


def _trace_error_message(error: TraceError, original_name: str) -> str:
    """The engine's error with the uploaded file's name instead of the temporary path."""
    where = original_name
    if error.line is not None:
        where += f", line {error.line}"
    if error.field:
        where += f", field {error.field}"
    return f"{where}: {error.reason}"


def _json_safe(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    return str(value)


def inspect_trace(content: bytes, fmt: str, original_name: str) -> dict[str, Any]:
    """Read ``content`` with the engine's reader; jobs, max_processors and metadata of the trace.

    Raises :class:`TraceInvalid` (field ``file``) with the line and field of malformed content.
    """
    with tempfile.TemporaryDirectory(prefix="gridweb-upload-") as tmp:
        path = Path(tmp) / safe_file_name(original_name, fmt)
        path.write_bytes(content)
        caps = ReadCaps(**settings.GRIDWEB_TRACE_CAPS)
        try:
            # a Batsim workload is kept with jobs Batsim times on its platform (a stream replays it with
            # skip_untimed, which counts them: metadata "skipped"), unless none of its jobs has a run time
            trace = read_trace(path, format=fmt, caps=caps, skip_untimed=fmt == "batsim")
            if fmt == "batsim" and len(trace.jobs) == 0 and trace.skipped:
                read_trace(path, format=fmt, caps=caps)  # (raises: the first job's profile, named)
        except TraceError as exc:
            raise TraceInvalid({"file": [_trace_error_message(exc, original_name)]}) from exc
        except (OSError, EOFError, ValueError, zlib.error) as exc:
            # e.g. a truncated gzip stream: the reader names no line then
            raise TraceInvalid({"file": [f"{original_name}: cannot be read as {fmt.upper()}: {exc}"]}) from exc
    jobs = len(trace.jobs)
    if jobs == 0:
        raise TraceInvalid({"file": [f"{original_name}: the trace has no jobs"]})
    largest_job = int(trace.jobs.processors.max())
    metadata = {
        "header": {key: _json_safe(value) for key, value in trace.header.items()},
        "comments": trace.comments[:MAX_COMMENT_LINES],
        "comment_lines": len(trace.comments),
        "max_procs_header": trace.max_procs,
        "largest_job": largest_job,
        "skipped": trace.skipped,
        "skipped_lines": trace.skipped_lines[:MAX_SKIPPED_LINES],
        "sites": list(trace.sites),
        "first_submit": float(trace.jobs.submit.min()),
        "last_submit": float(trace.jobs.submit.max()),
    }
    return {"jobs": jobs, "max_processors": max(trace.max_procs or 0, largest_job), "metadata": metadata}


def _check_sharing(user, visibility: str, group) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    if visibility not in Visibility.values:
        errors["visibility"] = [f"must be one of {', '.join(Visibility.values)}, not {visibility!r}"]
    if group is not None and not user.is_superuser and not user.groups.filter(pk=group.pk).exists():
        errors["group"] = [f"you are not a member of the group {group.name!r}"]
    elif visibility == Visibility.GROUP and group is None:
        errors["group"] = ["a trace shared with a group needs a group; you are in none"]
    return errors


ORIGINAL_NAME_MAX = 255  # TraceFile.original_name


def store_trace(user, uploaded_file, *, name: str | None = None, visibility: str = Visibility.PRIVATE,
                group=None, format: str | None = None, description: str = "",
                tags: list[str] | None = None) -> TraceFile:
    """Validate an uploaded trace with the engine's reader and store it; return its TraceFile.

    ``uploaded_file`` is a Django ``UploadedFile`` (or any object with ``name`` and
    ``chunks()``/``read()``). ``format`` (``"swf"``/``"gwf"``) overrides the file name's
    suffix. If ``user`` already stored the same bytes (same sha256 and format), that
    TraceFile is returned and nothing new is stored. Raises :class:`TraceInvalid`; then
    nothing is stored.
    """
    original_name = os.path.basename(str(getattr(uploaded_file, "name", "") or "").replace("\\", "/"))
    errors: dict[str, list[str]] = {}
    limit = max_trace_bytes()
    declared = getattr(uploaded_file, "size", None)
    if declared is not None and declared > limit:
        # Refused before a byte is read (the upload may still sit in a temporary file).
        raise TraceInvalid({"file": [size_error(declared)]})
    if not original_name:
        errors["file"] = ["the upload has no file name"]
    elif len(original_name) > ORIGINAL_NAME_MAX:
        errors["file"] = [f"the file name is longer than {ORIGINAL_NAME_MAX} characters; rename the file"]
    fmt = (format or "").lower() or format_from_name(original_name)
    if format and fmt not in FORMATS:
        errors["format"] = [f"must be 'swf', 'gwf' or 'batsim', not {format!r}"]
    elif fmt is None and original_name:
        errors["format"] = [f"cannot tell the format from the name {original_name!r}: "
                            "name it .swf, .gwf or .json (optionally .gz) or choose the format"]
    group = group if group is not None else default_group(user)
    errors |= _check_sharing(user, visibility, group)
    if name is not None and len(name) > 200:
        errors["name"] = ["at most 200 characters"]
    for field, values in (("name", [name or ""]), ("description", [description or ""]), ("tags", tags or []),
                          ("file", [original_name])):
        reason = next(filter(None, map(text_error, values)), None)
        if reason and field not in errors:
            errors[field] = [reason]
    if errors:
        raise TraceInvalid(errors)

    content = _read_upload(uploaded_file, limit)
    if not content:
        raise TraceInvalid({"file": [f"{original_name}: the file is empty"]})
    sha256 = hashlib.sha256(content).hexdigest()
    existing = TraceFile.objects.filter(owner=user, sha256=sha256, format=fmt).first()
    if existing is not None:
        return existing

    facts = inspect_trace(content, fmt, original_name)
    safe = safe_file_name(original_name, fmt)
    for attempt in range(1, 100):
        stored_name = f"{sha256[:12]}-{safe}" if attempt == 1 else f"{sha256[:12]}-{attempt}-{safe}"
        if TraceFile.objects.filter(stored_name=stored_name).exists():
            continue  # another user uploaded the same file under the same name
        try:
            with transaction.atomic():
                return TraceFile.objects.create(
                    owner=user, group=group, visibility=visibility, name=name or original_name,
                    description=description, tags=list(tags or []), stored_name=stored_name,
                    original_name=original_name, format=fmt, content=content, size=len(content),
                    sha256=sha256, **facts,
                )
        except IntegrityError:
            continue  # taken meanwhile by a concurrent upload; try the next name
    raise TraceInvalid({"file": ["could not find a free stored name for this trace; try another file name"]})
