"""A run's schedule as Batsim writes its ``_jobs.csv``, the file evalys and Batsim's own tools plot
and analyse (docs/output.md, "Batsim / evalys jobs").

One row per job of replication 0 that started and ended, and per job rejected (Batsim lists the
jobs its simulation finished or its scheduler rejected), in submission order, as Batsim v5 writes
them (its src/export.cpp, read, not copied):

- ``job_id``: the job's name in its workload -- a Batsim workload's own id (``w0!12`` names 12,
  ``seq-ok`` stays ``seq-ok``), else the job's number; a component of a co-allocated job adds
  ``.component``; ``workload_name``: the stream's name; ``profile``: a Batsim workload's profile
  name (empty for other jobs);
- the times; ``success`` (1: completed); ``final_state``: ``COMPLETED_SUCCESSFULLY``,
  ``COMPLETED_WALLTIME_REACHED`` (stopped at its requested time where its stream kills at the
  walltime: ``run.enforce_walltime``, the stream's own, or a Batsim workload's default, as Batsim
  kills a job at its walltime), ``COMPLETED_KILLED`` (killed otherwise, e.g. by a preemption or
  its cancellation) or ``REJECTED`` (its times and resources empty, as Batsim leaves them);
- ``allocated_resources``: the processors the job held, numbered across the platform (cluster
  after cluster), as an interval set in Batsim's hyphen notation (``0-3 8``) -- from the Gantt, so
  it is the placement drawn.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from simengine.gantt import KIND_KILLED, KIND_RUN
from simengine.text_columns import column_text, csv_bytes, strings_text
from simengine.traces import walltime_kills
from simengine.workload import STATUS_CANCELLED, STATUS_COMPLETED, STATUS_KILLED, STATUS_REJECTED

COLUMNS = ("job_id", "workload_name", "profile", "submission_time", "requested_number_of_resources",
           "requested_time", "success", "final_state", "starting_time", "execution_time", "finish_time",
           "waiting_time", "turnaround_time", "stretch", "allocated_resources", "consumed_energy", "metadata")


def interval_set(processors: np.ndarray) -> str:
    """``0-3 8``: sorted processor ids as runs of consecutive ones."""
    ids = np.unique(processors)
    return interval_sets(np.zeros(len(ids), np.int64), ids, np.ones(len(ids), np.int64), 1)[0]


def interval_sets(owner: np.ndarray, first: np.ndarray, count: np.ndarray, n: int) -> list[str]:
    """Per owner 0..n-1, the processors of its ranges ``[first, first + count)`` as an interval set
    (``0-3 8``; "" for none): ranges that overlap or touch merge. Array arithmetic, then one text
    per interval, joined per owner."""
    out = [""] * n
    if not len(owner):
        return out
    order = np.lexsort((first, owner))
    who, a = owner[order].astype(np.int64), first[order].astype(np.int64)
    b = a + count[order].astype(np.int64) - 1
    # the running end of each owner's ranges so far (one running maximum, owners kept apart by an offset)
    span = int(b.max()) + 2
    reach = np.maximum.accumulate(b + who * span) - who * span
    opens = np.ones(len(who), bool)
    opens[1:] = (who[1:] != who[:-1]) | (a[1:] > reach[:-1] + 1)
    at = np.flatnonzero(opens)
    lo, hi, whose = a[at], np.maximum.reduceat(b, at), who[at]
    # (f-strings beat numpy's int-to-text conversion several times over here)
    texts = [f"{x}" if x == y else f"{x}-{y}" for x, y in zip(lo.tolist(), hi.tolist())]
    # intervals come grouped by owner, in order: each owner's are one slice
    cut = np.flatnonzero(whose[1:] != whose[:-1]) + 1
    bounds = np.concatenate([[0], cut, [len(whose)]]).tolist()
    for k, lo_i, hi_i in zip(whose[bounds[:-1]].tolist(), bounds[:-1], bounds[1:]):
        out[k] = texts[lo_i] if hi_i == lo_i + 1 else " ".join(texts[lo_i:hi_i])
    return out


def batsim_columns(result, precision: int | None = None) -> dict[str, np.ndarray | list]:
    """The file's columns (COLUMNS): replication 0's finished and rejected jobs in submission order.

    ``precision``: the times at that many decimals (0: whole seconds), None as simulated. The
    instants (submission, start, finish) are rounded and the spans taken between the rounded
    instants: rounding keeps the order of instants, so two jobs that followed each other on a
    processor still do, and a tool that adds up processors in use (evalys's utilisation) never
    sees more than the platform -- which float spans (start + execution a hair past the next
    start) can show it. Empty cells (a rejected job's times) are NaN."""
    if precision is not None and not 0 <= precision <= 9:
        raise ValueError(f"batsim_columns: precision must be within 0..9; got {precision}")

    def at(t: np.ndarray) -> np.ndarray:
        return t if precision is None else np.round(t, precision)
    jobs, seg = result.jobs, result.segments
    streams = (result.scenario.get("workload") or {}).get("streams") or []
    kills = np.array(walltime_kills(streams, bool((result.scenario.get("run") or {}).get("enforce_walltime")))
                     + [False], bool)  # (the last: jobs of no stream, e.g. KOALA's background)
    names = np.array([s.get("name") or f"stream{i}" for i, s in enumerate(streams)] + ["background"], object)
    workload_job = jobs["reservation"] < 0 if "reservation" in jobs else True  # (not an advance reservation)
    status = jobs["status"]
    listed = np.flatnonzero((jobs["replication"] == 0) & workload_job & (
        (~np.isnan(jobs["start"]) & ~np.isnan(jobs["end"])
         & np.isin(status, (STATUS_COMPLETED, STATUS_KILLED, STATUS_CANCELLED)))
        | (status == STATUS_REJECTED)))
    listed = listed[np.argsort(jobs["submit"][listed], kind="stable")]
    n = len(listed)
    stream = jobs["stream"][listed].astype(np.int64)
    stream = np.where((stream >= 0) & (stream < len(streams)), stream, len(streams))
    # Batsim's job name: a Batsim workload's own id (after its workload's "w0!" if it has one), else the number
    given = jobs.get("batsim_id")
    ident = [str(i) for i in jobs["job_id"][listed].tolist()]
    if given is not None:
        ident = [own.decode("utf-8", "replace").rsplit("!", 1)[-1] if own else i
                 for own, i in zip(given[listed].tolist(), ident)]
    components = jobs.get("component")
    if components is not None and bool((np.asarray(components) > 0).any()):
        ident = [f"{i}.{c}" for i, c in zip(ident, np.asarray(components)[listed].tolist())]
    profiles = jobs.get("profile")
    profile = [p.decode("utf-8", "replace") for p in profiles[listed].tolist()] if profiles is not None else [""] * n
    rejected = status[listed] == STATUS_REJECTED
    done = status[listed] == STATUS_COMPLETED
    estimate = jobs["estimate"][listed]
    submit = at(jobs["submit"][listed])
    start_raw = np.where(rejected, np.nan, jobs["start"][listed])
    end_raw = np.where(rejected, np.nan, jobs["end"][listed])
    start, end = at(start_raw), at(end_raw)
    execution, turnaround = at(end - start), at(end - submit)
    # killed after exactly its requested time where its stream kills at the walltime: reached
    with np.errstate(invalid="ignore"):
        reached = ~done & ~rejected & kills[stream] & ~np.isnan(estimate) & \
            (np.abs((end_raw - start_raw) - estimate) <= 1e-9 * np.maximum(1.0, estimate))
        stretch = np.where(execution > 0, turnaround / np.where(execution > 0, execution, 1.0), np.nan)
    state = np.where(rejected, "REJECTED", np.where(done, "COMPLETED_SUCCESSFULLY", np.where(
        reached, "COMPLETED_WALLTIME_REACHED", "COMPLETED_KILLED")))
    # the processors each job held, from the Gantt, numbered across the platform cluster after cluster
    offset = np.concatenate([[0], np.cumsum(result.cluster_processors)]).astype(np.int64)
    position = np.full(len(status), -1, np.int64)
    position[listed] = np.arange(n)
    keep = np.isin(seg["kind"], (KIND_RUN, KIND_KILLED))
    owner = position[seg["job"][keep].astype(np.int64)]
    mine = owner >= 0
    first = offset[seg["cluster"][keep].astype(np.int64)] + seg["first_processor"][keep].astype(np.int64)
    resources = interval_sets(owner[mine], first[mine], seg["processors"][keep][mine], n)
    return {"job_id": ident, "workload_name": names[stream].tolist(), "profile": profile, "submission_time": submit,
            "requested_number_of_resources": jobs["processors"][listed],
            "requested_time": np.where(np.isnan(estimate), -1.0, estimate), "success": done.astype(np.int64),
            "final_state": state.tolist(), "starting_time": start, "execution_time": execution,
            "finish_time": end, "waiting_time": at(start - submit), "turnaround_time": turnaround,
            "stretch": stretch, "allocated_resources": resources,
            "consumed_energy": np.where(rejected, "", "-1").tolist(), "metadata": [""] * n}


def _csv_field(texts: list[str]) -> np.ndarray:
    """Text cells as the csv module writes them: quoted (quotes doubled) when they hold a comma,
    a quote or a line break."""
    whole = "\0".join(texts)  # (one scan of the column: most columns need no quoting at all)
    if any(c in whole for c in ',"\r\n'):
        texts = ['"' + t.replace('"', '""') + '"' if any(c in t for c in ',"\r\n') else t for t in texts]
    return strings_text(texts)


def batsim_csv(result, precision: int | None = None, rows: int = 100_000) -> Iterator[bytes]:
    """``_jobs.csv`` of ``result`` as bytes: the header, then ``rows`` rows at a time (the columns
    are computed once, :func:`batsim_columns`, and turned into text a slice at a time, so the first
    bytes of a big file leave early: a download streams them)."""
    columns = batsim_columns(result, precision)
    yield (",".join(COLUMNS) + "\n").encode("utf-8")
    n = len(columns["job_id"])
    for a in range(0, n, rows):
        part = [v[a:a + rows] for v in columns.values()]
        yield csv_bytes([_csv_field(v) if isinstance(v, list) else column_text(v) for v in part])


def write_batsim_jobs(result, path: str | Path, precision: int | None = None) -> None:
    """``_jobs.csv`` of ``result`` (:func:`batsim_csv`, times at ``precision`` decimals)."""
    with open(path, "wb") as fh:
        for chunk in batsim_csv(result, precision):
            fh.write(chunk)
