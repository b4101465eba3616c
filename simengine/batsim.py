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

import csv
from pathlib import Path

import numpy as np

from simengine.gantt import KIND_KILLED, KIND_RUN
from simengine.traces import walltime_kills
from simengine.workload import STATUS_CANCELLED, STATUS_COMPLETED, STATUS_KILLED, STATUS_REJECTED

COLUMNS = ("job_id", "workload_name", "profile", "submission_time", "requested_number_of_resources",
           "requested_time", "success", "final_state", "starting_time", "execution_time", "finish_time",
           "waiting_time", "turnaround_time", "stretch", "allocated_resources", "consumed_energy", "metadata")


def interval_set(processors: np.ndarray) -> str:
    """``0-3 8``: sorted processor ids as runs of consecutive ones."""
    ids = np.unique(processors)
    if not len(ids):
        return ""
    breaks = np.flatnonzero(np.diff(ids) != 1)
    starts = np.concatenate([[ids[0]], ids[breaks + 1]])
    ends = np.concatenate([ids[breaks], [ids[-1]]])
    return " ".join(str(a) if a == b else f"{a}-{b}" for a, b in zip(starts.tolist(), ends.tolist()))


def batsim_rows(result, precision: int | None = None) -> list[list]:
    """The rows of the file (COLUMNS): replication 0's finished and rejected jobs in submission order.

    ``precision``: the times at that many decimals (0: whole seconds), None as simulated. The
    instants (submission, start, finish) are rounded and the spans taken between the rounded
    instants: rounding keeps the order of instants, so two jobs that followed each other on a
    processor still do, and a tool that adds up processors in use (evalys's utilisation) never
    sees more than the platform -- which float spans (start + execution a hair past the next
    start) can show it."""
    if precision is not None and not 0 <= precision <= 9:
        raise ValueError(f"batsim_rows: precision must be within 0..9; got {precision}")

    def at(t: float) -> float:
        return t if precision is None else round(t, precision)
    jobs, seg = result.jobs, result.segments
    offset = np.concatenate([[0], np.cumsum(result.cluster_processors)]).astype(np.int64)
    held: dict[int, list[np.ndarray]] = {}
    keep = np.isin(seg["kind"], (KIND_RUN, KIND_KILLED))
    for row, cluster, first, count in zip(seg["job"][keep].tolist(), seg["cluster"][keep].tolist(),
                                          seg["first_processor"][keep].tolist(), seg["processors"][keep].tolist()):
        held.setdefault(row, []).append(np.arange(offset[cluster] + first, offset[cluster] + first + count))
    streams = (result.scenario.get("workload") or {}).get("streams") or []
    walltime = walltime_kills(streams, bool((result.scenario.get("run") or {}).get("enforce_walltime")))
    names = [s.get("name") or f"stream{i}" for i, s in enumerate(streams)]
    components = jobs.get("component")
    split = components is not None and bool((np.asarray(components) > 0).any())
    workload_job = jobs["reservation"] < 0 if "reservation" in jobs else True  # (not an advance reservation)
    listed = np.flatnonzero((jobs["replication"] == 0) & workload_job & (
        (~np.isnan(jobs["start"]) & ~np.isnan(jobs["end"])
         & np.isin(jobs["status"], (STATUS_COMPLETED, STATUS_KILLED, STATUS_CANCELLED)))
        | (jobs["status"] == STATUS_REJECTED)))
    listed = listed[np.argsort(jobs["submit"][listed], kind="stable")]
    given = jobs.get("batsim_id")  # a Batsim workload's own job ids and profile names
    profiles = jobs.get("profile")
    rows = []
    for i in listed.tolist():
        stream = int(jobs["stream"][i])
        workload = names[stream] if 0 <= stream < len(names) else "background"
        own = given[i].decode("utf-8", "replace") if given is not None else ""
        # Batsim's job name: the id after its workload's "w0!" if it has one
        ident = own.rsplit("!", 1)[-1] if own else str(int(jobs["job_id"][i]))
        ident += f".{int(components[i])}" if split else ""
        profile = profiles[i].decode("utf-8", "replace") if profiles is not None else ""
        submit, estimate = at(float(jobs["submit"][i])), float(jobs["estimate"][i])
        requested = [ident, workload, profile, submit, int(jobs["processors"][i]),
                     estimate if estimate == estimate else -1]
        if int(jobs["status"][i]) == STATUS_REJECTED:  # as Batsim writes a job its scheduler rejected
            rows.append(requested + [0, "REJECTED", "", "", "", "", "", "", "", "", ""])
            continue
        start, end = at(float(jobs["start"][i])), at(float(jobs["end"][i]))
        execution, turnaround, waiting = at(end - start), at(end - submit), at(start - submit)
        done = int(jobs["status"][i]) == STATUS_COMPLETED
        # killed after exactly its requested time where its stream kills at the walltime: reached
        simulated = float(jobs["end"][i]) - float(jobs["start"][i])
        reached = not done and 0 <= stream < len(walltime) and walltime[stream] and estimate == estimate and \
            abs(simulated - estimate) <= 1e-9 * max(1.0, estimate)
        state = "COMPLETED_SUCCESSFULLY" if done else "COMPLETED_WALLTIME_REACHED" if reached else "COMPLETED_KILLED"
        resources = interval_set(np.concatenate(held[i])) if i in held else ""
        rows.append(requested + [int(done), state, start, execution, end, waiting, turnaround,
                                 turnaround / execution if execution > 0 else "", resources, -1, ""])
    return rows


def write_batsim_jobs(result, path: str | Path, precision: int | None = None) -> None:
    """``_jobs.csv`` of ``result`` (:func:`batsim_rows`, times at ``precision`` decimals)."""
    rows = batsim_rows(result, precision)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(COLUMNS)
        writer.writerows(rows)
