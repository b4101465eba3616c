"""Reader for Batsim workload files (JSON), the input format of Batsim and of the tools built on it
(docs/traces.md, "Batsim workloads").

A workload is ``{"nb_res": N, "jobs": [{"id", "subtime", "walltime", "res", "profile"}, ...],
"profiles": {name: {"type": "delay", "delay": seconds}, ...}}``. A job's run time is its profile's
``delay``: only ``delay`` profiles say how long a job runs on its own (the others describe
computation and communication that Batsim times on its platform model), so a job of another
profile type is refused with its index, profile and type named. ``walltime`` is the requested time
(absent or -1: unknown); ``res`` the processors. Numeric job ids are kept; others are numbered
from 1 in file order, and ``nb_res`` becomes the trace's ``MaxProcs``.
"""
from __future__ import annotations

import json
import math
import os

import numpy as np

from ..errors import TraceError
from ..workload import JobTable
from .swf import NO_CAPS, ReadCaps, Trace, _open_binary


def read_batsim(path: str | os.PathLike[str], limit: int | None = None, caps: ReadCaps = NO_CAPS) -> Trace:
    """Read a Batsim workload (plain or gzipped JSON). Raises TraceError naming the job and field."""
    name = os.fspath(path)
    with _open_binary(name) as fh:
        budget = caps.bytes
        data = fh.read(-1 if budget is None else budget + 1)
    if budget is not None and len(data) > budget:
        raise TraceError(name, None, None, f"more than {budget:,} bytes")
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise TraceError(name, None, None, f"not a JSON document: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list) or not isinstance(doc.get("profiles"), dict):
        raise TraceError(name, None, None, "a Batsim workload is an object with 'jobs' (a list) and 'profiles' "
                                           "(an object)")
    jobs = doc["jobs"]
    caps.check_jobs(name, len(jobs))
    if limit is not None:
        jobs = jobs[:limit]
    n = len(jobs)
    submit, runtime, estimate = np.empty(n), np.empty(n), np.empty(n)
    processors, job_id = np.empty(n, np.int64), np.empty(n, np.int64)
    numeric = True
    for i, job in enumerate(jobs):
        where = f"jobs[{i}]"

        def number(key, *, required=True, default=math.nan):
            value = job.get(key) if isinstance(job, dict) else None
            if value is None and not required:
                return default
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise TraceError(name, None, f"{where}.{key}", f"must be a finite number; got {value!r}")
            return float(value)

        if not isinstance(job, dict):
            raise TraceError(name, None, where, f"a job is an object; got {job!r:.40}")
        submit[i] = number("subtime")
        res = number("res")
        if res < 1 or res != int(res):
            raise TraceError(name, None, f"{where}.res", f"must be a whole number of processors >= 1; got {res:g}")
        processors[i] = int(res)
        walltime = number("walltime", required=False)
        estimate[i] = walltime if walltime > 0 else math.nan
        profile_name = job.get("profile")
        profile = doc["profiles"].get(profile_name) if isinstance(profile_name, str) else None
        if not isinstance(profile, dict):
            raise TraceError(name, None, f"{where}.profile", f"names no profile of 'profiles': {profile_name!r:.40}")
        if profile.get("type") != "delay":
            raise TraceError(name, None, f"{where}.profile",
                             f"profile {profile_name!r} is of type {profile.get('type')!r}: only 'delay' profiles "
                             "give a run time")
        delay = profile.get("delay")
        if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not math.isfinite(delay) or delay < 0:
            raise TraceError(name, None, f"profiles.{profile_name}.delay", f"must be a number >= 0; got {delay!r}")
        runtime[i] = float(delay)
        ident = job.get("id")
        try:
            job_id[i] = int(str(ident).rsplit("!", 1)[-1])
        except ValueError:
            numeric = False
    if not numeric:
        job_id = np.arange(1, n + 1, dtype=np.int64)
    order = np.argsort(submit, kind="stable")
    table = JobTable(job_id[order], submit[order], runtime[order], estimate[order], processors[order],
                     np.full(n, -1, np.int32), np.zeros(n, np.int32))
    nb_res = doc.get("nb_res")
    header = {"MaxProcs": str(int(nb_res))} if isinstance(nb_res, int) and not isinstance(nb_res, bool) else {}
    return Trace(table, name, "batsim", header, [], int(nb_res) if header else None, 0, [])
