"""Grid Workloads Format (GWF) reader.

GWF is the text format of the Grid Workloads Archive (http://gwa.ewi.tudelft.nl):
SWF's first 16 fields plus grid columns, 29 whitespace-separated columns per job,
``#`` header comments, ``-1`` meaning unknown. Site ids (and user, group ... ids)
may be names rather than numbers, so lines are split in Python, one block of a few
MB at a time; the arrays are built per block so memory stays linear in the jobs kept.
"""
from __future__ import annotations

import math
import os
from collections.abc import Mapping

import numpy as np

from ..errors import TraceError
from .swf import (
    MAX_PROCESSORS,
    NO_CAPS,
    ReadCaps,
    MAX_SKIPPED_LINES,
    Trace,
    _Columns,
    decode_comment,
    field_label,
    ids_or_strings,
    iter_blocks,
    make_trace,
)

#: The 29 GWF columns, in file order.
GWF_FIELDS = (
    "JobID",
    "SubmitTime",
    "WaitTime",
    "RunTime",
    "NProcs",
    "AverageCPUTimeUsed",
    "UsedMemory",
    "ReqNProcs",
    "ReqTime",
    "ReqMemory",
    "Status",
    "UserID",
    "GroupID",
    "ExecutableID",
    "QueueID",
    "PartitionID",
    "OrigSiteID",
    "LastRunSiteID",
    "JobStructure",
    "JobStructureParams",
    "UsedNetwork",
    "UsedLocalDiskSpace",
    "UsedResources",
    "ReqPlatform",
    "ReqNetwork",
    "ReqLocalDiskSpace",
    "ReqResources",
    "VOID",
    "ProjectID",
)
N_GWF_FIELDS = len(GWF_FIELDS)

# Columns the reader needs as numbers (0-based), those of them that must be integers (stored as
# int64), and the processor counts (NProcs, ReqNProcs: at most MAX_PROCESSORS).
_NUMERIC = (0, 1, 2, 3, 4, 7, 8, 10)
_INTEGER = frozenset({0, 4, 7, 10})
_PROCESSORS = frozenset({4, 7})
_ID_COLUMNS = (("user", 11), ("group", 12), ("executable", 13), ("queue", 14), ("partition", 15))
_ORIG_SITE, _LAST_SITE = 16, 17
_EXTRA_NAMES = ("wait", "status") + tuple(name for name, _ in _ID_COLUMNS)


def read_gwf(
    path: str | os.PathLike[str],
    site_map: Mapping[str, int] | None = None,
    limit: int | None = None,
    caps: ReadCaps = NO_CAPS,
) -> Trace:
    """Read a Grid Workloads Format trace, plain or gzipped.

    Parameters
    ----------
    path : str or path-like
        The ``.gwf`` or ``.gwf.gz`` file (gzip is detected from the content).
    site_map : mapping of str to int, optional
        Site name -> cluster index. Without it, clusters are numbered 0, 1, ... in
        order of the sites' first appearance.
    limit : int, optional
        Keep only the first ``limit`` jobs (skipped jobs do not count); reading stops there.
    caps : ReadCaps, optional
        Bounds on the file (none by default; :class:`~simengine.traces.swf.ReadCaps`).

    Returns
    -------
    Trace
        Same rules as :func:`~simengine.traces.swf.read_swf`: processors are ReqNProcs
        if > 0 else NProcs (jobs with neither are skipped and counted), estimate is
        ReqTime if > 0 else the run time, a negative run time becomes 0 and is counted
        in ``header["gridweb.unknown_runtime"]``. The site is OrigSiteID, or
        LastRunSiteID when OrigSiteID is -1; a job with neither gets cluster -1.
        ``sites`` lists the distinct site names of the jobs kept, in order of first
        appearance. ``jobs.extra`` holds ``wait``, ``status`` and the ``user``,
        ``group``, ``executable``, ``queue``, ``partition`` ids (int64 when every
        value in the column is an integer, else str).

    Raises
    ------
    TraceError
        Unreadable file, a data line without exactly 29 columns, a needed column
        (JobID, SubmitTime, WaitTime, RunTime, NProcs, ReqNProcs, ReqTime, Status) that
        is not a finite number (JobID, NProcs, ReqNProcs, Status: an integer within 64 bits),
        a processor count (NProcs, ReqNProcs, the MaxProcs header) above
        :data:`~simengine.traces.swf.MAX_PROCESSORS`, a negative submit time, or, with
        ``site_map``, a site it does not name (field ``"17 (OrigSiteID)"`` or ``"18 (LastRunSiteID)"``).
    """
    path = os.fspath(path)
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    site_index: dict[str, int] = {}
    sites: list[str] = []
    cols = _Columns(("job_id", "submit", "runtime", "estimate", "processors", "cluster") + _EXTRA_NAMES)
    comments: list[str] = []
    skipped = unknown_runtime = kept = 0
    skipped_lines: list[int] = []
    done = limit == 0

    for block, line0 in iter_blocks(path, caps=caps):
        if done:
            break
        # Per-block Python lists, turned into arrays at the end of the block.
        b_num: list[tuple[float, ...]] = []
        b_procs: list[int] = []
        b_cluster: list[int] = []
        b_ids: list[list[bytes]] = [[] for _ in _ID_COLUMNS]
        for k, raw in enumerate(block.split(b"\n")):
            tokens = raw.split()
            if not tokens:
                continue
            if tokens[0].startswith(b"#"):
                caps.check_comments(path, len(comments) + 1)
                comments.append(decode_comment(raw))
                continue
            line = line0 + k
            caps.check_jobs(path, kept + skipped + 1)
            if len(tokens) != N_GWF_FIELDS:
                n = len(tokens)
                what = "fewer" if n < N_GWF_FIELDS else "more"
                raise TraceError(path, line, field_label(GWF_FIELDS, min(n, N_GWF_FIELDS)),
                                 f"{n} fields, {what} than the {N_GWF_FIELDS} GWF fields")
            nums = []
            for j in _NUMERIC:
                try:
                    value = float(tokens[j])
                except ValueError:
                    value = math.nan
                if not math.isfinite(value) or (j in _INTEGER and value != int(value)):
                    kind = "an integer" if j in _INTEGER else "a finite number"
                    shown = tokens[j].decode("utf-8", errors="replace")[:40]
                    raise TraceError(path, line, field_label(GWF_FIELDS, j), f"not {kind}: {shown!r}")
                if j in _PROCESSORS and value > MAX_PROCESSORS:
                    raise TraceError(path, line, field_label(GWF_FIELDS, j),
                                     f"{value:,.0f} processors, more than the {MAX_PROCESSORS:,} a job may have")
                if j in _INTEGER and abs(value) >= 2.0**63:
                    raise TraceError(path, line, field_label(GWF_FIELDS, j), f"{value:g} does not fit a 64-bit integer")
                nums.append(value)
            job_id, submit, wait, runtime, nprocs, req_procs, req_time, status = nums
            procs = req_procs if req_procs > 0 else nprocs
            if procs <= 0:
                skipped += 1
                if len(skipped_lines) < MAX_SKIPPED_LINES:
                    skipped_lines.append(line)
                continue
            if submit < 0:
                raise TraceError(path, line, field_label(GWF_FIELDS, 1),
                                 f"negative submit time ({submit:g}): a job must have a submit time")
            b_cluster.append(_cluster(path, line, tokens, site_map, site_index, sites))
            b_num.append((job_id, submit, wait, runtime, req_time, status))
            b_procs.append(int(procs))
            for ids, (_, j) in zip(b_ids, _ID_COLUMNS):
                ids.append(tokens[j])
            kept += 1
            if limit is not None and kept >= limit:
                done = True
                break

        if not b_num:
            continue
        num = np.array(b_num, dtype=np.float64)
        runtime = num[:, 3]
        unknown = runtime < 0
        unknown_runtime += int(unknown.sum())
        runtime = np.where(unknown, 0.0, runtime)
        cols.add(
            job_id=num[:, 0].astype(np.int64),
            submit=num[:, 1].copy(),
            runtime=runtime,
            estimate=np.where(num[:, 4] > 0, num[:, 4], runtime),
            processors=np.array(b_procs, dtype=np.int64),
            cluster=np.array(b_cluster, dtype=np.int32),
            wait=num[:, 2].copy(),
            status=num[:, 5].astype(np.int64),
            **{name: np.array(ids) for ids, (name, _) in zip(b_ids, _ID_COLUMNS)},
        )

    # Id columns hold bytes per block; decide their type once, over the whole trace.
    for name, _ in _ID_COLUMNS:
        cols.parts[name] = [ids_or_strings(cols.get(name, np.int64))]
    return make_trace(cols, _EXTRA_NAMES, path=path, fmt="gwf", comments=comments, marker="#",
                      skipped=skipped, skipped_lines=skipped_lines, unknown_runtime=unknown_runtime,
                      sites=sites, cluster=cols.get("cluster", np.int32))


def _cluster(path: str, line: int, tokens: list[bytes], site_map: Mapping[str, int] | None,
             site_index: dict[str, int], sites: list[str]) -> int:
    """Cluster index of one job from its OrigSiteID (else LastRunSiteID); -1 when neither is known."""
    column = _ORIG_SITE if tokens[_ORIG_SITE] != b"-1" else _LAST_SITE
    if tokens[column] == b"-1":
        return -1
    name = tokens[column].decode("utf-8", errors="replace")
    if name not in site_index:
        site_index[name] = len(sites)
        sites.append(name)
    if site_map is None:
        return site_index[name]
    if name not in site_map:
        known = ", ".join(sorted(site_map)) or "none"
        raise TraceError(path, line, field_label(GWF_FIELDS, column),
                         f"unknown site {name!r}: the site map names only {known}")
    return int(site_map[name])
