"""A run's schedule as Batsim writes its ``_jobs.csv``, the file evalys and Batsim's own tools plot
and analyse (docs/output.md, "Batsim / evalys jobs").

One row per job of replication 0 that started and ended (Batsim lists the jobs its simulation
finished): ``job_id`` as Batsim names jobs (``workload!id``, the workload being the stream's name;
a component of a co-allocated job adds ``.component``), the times, ``success`` (1: completed),
``final_state`` (``COMPLETED_SUCCESSFULLY``, ``COMPLETED_WALLTIME_REACHED`` -- a job
``run.enforce_walltime`` stopped at its requested time, as Batsim kills a job at its walltime -- or
``COMPLETED_KILLED``: killed otherwise, e.g. by a preemption or its cancellation) and ``allocated_resources``:
the processors the job held, numbered across the platform (cluster after cluster), as an interval
set in Batsim's hyphen notation (``0-3 8``) -- from the Gantt, so it is the placement drawn.
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from simengine.gantt import KIND_KILLED, KIND_RUN
from simengine.workload import STATUS_CANCELLED, STATUS_COMPLETED, STATUS_KILLED

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


def batsim_rows(result) -> list[list]:
    """The rows of the file (COLUMNS), replication 0's finished jobs in submission order."""
    jobs, seg = result.jobs, result.segments
    offset = np.concatenate([[0], np.cumsum(result.cluster_processors)]).astype(np.int64)
    held: dict[int, list[np.ndarray]] = {}
    keep = np.isin(seg["kind"], (KIND_RUN, KIND_KILLED))
    for row, cluster, first, count in zip(seg["job"][keep].tolist(), seg["cluster"][keep].tolist(),
                                          seg["first_processor"][keep].tolist(), seg["processors"][keep].tolist()):
        held.setdefault(row, []).append(np.arange(offset[cluster] + first, offset[cluster] + first + count))
    streams = (result.scenario.get("workload") or {}).get("streams") or []
    walltime = bool((result.scenario.get("run") or {}).get("enforce_walltime"))
    names = [s.get("name") or f"stream{i}" for i, s in enumerate(streams)]
    components = jobs.get("component")
    split = components is not None and bool((np.asarray(components) > 0).any())
    finished = np.flatnonzero((jobs["replication"] == 0) & ~np.isnan(jobs["start"]) & ~np.isnan(jobs["end"])
                              & np.isin(jobs["status"], (STATUS_COMPLETED, STATUS_KILLED, STATUS_CANCELLED)))
    finished = finished[np.argsort(jobs["submit"][finished], kind="stable")]
    rows = []
    for i in finished.tolist():
        stream = int(jobs["stream"][i])
        workload = names[stream] if 0 <= stream < len(names) else "background"
        ident = f"{workload}!{int(jobs['job_id'][i])}" + (f".{int(components[i])}" if split else "")
        submit, start, end = float(jobs["submit"][i]), float(jobs["start"][i]), float(jobs["end"][i])
        execution, turnaround = end - start, end - submit
        estimate = float(jobs["estimate"][i])
        done = int(jobs["status"][i]) == STATUS_COMPLETED
        # killed after exactly its requested time under enforce_walltime: its walltime was reached
        reached = not done and walltime and estimate == estimate and abs(execution - estimate) <= 1e-9 * max(1.0, estimate)
        state = "COMPLETED_SUCCESSFULLY" if done else "COMPLETED_WALLTIME_REACHED" if reached else "COMPLETED_KILLED"
        resources = interval_set(np.concatenate(held[i])) if i in held else ""
        rows.append([ident, workload, "", submit, int(jobs["processors"][i]), estimate if estimate == estimate else -1,
                     int(done), state, start, execution, end,
                     start - submit, turnaround, turnaround / execution if execution > 0 else "", resources, -1, ""])
    return rows


def write_batsim_jobs(result, path: str | Path) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(COLUMNS)
        writer.writerows(batsim_rows(result))
