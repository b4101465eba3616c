"""Run a scenario with KOALA streams: workload, :mod:`simengine.grid.koala`, the output contract.

:data:`MODEL` simulates a scenario with a stream of ``kind: koala``
(simengine.models); its Result has a normal :class:`~simengine.results.Result`: one row
per local job (background jobs injected by the band controller have ``stream`` -1) and one
per component of a KOALA job (the components share the job's ``job_id``), the Gantt
segments of replication 0 (``transfer``, ``claimed``, ``run``, ``killed``) and
per-replication metrics (docs/grid.md, KOALA).

Randomness: replication r uses ``SeedSequence(run.seed, spawn_key=(r,))``, one child per
stream plus one for the background band controller; a KOALA stream draws its arrival
times, shapes/components/sizes, runtimes and files from its child in that order.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simengine.distributions import processor_counts
from simengine.gantt import (EVENT_END, EVENT_START, EVENT_ZERO, KIND_CLAIMED, KIND_DOWN, KIND_KILLED, KIND_RUN,
                             KIND_TRANSFER,
                             SEGMENT_COLUMNS, ProcessorAssigner, ordered_segments)
from simengine.generate import generate_stream
from simengine.grid.koala import Band, Files, KoalaJob, KoalaOutcome, KoalaPolicy, KoalaRun, SoftErrors
from simengine.local.failures import down_time, draw_outages
from simengine.grid.schema import KOALA_PRIORITIES, KoalaJobs, bandwidth, file_sites, is_koala
from simengine.preemption import preemption_mode
from simengine.driver import Model, Replication
from simengine.streaming import LiveGantt, empty_rows, live_rows, run_in_slices
import simengine.results as results
from simengine.results import (BOUNDED_SLOWDOWN_TAU, SERIES_POINTS, active_sum, order_job_rows, percentile_linear,
                               queue_series)
from simengine.workload import STATUS_COMPLETED, STATUS_FAILED, STATUS_KILLED, STATUS_UNFINISHED
from simengine.workload_build import failure_rng, load_trace_stream, replication_rngs
from simengine.results import JOB_DTYPES

__all__ = ["KoalaWorkload", "build_koala_workload", "koala_policy", "koala_files", "simulate_koala_replication",
           "koala_metrics", "MODEL"]

_KIND = {"run": KIND_RUN, "claimed": KIND_CLAIMED, "killed": KIND_KILLED, "down": KIND_DOWN}


@dataclass
class KoalaWorkload:
    processors: np.ndarray
    jobs: list[KoalaJob]
    job_stream: np.ndarray
    job_id: np.ndarray
    local: tuple  # submit, runtime, size, cluster
    local_stream: np.ndarray
    local_id: np.ndarray
    band: Band | None
    notes: list[str]
    soft_errors: SoftErrors | None = None  # with a cluster's soft_errors > 0
    #: cluster failures (cluster, start, end), None without failures (docs/failures.md), and per
    #: cluster whether the local jobs they kill are requeued
    outages: list | None = None
    local_requeue: list | bool = True

    @property
    def failing(self) -> bool:
        """Failures of any kind are modelled: soft errors or cluster failures."""
        return self.soft_errors is not None or self.outages is not None


def koala_policy(scenario) -> KoalaPolicy:
    g = scenario.grid
    p, d = g.placement.params, g.deadline_policy.params
    w = d["weights"]
    return KoalaPolicy(placement=g.placement.name, placement_params=p,
                       scan_interval=d["scan_interval"],
                       first_scan=d["first_scan"], weights=(w["N_h"], w["N_l"], w["n1"], w["n2"], w["n3"], w["n4"]),
                       promote_after=d["promote_after"], max_place_tries=d["max_place_tries"], L=d["L"],
                       l_step=d["l_step"], l_floor=d["l_floor"], min_gap=d["min_gap"], T=d["threshold"],
                       preemption=preemption_mode(d["preemption"]), max_claim_tries=d["max_claim_tries"],
                       exclude_after=d.get("exclude_after"), **_claiming(g))


def _claiming(grid) -> dict:
    """The scenario's claiming policy (left out: the ICP, KOALA's claiming before it was pluggable)."""
    ref = getattr(grid, "claiming", None)
    return {} if ref is None else {"claiming": ref.name, "claiming_params": ref.params}


def koala_files(platform) -> Files:
    """The file sites and the MB/s from each to each cluster: the bandwidth matrix, else, from a
    site to its own cluster, the platform's intra-site bandwidth; a pair with neither transfers
    at once (infinite bandwidth)."""
    names, at = file_sites(platform)
    C = len(platform.clusters)
    bw = np.full((len(names), C), np.inf)
    for f, name in enumerate(names):
        for e, c in enumerate(platform.clusters):
            b = bandwidth(platform, name, c.name)
            if b is None and at[f] == e and platform.intra_site_bandwidth is not None:
                b = platform.intra_site_bandwidth
            if b is not None:
                bw[f, e] = b
    return Files(at, bw, names)


def _koala_jobs(st: KoalaJobs, platform, rng, horizon, site_names) -> list[KoalaJob]:
    lam = st.arrival_rate(platform)
    n = st.count
    if n is None:
        n = 0
        times = []
        t = 0.0
        while True:
            t += rng.exponential(1.0 / lam)
            if t >= horizon:
                break
            times.append(t)
        submit = np.asarray(times)
    else:
        submit = np.cumsum(rng.exponential(1.0 / lam, n))
        if horizon is not None:
            submit = submit[submit < horizon]
    m = len(submit)
    if st.shapes:
        w = np.array([s.weight for s in st.shapes], float)
        pick = rng.choice(len(st.shapes), size=m, p=w / w.sum())
        comps = np.array([st.shapes[k].components for k in pick])
        sizes = [[st.shapes[k].size] * st.shapes[k].components for k in pick]
        drawn = st.runtime.sample(rng, m) if st.runtime is not None else np.zeros(m)
        runtime = np.array([st.shapes[k].runtime if st.shapes[k].runtime is not None else drawn[i]
                            for i, k in enumerate(pick)], float)
    else:
        flexible = st.request == "flexible"
        comps = processor_counts(st.components.sample(rng, m)) if st.components is not None and not flexible \
            else np.ones(m, np.int64)
        if st.equal_sizes or flexible:
            one = processor_counts(st.size.sample(rng, m))
            sizes = [[int(one[i])] * int(comps[i]) for i in range(m)]
        else:
            allsz = processor_counts(st.size.sample(rng, int(comps.sum())))
            off = np.concatenate([[0], np.cumsum(comps)])
            sizes = [[int(x) for x in allsz[off[i]:off[i + 1]]] for i in range(m)]
        runtime = np.maximum(st.runtime.sample(rng, m), 0.0)
    fsize = np.zeros(m)
    fsites: list[list[int]] = [[] for _ in range(m)]
    if st.file is not None:
        fsize = np.maximum(st.file.size.sample(rng, m), 0.0)
        pool = [site_names.index(s) for s in (st.file.sites or site_names)]
        for i in range(m):
            fsites[i] = sorted(int(x) for x in rng.choice(pool, size=st.file.replicas, replace=False))
    idx = {c.name: k for k, c in enumerate(platform.clusters)}
    fixed = None
    if st.request in ("fixed", "semi-fixed") and st.clusters:
        fixed = [idx[c] if c is not None else -1 for c in st.clusters]
    prio = KOALA_PRIORITIES.index(st.priority)
    return [KoalaJob(float(submit[i]), float(runtime[i]), [int(x) for x in sizes[i]],
                     fixed[:len(sizes[i])] if fixed is not None else None, prio, st.request == "flexible",
                     float(fsize[i]), fsites[i]) for i in range(m)]


def build_koala_workload(scenario, replication: int) -> KoalaWorkload:
    platform = scenario.platform
    procs = platform.processors
    streams = scenario.workload.streams
    rngs = replication_rngs(scenario, replication)
    site_names, _ = file_sites(platform)
    horizon = scenario.run.stop.horizon
    jobs, jstream, jid, notes = [], [], [], []
    band = None
    for i, st in enumerate(streams):
        if isinstance(st, KoalaJobs):
            got = _koala_jobs(st, platform, rngs[i], horizon, site_names)
            jobs += got
            jstream += [i] * len(got)
            jid += list(range(len(got)))
            if st.background is not None:
                b = st.background
                brng = rngs[-1]
                band = Band(b.low, b.high, b.interval,
                            size=lambda d=b.size, r=brng: int(processor_counts(d.sample(r, 1))[0]),
                            runtime=lambda d=b.runtime, r=brng: max(float(d.sample(r, 1)[0]), 0.0))
    last = max((j.submit for j in jobs), default=0.0)
    local_horizon = horizon if horizon is not None else 4.0 * last + 86400.0
    loc = []
    for i, st in enumerate(streams):
        if isinstance(st, KoalaJobs):
            continue
        if getattr(st, "kind", "") == "trace":
            t, n = load_trace_stream(st, scenario, i, horizon)
            notes += n
            if horizon is None:  # local jobs past the KOALA jobs' time would never matter
                before = len(t)
                t = t.take(t.submit < local_horizon)
                if len(t) < before:
                    notes.append(f"{st.name}: {before - len(t):,} of the trace's {before:,} jobs arrive after "
                                 f"{local_horizon:,g} s (4 x the last KOALA arrival + 1 day) and are not simulated")
        else:
            t = generate_stream(st, platform, rngs[i], horizon=local_horizon, stream_index=i)
        loc.append((t.submit, np.maximum(t.runtime, 0.0), t.processors, t.cluster, np.full(len(t.submit), i),
                    t.job_id))
    if loc:
        cat = [np.concatenate([p[k] for p in loc]) for k in range(6)]
        order = np.argsort(cat[0], kind="stable")
        fits = cat[2][order] <= procs[cat[3][order]]
        if not fits.all():
            notes.append(f"replication {replication}: {int((~fits).sum())} local jobs larger than their cluster "
                         "were left out")
        order = order[fits]
        local = (cat[0][order].astype(float), cat[1][order].astype(float), cat[2][order].astype(np.int64),
                 cat[3][order].astype(np.int64))
        lstream, lid = cat[4][order].astype(np.int32), cat[5][order].astype(np.int64)
    else:
        local = (np.zeros(0), np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64))
        lstream, lid = np.zeros(0, np.int32), np.zeros(0, np.int64)
    order = sorted(range(len(jobs)), key=lambda k: jobs[k].submit)
    p_soft = np.array([c.soft_errors for c in platform.clusters], float)
    soft = SoftErrors(p_soft, failure_rng(scenario, replication)) if p_soft.any() else None
    outages, requeue = _outages(scenario, replication, local_horizon)
    return KoalaWorkload(procs, [jobs[k] for k in order], np.array([jstream[k] for k in order], np.int32),
                         np.array([jid[k] for k in order], np.int64), local, lstream, lid, band, notes, soft,
                         outages, requeue)


def _outages(scenario, replication: int, local_horizon: float) -> tuple[list | None, list | bool]:
    """The clusters' failures as (cluster, start, end), drawn until the horizon (or, without one, the
    local jobs' horizon: 4 x the last KOALA arrival + 1 day), and whether local jobs are requeued."""
    clusters = scenario.platform.clusters
    if all(c.failures is None for c in clusters):
        return None, True
    out = []
    for c, spec in enumerate(clusters):
        if spec.failures is not None:
            rows = draw_outages(spec.failures, spec.processors, local_horizon, failure_rng(scenario, replication, c))
            out += [(c, float(a), float(b)) for a, b in rows[:, :2].tolist()]
    return out, [c.failures is None or c.failures.jobs == "requeue" for c in clusters]


def _simulate(scenario, w: KoalaWorkload, live: LiveGantt | None = None) -> KoalaOutcome:
    """The replication's outcome; with ``live``, simulated in slices while its Gantt streams."""
    horizon = scenario.run.stop.horizon
    horizon = math.inf if horizon is None else float(horizon)
    run = KoalaRun(w.processors, w.jobs, koala_policy(scenario), koala_files(scenario.platform), w.local, w.band,
                   horizon, scenario.run.warmup.time, w.soft_errors, w.outages, w.local_requeue)
    if live is not None:
        _feed_live(live, run, w, horizon)
    run.advance(math.inf)
    return run.outcome


def _feed_live(live: LiveGantt, run: KoalaRun, w: KoalaWorkload, horizon: float) -> None:
    """Simulate ``run`` slice by slice, telling ``live`` what each slice showed: the rows of the
    holds that ended (and file transfers as their holds begin) closed, the holds still held open."""
    view, holds = run.view, _Holds(w.processors)
    base, ng, nk = _koala_id_base(w), len(w.local_id), len(w.jobs)
    blocks: dict[int, list] = {}  # hold -> its blocks (first processor, count), while held
    held: list[int] = []  # holds begun, not ended
    later: list[tuple] = []  # closed rows ending at or after the frontier
    claim_sent: set[int] = set()  # holds whose claimed part went out when their job started
    seen = {"starts": 0, "records": 0}

    def name(owner) -> tuple[int, int, int]:
        if owner[0] == "K":
            return base + owner[1], int(w.job_stream[owner[1]]), owner[2]
        if owner[0] == "D":  # a cluster down: no job (job id 0, stream -1)
            return 0, -1, 0
        i = owner[1]
        return (int(w.local_id[i]), int(w.local_stream[i]), 0) if i < ng else (base + nk + i - ng, -1, 0)

    def provisional(h: int) -> list[tuple]:
        """The rows a hold still held would have if nothing changed."""
        c, t0, size, owner, _ = view["starts"][h]
        if owner[0] == "L":
            return [(t0, t0 + view["local_runtime"][owner[1]], KIND_RUN)]
        if owner[0] == "D":
            return [(t0, view["outages"][owner[1]][2], KIND_DOWN)]
        k = view["jobs"][owner[1]]
        rows = [(t0, k.jst, KIND_CLAIMED)] if k.jst > t0 and h not in claim_sent else []
        if k.state == "running":
            rows.append((k.jst, k.start + k.job.runtime + k.extra_run, KIND_RUN))
        return rows

    def rows_of(h, spans, into):
        c, owner = view["starts"][h][0], view["starts"][h][3]
        job_id, stream, comp = name(owner)
        for first, count in blocks.get(h, ()):
            for t0, t1, kind in spans:
                into.append((c, first, count, t0, t1, kind, comp, job_id, stream))

    def report(T: float) -> bool:
        nonlocal held, later
        done = run.outcome is not None
        F = min(T, horizon, run.outcome.t_end if done else math.inf)
        starts, hold_end = view["starts"], view["hold_end"]
        begun = range(seen["starts"], len(starts))
        seen["starts"] = len(starts)
        held += begun
        ended = {h: hold_end[h] for h in held if not math.isnan(hold_end[h])}
        held = [h for h in held if h not in ended]
        closed, opened = [], []
        for h, first, count in holds.events(starts, begun, ended):
            blocks.setdefault(h, []).append((first, count))
        for h in begun:  # a transfer shows once its hold has begun
            if not math.isnan(starts[h][4]):
                rows_of(h, [(starts[h][4], starts[h][1], KIND_TRANSFER)], later)
        records = view["holdings"]
        for h, recs in _records_by_hold(records[seen["records"]:]).items():
            rows_of(h, [(r[1], r[2], _KIND[r[5]]) for r in recs if not (r[5] == "claimed" and h in claim_sent)],
                    later)
        seen["records"] = len(records)
        for h in ended:
            blocks.pop(h, None)
            claim_sent.discard(h)
        for h in held:  # a running job's claimed part is over: [claim, JST] whatever comes
            c, t0, _, owner, _ = starts[h]
            if owner[0] == "K" and h not in claim_sent:
                k = view["jobs"][owner[1]]
                if k.state == "running" and t0 < k.jst < F:
                    rows_of(h, [(t0, k.jst, KIND_CLAIMED)], later)
                    claim_sent.add(h)
        closed, later = [r for r in later if r[4] < F], [r for r in later if r[4] >= F]
        for h in held:
            rows_of(h, [p for p in provisional(h) if p[0] < F], opened)
        live.update(F, _live_rows(closed), _live_rows(opened), [len(q) for q in view["queues"]])
        return done or T >= horizon

    live.restart()
    last = max((j.submit for j in w.jobs), default=0.0)
    live.expect(0.0, min(last, horizon) if last > 0 else horizon)
    run_in_slices(0.0, live.expected_end, run.advance, report)


def _live_rows(rows: list[tuple]) -> dict[str, np.ndarray]:
    if not rows:
        return empty_rows()
    return live_rows(dict(zip(("cluster", "first_processor", "processors", "t0", "t1", "kind", "component", "job_id",
                               "stream"), zip(*rows))), len(rows))


def job_failure_rate(k) -> float:
    """The thesis's failure rate of a done job (§5.2.4): its failures over its starts."""
    return k.failures / (k.failures + 1)


#: the metrics broken down by priority, number of components and job size with failures (thesis §5.2.4,
#: Figs. 5.12-5.13): name -> the per-job value averaged over a group's done jobs
BREAKDOWN = {"failure_rate": job_failure_rate, "mean_placement_time": lambda k: k.placement_time,
             "mean_start_delay": lambda k: k.jst - k.jst0}


def _breakdowns(done: list) -> dict[str, float]:
    """``<metric>.priority_<p>``, ``<metric>.components_<n>`` and ``<metric>.size_<n>`` for each
    priority, number of components and total size (processors) among the done jobs (a group without a done job in a replication has no value)."""
    groups: dict[str, list] = {}
    for k in done:
        groups.setdefault(f"priority_{KOALA_PRIORITIES[k.job.priority]}", []).append(k)
        groups.setdefault(f"components_{len(k.job.sizes)}", []).append(k)
        groups.setdefault(f"size_{sum(k.job.sizes)}", []).append(k)
    return {f"{name}.{g}": float(np.mean([value(k) for k in jobs]))
            for g, jobs in sorted(groups.items()) for name, value in BREAKDOWN.items()}


def koala_metrics(scenario, w: KoalaWorkload, o: KoalaOutcome) -> dict[str, float]:
    """One replication's metrics (docs/grid.md, KOALA)."""
    t_w = scenario.run.warmup.time
    window = o.t_end - t_w
    procs = w.processors
    cap = float(procs.sum())
    nan = math.nan
    m: dict[str, float] = {}
    if window > 0:
        d = cap * window
        m["background_load"] = float(o.busy[:, 0].sum()) / d
        m["koala_load"] = float(o.busy[:, 1].sum()) / d
        m["pwt_utilisation"] = float(o.busy[:, 2].sum()) / d
        m["total_load"] = m["utilisation"] = float(o.busy.sum()) / d
        for c, spec in enumerate(scenario.platform.clusters):
            m[f"utilisation.{spec.name}"] = float(o.busy[c].sum()) / (procs[c] * window)
    else:
        for k in ("background_load", "koala_load", "pwt_utilisation", "total_load", "utilisation"):
            m[k] = nan
    meas = [k for k in o.jobs if k.job.submit >= t_w]
    done = [k for k in meas if k.state == "done"]
    m["koala_jobs_measured"] = float(len(meas))
    m["koala_jobs_done"] = float(len(done))
    m["koala_jobs_failed"] = float(sum(k.state == "failed" for k in meas))
    m["koala_jobs_killed"] = float(sum(k.state == "killed" for k in meas))
    pgt = sum(k.pgt * sum(c[0] for c in k.comps) for k in done)
    m["pgt_utilisation"] = pgt / (cap * window) if window > 0 else nan

    def mean(v):
        return float(np.mean(v)) if len(v) else nan

    pt = np.array([k.placement_time for k in done])
    m["mean_placement_time"] = mean(pt)
    m["median_placement_time"] = percentile_linear(pt, 50) if len(pt) else nan
    m["p90_placement_time"] = percentile_linear(pt, 90) if len(pt) else nan
    m["mean_placement_tries"] = mean([k.place_tries for k in done])
    m["mean_claiming_tries"] = mean([k.claim_tries for k in done])
    m["mean_ftt"] = mean([k.ftt for k in done])
    m["mean_twt"] = mean([k.start - k.job.submit for k in done])
    # the standard job metrics over the KOALA jobs done (mean_wait is the mean TWT)
    wait = np.array([k.start - k.job.submit for k in done], float)
    response = np.array([k.end - k.job.submit for k in done], float)
    runtime = np.array([k.job.runtime for k in done], float)
    with np.errstate(divide="ignore", invalid="ignore"):
        slowdown = np.where(runtime > 0, response / runtime, np.nan)
    m.update(results.job_metrics(wait, response, slowdown,
                                 np.maximum(response / np.maximum(runtime, BOUNDED_SLOWDOWN_TAU), 1.0)))
    m["mean_start_delay"] = mean([k.jst - k.jst0 for k in done])
    spread = [len({c[1] for c in k.comps}) / len(k.comps) for k in done]
    m["mean_job_spread"] = mean(spread)
    m["coallocated_fraction"] = mean([len({c[1] for c in k.comps}) > 1 for k in done])
    if w.failing:  # soft errors or cluster failures modelled
        m["failure_rate"] = mean([job_failure_rate(k) for k in done])
        m["failures_per_job"] = mean([k.failures for k in done])
        m["koala_failures"] = float(sum(k.failures for k in meas))
        m.update(_breakdowns(done))
    if o.soft_errors is not None:  # soft errors modelled (a cluster's soft_errors > 0)
        m["excluded_clusters"] = float(len(o.excluded))
        for c, spec in enumerate(scenario.platform.clusters):
            m[f"soft_errors.{spec.name}"] = float(o.soft_errors[c])
    if w.outages is not None:  # cluster failures: the share of processor time up, in the window
        rows = np.array([(a, b, 0, procs[c]) for c, a, b in o.down], float).reshape(-1, 4)
        by = np.array([c for c, _, _ in o.down], np.int64)
        total = 0.0
        for c, spec in enumerate(scenario.platform.clusters):
            d = down_time(rows[by == c], int(procs[c]), t_w, o.t_end)
            total += d
            if spec.failures is not None:
                m[f"availability.{spec.name}"] = 1.0 - d / (procs[c] * window) if window > 0 else nan
        m["availability"] = 1.0 - total / (cap * window) if window > 0 else nan
    m["preemptions"] = float(sum(k.preempted for k in meas))
    m["max_placement_queue"] = float(o.max_queue)
    m["makespan"] = float(o.t_end)
    m["last_arrival"] = float(max((k.job.submit for k in o.jobs), default=nan))
    m["jobs_measured"] = float(len(done))
    m["throughput"] = len(done) / window if window > 0 else nan
    return m


def _rows(scenario, w: KoalaWorkload, o: KoalaOutcome, replication: int):
    t_w = scenario.run.warmup.time
    n = len(o.local_submit)
    ng = len(w.local_stream)
    lst = o.local_state
    l_status = np.full(n, STATUS_UNFINISHED, np.int8)
    l_status[lst == 2] = STATUS_COMPLETED
    l_status[lst == 3] = STATUS_KILLED
    base = _koala_id_base(w)  # KOALA jobs, then background jobs (ids known as they appear)
    cols: dict[str, list | np.ndarray] = {
        "job_id": np.concatenate([w.local_id, base + len(o.jobs) + np.arange(n - ng)]),
        "stream": np.concatenate([w.local_stream, np.full(n - ng, -1, np.int32)]),
        "cluster": o.local_cluster, "submit": o.local_submit, "start": o.local_start,
        "end": np.where(lst >= 2, o.local_end, np.nan), "processors": o.local_size, "runtime": o.local_runtime,
        "status": l_status, "component": np.zeros(n, np.int16),
    }
    extra = {"placement_time": np.full(n, np.nan), "placement_tries": np.zeros(n, np.int32),
             "claiming_tries": np.zeros(n, np.int32), "ftt": np.full(n, np.nan), "jpt": np.full(n, np.nan),
             "jct": np.full(n, np.nan), "jst": np.full(n, np.nan),
             **({"failures": np.zeros(n, np.int32)} if w.failing else {}),  # (soft errors or failures modelled)
             "measured": np.zeros(n, bool)}  # the job metrics are KOALA jobs' (koala_metrics)
    g: dict[str, list] = {k: [] for k in list(cols) + list(extra)}
    owner = []  # (job, component) per KOALA row
    for j, k in enumerate(o.jobs):
        comps = k.comps if k.comps else [[s, -1, -1, 0.0, math.nan] for s in k.job.sizes]
        status = {"done": STATUS_COMPLETED, "failed": STATUS_FAILED, "killed": STATUS_KILLED}.get(k.state, STATUS_UNFINISHED)
        for ci, cp in enumerate(comps):
            started = k.state in ("done", "running")
            g["job_id"].append(base + j)
            g["stream"].append(int(w.job_stream[j]))
            g["cluster"].append(int(cp[1]))
            g["submit"].append(k.job.submit)
            g["start"].append(k.start if started else math.nan)
            g["end"].append(k.end if k.state == "done" else math.nan)
            g["processors"].append(int(cp[0]))
            g["runtime"].append(k.job.runtime)
            g["status"].append(status)
            g["component"].append(ci)
            g["placement_time"].append(k.placement_time)
            g["placement_tries"].append(k.place_tries)
            g["claiming_tries"].append(k.claim_tries)
            g["ftt"].append(k.ftt)
            g["jpt"].append(k.jpt)
            g["jct"].append(k.jct)
            g["jst"].append(k.jst)
            if "failures" in g:
                g["failures"].append(k.failures)
            # one row per measured KOALA job (its first component), so counts are jobs
            g["measured"].append(ci == 0 and k.state == "done" and k.job.submit >= t_w)
            owner.append((j, ci))

    out = {}
    for key in list(cols) + list(extra):
        a = cols[key] if key in cols else extra[key]
        dt = np.int16 if key == "component" else JOB_DTYPES.get(key, np.asarray(a).dtype)
        out[key] = np.concatenate([np.asarray(a), np.asarray(g[key])]).astype(dt)
    out, position = order_job_rows(out, replication, scenario.run.warmup.time)
    row_of = {("L", i): int(position[i]) for i in range(n)}
    for r_, (j, ci) in enumerate(owner):
        row_of[("K", j, ci)] = int(position[n + r_])
    return out, row_of


def _koala_id_base(w: KoalaWorkload) -> int:
    """The job id of KOALA job 0: after the local jobs given; background jobs come after them."""
    return int(w.local_id.max(initial=-1)) + 1


def _hold_rows(hold: tuple, records: list) -> list[tuple]:
    """The rows (t0, t1, kind) of one block of a hold: its file transfer (before the hold
    began), then its records."""
    rows = [(hold[4], hold[1], KIND_TRANSFER)] if not math.isnan(hold[4]) else []
    return rows + [(r[1], r[2], _KIND[r[5]]) for r in records]


class _Holds:
    """Processors of the holds of a replication (KoalaOutcome.starts), handed out per cluster in
    the order the holds began (simultaneous ones too), batch after batch of simulated time, so
    the live Gantt's rows are the Result's."""

    def __init__(self, processors):
        self.assigners = [ProcessorAssigner(np.zeros(0, np.int64), int(P)) for P in processors]
        self.slot: list[int] = []  # per hold: its job in its cluster's assigner

    def events(self, starts: list, begun: range, ended: dict[int, float]) -> list[tuple[int, int, int]]:
        """Feed the holds ``begun`` (indices into ``starts``) and the ends ``ended`` (hold ->
        end) of one batch; returns the blocks (hold, first processor, count) of the begun."""
        by_cluster: dict[int, list] = {}
        for h in begun:
            c, t0, size = starts[h][:3]
            self.slot.append(int(self.assigners[c].add_jobs([size])[0]))
            zero = ended.get(h, math.inf) <= t0
            by_cluster.setdefault(c, []).append((h, EVENT_ZERO if zero else EVENT_START, t0))
        for h, t1 in ended.items():
            if t1 > starts[h][1]:
                by_cluster.setdefault(starts[h][0], []).append((h, EVENT_END, t1))
        blocks = []
        for c, events in sorted(by_cluster.items()):
            holds = np.array([e[0] for e in events], np.int64)
            event, first, count = self.assigners[c].events_indexed(
                np.asarray(self.slot, np.int64)[holds], np.array([e[1] for e in events], np.int8),
                np.array([e[2] for e in events], np.float64))
            blocks += zip(holds[event].tolist(), first.tolist(), count.tolist())
        return blocks


def _records_by_hold(records) -> dict[int, list]:
    out: dict[int, list] = {}
    for r in records:
        out.setdefault(r[6], []).append(r)
    return out


def _segments(scenario, o: KoalaOutcome, row_of: dict) -> dict[str, np.ndarray]:
    by_hold = _records_by_hold(o.holdings)
    out = {k: [] for k in SEGMENT_COLUMNS}
    holds = _Holds([c.processors for c in scenario.platform.clusters])
    for h, f_, n_ in holds.events(o.starts, range(len(o.starts)), dict(enumerate(o.hold_end))):
        own = o.starts[h][3]
        for s0, s1, kind in _hold_rows(o.starts[h], by_hold.get(h, [])):
            out["cluster"].append(o.starts[h][0])
            out["first_processor"].append(f_)
            out["processors"].append(n_)
            out["t0"].append(s0)
            out["t1"].append(s1)
            out["job"].append(row_of.get(own, -1))
            out["component"].append(own[2] if own[0] == "K" else 0)
            out["kind"].append(kind)
    return ordered_segments(out)


def _series(scenario, w: KoalaWorkload, o: KoalaOutcome) -> dict[str, np.ndarray]:
    t = np.linspace(0.0, max(o.t_end, 1e-9), SERIES_POINTS)
    h = [x for x in o.holdings if x[5] != "down"]  # (a cluster down does no work)
    cap = max(float(w.processors.sum()), 1.0)
    t0 = np.array([x[1] for x in h], float)
    t1 = np.array([x[2] for x in h], float)
    sz = np.array([x[3] for x in h], float)
    out = {"time": t, "utilisation": active_sum(t0, t1, sz, t) / cap if len(h) else np.zeros(len(t))}
    for name, want in (("background", lambda x: x[4][0] == "L"),
                       ("koala", lambda x: x[4][0] == "K" and x[5] != "claimed"),
                       ("claimed", lambda x: x[5] == "claimed")):
        sel = np.array([want(x) for x in h], bool) if h else np.zeros(0, bool)
        out[name] = active_sum(t0[sel], t1[sel], sz[sel], t) / cap if sel.any() else np.zeros(len(t))
    if o.queue_trace:
        qt = np.array(o.queue_trace, float)
        k = np.searchsorted(qt[:, 0], t, side="right") - 1
        out["placement_queue"] = np.where(k >= 0, qt[np.maximum(k, 0), 1], 0.0)
    # the clusters' local FCFS queues (KOALA jobs wait in the placement queue above)
    out.update(queue_series(t, o.local_submit, np.where(o.local_state == 0, np.nan, o.local_start), o.local_size,
                            o.local_cluster, [c.name for c in scenario.platform.clusters]))
    return out


@dataclass
class KoalaReplication:
    metrics: dict[str, float]
    jobs: dict | None
    segments: dict | None
    series: dict | None
    notes: list[str]
    outcome: KoalaOutcome | None = None


def simulate_koala_replication(scenario, replication: int, with_rows: bool = True,
                               with_segments: bool = False, live: LiveGantt | None = None) -> KoalaReplication:
    w = build_koala_workload(scenario, replication)
    o = _simulate(scenario, w, live)
    m = koala_metrics(scenario, w, o)
    jobs = seg = series = None
    if with_rows or with_segments:
        jobs, row_of = _rows(scenario, w, o, replication)
        if with_segments:
            seg = _segments(scenario, o, row_of)
            series = _series(scenario, w, o)
    notes = list(w.notes)
    if o.unplaceable:
        notes.append(f"replication {replication}: {len(o.unplaceable)} KOALA jobs failed at their arrival: "
                     f"placement '{scenario.grid.placement.name}' cannot place them even on the idle grid "
                     f"(e.g. job {int(w.job_id[o.unplaceable[0]])})")
    return KoalaReplication(m, jobs, seg, series, notes, o)


def replicate(scenario, r: int, with_segments: bool, on_step=None, live=None, place=None) -> Replication:
    """One replication (simengine.driver.Replicate); ``live``: its Gantt streams while it runs."""
    out = simulate_koala_replication(scenario, r, with_segments or scenario.run.keep_jobs == "all", with_segments,
                                     live)
    return Replication(out.metrics, out.jobs, out.segments, out.series, out.notes)


#: KOALA's placement queues, claiming and deadlines (plain Python: replications in processes)
MODEL = Model("koala", is_koala, replicate)
