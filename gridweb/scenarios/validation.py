"""Validating scenario documents from the web (builder, API, uploads) through the engine's schema.

The engine's pydantic schema is the single source of truth; this module adds the web's own
rule for traces: a trace stream's ``path`` must name an uploaded trace the user may view
(``TraceFile.stored_name``), never a file on the server; and this server's limits
(``settings.GRIDWEB_LIMITS``, simengine.limits).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from django.conf import settings

import simengine
from simengine.errors import ScenarioError
from simengine.limits import Limits, limit_problems, shape_problems

from .models import TraceFile


class SpecInvalid(Exception):
    """A scenario document failed validation; ``errors`` maps dotted field paths to messages."""

    def __init__(self, errors: dict[str, list[str]]):
        self.errors = errors
        super().__init__("; ".join(f"{k or '(scenario)'}: {', '.join(v)}" for k, v in errors.items()))


class UserLimitReached(SpecInvalid):
    """Not the document but its user is refused (too many runs queued or running): the errors'
    path is "" wherever they are shown."""


def trace_dir() -> Path:
    path = Path(settings.GRIDWEB_TRACE_DIR)
    path.mkdir(parents=True, exist_ok=True)
    return path


def trace_streams(spec: Any) -> list[tuple[int, dict]]:
    """(index, stream) of every trace stream in a scenario document."""
    streams = (spec.get("workload") or {}).get("streams") if isinstance(spec, dict) else None
    if not isinstance(streams, list):
        return []
    return [(i, s) for i, s in enumerate(streams) if isinstance(s, dict) and s.get("kind") == "trace"]


def materialize_traces(spec: Any, user=None) -> dict[str, list[str]]:
    """Write the uploaded traces ``spec`` names into ``trace_dir()`` (from the database, so any
    worker machine can). With ``user``, only traces that user may view count. Returns errors."""
    errors: dict[str, list[str]] = {}
    directory = trace_dir()
    for i, stream in trace_streams(spec):
        field = f"workload.streams.{i}.path"
        name = stream.get("path")
        if not isinstance(name, str) or not name or "/" in name or "\\" in name or name.startswith("."):
            errors[field] = ["must name an uploaded trace (its stored name), not a file path"]
            continue
        traces = TraceFile.objects.filter(stored_name=name)
        if user is not None:
            traces = traces.visible_to(user)
        trace = traces.first()
        if trace is None:
            errors[field] = [f"no uploaded trace named {name!r} that you may use; upload it first"]
            continue
        target = directory / name
        if not target.is_file() or target.stat().st_size != trace.size:
            # A temporary file of its own per writer: concurrent requests (validate and preview
            # of one edit) may write the same trace at once; each replace is atomic.
            with tempfile.NamedTemporaryFile(dir=directory, prefix=f".{name}.", delete=False) as tmp:
                tmp.write(bytes(trace.content))
            os.replace(tmp.name, target)
    return errors


def _no_server_files(spec: dict) -> dict[str, list[str]]:
    """A scenario on the site names no file of this server but uploaded traces: a cluster's
    ``failures.down_file`` is refused (its intervals go in ``down``)."""
    clusters = (spec.get("platform") or {}).get("clusters") if isinstance(spec.get("platform"), dict) else None
    errors = {}
    for i, c in enumerate(clusters if isinstance(clusters, list) else []):
        failures = c.get("failures") if isinstance(c, dict) else None
        if isinstance(failures, dict) and failures.get("down_file") is not None:
            errors[f"platform.clusters.{i}.failures.down_file"] = [
                "the site reads no file of its server: give the file's intervals in down (docs/failures.md)"]
    return errors


def validate_spec(spec: Any, user=None) -> simengine.Scenario:
    """The engine's ``Scenario`` for ``spec``, or :class:`SpecInvalid` naming every bad field."""
    if not isinstance(spec, dict):
        raise SpecInvalid({"": ["a scenario must be a JSON object"]})
    errors: dict[str, list[str]] = {}
    for path, message in shape_problems(spec, site_limits()):  # before the schema's work, which grows with them
        errors.setdefault(path, []).append(message)
    errors = errors or materialize_traces(spec, user) or _no_server_files(spec)
    if errors:
        raise SpecInvalid(errors)
    try:
        scenario = simengine.load_scenario(spec, base_dir=str(trace_dir()))
    except ScenarioError as exc:
        found: dict[str, list[str]] = {}
        for error in exc.errors:
            found.setdefault(error.path, []).append(error.message)
        raise SpecInvalid(found) from exc
    found = {}
    for path, message in limit_problems(scenario, site_limits()):
        # (an unreadable trace is named by its stored name, not by where this server keeps it)
        found.setdefault(path, []).append(message.replace(f"{trace_dir()}{os.sep}", ""))
    if found:
        raise SpecInvalid(found)
    return scenario


def site_limits() -> Limits:
    """This server's limits on a scenario (``settings.GRIDWEB_LIMITS``)."""
    return Limits(**settings.GRIDWEB_LIMITS)
