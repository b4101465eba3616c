"""Run a scenario of Cao's system (``simengine.run`` dispatches here when :func:`is_cao`).

Per replication r:

1. the workload is built and routed exactly as the runner does (:func:`simengine.workload_build.prepare_jobs`:
   the same ``SeedSequence(run.seed)`` children, so the same jobs and clusters); jobs larger
   than their cluster are rejected;
2. with ``grid.workflow_scheduling: rars-heft``, ``fraction`` of the eligible jobs (of the
   ``streams`` named, default all) become 5-task workflows
   (:func:`simengine.cao.workflows.split_workflows`), drawn from one more child of the
   replication's SeedSequence (index = number of streams + 1, after the site-allocation one),
   communication times mapped linearly onto ``comm``;
3. :func:`simengine.cao.simulate.simulate` runs the SCOJO-PECT clusters and RARS-HEFT, whose
   reservations rars-heft's ``admission`` grants (simengine.cao.admission; the compiled
   ``earliest-lft`` unless it names another);
4. the stop rule is applied to the finished schedule (the engine is causal, so cutting it at
   the stop gives what a run stopped there would have shown).

The Result has one job row per local job and per workflow task, in submit order; a task's
row carries its workflow's ``job_id``, ``stream`` and submit (the workflow's arrival), and
the extra columns ``workflow`` (index in the replication, -1 for local jobs), ``task``
(0..4, -1), ``ready`` (when the task's predecessors' output arrived: Cao's submit for RR),
``job_class`` (0 short, 1 medium, 2 long) and ``preemptions``. Segments (replication 0):
``run`` pieces, ``suspended`` gaps and each task's ``reservation`` frame [EST, LFT]
(component = task index), clipped at the stop. Metrics: the usual ones over the measured
rows, plus Cao's (docs/cao.md): ``rr_{medium,long}[_local|_task]``, ``grid_makespan``,
``reservation_share``, ``preemptions``, ``cross_slice``, ``workflows``, ``tasks``, computed
over the rows completed by the stop (without a stop: exactly :func:`simengine.cao.simulate.metrics`).

Limits: with ``run.stop.completions`` and endless synthetic streams, a retry with more jobs
draws the workflows again from the larger set of eligible jobs.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from simengine.cao.admission import admission_policy
from simengine.cao.engine import DONE, LONG, MEDIUM, RUNNING, SUSPENDED
from simengine.cao.schema import is_cao
from simengine.cao.scheduler import RARS_HEFT, cao_params
from simengine.cao.simulate import CaoSim, blocks, simulate, warm_up, workflows_from_split
from simengine.cao.workflows import COMM_RANGE, split_workflows
from simengine.gantt import KIND_RESERVATION, KIND_RUN, KIND_SUSPENDED, ordered_segments
from simengine.driver import Model, Replication
import simengine.results as results
from simengine.results import (JOB_DTYPES, order_job_rows, segment_series,
                               warm_up_by_completions)
from simengine.scenario import Scenario
from simengine.streaming import (LIVE_COLUMNS, LiveGantt, empty_rows, live_rows,
                                  run_in_slices)
from simengine.workload import STATUS_COMPLETED, STATUS_KILLED, STATUS_REJECTED, STATUS_UNFINISHED, JobTable
from simengine.workload_build import (drawn_until, endless_streams, prepare_jobs, read_traces, streams_cover,
                                     until_enough)
from simengine.kernel_feed import StopTime

__all__ = ["is_cao", "MODEL", "replication_input", "CaoReplication"]


class CaoReplication:
    """One replication's input and schedule before the stop rule.

    ``jobs`` (submit order), ``cluster`` (-1: rejected), ``runtime``, ``killed`` (walltime),
    ``local`` (rows of ``jobs`` simulated as local jobs, in that order), ``wf_rows`` (the row
    of ``jobs`` each workflow came from), the engine's ``result`` and the runner's ``notes``.
    """

    def __init__(self, jobs, cluster, runtime, killed, local, wf_rows, workflows, result, notes):
        self.jobs, self.cluster, self.runtime, self.killed = jobs, cluster, runtime, killed
        self.local, self.wf_rows, self.workflows, self.result, self.notes = local, wf_rows, workflows, result, notes


def replication_input(scenario: Scenario, replication: int, counts: list[int] | None = None):
    """(jobs, cluster, runtime, killed, local rows, workflow rows, local JobTable, workflows, params, notes)
    of one replication: what :func:`simulate` is given."""
    jobs, cluster, runtime, estimate, killed, notes = prepare_jobs(scenario, replication, counts)
    clusters = scenario.platform.clusters
    n = len(jobs)
    table = JobTable(jobs.job_id, jobs.submit, runtime, estimate, jobs.processors, np.maximum(cluster, 0),
                     jobs.stream, extra={"row": np.arange(n, dtype=np.int64)})
    ok = cluster >= 0
    wf = scenario.grid.workflow_scheduling
    chosen = np.zeros(n, bool)
    workflows = []
    wf_rows = np.zeros(0, np.int64)
    if wf.name == RARS_HEFT:
        names = wf.params.get("streams")
        streams = scenario.workload.streams
        allowed = np.array([names is None or s.name in names for s in streams] + [False])
        source = ok & allowed[jobs.stream] if n else ok
        S = len(streams)
        rng = np.random.default_rng(np.random.SeedSequence(scenario.run.seed, spawn_key=(replication, S + 1)))
        split = split_workflows(table.take(source), float(wf.params["fraction"]), rng)
        lo, hi = wf.params["comm"]
        split.edge_comm = lo + (split.edge_comm - COMM_RANGE[0]) * ((hi - lo) / (COMM_RANGE[1] - COMM_RANGE[0]))
        src_rows = np.flatnonzero(source)
        kept = np.zeros(len(src_rows), bool)
        kept[np.searchsorted(src_rows, split.local.extra["row"])] = True
        chosen[src_rows[~kept]] = True
        wf_rows = src_rows[~kept]  # in submit order, as the split's workflows
        workflows = workflows_from_split(split)
    local = np.flatnonzero(ok & ~chosen)
    params = cao_params(clusters[0].scheduler.params, wf.params if wf.name == RARS_HEFT else None,
                        len(clusters), clusters[0].processors)
    return jobs, cluster, runtime, killed, local, wf_rows, table.take(local), workflows, params, notes


def _simulate(scenario: Scenario, replication: int, counts: list[int] | None, on_step=None,
              live: LiveGantt | None = None) -> CaoReplication:
    jobs, cluster, runtime, killed, local, wf_rows, table, workflows, params, notes = replication_input(
        scenario, replication, counts)
    drive = None
    if live is not None:
        def drive(sim: CaoSim) -> None:
            _feed_live(scenario, sim, live, jobs, local, wf_rows)
    wf = scenario.grid.workflow_scheduling
    admission = admission_policy(wf.params.get("admission"), params) if wf.name == RARS_HEFT else None
    res = simulate(table, workflows, params, on_step=None if live is not None else on_step, drive=drive,
                   admission=admission)
    return CaoReplication(jobs, cluster, runtime, killed, local, wf_rows, workflows, res, notes)


def _feed_live(scenario: Scenario, sim: CaoSim, live: LiveGantt, jobs, local: np.ndarray,
               wf_rows: np.ndarray) -> None:
    """Advance the simulation slice by slice (streaming.run_in_slices) and stream, as finish()
    will name them, the run pieces that closed, the suspended gaps between them and each started
    task's reservation frame [EST, LFT] once it is over (a task that starts after its LFT names
    its frame late); in progress: running pieces, current suspensions and frames still ahead. A
    job is named by its workload row's job id and stream, a task by its workflow's, with the task
    index as component."""
    live.restart()
    run = scenario.run
    horizon = run.stop.horizon if run.stop.horizon is not None else math.inf
    # a retry with more jobs draws the workflows again: nothing streams before the last attempt's end
    settled = -math.inf if run.stop.completions and endless_streams(scenario) else drawn_until(scenario, jobs)
    nl, N, C = len(local), len(sim), len(scenario.platform.clusters)
    origin = np.concatenate([np.asarray(local, np.int64)[:nl], np.asarray(wf_rows, np.int64)[sim.wf[nl:]]])
    job_id, stream = jobs.job_id, jobs.stream
    submit = sim.submit.tolist()
    order = sorted(range(N), key=lambda k: submit[k])
    submitted = 0
    pending: list[int] = []  # submitted jobs not reported whole
    pieces: list[list[tuple[float, float]]] = [[] for _ in range(N)]  # each job's pieces so far
    pieces_read = 0  # of the simulation's pieces (they are appended as they close)
    pieces_sent = [0] * N
    frame_sent = [False] * N
    counted = [False] * N
    held: list[tuple] = []  # closed rows not reported yet (they end at or after the frontier)
    stop = StopTime(run.stop.completions, horizon)
    last_end = [-math.inf]
    begin = min(submit, default=0.0)
    end = max(submit, default=0.0)
    live.expect(begin, min(end, horizon))

    def rows_of(k: int, a: float, b: float, kind: int, out: list) -> None:
        if b - a <= 0:  # finish() draws no zero-length segment
            return
        g = origin[k]
        for first, count in blocks(sim.procs(k).tolist()):
            out.append((int(sim.cluster[k]), first, count, a, b, kind, max(int(sim.task[k]), 0), int(job_id[g]),
                        int(stream[g])))

    def report(T: float) -> bool:
        nonlocal submitted, pending, pieces_read
        while submitted < N and submit[order[submitted]] < T:
            pending.append(order[submitted])
            submitted += 1
        for k, a, b in zip(sim.piece_job[pieces_read:].tolist(), sim.piece_t0[pieces_read:].tolist(),
                           sim.piece_t1[pieces_read:].tolist()):
            pieces[k].append((a, b))
        pieces_read = len(sim.piece_job)
        state, run_t0, done_at = sim.job_state, sim.run_t0, sim.end
        ends, opened, still = [], [], []
        for k in pending:
            if sim.poff[k] < 0:  # not started
                still.append(k)
                continue
            # a suspended gap is as finish() draws it, between two recorded pieces: sent when the
            # second is recorded (until then it shows among the rows in progress)
            ps = pieces[k]
            for i in range(pieces_sent[k], len(ps)):
                a, b = ps[i]
                if i:
                    rows_of(k, ps[i - 1][1], a, KIND_SUSPENDED, held)
                rows_of(k, a, b, KIND_RUN, held)
            pieces_sent[k] = len(ps)
            is_task = sim.wf[k] >= 0
            if is_task and not frame_sent[k]:
                if sim.lft[k] < T:
                    rows_of(k, float(sim.est_frame[k]), float(sim.lft[k]), KIND_RESERVATION, held)
                    frame_sent[k] = True
                else:
                    rows_of(k, float(sim.est_frame[k]), float(sim.lft[k]), KIND_RESERVATION, opened)
            if state[k] == DONE and not counted[k]:
                counted[k] = True
                ends.append(float(done_at[k]))
            elif state[k] == RUNNING:
                if ps and run_t0[k] > ps[-1][1]:
                    rows_of(k, ps[-1][1], float(run_t0[k]), KIND_SUSPENDED, opened)
                rows_of(k, float(run_t0[k]), math.inf, KIND_RUN, opened)
            elif state[k] == SUSPENDED and ps:
                rows_of(k, ps[-1][1], math.inf, KIND_SUSPENDED, opened)
            if not (state[k] == DONE and (not is_task or frame_sent[k])):
                still.append(k)
        pending = still
        stop.add_ends(np.array(ends, np.float64), T)
        last_end[0] = max([last_end[0], *ends])
        F = min(T, stop.time, settled)
        if stop.time == math.inf:  # no stop rule: finish() clips at the last job's end, not known yet
            F = min(F, last_end[0])
        closed = [row for row in held if row[4] < F]
        held[:] = [row for row in held if row[4] >= F]
        opened = [(*row[:4], math.nan if row[4] == math.inf else row[4], *row[5:]) for row in opened if row[3] < F]
        waiting = sim.cluster[[k for k in pending if sim.poff[k] < 0]]  # (a task not placed yet: -1)
        live.update(F, _rows(closed), _rows(opened), np.bincount(waiting[waiting >= 0], minlength=C).tolist())
        return T >= stop.time or T >= settled

    run_in_slices(begin, end, lambda T: sim.run(until=T), report)


def _rows(items: list[tuple]) -> dict[str, np.ndarray]:
    if not items:
        return empty_rows()
    return live_rows(dict(zip(LIVE_COLUMNS, zip(*items))), len(items))


def _kth_end(rep: CaoReplication, k: int) -> tuple[float, int]:
    ends = np.sort(rep.result.jobs["end"][~np.isnan(rep.result.jobs["end"])])
    return (float(ends[k - 1]) if 0 < k <= len(ends) else math.nan), len(ends)


def _enough(scenario: Scenario, rep: CaoReplication) -> bool:
    """Did the synthetic jobs drawn cover the run up to its last counted completion?"""

    completions = scenario.run.stop.completions
    if completions is None or not endless_streams(scenario):
        return True
    return streams_cover(scenario, rep.jobs, *_kth_end(rep, completions))


def simulate_replication(scenario: Scenario, replication: int, on_step=None,
                         live: LiveGantt | None = None) -> CaoReplication:
    """One replication, with more synthetic jobs each time until they cover ``run.stop.completions``
    (``on_step(fraction of jobs done, simulated time)`` is called now and then on the way; with
    ``live``, its Gantt streams while it runs)."""

    return until_enough(scenario, lambda counts: _simulate(scenario, replication, counts, on_step, live),
                        lambda rep: _enough(scenario, rep))


def finish(scenario: Scenario, rep: CaoReplication, replication: int, with_segments: bool):
    """Stop rule, job rows, metrics and (optionally) segments and time series of one replication."""
    run = scenario.run
    clusters = scenario.platform.clusters
    jobs, R = rep.jobs, rep.result.jobs
    n, nl = len(jobs), len(rep.local)
    t_stop = run.stop.horizon if run.stop.horizon is not None else math.inf
    if run.stop.completions is not None:
        t_n, done = _kth_end(rep, run.stop.completions)
        if done >= run.stop.completions:
            t_stop = min(t_stop, t_n)
        else:
            rep.notes.append(f"replication {replication}: only {done} of {run.stop.completions} completions")
    if not math.isfinite(t_stop):
        ends = R["end"][~np.isnan(R["end"])]
        t_stop = float(ends.max()) if len(ends) else 0.0

    # input rows: every workload job (the local ones get the engine's values), then every task
    nt = len(R["job_id"]) - nl
    cao_row = np.full(n + nt, -1, np.int64)
    cao_row[rep.local] = np.arange(nl)
    cao_row[n:] = nl + np.arange(nt)
    wf_of_task = R["workflow"][nl:]
    origin = np.concatenate([np.arange(n), rep.wf_rows[wf_of_task]]).astype(np.int64)
    has = cao_row >= 0

    def pick(col, fill):  # the engine's value of each input row (fill where the engine had none)
        if not len(cao_row):
            return np.zeros(0)
        return np.where(has, R[col][np.maximum(cao_row, 0)] if len(R[col]) else fill, fill)

    wf_submit = np.asarray(jobs.submit)[origin]
    cluster = np.concatenate([rep.cluster, R["cluster"][nl:]]).astype(np.int32)
    runtime = np.concatenate([rep.runtime, R["runtime"][nl:]])
    killed = np.concatenate([rep.killed, np.zeros(nt, bool)])
    start, end = pick("start", np.nan), pick("end", np.nan)
    keep = (wf_submit <= t_stop) & (has | (cluster < 0))  # a job made into a workflow has its tasks' rows
    started = start <= t_stop
    ended = end <= t_stop
    status = np.full(n + nt, STATUS_UNFINISHED, np.int8)
    status[ended] = STATUS_COMPLETED
    status[ended & killed] = STATUS_KILLED
    status[cluster < 0] = STATUS_REJECTED
    cols = {"job_id": jobs.job_id[origin], "stream": jobs.stream[origin], "cluster": cluster,
            "submit": wf_submit, "start": np.where(started, start, np.nan), "end": np.where(ended, end, np.nan),
            "processors": np.concatenate([jobs.processors, R["processors"][nl:]]), "runtime": runtime,
            "status": status, "workflow": np.concatenate([np.full(n, -1), wf_of_task]).astype(np.int32),
            "task": np.concatenate([np.full(n, -1), R["task"][nl:]]).astype(np.int8),
            "ready": pick("submit", np.nan), "job_class": pick("cls", -1).astype(np.int8),
            "preemptions": pick("preemptions", 0).astype(np.int32), "_estimate": pick("estimate", np.nan),
            "_foreign": pick("foreign", False).astype(bool), "_input": np.arange(n + nt)}
    rejected = np.flatnonzero(cluster[:n] < 0)
    cols["_estimate"][rejected] = jobs.estimate[rejected]
    cols = {k: v[keep] for k, v in cols.items()}
    cols, position = order_job_rows(cols, replication, run.warmup.time)
    cols["estimate"] = cols.pop("_estimate")
    foreign, input_row = cols.pop("_foreign"), cols.pop("_input")
    t_warm = run.warmup.time
    if run.warmup.completions:
        t_warm = warm_up_by_completions(cols, np.ones(len(cols["end"]), bool), run.warmup.completions, t_warm)
    for k in list(cols):
        if k in JOB_DTYPES:
            cols[k] = cols[k].astype(JOB_DTYPES[k])

    # segments of the engine's rows, mapped to the output rows, clipped at the stop
    out_row = np.full(n + nt, -1, np.int64)
    out_row[input_row] = np.arange(len(input_row))
    row_of_cao = np.full(len(R["job_id"]), -1, np.int64)
    row_of_cao[cao_row[has]] = out_row[np.flatnonzero(has)]
    # the engine's segments name a row's job_id: ask them of a copy whose job_ids are its rows
    by_row = dataclasses.replace(rep.result, jobs={**R, "job_id": np.arange(len(R["job_id"]), dtype=np.int64)})
    seg = by_row.segments(-math.inf, t_stop)
    seg_row = row_of_cao[seg["job"]] if len(seg["job"]) else np.zeros(0, np.int64)
    m = (seg_row >= 0) & (seg["t0"] < t_stop)
    seg = {k: v[m] for k, v in seg.items()}
    seg["job"] = seg_row[m]
    seg["t1"] = np.minimum(seg["t1"], t_stop)
    seg = ordered_segments(seg)

    metrics = _metrics(cols, seg, foreign, clusters, t_warm, t_stop)
    series = segment_series(seg, clusters, cols, t_stop) if with_segments else None
    return cols, (seg if with_segments else None), metrics, series


def _metrics(cols, seg, foreign, clusters, t_warm: float, t_stop: float) -> dict[str, float]:
    status = cols["status"]
    measured = ~cols["warmup"] & ((status == STATUS_COMPLETED) | (status == STATUS_KILLED))
    out: dict[str, float] = {"jobs_measured": float(measured.sum()), **results.job_metrics(
        *(cols[k][measured] for k in ("wait", "response", "slowdown", "bounded_slowdown")))}
    span = t_stop - t_warm
    run = seg["kind"] == KIND_RUN
    busy_seg = (np.clip(seg["t1"], t_warm, t_stop) - np.clip(seg["t0"], t_warm, t_stop)) * seg["processors"]
    capacity = sum(c.processors for c in clusters)
    out["utilisation"] = float(busy_seg[run].sum()) / (capacity * span) if span > 0 else math.nan
    for c, spec in enumerate(clusters):
        mine = run & (seg["cluster"] == c)
        out[f"utilisation.{spec.name}"] = float(busy_seg[mine].sum()) / (spec.processors * span) if span > 0 \
            else math.nan
    out["throughput"] = float(measured.sum()) / span if span > 0 else math.nan
    began = ~np.isnan(cols["start"])
    released = np.where(np.isnan(cols["end"]), t_stop, cols["end"])[began]
    out["makespan"] = float(released.max() - cols["submit"].min()) if began.any() else math.nan
    # Cao's metrics (docs/cao.md) over the measured rows
    task = cols["task"] >= 0
    cls = cols["job_class"]
    rr = (cols["end"] - cols["ready"]) / np.maximum(cols["runtime"], 1.0)
    for who, wname in ((~task, "_local"), (task, "_task"), (np.ones(len(task), bool), "")):
        for c, cname in ((MEDIUM, "medium"), (LONG, "long")):
            m = measured & who & (cls == c)
            out[f"rr_{cname}{wname}"] = float(rr[m].mean()) if m.any() else math.nan
    kept = status != STATUS_REJECTED
    tasks = int((task & kept).sum())
    ml = int((kept & (cls >= MEDIUM)).sum())
    out["tasks"] = float(tasks)
    out["reservation_share"] = tasks / ml if ml else 0.0
    wfs = np.unique(cols["workflow"][task])
    spans = []
    for w in wfs:
        rows = task & (cols["workflow"] == w)
        if int(rows.sum()) == 5 and not np.isnan(cols["end"][rows]).any():
            spans.append(float(cols["end"][rows].max() - cols["start"][rows].min()))
    out["workflows"] = float(len(wfs))
    out["grid_makespan"] = float(np.mean(spans)) if spans else math.nan
    out["preemptions"] = float(cols["preemptions"][began].sum())
    out["cross_slice"] = float((foreign & began).sum())
    return out


def replicate(scenario: Scenario, r: int, with_segments: bool, on_step=None, live: LiveGantt | None = None,
              place=None) -> Replication:
    """One replication (simengine.driver.Replicate)."""
    rep = simulate_replication(scenario, r, on_step, live)
    cols, segments, metrics, series = finish(scenario, rep, r, with_segments=with_segments)
    return Replication(metrics, cols, segments, series, rep.notes)


def prepare(scenario: Scenario) -> None:
    """Traces are read and the compiled loop loaded (compiled, the first time) before the
    clock starts: engine_seconds is the simulation's own time."""
    read_traces(scenario)
    warm_up()


#: Cao's system: the clusters' scojo-pect scheduler with RARS-HEFT workflows (compiled loop, simengine/cao/core.py)
MODEL = Model("cao", is_cao, replicate, prepare=prepare, warm_up=warm_up)
