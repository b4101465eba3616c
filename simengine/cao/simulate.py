"""Run Cao's system on a local workload and workflows; collect per-job rows, metrics and Gantt segments."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from simengine.cao.engine import (EV_ARRIVE, EV_GRID, LONG, MEDIUM, CaoParams, Job, Simulation, Workflow)
from simengine.gantt import KIND_RESERVATION, KIND_RUN, KIND_SUSPENDED, SEGMENT_COLUMNS
from simengine.workload import JobTable

__all__ = ["CaoResult", "simulate", "workflows_from_split", "LOCAL", "TASK"]

LOCAL, TASK = 0, 1


@dataclass
class CaoResult:
    """Outcome of one run.

    Attributes
    ----------
    jobs : dict of numpy arrays, one row per local job and per task: ``job_id``, ``kind``
        (0 local, 1 task), ``workflow`` (-1 for local jobs), ``task``, ``cls`` (0 short,
        1 medium, 2 long), ``cluster``, ``processors``, ``submit`` (a task's: when it became
        ready, i.e. its predecessors' finish + comm, or the workflow's arrival), ``start``,
        ``end``, ``runtime``, ``estimate``, ``preemptions``, ``est``/``st``/``lft`` (a task's
        reservation frame; NaN for local jobs), ``rr`` (relative response time).
    workflows : dict of numpy arrays: ``job_id``, ``submit``, ``first_start``, ``last_end``, ``makespan``.
    utilisation : per-cluster busy fraction over the arrival window [first submit, last submit].
    pieces : per job row, its run pieces ``(t0, t1)``; ``procs``: its processors; ``layer``.
    """

    params: CaoParams
    jobs: dict
    workflows: dict
    utilisation: np.ndarray
    utilisation_all: np.ndarray
    window: tuple[float, float]
    pieces: list
    procs: list
    short_slices: list
    events: int = 0
    metrics: dict = field(default_factory=dict)

    def segments(self, t0: float = -math.inf, t1: float = math.inf) -> dict:
        """Gantt segments (SEGMENT_COLUMNS) overlapping [t0, t1): ``run`` pieces, ``suspended``
        gaps between a job's pieces (on the processors it keeps) and a task's ``reservation``
        frame [EST, LFT] on the processors it ran on."""
        out = {c: [] for c in SEGMENT_COLUMNS}

        def emit(cl, procs, a, b, job, comp, kind):
            if b < t0 or a > t1 or b - a <= 0:
                return
            for first, count in blocks(procs):
                out["cluster"].append(cl)
                out["first_processor"].append(first)
                out["processors"].append(count)
                out["t0"].append(a)
                out["t1"].append(b)
                out["job"].append(job)
                out["component"].append(comp)
                out["kind"].append(kind)

        J = self.jobs
        for r in range(len(J["job_id"])):
            procs = self.procs[r]
            if procs is None:
                continue
            cl, job = int(J["cluster"][r]), int(J["job_id"][r])
            comp = int(J["task"][r]) if J["kind"][r] == TASK else 0
            if J["kind"][r] == TASK:
                emit(cl, procs, float(J["est"][r]), float(J["lft"][r]), job, comp, KIND_RESERVATION)
            prev = None
            for a, b in self.pieces[r]:
                if prev is not None and a > prev:
                    emit(cl, procs, prev, a, job, comp, KIND_SUSPENDED)
                emit(cl, procs, a, b, job, comp, KIND_RUN)
                prev = b
        return {c: np.asarray(v, dtype=np.float64 if c in ("t0", "t1") else np.int64) for c, v in out.items()}


def blocks(procs: list[int]) -> list[tuple[int, int]]:
    """(first, count) of each run of consecutive processor ids."""
    ps = sorted(procs)
    out = []
    for p in ps:
        if out and out[-1][0] + out[-1][1] == p:
            out[-1] = (out[-1][0], out[-1][1] + 1)
        else:
            out.append((p, 1))
    return out


def _clusters_for(jobs: JobTable, p: CaoParams) -> np.ndarray:
    cl = np.asarray(jobs.cluster, dtype=np.int64).copy()
    free = cl < 0
    if p.distribution == "round_robin":
        cl[free] = np.arange(int(free.sum())) % p.clusters
    else:
        rng = np.random.default_rng(np.random.SeedSequence(p.seed))
        cl[free] = rng.integers(0, p.clusters, int(free.sum()))
    if (cl >= p.clusters).any():
        raise ValueError(f"jobs.cluster: a job names cluster {int(cl.max())} but there are {p.clusters}")
    return cl


def simulate(jobs: JobTable, workflows: list[Workflow] | None = None, params: CaoParams | None = None,
             on_step: Callable[[float, float], None] | None = None,
             drive: Callable[[Simulation], None] | None = None) -> CaoResult:
    """Simulate Cao's system.

    Parameters
    ----------
    jobs : JobTable
        Local jobs; ``cluster`` -1 rows are spread by ``params.distribution``. Estimates below
        the runtime are raised to the runtime (Cao: runtimes are given by the user).
    workflows : list of Workflow, optional
        Workflow grid jobs, each scheduled by RARS-HEFT at its ``submit``.
    params : CaoParams, optional
        Defaults are the thesis's.
    on_step : callable, optional
        Called every few thousand events with (fraction of the jobs finished, simulated time).
    drive : callable, optional
        Runs the built simulation to its end instead of ``Simulation.run()`` (the live Gantt
        advances it slice by slice, simengine.cao.run).

    Returns
    -------
    CaoResult
    """
    p = params or CaoParams()
    workflows = workflows or []
    sim = Simulation(p)
    sim.on_step = on_step
    P = p.processors
    cl = _clusters_for(jobs, p) if len(jobs) else np.zeros(0, np.int64)
    for k in range(len(jobs)):
        n = int(jobs.processors[k])
        if not 1 <= n <= P:
            raise ValueError(f"jobs.processors[{k}]: {n} is not in 1..{P}")
        rt = float(jobs.runtime[k])
        if not rt >= 0:
            raise ValueError(f"jobs.runtime[{k}]: must not be negative")
        est = max(float(jobs.estimate[k]), rt)
        j = Job(len(sim.jobs), int(jobs.job_id[k]), p.job_class(est), n, rt, est, float(jobs.submit[k]), int(cl[k]))
        sim.jobs.append(j)
        sim.push(j.submit, EV_ARRIVE, j.cluster, j)
    for w, wf in enumerate(workflows):
        ests = wf.estimate or wf.runtime
        tasks = []
        for i, (n, rt, est) in enumerate(zip(wf.processors, wf.runtime, ests)):
            n = int(n)
            if not 1 <= n <= P:
                raise ValueError(f"workflows[{w}].processors[{i}]: {n} is not in 1..{P}")
            est = max(float(est), float(rt))
            j = Job(len(sim.jobs), int(wf.job_id), p.job_class(est), n, float(rt), est, float(wf.submit), -1)
            j.wf, j.task = w, i
            j.preds, j.succs = [], []
            tasks.append(j)
            sim.jobs.append(j)
        for a, b, comm in wf.edges:
            if not (0 <= a < len(tasks) and 0 <= b < len(tasks)) or a == b:
                raise ValueError(f"workflows[{w}].edges: ({a}, {b}) does not join two tasks")
            tasks[b].preds.append((tasks[a], float(comm)))
            tasks[a].succs.append(tasks[b])
        sim.workflows.append({"tasks": tasks, "submit": float(wf.submit), "job_id": int(wf.job_id)})
        sim.push(float(wf.submit), EV_GRID, w, None)
    sim.unfinished = len(sim.jobs)
    if sim.jobs:
        if drive is not None:
            drive(sim)
        else:
            sim.run()
    return _collect(sim, p)


def _collect(sim: Simulation, p: CaoParams) -> CaoResult:
    J = sim.jobs
    n = len(J)
    f = lambda attr: np.array([getattr(j, attr) for j in J], dtype=np.float64)  # noqa: E731
    rows = {
        "job_id": np.array([j.job_id for j in J], dtype=np.int64),
        "kind": np.array([TASK if j.wf >= 0 else LOCAL for j in J], dtype=np.int8),
        "workflow": np.array([j.wf for j in J], dtype=np.int64),
        "task": np.array([j.task for j in J], dtype=np.int64),
        "cls": np.array([j.cls for j in J], dtype=np.int8),
        "cluster": np.array([j.cluster for j in J], dtype=np.int64),
        "processors": np.array([j.n for j in J], dtype=np.int64),
        "submit": f("ready"),
        "start": f("start"),
        "end": f("end"),
        "runtime": f("runtime"),
        "estimate": f("est"),
        "preemptions": np.array([j.preemptions for j in J], dtype=np.int64),
        "foreign": np.array([j.foreign for j in J], dtype=bool),
        "est": f("est_frame"),
        "st": f("st"),
        "lft": f("lft"),
    }
    rows["rr"] = (rows["end"] - rows["submit"]) / np.maximum(rows["runtime"], 1.0)
    W = sim.workflows
    wf = {"job_id": np.array([w["job_id"] for w in W], dtype=np.int64),
          "submit": np.array([w["submit"] for w in W], dtype=np.float64),
          "first_start": np.array([min(t.start for t in w["tasks"]) for w in W], dtype=np.float64),
          "last_end": np.array([max(t.end for t in w["tasks"]) for w in W], dtype=np.float64)}
    wf["makespan"] = wf["last_end"] - wf["first_start"]
    submits = np.array([j.submit for j in J]) if n else np.zeros(1)
    w0, w1 = float(submits.min()), float(submits.max())
    end_all = float(np.nanmax(rows["end"])) if n else 0.0
    busy = np.zeros(p.clusters)
    busy_all = np.zeros(p.clusters)
    for j in J:
        for a, b in j.pieces:
            busy_all[j.cluster] += j.n * (b - a)
            lo, hi = max(a, w0), min(b, w1)
            if hi > lo:
                busy[j.cluster] += j.n * (hi - lo)
    cap = p.processors
    util = busy / (cap * (w1 - w0)) if w1 > w0 else np.full(p.clusters, math.nan)
    util_all = busy_all / (cap * (end_all - w0)) if end_all > w0 else np.full(p.clusters, math.nan)
    res = CaoResult(p, rows, wf, util, util_all, (w0, w1), [list(j.pieces) for j in J], [j.procs for j in J],
                    [c.short_slices for c in sim.clusters], sim.evseq)
    res.metrics = metrics(res)
    return res


def metrics(r: CaoResult) -> dict:
    """Cao's metrics: mean RR per class (local jobs and tasks apart), grid makespan, utilisation, share."""
    J = r.jobs
    out = {}
    for kind, kname in ((LOCAL, "local"), (TASK, "task")):
        for c, cname in ((MEDIUM, "medium"), (LONG, "long")):
            m = (J["kind"] == kind) & (J["cls"] == c)
            out[f"rr_{cname}_{kname}"] = float(J["rr"][m].mean()) if m.any() else math.nan
    for c, cname in ((MEDIUM, "medium"), (LONG, "long")):
        m = J["cls"] == c
        out[f"rr_{cname}"] = float(J["rr"][m].mean()) if m.any() else math.nan
    ml = J["cls"] >= MEDIUM
    tasks = int((J["kind"] == TASK).sum())
    out["tasks"] = tasks
    out["medium_long_jobs"] = int(ml.sum())
    out["reservation_share"] = tasks / int(ml.sum()) if ml.any() else 0.0
    out["makespan"] = float(r.workflows["makespan"].mean()) if len(r.workflows["makespan"]) else math.nan
    out["utilisation"] = float(r.utilisation.mean())
    out["utilisation_all"] = float(r.utilisation_all.mean())
    for i, u in enumerate(r.utilisation):
        out[f"utilisation_{i}"] = float(u)
    out["preemptions"] = int(J["preemptions"].sum())
    out["cross_slice"] = int(J["foreign"].sum())
    out["unfinished"] = int(np.isnan(J["end"]).sum())
    return out


def workflows_from_split(split) -> list[Workflow]:
    """Adapter: :class:`simengine.cao.workflows.Workflows` (H2's split of eligible jobs) to a
    list of :class:`Workflow` (task indices local to each workflow)."""
    out = []
    tw = np.asarray(split.task_workflow)
    src, dst, comm = np.asarray(split.edge_src), np.asarray(split.edge_dst), np.asarray(split.edge_comm)
    edge_wf = tw[src] if len(src) else np.zeros(0, np.int64)
    for w in range(len(split)):
        rows = np.flatnonzero(tw == w)
        base = int(rows[0])
        e = np.flatnonzero(edge_wf == w)
        out.append(Workflow(float(split.submit[w]), [int(x) for x in split.task_processors[rows]],
                            [float(x) for x in split.task_runtime[rows]],
                            [(int(src[i]) - base, int(dst[i]) - base, float(comm[i])) for i in e],
                            job_id=int(split.job_id[w]),
                            estimate=[float(x) for x in split.task_estimate[rows]]))
    return out
