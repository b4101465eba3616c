"""Run Cao's system on a local workload and workflows; collect per-job rows, metrics and Gantt segments.

:class:`CaoSim` builds the compiled simulation (simengine/cao/core.py) from a JobTable and
workflows, runs it (whole, or slice by slice for the live Gantt) and collects a :class:`CaoResult`.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from simengine.cao import core
from simengine.cao.admission import admit_workflow
from simengine.cao.engine import LONG, MEDIUM, STEP_EVENTS, CaoParams, Workflow, heft_ranks
from simengine.gantt import KIND_RESERVATION, KIND_RUN, KIND_SUSPENDED, SEGMENT_COLUMNS
from simengine.workload import JobTable

__all__ = ["CaoResult", "CaoSim", "simulate", "workflows_from_split", "LOCAL", "TASK"]

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
    pieces : per job row, its run pieces ``[(t0, t1), ...]``; ``procs``: its processors (None
        if it never started). Sequences (:class:`PiecesByJob`, :class:`ProcsByJob`) that read
        the engine's arrays on demand; :meth:`segments` reads those arrays directly.
    """

    params: CaoParams
    jobs: dict
    workflows: dict
    utilisation: np.ndarray
    utilisation_all: np.ndarray
    window: tuple[float, float]
    pieces: Sequence
    procs: Sequence
    short_slices: list
    events: int = 0
    metrics: dict = field(default_factory=dict)

    def segments(self, t0: float = -math.inf, t1: float = math.inf) -> dict:
        """Gantt segments (SEGMENT_COLUMNS) overlapping [t0, t1): ``run`` pieces, ``suspended``
        gaps between a job's pieces (on the processors it keeps) and a task's ``reservation``
        frame [EST, LFT] on the processors it ran on. Job by job in row order: the frame, then
        each piece after the gap before it; each row once per block of consecutive processors."""
        J = self.jobs
        N = len(J["job_id"])
        started, ids = self.procs.started_ids()  # (the engine's sequences, not lists)
        counts, pa, pb = self.pieces.counts, self.pieces.t0, self.pieces.t1
        # processors: each started job's, sorted, cut into blocks of consecutive ids
        sizes = np.where(started, J["processors"], 0).astype(np.int64)
        owner = np.repeat(np.arange(N), sizes)
        new_block = np.ones(len(ids), bool)
        new_block[1:] = (owner[1:] != owner[:-1]) | (ids[1:] != ids[:-1] + 1)
        b_first = np.flatnonzero(new_block)
        b_job = owner[b_first]
        b_count = np.diff(np.append(b_first, len(ids)))
        nb = np.bincount(b_job, minlength=N) if N else np.zeros(0, np.int64)
        b_off = np.concatenate([[0], np.cumsum(nb)[:-1]]) if N else np.zeros(0, np.int64)
        # rows per job: the frame (order -1), then per piece k its gap (2k) and the piece (2k + 1)
        pj = np.repeat(np.arange(N), counts)
        k = np.arange(len(pj)) - np.repeat(np.concatenate([[0], np.cumsum(counts)[:-1]]) if N else [], counts)
        gap = np.zeros(len(pj), bool)
        gap[1:] = (k[1:] > 0) & (pa[1:] > pb[:-1])
        g = np.flatnonzero(gap)
        task = np.flatnonzero(started & (J["kind"] == TASK))
        row_job = np.concatenate([task, pj[g], pj])
        row_a = np.concatenate([J["est"][task], pb[g - 1], pa])
        row_b = np.concatenate([J["lft"][task], pa[g], pb])
        row_kind = np.concatenate([np.full(len(task), KIND_RESERVATION), np.full(len(g), KIND_SUSPENDED),
                                   np.full(len(pj), KIND_RUN)]).astype(np.int64)
        row_seq = np.concatenate([np.full(len(task), -1), 2 * k[g], 2 * k + 1])
        keep = started[row_job] & ~((row_b < t0) | (row_a > t1) | (row_b - row_a <= 0))
        order = np.lexsort((row_seq[keep], row_job[keep]))
        row_job, row_a, row_b, row_kind = (x[keep][order] for x in (row_job, row_a, row_b, row_kind))
        # each row once per block of its job
        reps = nb[row_job]
        r = np.repeat(np.arange(len(row_job)), reps)
        blk = np.repeat(b_off[row_job], reps) + (np.arange(len(r)) - np.repeat(np.cumsum(reps) - reps, reps))
        job = row_job[r]
        comp = np.where(J["kind"] == TASK, J["task"], 0)
        out = {"cluster": J["cluster"][job], "first_processor": ids[b_first[blk]] if len(blk) else np.zeros(0),
               "processors": b_count[blk], "t0": row_a[r], "t1": row_b[r], "job": J["job_id"][job],
               "component": comp[job], "kind": row_kind[r]}
        return {c: np.asarray(out[c], dtype=np.float64 if c in ("t0", "t1") else np.int64) for c in SEGMENT_COLUMNS}


class _ByJob(Sequence):
    """A per-job-row sequence read from the engine's arrays when asked (lists for 80,000 jobs
    would cost more than the simulation); equal to any sequence with the same items."""

    def _one(self, r: int):
        raise NotImplementedError

    def __getitem__(self, r):
        if isinstance(r, slice):
            return [self._one(i) for i in range(*r.indices(len(self)))]
        return self._one(r)

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and len(self) == len(other) and list(self) == list(other)


class PiecesByJob(_ByJob):
    """Each job row's run pieces ``[(t0, t1), ...]`` in time order."""

    def __init__(self, counts: np.ndarray, t0: np.ndarray, t1: np.ndarray):
        self.counts, self.t0, self.t1 = counts, t0, t1
        self.first = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64) if len(counts) else counts

    def __len__(self) -> int:
        return len(self.counts)

    def _one(self, r: int):
        a, c = int(self.first[r]), int(self.counts[r])
        return list(zip(self.t0[a:a + c].tolist(), self.t1[a:a + c].tolist()))


class ProcsByJob(_ByJob):
    """Each job row's processors (ascending; None before it starts), read from the engine's pool."""

    def __init__(self, pool: np.ndarray, off: np.ndarray, n: np.ndarray):
        self.pool, self.off, self.n = pool, off, n

    def __len__(self) -> int:
        return len(self.off)

    def _one(self, r: int):
        o = int(self.off[r])
        return None if o < 0 else self.pool[o:o + int(self.n[r])].tolist()

    def started_ids(self) -> tuple[np.ndarray, np.ndarray]:
        """(started per row, the started rows' processors in row order: each job takes the
        lowest free ones in ascending order, so they are sorted already)."""
        started = self.off >= 0
        n = np.where(started, self.n, 0)
        base = np.repeat(self.off, n)
        within = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
        return started, self.pool[base + within]


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


class CaoSim:
    """The compiled simulation of Cao's system for given local jobs and workflows.

    Job rows are the local jobs (in the JobTable's order), then each workflow's tasks; the
    arrays the engine changes (``state``, ``start``, ``end``, ``run_t0``, ``cluster``, ...) are
    numpy arrays shared with the compiled state, current after every :meth:`run`.
    """

    def __init__(self, jobs: JobTable, workflows: list[Workflow], p: CaoParams, admission=None):
        self.params = p
        #: the reservation admission policy asked at each workflow's arrival (None: the compiled
        #: RARS-HEFT admission; simengine.cao.admission)
        self.admission = admission
        P = p.processors
        nl = len(jobs)
        cl = _clusters_for(jobs, p) if nl else np.zeros(0, np.int64)
        size = np.asarray(jobs.processors, dtype=np.int64)
        runtime = np.asarray(jobs.runtime, dtype=np.float64)
        bad_size = (size < 1) | (size > P)
        bad = np.flatnonzero(bad_size | ~(runtime >= 0))
        if len(bad):  # the first bad job, its first bad field
            k = int(bad[0])
            if bad_size[k]:
                raise ValueError(f"jobs.processors[{k}]: {int(size[k])} is not in 1..{P}")
            raise ValueError(f"jobs.runtime[{k}]: must not be negative")
        est = np.maximum(np.asarray(jobs.estimate, dtype=np.float64), runtime)  # estimates below the run: raised
        cols = {"job_id": [np.asarray(jobs.job_id, np.int64)], "n": [size], "runtime": [runtime], "est": [est],
                "submit": [np.asarray(jobs.submit, np.float64)], "cluster": [np.asarray(cl, np.int64)],
                "wf": [np.full(nl, -1, np.int64)], "task": [np.full(nl, -1, np.int64)]}
        tasks: dict[str, list] = {key: [] for key in cols}  # the workflows' tasks' columns
        preds: list[list[tuple[int, float]]] = []  # of each task (local jobs have none)
        succs: list[list[int]] = []
        wf_first, wf_ntask, wf_submit, wf_order, wf_id = [], [], [], [], []
        base = nl
        for w, wf in enumerate(workflows):
            ests = wf.estimate or wf.runtime
            k = len(wf.processors)
            tn, trt, test = [], [], []
            for i, (n, rt, e) in enumerate(zip(wf.processors, wf.runtime, ests)):
                n = int(n)
                if not 1 <= n <= P:
                    raise ValueError(f"workflows[{w}].processors[{i}]: {n} is not in 1..{P}")
                tn.append(n)
                trt.append(float(rt))
                test.append(max(float(e), float(rt)))
            tp: list[list[tuple[int, float]]] = [[] for _ in range(k)]
            ts: list[list[int]] = [[] for _ in range(k)]
            for a, b, comm in wf.edges:
                if not (0 <= a < k and 0 <= b < k) or a == b:
                    raise ValueError(f"workflows[{w}].edges: ({a}, {b}) does not join two tasks")
                tp[b].append((base + a, float(comm)))
                ts[a].append(base + b)
            preds += tp
            succs += ts
            rank = heft_ranks(test, [(a, b, float(comm)) for a, b, comm in wf.edges])
            wf_order += [base + i for i in sorted(range(k), key=lambda i: (-rank[i], i))]
            wf_first.append(base)
            wf_ntask.append(k)
            wf_submit.append(float(wf.submit))
            wf_id.append(int(wf.job_id))
            for key, v in (("job_id", [int(wf.job_id)] * k), ("n", tn), ("runtime", trt), ("est", test),
                           ("submit", [float(wf.submit)] * k), ("cluster", [-1] * k), ("wf", [w] * k),
                           ("task", list(range(k)))):
                tasks[key] += v
            base += k
        a = {key: np.concatenate([v[0], np.array(tasks[key], v[0].dtype)]) for key, v in cols.items()}
        self.nlocal = nl
        self.job_id, self.n, self.runtime, self.est = a["job_id"], a["n"], a["runtime"], a["est"]
        self.submit, self.wf, self.task = a["submit"], a["wf"], a["task"]
        self.cls = np.where(self.est < p.short_limit, 0, np.where(self.est < p.medium_limit, MEDIUM, LONG))
        pred_ptr = np.concatenate([np.zeros(nl, np.int64), np.cumsum([0] + [len(x) for x in preds])])
        succ_ptr = np.concatenate([np.zeros(nl, np.int64), np.cumsum([0] + [len(x) for x in succs])])
        pred_j = np.array([q for x in preds for q, _ in x], np.int64)
        pred_comm = np.array([c for x in preds for _, c in x], np.float64)
        succ_j = np.array([q for x in succs for q in x], np.int64)
        self.workflow_submit = np.array(wf_submit, np.float64)
        self.workflow_id = np.array(wf_id, np.int64)
        self.workflow_first = np.array(wf_first, np.int64)
        self.workflow_tasks = np.array(wf_ntask, np.int64)
        self.wf_order = np.array(wf_order, np.int64)
        self.pred_ptr, self.pred_j, self.pred_comm = pred_ptr, pred_j, pred_comm
        self.state = core.new_state(p, self.cls, self.n, self.runtime, self.est, self.submit, a["cluster"],
                                    self.wf, (pred_ptr, pred_j, pred_comm), (succ_ptr, succ_j),
                                    self.workflow_first, self.workflow_tasks, self.workflow_submit,
                                    self.wf_order, nl, py_admit=admission is not None)
        self.done = len(self.n) == 0
        self._read()

    def __len__(self) -> int:
        return len(self.n)

    def preds_of(self, j: int) -> list[tuple[int, float]]:
        """Job row j's predecessors: (row, comm) in edge order."""
        a, b = int(self.pred_ptr[j]), int(self.pred_ptr[j + 1])
        return list(zip(self.pred_j[a:b].tolist(), self.pred_comm[a:b].tolist()))

    def _read(self) -> None:
        (self.piece_job, self.piece_t0, self.piece_t1, self.pool, self.poff, self.job_state, self.start,
         self.end, self.run_t0, self.cluster, self.layer, self.ready, self.preemptions, self.foreign, self.st,
         self.est_frame, self.lft, self.promised, self.short_slices, self.events, self.unfinished, self.now,
         report_t) = core.outputs(self.state)
        self.report_t = float(report_t)

    def run(self, until: float = math.inf, on_step: Callable[[float, float], None] | None = None) -> bool:
        """Handle the events in order until none is left (True) or the next is at or after
        ``until`` (False; call again to go on). ``on_step(fraction of the jobs finished,
        simulated time)`` is called every STEP_EVENTS events."""
        if self.done:
            return True
        every = STEP_EVENTS if on_step is not None else 0
        total = len(self.n)
        while True:
            status = core.advance(self.state, float(until), every)
            if status == core.ADMISSION_DUE:
                admit_workflow(self, self.admission)
                continue
            if status != core.REPORT_DUE:
                break
            self._read()
            on_step(1.0 - self.unfinished / total, self.report_t)
        self._read()
        self.done = status == core.FINISHED
        return self.done

    def procs(self, j: int) -> np.ndarray | None:
        """The processors job row j runs on (None before it starts)."""
        off = int(self.poff[j])
        return None if off < 0 else self.pool[off:off + int(self.n[j])]

    def result(self) -> "CaoResult":
        p = self.params
        N = len(self.n)
        kind = np.where(self.wf >= 0, TASK, LOCAL).astype(np.int8)
        rows = {
            "job_id": self.job_id.copy(), "kind": kind, "workflow": self.wf.copy(), "task": self.task.copy(),
            "cls": self.cls.astype(np.int8), "cluster": self.cluster.copy(), "processors": self.n.copy(),
            "submit": self.ready.copy(), "start": self.start.copy(), "end": self.end.copy(),
            "runtime": self.runtime.copy(), "estimate": self.est.copy(), "preemptions": self.preemptions.copy(),
            "foreign": self.foreign.copy(), "est": self.est_frame.copy(), "st": self.st.copy(),
            "lft": self.lft.copy(),
        }
        rows["rr"] = (rows["end"] - rows["submit"]) / np.maximum(rows["runtime"], 1.0)
        W = len(self.workflow_first)
        first_start, last_end = np.empty(W), np.empty(W)
        start, end = self.start.tolist(), self.end.tolist()
        for w in range(W):  # Python's min/max over the tasks (as the reference took them)
            a = int(self.workflow_first[w])
            first_start[w] = min(start[a:a + int(self.workflow_tasks[w])])
            last_end[w] = max(end[a:a + int(self.workflow_tasks[w])])
        wf = {"job_id": self.workflow_id.copy(),
              "submit": self.workflow_submit.copy(), "first_start": first_start, "last_end": last_end}
        wf["makespan"] = wf["last_end"] - wf["first_start"]
        submits = self.submit if N else np.zeros(1)
        w0, w1 = float(submits.min()), float(submits.max())
        end_all = float(np.nanmax(rows["end"])) if N else 0.0
        order = np.argsort(self.piece_job, kind="stable")
        busy, busy_all = core.busy_time(self.piece_job, self.piece_t0, self.piece_t1, order, self.cluster, self.n,
                                        p.clusters, w0, w1)
        cap = p.processors
        util = busy / (cap * (w1 - w0)) if w1 > w0 else np.full(p.clusters, math.nan)
        util_all = busy_all / (cap * (end_all - w0)) if end_all > w0 else np.full(p.clusters, math.nan)
        counts = np.bincount(self.piece_job, minlength=N).astype(np.int64) if N else np.zeros(0, np.int64)
        pieces = PiecesByJob(counts, self.piece_t0[order], self.piece_t1[order])
        procs = ProcsByJob(self.pool.copy(), self.poff.copy(), self.n.copy())
        res = CaoResult(p, rows, wf, util, util_all, (w0, w1), pieces, procs, self.short_slices.tolist(),
                        int(self.events))
        res.metrics = metrics(res)
        return res


def warm_up() -> None:
    """Load the compiled loop from numba's cache (compile it, about 45 s, the first time) with a
    tiny run: one local job and a two-task workflow."""
    one = JobTable(np.array([1]), np.array([0.0]), np.array([700.0]), np.array([700.0]), np.array([1]),
                   np.array([-1]), np.zeros(1))
    simulate(one, [Workflow(0.0, [1, 1], [700.0, 700.0], [(0, 1, 10.0)], job_id=2)],
             CaoParams(clusters=1, processors=2))


def simulate(jobs: JobTable, workflows: list[Workflow] | None = None, params: CaoParams | None = None,
             on_step: Callable[[float, float], None] | None = None,
             drive: Callable[[CaoSim], None] | None = None, admission=None) -> CaoResult:
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
        Runs the built simulation to its end instead of ``CaoSim.run()`` (the live Gantt
        advances it slice by slice, simengine.cao.run).
    admission : simengine.cao.admission.ReservationAdmission, optional
        The policy that admits the workflows' reservations, asked in Python; None: the compiled
        RARS-HEFT admission (``earliest-lft``).

    Returns
    -------
    CaoResult
    """
    sim = CaoSim(jobs, workflows or [], params or CaoParams(), admission)
    if len(sim):
        if drive is not None:
            drive(sim)
        else:
            sim.run(on_step=on_step)
    return sim.result()


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
