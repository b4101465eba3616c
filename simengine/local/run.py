"""Run a scenario with advance reservations, preemption or stream priorities
(``simengine.run`` dispatches here when :func:`needs_local` says so; docs/reservations.md).

Per replication the workload is built and routed exactly as the runner does (same
SeedSequence children, so the same jobs), then every cluster is simulated event by event
by :class:`simengine.local.cluster.ClusterSim`. The Result has

- one job row per workload job (status completed / killed / rejected / unfinished, start =
  first start, end = final end) and one per reservation, in a stream of its own whose
  index is the number of workload streams (``job_id`` = reservation index + 1, submit =
  request time, start/end = the granted window's start and its job's end, status rejected
  when it was not accepted); extra columns ``priority``, ``preemptions``, ``lost_time``
  (seconds of run lost to kill/requeue) and ``reservation`` (index, -1 for workload jobs);
- segments straight from the simulator: ``run``, ``killed``, ``suspended`` and
  ``reservation`` (job = the reservation's row), clipped at the stop time;
- the usual metrics over the measured workload jobs, plus ``reservations_accepted``,
  ``reservations_rejected``, ``preemptions``, ``jobs_preempted_killed`` and ``lost_work``
  (processor-seconds of killed segments).
"""
from __future__ import annotations

import math

import numpy as np

from simengine.gantt import KIND_KILLED, KIND_RUN, SEGMENT_COLUMNS, ordered_segments
from simengine.local.schema import needs_local
from simengine.errors import FieldError, ScenarioError
from simengine.local.cluster import (AR_ACCEPTED, AR_ACTIVE, AR_DONE, AR_REJECTED, CANCELLED, DONE, KILLED,
                                     REJECTED, AdvanceReservation, ClusterSim)
from simengine.local.core import DOWN_LOSE, DOWN_REQUEUE
from simengine.local.failures import down_time, draw_outages
from simengine.preemption import preemption_mode
from simengine.driver import Model, Replication
from simengine.kernel_feed import StopTime
import simengine.results as results
from simengine.results import (JOB_DTYPES, QUEUE_COLUMNS, carried_columns, order_job_rows, segment_series,
                               warm_up_by_completions)
from simengine.scenario import Scenario
from simengine.statistics import BATCHES
from simengine.streaming import LiveGantt, concat_rows, empty_rows, live_rows, run_in_slices, take_rows
from simengine.workload import STATUS_CANCELLED, STATUS_COMPLETED, STATUS_KILLED, STATUS_REJECTED, STATUS_UNFINISHED
from simengine.workload_build import (drawn_until, early_stop_note, endless_streams, failure_rng, prepare_jobs,
                                      read_traces, stop_horizon, streams_cover, until_enough)

#: down intervals a cluster may draw in one replication (each is an outage the event core handles)
MAX_OUTAGES = 1_000_000

#: name of the job stream the reservations' rows belong to (its index: number of workload streams)
RESERVATION_STREAM = "reservations"


def _reservations_on(scenario: Scenario, c: int) -> list[AdvanceReservation]:
    name = scenario.platform.clusters[c].name
    out = []
    for i, r in enumerate(scenario.reservations):
        if r.cluster != name:
            continue
        out.append(AdvanceReservation(
            index=i, processors=r.processors, start=r.start, end=r.end, request_time=r.request_time,
            est=r.relaxed.earliest_start if r.relaxed else None, lft=r.relaxed.latest_finish if r.relaxed else None,
            job_runtime=r.job.runtime if r.job else None))
    return out


class _Replication:
    """One replication's simulated clusters and workload, before the stop rule."""

    def __init__(self, scenario: Scenario, replication: int, counts: list[int] | None, on_step=None,
                 live: LiveGantt | None = None):
        self.scenario = scenario
        jobs, cluster, runtime, estimate, killed, notes = prepare_jobs(scenario, replication, counts)
        streams = scenario.workload.streams
        prio = np.array([getattr(s, "priority", 0) for s in streams] + [0], np.int64)
        jobs.extra["priority"] = prio[jobs.stream] if len(jobs) else np.zeros(0, np.int64)
        self.jobs, self.cluster, self.runtime, self.walltime_killed = jobs, cluster, runtime, killed
        self.notes = notes
        n = len(jobs)
        self.first_start = np.full(n, np.nan)
        self.end = np.full(n, np.nan)
        self.state = np.zeros(n, np.int8)
        self.preemptions = np.zeros(n, np.int32)
        self.lost = np.zeros(n)
        self.failures = np.zeros(n, np.int32)  # kills by outages
        self.sims: list[tuple[int, np.ndarray, ClusterSim]] = []
        self.ars: list[AdvanceReservation] = []
        #: per cluster with failures: its down intervals (simengine.local.failures.draw_outages)
        self.outages: dict[int, np.ndarray] = {}
        self.failures_until: dict[int, float] = {}
        horizon = stop_horizon(scenario)
        cancel = self._cancellations(estimate)
        runtime = self.runtime
        for c, spec in enumerate(scenario.platform.clusters):
            idx = np.flatnonzero(cluster == c)
            ars = _reservations_on(scenario, c)
            down = self._outages(c, idx, runtime, horizon, replication) if spec.failures is not None else []
            if not len(idx) and not ars and not down:
                continue
            step = float(spec.scheduler.params.get("overrun_step", 60.0))
            self.sims.append((c, idx, ClusterSim(spec.processors, spec.scheduler.name, jobs.submit[idx],
                                                 runtime[idx], estimate[idx], jobs.processors[idx],
                                                 jobs.extra["priority"][idx], ars, preemption_mode(spec.preemption),
                                                 step, horizon, params=spec.scheduler.params, victims=spec.victims,
                                                 outages=down, cancel=None if cancel is None else cancel[idx])))
            self.ars += ars
        if live is not None:
            _feed_live(self, live, horizon)
        else:
            before = 0
            for c, idx, sim in self.sims:
                # the clusters run one after another: a step reports the share of all jobs passed
                report = None if on_step is None else (
                    lambda f, t, before=before, m=len(idx): on_step((before + f * m) / max(n, 1), t))
                sim.run(report)
                before += len(idx)
        for c, idx, sim in self.sims:
            self.first_start[idx] = sim.first_start
            self.end[idx] = sim.end
            self.state[idx] = sim.state
            self.preemptions[idx] = sim.preemptions
            self.lost[idx] = sim.lost
            self.failures[idx] = sim.failures
        self.ars.sort(key=lambda r: r.index)
        for r in self.ars:
            if r.status == AR_REJECTED:
                self.notes.append(f"reservation '{scenario.reservations[r.index].name}' {r.note}")

    def _cancellations(self, estimate: np.ndarray) -> np.ndarray | None:
        """When each job is cancelled (NaN: never; None: no job is). A cancelled job that never ran
        in the trace has no run time of its own: one the schedule starts before its cancellation
        runs its requested time (the only figure the trace gives; 0 without one), or until its
        cancellation kills it (docs/traces.md, "Cancelled jobs")."""
        after = self.jobs.extra.get("cancel_after")
        if after is None or not np.any(after == after):
            return None
        withdrawn = after == after
        asked = np.where(estimate > 0, estimate, 0.0)  # (NaN > 0 is False)
        self.runtime = np.where(withdrawn, asked, self.runtime)
        self.walltime_killed = self.walltime_killed & ~withdrawn
        return self.jobs.submit + after

    def _outages(self, c: int, idx: np.ndarray, runtime: np.ndarray, horizon: float,
                  replication: int) -> list[AdvanceReservation]:
        """Cluster c's down intervals as the core's outages. Failures are drawn until the horizon,
        or else until the last arrival plus twice the cluster's total run time (a schedule without
        failures ends by the last arrival plus the total run time); a run that goes on longer sees
        no failure after that, and its notes say so."""
        spec = self.scenario.platform.clusters[c]
        until = horizon if math.isfinite(horizon) else (
            float(self.jobs.submit[idx[-1]]) + 2.0 * float(runtime[idx].sum()) if len(idx) else 0.0)
        rows = draw_outages(spec.failures, spec.processors, until, failure_rng(self.scenario, replication, c),
                            MAX_OUTAGES)
        if len(rows) > MAX_OUTAGES:
            raise ScenarioError(FieldError(f"platform.clusters.{c}.failures.mtbf",
                                  f"{len(rows):,} down intervals until t={until:g}: more than {MAX_OUTAGES:,} "
                                  f"(a longer mtbf, or a larger group, draws fewer)"))
        self.outages[c] = rows
        self.failures_until[c] = until
        mode = DOWN_LOSE if spec.failures.jobs == "lose" else DOWN_REQUEUE
        return [AdvanceReservation(index=k, processors=int(r[3]), start=float(r[0]), end=float(r[1]),
                                   request_time=float(r[4]), outage=mode, first=int(r[2]))
                for k, r in enumerate(rows.tolist())]

    def kth_end(self, k: int) -> tuple[float, int]:
        """(k-th smallest end of a job that finished its work (NaN if fewer), how many finished)."""
        ends = np.sort(self.end[self.state == DONE])
        return (float(ends[k - 1]) if 0 < k <= len(ends) else math.nan), len(ends)

    def enough(self) -> bool:
        """Did the synthetic jobs drawn cover the run up to its last counted completion?"""
        completions = self.scenario.run.stop.completions
        if completions is None or not endless_streams(self.scenario):
            return True
        return streams_cover(self.scenario, self.jobs, *self.kth_end(completions))


def _feed_live(rep: _Replication, live: LiveGantt, horizon: float) -> None:
    """Advance every cluster together, slice by slice, and stream what each slice closed and
    what is in progress (simengine.streaming). Rows are named as finish() names them: a job by its
    job id and stream, a reservation by its index + 1 in the reservations' stream."""
    live.restart()
    scenario, jobs = rep.scenario, rep.jobs
    if not len(jobs) and not rep.ars:
        return
    completions = scenario.run.stop.completions
    settled = drawn_until(scenario, jobs)
    begin = float(jobs.submit[0]) if len(jobs) else min(r.request_time for r in rep.ars)
    expected = (float(jobs.submit[min(completions, len(jobs)) - 1]) if completions and len(jobs) else
                float(jobs.submit[-1]) if len(jobs) else max(r.end for r in rep.ars))
    live.expect(begin, min(expected, horizon))
    reservation_stream = len(scenario.workload.streams)
    stop = StopTime(completions, horizon)
    taken = [0] * len(rep.sims)  # pieces of each simulator reported so far
    done = [0] * len(rep.sims)  # completions of each simulator counted so far
    held = [empty_rows()]  # closed pieces not reported yet (they end at or after the frontier)
    last = [-math.inf]  # the latest end of a piece reported

    def named(c: int, idx: np.ndarray, T: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Live rows, one per block of consecutive processors of each piece."""
        bp = T["block_piece"]
        job = T["job"][bp]
        g = np.append(idx, -1)[job]
        workload = job >= 0
        down = T["outage"][bp] >= 0  # a processor down: no job (job id 0, stream -1)
        return live_rows({"cluster": np.full(len(bp), c), "first_processor": T["block_first"],
                          "processors": T["block_count"], "t0": T["t0"][bp], "t1": T["t1"][bp],
                          "kind": T["kind"][bp],
                          "job_id": np.where(workload, np.append(jobs.job_id, 0)[g], np.where(down, 0, T["reservation"][bp] + 1)),
                          "stream": np.where(workload, np.append(jobs.stream, 0)[g],
                                             np.where(down, -1, reservation_stream))}, len(bp))

    def advance(T: float) -> bool:
        for _, _, sim in rep.sims:
            sim.run(until=T)
        return all(sim.finished for _, _, sim in rep.sims)

    def report(T: float) -> bool:
        ends = []
        for k, (c, idx, sim) in enumerate(rep.sims):
            new = sim.piece_table(start=taken[k])
            held.append(named(c, idx, new))
            ended = new["t1"][~np.isnan(new["t1"])]
            if len(ended):
                last[0] = max(last[0], float(ended.max()))
            taken[k] += len(new["t0"])
            ends.append(sim.end[sim.completed[done[k]:]])
            done[k] = len(sim.completed)
        stop.add_ends(np.concatenate(ends) if ends else np.zeros(0), T)
        F = min(T, stop.time, settled)
        if all(sim.finished for _, _, sim in rep.sims):  # the simulation is over: its time is its last end
            F = min(F, last[0])
        pending = concat_rows(held)
        closed = pending["t1"] < F
        held[:] = [take_rows(pending, ~closed)]
        opened = concat_rows([named(c, idx, sim.piece_table(closed=False, still_open=True))
                              for c, idx, sim in rep.sims])
        opened = take_rows(opened, opened["t0"] < F)
        queued = [0] * len(scenario.platform.clusters)
        for c, _, sim in rep.sims:
            queued[c] = sim.qn
        live.update(F, take_rows(pending, closed), opened, queued)
        return T >= stop.time or T >= settled

    run_in_slices(begin, expected, advance, report)


def _simulate(scenario: Scenario, replication: int, on_step=None, live: LiveGantt | None = None) -> _Replication:
    return until_enough(scenario, lambda counts: _Replication(scenario, replication, counts, on_step, live),
                        lambda rep: rep.enough())


def finish(rep: _Replication, replication: int, with_segments: bool):
    """Stop rule, job rows, metrics, (optionally) segments and time series, and the batch-means
    half-widths of metrics that are not job means (the utilisation) of one replication."""
    scenario = rep.scenario
    run = scenario.run
    jobs = rep.jobs
    clusters = scenario.platform.clusters
    horizon = run.stop.horizon if run.stop.horizon is not None else math.inf
    t_stop = horizon
    keep = len(jobs)
    if run.stop.completions is not None:
        t_n, done = rep.kth_end(run.stop.completions)
        if done >= run.stop.completions:
            t_stop = min(t_stop, t_n)
        else:
            rep.notes.append(f"replication {replication}: only {done} of {run.stop.completions} completions")
        keep = int(np.searchsorted(jobs.submit, t_stop, side="right"))
        if (note := early_stop_note(scenario, keep, len(jobs))) is not None:
            rep.notes.append(note)
    if not math.isfinite(t_stop):
        ends = [x for x in rep.end if x == x] + [r.end for r in rep.ars if r.status in (AR_DONE, AR_ACTIVE)]
        t_stop = float(max(ends)) if ends else 0.0

    # ---- workload rows
    sl = slice(0, keep)
    cluster = rep.cluster[sl].astype(np.int32)
    first = rep.first_start[sl]
    end = rep.end[sl]
    state = rep.state[sl]
    started = first <= t_stop
    ended = end <= t_stop
    status = np.full(keep, STATUS_UNFINISHED, np.int8)
    status[(state == DONE) & ended] = STATUS_COMPLETED
    status[((state == DONE) & ended & rep.walltime_killed[sl]) | ((state == KILLED) & ended)] = STATUS_KILLED
    status[(cluster < 0) | ((state == REJECTED) & ended)] = STATUS_REJECTED  # (a Python policy may reject)
    status[(state == CANCELLED) & ended] = STATUS_CANCELLED
    w = {"job_id": jobs.job_id[sl], "stream": jobs.stream[sl], "cluster": cluster, "submit": jobs.submit[sl],
         "start": np.where(started, first, np.nan), "end": np.where(ended, end, np.nan),
         "processors": jobs.processors[sl], "runtime": rep.runtime[sl], "estimate": jobs.estimate[sl],
         "status": status, "priority": jobs.extra["priority"][sl].astype(np.int32),
         "preemptions": rep.preemptions[sl], "lost_time": rep.lost[sl],
         "reservation": np.full(keep, -1, np.int32)}
    failing = bool(rep.outages)
    if failing:
        w["failures"] = rep.failures[sl]
    carried = carried_columns(jobs.extra)
    for k, v in carried.items():
        w[k] = v[sl]
    # ---- reservation rows
    ars = [r for r in rep.ars if r.request_time <= t_stop]
    nr = len(ars)
    a_start = np.array([r.start if r.status != AR_REJECTED else math.nan for r in ars], float)
    a_run = np.array([r.job_runtime if r.job_runtime is not None else r.end - r.start for r in ars], float)
    a_end = a_start + a_run
    a_status = np.array([STATUS_REJECTED if r.status == AR_REJECTED else
                         STATUS_COMPLETED if r.start + (r.job_runtime or r.length) <= t_stop and r.status in
                         (AR_DONE, AR_ACTIVE, AR_ACCEPTED) else STATUS_UNFINISHED for r in ars], np.int8)
    a = {"job_id": np.array([r.index + 1 for r in ars], np.int64),
         "stream": np.full(nr, len(scenario.workload.streams), np.int32),
         "cluster": np.array([scenario.platform.cluster_index(scenario.reservations[r.index].cluster) for r in ars],
                             np.int32),
         "submit": np.array([r.request_time for r in ars], float),
         "start": np.where(a_start <= t_stop, a_start, np.nan), "end": np.where(a_end <= t_stop, a_end, np.nan),
         "processors": np.array([r.processors for r in ars], np.int64), "runtime": a_run,
         "estimate": np.array([r.length for r in ars], float), "status": a_status,
         "priority": np.zeros(nr, np.int32), "preemptions": np.zeros(nr, np.int32), "lost_time": np.zeros(nr),
         "reservation": np.array([r.index for r in ars], np.int32)}
    if failing:
        a["failures"] = np.zeros(nr, np.int32)
    for k, v in carried.items():  # a reservation has no user, group or queue (-1) and no Batsim name
        a[k] = np.full(nr, b"" if v.dtype.kind == "S" else -1, v.dtype)
    cols, position = order_job_rows({k: np.concatenate([np.asarray(w[k]), np.asarray(a[k])]) for k in w},
                                    replication, run.warmup.time)
    workload_row = cols["reservation"] < 0
    t_warm = run.warmup.time
    if run.warmup.completions:
        t_warm = warm_up_by_completions(cols, workload_row & (cols["status"] != STATUS_REJECTED),
                                        run.warmup.completions, t_warm)
    for k in list(cols):
        if k in JOB_DTYPES:
            cols[k] = cols[k].astype(JOB_DTYPES[k])

    # ---- segments (all replications: utilisation and lost work need them), per cluster in
    # piece order, sums accumulated in that order (np.cumsum adds one term after another)
    seg_parts = []
    busy = np.zeros(len(clusters))
    slices = np.zeros(BATCHES)  # busy time in equal slices of the window: the utilisation's batch means
    killed_work = []
    killed_in = 0.0  # killed processor-seconds within the window (goodput)
    t0w, t1w = t_warm, t_stop
    ar_rows = np.full(len(scenario.reservations) + 1, -1, np.int64)  # reservation index -> row (-1: none)
    ar_rows[[r.index for r in ars]] = position[keep:keep + nr]
    for c, idx, sim in rep.sims:
        T = sim.piece_table(still_open=True)
        s0 = T["t0"]
        s1 = np.minimum(np.where(np.isnan(T["t1"]), t_stop, T["t1"]), t_stop)
        job, kind, count = T["job"], T["kind"], T["count"]
        g = np.append(idx, -1)[job]  # the workload row of a job's piece (-1: a reservation's)
        job_row = np.append(position, -1)[np.where((g >= 0) & (g < keep), g, -1)]
        row = np.where(job >= 0, job_row, ar_rows[T["reservation"]])
        ok = ~(s0 > t_stop) & (row >= 0)
        run = ok & (kind == KIND_RUN)
        span_in = np.minimum(np.maximum(s1[run], t0w), t1w) - np.minimum(np.maximum(s0[run], t0w), t1w)
        if run.any():
            busy[c] = np.cumsum(span_in * count[run])[-1]
            results.slice_busy(s0[run], s1[run], count[run].astype(float), t0w, t1w, slices)
        killed = ok & (kind == KIND_KILLED)
        killed_work.append((s1[killed] - s0[killed]) * count[killed])
        if failing and killed.any():
            killed_in += float(np.cumsum((np.minimum(np.maximum(s1[killed], t0w), t1w)
                                          - np.minimum(np.maximum(s0[killed], t0w), t1w)) * count[killed])[-1])
        if with_segments:
            shown = ok | (~(s0 > t_stop) & (T["outage"] >= 0))  # (a processor down: no job row)
            bp = T["block_piece"][shown[T["block_piece"]]]
            seg_parts.append({"cluster": np.full(len(bp), c), "first_processor": T["block_first"][shown[T["block_piece"]]],
                              "processors": T["block_count"][shown[T["block_piece"]]], "t0": s0[bp], "t1": s1[bp],
                              "job": row[bp], "component": np.zeros(len(bp)), "kind": kind[bp]})
    killed_work = np.concatenate(killed_work) if killed_work else np.zeros(0)
    lost_work = float(np.cumsum(killed_work)[-1]) if len(killed_work) else 0.0
    segments = None
    if with_segments:
        segments = ordered_segments({k: np.concatenate([part[k] for part in seg_parts]) if seg_parts else []
                                     for k in SEGMENT_COLUMNS})

    # ---- metrics
    measured = workload_row & ~cols["warmup"] & ((cols["status"] == STATUS_COMPLETED) |
                                                  (cols["status"] == STATUS_KILLED))
    metrics: dict[str, float] = {"jobs_measured": float(measured.sum()), **results.job_metrics(
        *(cols[k][measured] for k in ("wait", "response", "slowdown", "bounded_slowdown")))}
    if "user" in carried:
        metrics.update(results.user_metrics(cols, measured))
    capacity = sum(c.processors for c in clusters)
    span = t1w - t0w
    metrics["utilisation"] = float(busy.sum()) / (capacity * span) if span > 0 else math.nan
    half = results.utilisation_batch_half(slices, capacity, t0w, t1w, int(measured.sum()))
    batch_half = {"utilisation": half} if half is not None else {}
    metrics["throughput"] = float(measured.sum()) / span if span > 0 else math.nan
    # last processor release (a started job still running at the stop releases then) - first submission
    began = ~np.isnan(cols["start"])
    released = np.where(np.isnan(cols["end"]), t_stop, cols["end"])[began]
    metrics["makespan"] = float(released.max() - cols["submit"].min()) if began.any() else math.nan
    for c, spec in enumerate(clusters):
        metrics[f"utilisation.{spec.name}"] = float(busy[c]) / (spec.processors * span) if span > 0 else math.nan
    metrics["reservations_accepted"] = float(sum(r.status in (AR_ACCEPTED, AR_ACTIVE, AR_DONE) for r in ars))
    metrics["reservations_rejected"] = float(sum(r.status == AR_REJECTED for r in ars))
    metrics["preemptions"] = float(w["preemptions"].sum())
    metrics["jobs_preempted_killed"] = float(((state == KILLED) & ended).sum())
    metrics["lost_work"] = lost_work
    if "cancel_after" in jobs.extra:  # (a stream withdraws its cancelled jobs: docs/traces.md)
        cancelled = workload_row & (cols["status"] == STATUS_CANCELLED)
        metrics["jobs_withdrawn"] = float((cancelled & np.isnan(cols["start"])).sum())
        metrics["jobs_cancelled_running"] = float((cancelled & ~np.isnan(cols["start"])).sum())
    if failing:
        metrics.update(_failure_metrics(rep, cols, measured & workload_row, ars, busy, killed_in, t0w, t1w, t_stop))

    series = None
    if with_segments:
        queued = cols["reservation"] < 0  # the queue counts workload jobs, not reservations
        rows = {k: cols[k][queued] for k in QUEUE_COLUMNS}
        # a job that ended without starting (withdrawn, rejected) left the queue then
        rows["start"] = np.where(np.isnan(rows["start"]), cols["end"][queued], rows["start"])
        series = segment_series(segments, clusters, rows, t_stop)
    return cols, segments, metrics, series, batch_half


def _failure_metrics(rep: _Replication, cols, measured, ars, busy, killed_in, t0w, t1w, t_stop) -> dict[str, float]:
    """Availability (processor time up over processor time, in the window, per cluster too),
    goodput (processor time of runs over that of runs and killed runs), failures per measured
    job, jobs lost to failures and broken reservations (docs/failures.md); a note when the run
    outlived the failures drawn."""
    clusters = rep.scenario.platform.clusters
    span = t1w - t0w
    out: dict[str, float] = {}
    down_all = 0.0
    for c, spec in enumerate(clusters):
        down = down_time(rep.outages[c], spec.processors, t0w, t1w) if c in rep.outages else 0.0
        down_all += down
        if c in rep.outages:
            out[f"availability.{spec.name}"] = 1.0 - down / (spec.processors * span) if span > 0 else math.nan
            if t_stop > rep.failures_until[c] and not rep.scenario.run.stop.horizon:
                rep.notes.append(f"cluster '{spec.name}': failures were drawn until t={rep.failures_until[c]:g} "
                                 f"(the last arrival plus twice the cluster's run time); the run went on to "
                                 f"t={t_stop:g} without failures (give run.stop.horizon to draw them further)")
    capacity = sum(c.processors for c in clusters)
    out["availability"] = 1.0 - down_all / (capacity * span) if span > 0 else math.nan
    useful = float(busy.sum())
    out["goodput"] = useful / (useful + killed_in) if useful + killed_in > 0 else math.nan
    f = cols["failures"][measured]
    out["failures_per_job"] = float(f.mean()) if len(f) else math.nan
    out["jobs_lost_to_failures"] = float(((cols["status"] == STATUS_KILLED) & (cols["failures"] > 0)
                                          & (cols["reservation"] < 0)).sum())
    out["broken_reservations"] = float(sum(r.broken > 0 for r in ars))
    return out


def replicate(scenario: Scenario, r: int, with_segments: bool, on_step=None, live: LiveGantt | None = None,
              place=None) -> Replication:
    """One replication (simengine.driver.Replicate)."""
    rep = _simulate(scenario, r, on_step, live)
    cols, segments, metrics, series, batch_half = finish(rep, r, with_segments=with_segments)
    return Replication(metrics, cols, segments, series, rep.notes, batch_half)


def prepare(scenario: Scenario) -> None:
    """Traces are read and the event core loaded from numba's cache (compiled, the first time)
    before the clock starts: engine_seconds is the simulation's own time."""
    read_traces(scenario)
    warm_up()


def warm_up() -> None:
    """Load the event core (compiled, the first time) on a tiny input."""
    ClusterSim(1, "conservative", [0.0], [1.0], [1.0], [1]).run()


#: reservations, preemption and priorities: every cluster event by event (the compiled event core)
MODEL = Model("event-driven cluster", needs_local, replicate, prepare=prepare, warm_up=warm_up)
