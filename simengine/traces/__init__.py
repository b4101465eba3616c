"""Workload trace readers (SWF, GWF) and the SWF writer.

Every reader returns a :class:`Trace` whose ``jobs`` is a :class:`~simengine.workload.JobTable`
sorted by submit time; malformed input raises :class:`~simengine.errors.TraceError`
naming the file, line and field. See ``docs/traces.md``.
"""
from __future__ import annotations

import os
from collections.abc import Mapping

from ..errors import TraceError
from .batsim import read_batsim
from .gwf import GWF_FIELDS, read_gwf
from .swf import (
    MAX_PROCESSORS,
    NO_CAPS,
    SWF_FIELDS,
    UNKNOWN_RUNTIME_KEY,
    ReadCaps,
    Trace,
    read_swf,
    swf_status,
    write_swf,
)

__all__ = [
    "GWF_FIELDS",
    "MAX_PROCESSORS",
    "SWF_FIELDS",
    "UNKNOWN_RUNTIME_KEY",
    "Trace",
    "format_of",
    "walltime_kills",
    "read_batsim",
    "read_gwf",
    "read_swf",
    "read_trace",
    "swf_status",
    "write_swf",
]

_SUFFIXES = ((".swf", "swf"), (".swf.gz", "swf"), (".gwf", "gwf"), (".gwf.gz", "gwf"), (".json", "batsim"),
             (".json.gz", "batsim"))


def format_of(path: str | os.PathLike[str]) -> str:
    """Trace format from the file name: ``.swf``/``.swf.gz`` -> ``"swf"``, ``.gwf``/``.gwf.gz`` -> ``"gwf"``,
    ``.json``/``.json.gz`` -> ``"batsim"`` (a Batsim workload).

    Raises
    ------
    TraceError
        Any other suffix (the error names the file).
    """
    name = os.fspath(path).lower()
    for suffix, fmt in _SUFFIXES:
        if name.endswith(suffix):
            return fmt
    raise TraceError(os.fspath(path), None, None,
                     "cannot tell the trace format from the file name: expected .swf, .swf.gz, .gwf, .gwf.gz, .json "
                     "or .json.gz")


def walltime_kills(streams: list, run_enforce: bool) -> list[bool]:
    """Per stream (scenario stream objects or their dumped dicts): are its jobs killed at their
    requested time (walltime)? A trace stream's own ``enforce_walltime`` when given; else a Batsim
    workload's jobs are, as Batsim kills a job at its walltime; else ``run.enforce_walltime`` says."""
    def get(stream, key):
        return stream.get(key) if isinstance(stream, Mapping) else getattr(stream, key, None)

    out = []
    for st in streams:
        own = get(st, "enforce_walltime") if get(st, "kind") == "trace" else None
        if own is not None:
            out.append(bool(own))
            continue
        batsim = False
        if get(st, "kind") == "trace":
            try:
                batsim = (get(st, "format") or format_of(get(st, "path") or "")) == "batsim"
            except TraceError:  # (a stored scenario's unknown suffix: it is no Batsim workload)
                pass
        out.append(batsim or bool(run_enforce))
    return out


def read_trace(
    path: str | os.PathLike[str],
    format: str | None = None,
    site_map: Mapping[str, int] | None = None,
    limit: int | None = None,
    caps: ReadCaps = NO_CAPS,
    skip_untimed: bool = False,
) -> Trace:
    """Read a workload trace in SWF, GWF or Batsim's JSON.

    Parameters
    ----------
    path : str or path-like
        The trace file, plain or gzipped.
    format : {"swf", "gwf", "batsim"}, optional
        Defaults to :func:`format_of` the file name.
    site_map : mapping of str to int, optional
        GWF only: site name -> cluster index (see :func:`~simengine.traces.gwf.read_gwf`).
    limit : int, optional
        Keep only the first ``limit`` jobs.
    caps : ReadCaps, optional
        Bounds on the file, for untrusted files (none by default).
    skip_untimed : bool, optional
        Batsim only: leave out the jobs whose profile gives no run time (counted in
        ``Trace.skipped``) instead of refusing the file.

    Returns
    -------
    Trace

    Raises
    ------
    TraceError
        Unknown format or suffix, ``site_map`` given for an SWF trace, or malformed content.
    """
    fmt = format_of(path) if format is None else format.lower()
    if skip_untimed and fmt != "batsim":
        raise TraceError(os.fspath(path), None, None, "skip_untimed applies to Batsim workloads only: every SWF "
                                                      "and GWF job has a run time")
    if fmt == "swf":
        if site_map is not None:
            # SWF has no site column; silently ignoring the map would hide a scenario mistake.
            raise TraceError(os.fspath(path), None, None, "a site map applies to GWF traces only, not SWF")
        return read_swf(path, limit=limit, caps=caps)
    if fmt == "gwf":
        return read_gwf(path, site_map=site_map, limit=limit, caps=caps)
    if fmt == "batsim":
        if site_map is not None:
            raise TraceError(os.fspath(path), None, None, "a site map applies to GWF traces only, not Batsim workloads")
        return read_batsim(path, limit=limit, caps=caps, skip_untimed=skip_untimed)
    raise TraceError(os.fspath(path), None, None, f"unknown trace format {format!r}: expected 'swf', 'gwf' or 'batsim'")
