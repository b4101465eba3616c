"""Run a scenario with co-allocated streams: workload, the grid layer, the output contract.

:data:`MODEL` simulates such a scenario (simengine.models; KOALA's streams are
:mod:`simengine.grid.koala_run`'s); its Result is a normal :class:`~simengine.results.Result`: one row per local job and one per component
of a global job (the components share the job's ``job_id``), the Gantt segments of
replication 0 (``run``, ``claimed``, ``killed``), and per-replication metrics (MODELS.md
§3) aggregated with 95% confidence intervals. :func:`replication_metrics` gives one
replication's metrics only (no rows, no segments): what sweeps and recipes need.

Randomness as in :mod:`simengine.workload_build`: replication r uses
``SeedSequence(run.seed, spawn_key=(r,))`` and one child per stream; a co-allocated
stream draws arrivals, component sizes and runtimes with the synthetic generator and
then its components and deadlines from two further children of its stream's generator.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from simengine.distributions import processor_counts
from simengine.driver import Model, Replication
from simengine.gantt import KIND_KILLED, KIND_RUN, SEGMENT_COLUMNS, ordered_segments
from simengine.grid.holdings import GLOBAL, Slots, block_rows, feed_live, final_blocks
from simengine.generate import generate_stream
from simengine.grid import kernel as K
from simengine.grid.koala_run import simulate_koala_replication
from simengine.grid.schema import is_grid, is_koala
from simengine.grid.model import GlobalJobs, GridOutcome, GridPolicy, GridRun, LocalJobs, warm_up
import simengine.results as results
from simengine.results import BOUNDED_SLOWDOWN_TAU, SERIES_POINTS, active_sum, order_job_rows, queue_series
from simengine.scenario import CoallocatedStream, Scenario, TraceStream
from simengine.streaming import LiveGantt
from simengine.workload import STATUS_COMPLETED, STATUS_FAILED, STATUS_KILLED, STATUS_REJECTED, STATUS_UNFINISHED
from simengine.workload_build import load_trace_stream, replication_rngs

__all__ = ["GridWorkload", "build_workload", "policy_of", "simulate_replication", "replication_metrics",
           "MODEL", "EXTRA_JOB_COLUMNS"]

#: Model-specific job columns (docs/grid.md): component index, absolute deadline, claim time,
#: placement attempts, kills (local: times killed; global: local jobs it killed).
EXTRA_JOB_COLUMNS = {"component": np.int16, "deadline": np.float64, "claimed_at": np.float64,
                     "tries": np.int32, "kills": np.int32}

@dataclass
class GridWorkload:
    """One replication's jobs: local (with their stream and id) and global."""

    processors: np.ndarray
    local: LocalJobs
    local_stream: np.ndarray
    local_id: np.ndarray
    local_rejected: np.ndarray  # larger than their cluster (trace jobs): not simulated
    glob: GlobalJobs
    global_stream: np.ndarray
    global_id: np.ndarray
    notes: list[str] = field(default_factory=list)


def build_workload(scenario: Scenario, replication: int) -> GridWorkload:
    """The jobs of replication ``replication``, each kind sorted by submit time (ties keep
    stream order)."""
    platform = scenario.platform
    procs = platform.processors
    horizon = scenario.run.stop.horizon
    rngs = replication_rngs(scenario, replication)
    loc, glo, notes = [], [], []
    for i, st in enumerate(scenario.workload.streams):
        if isinstance(st, TraceStream):
            jobs, n = load_trace_stream(st, scenario, i, horizon)
            notes += n
            loc.append((jobs.submit, np.maximum(jobs.runtime, 0.0), jobs.processors, jobs.cluster, i, jobs.job_id))
            continue
        rng = rngs[i]
        jobs = generate_stream(st, platform, rng, horizon=horizon, stream_index=i)
        if isinstance(st, CoallocatedStream):
            m = len(jobs)
            seq = np.random.SeedSequence(rng.integers(0, 2**32, size=4, dtype=np.uint64).tolist())
            comp_rng, deadline_rng = (np.random.default_rng(s) for s in seq.spawn(2))
            comps = processor_counts(st.components.sample(comp_rng, m))
            d = st.deadline
            rel = deadline_rng.uniform(d.min, d.max, m) if d.max > d.min else np.full(m, float(d.min))
            glo.append((jobs.submit, jobs.runtime, jobs.processors, comps, jobs.submit + rel, i, jobs.job_id))
        else:
            loc.append((jobs.submit, jobs.runtime, jobs.processors, jobs.cluster, i, jobs.job_id))

    def joined(parts, k, dtype):
        return np.concatenate([p[k] for p in parts]).astype(dtype) if parts else np.zeros(0, dtype)

    def stream_col(parts, k):
        return np.concatenate([np.full(len(p[0]), p[k], np.int32) for p in parts]) if parts else np.zeros(0, np.int32)

    submit = joined(loc, 0, np.float64)
    order = np.argsort(submit, kind="stable")
    local = LocalJobs(submit[order], joined(loc, 1, np.float64)[order], joined(loc, 2, np.int64)[order],
                      joined(loc, 3, np.int64)[order])
    l_stream, l_id = stream_col(loc, 4)[order], joined(loc, 5, np.int64)[order]
    rejected = local.size > procs[local.cluster]
    if rejected.any():
        notes.append(f"replication {replication}: {int(rejected.sum())} local jobs larger than their cluster "
                     "were rejected")
    gsubmit = joined(glo, 0, np.float64)
    gorder = np.argsort(gsubmit, kind="stable")
    glob = GlobalJobs(gsubmit[gorder], joined(glo, 1, np.float64)[gorder], joined(glo, 2, np.int64)[gorder],
                      joined(glo, 3, np.int64)[gorder], joined(glo, 4, np.float64)[gorder])
    return GridWorkload(procs, local, l_stream, l_id, rejected, glob, stream_col(glo, 5)[gorder],
                        joined(glo, 6, np.int64)[gorder], notes)


def policy_of(scenario: Scenario) -> GridPolicy:
    """The grid policy the scenario names (defaults filled in by validation)."""
    g = scenario.grid
    return GridPolicy.from_params(g.placement.name, g.placement.params, g.deadline_policy.params)


def _simulate(scenario: Scenario, w: GridWorkload, live: LiveGantt | None = None) -> GridOutcome:
    """The replication's schedule; with ``live``, simulated in slices while its Gantt streams."""
    keep = ~w.local_rejected
    local = w.local if keep.all() else LocalJobs(w.local.submit[keep], w.local.runtime[keep], w.local.size[keep],
                                                 w.local.cluster[keep])
    horizon = scenario.run.stop.horizon
    horizon = math.inf if horizon is None else float(horizon)
    run = GridRun(w.processors, local, w.glob, policy_of(scenario), horizon=horizon, warmup=scenario.run.warmup.time)
    if live is not None:  # (build_workload sorts the jobs: the run keeps their order)
        idx = np.flatnonzero(keep)
        comp_job = np.repeat(np.arange(len(w.glob)), w.glob.components)
        comp_index = np.arange(len(comp_job)) - np.repeat(run.comp_off[:-1], w.glob.components)

        def name_local(i):
            j = idx[i]
            return w.local_id[j], w.local_stream[j], 0

        def name_component(k):
            g = comp_job[k]
            return w.global_id[g], w.global_stream[g], comp_index[k]

        last = max(float(local.submit[-1]) if len(local) else 0.0, float(w.glob.submit[-1]) if len(w.glob) else 0.0)
        feed_live(live, run, w.processors, name_local, name_component, horizon, min(last, horizon))
    else:
        run.advance(math.inf)
    out = run.outcome()
    if not keep.all():  # rejected jobs never start
        n = len(w.local)
        idx = np.flatnonzero(keep)
        for name, fill in (("local_start", np.nan), ("local_end", np.nan), ("local_state", -1), ("local_kills", 0)):
            a = getattr(out, name)
            b = np.full(n, fill, a.dtype)
            b[idx] = a
            setattr(out, name, b)
        out.kills["job"] = idx[out.kills["job"]]
    return out


# ---- metrics ------------------------------------------------------------------------------------

def _metrics(scenario: Scenario, w: GridWorkload, o: GridOutcome) -> dict[str, float]:
    """One replication's metrics (docs/grid.md): the paper's five, local response, offered loads
    and the engine's usual job metrics over the measured completed local jobs."""
    t_w, t_end = scenario.run.warmup.time, o.t_end
    window = t_end - t_w
    procs = w.processors
    cap = float(procs.sum())
    m: dict[str, float] = {}
    nan = math.nan
    busy = o.busy
    if window > 0:
        denom = cap * window
        m["total_load"] = float(busy.sum()) / denom
        m["local_load"] = float(busy[:, 0].sum()) / denom
        m["processor_wasted_time"] = float(busy[:, 1].sum()) / denom
        m["global_load"] = float(busy[:, 2].sum()) / denom
        m["utilisation"] = m["total_load"]
        for c, spec in enumerate(scenario.platform.clusters):
            m[f"utilisation.{spec.name}"] = float(busy[c].sum()) / (procs[c] * window)
    else:
        for k in ("total_load", "local_load", "processor_wasted_time", "global_load", "utilisation"):
            m[k] = nan
    L, G = w.local, w.glob
    state = o.local_state
    measured = (L.submit >= t_w) & ~w.local_rejected
    done = measured & (state == K.L_DONE)
    decided = measured & ((state == K.L_DONE) | (state == K.L_KILLED))
    n_dec = int(decided.sum())
    m["local_jobs_measured"] = float(n_dec)
    m["local_kill_rate"] = float((decided & (o.local_kills > 0)).sum()) / n_dec if n_dec else nan
    n_done = int(done.sum())
    sub, st, en, rt = L.submit[done], o.local_start[done], o.local_end[done], L.runtime[done]
    wait, resp = st - sub, en - sub
    with np.errstate(divide="ignore", invalid="ignore"):
        slowdown = np.where(rt > 0, resp / rt, np.nan)
    m.update(results.job_metrics(wait, resp, slowdown, np.maximum(resp / np.maximum(rt, BOUNDED_SLOWDOWN_TAU), 1.0)))
    m["local_response"] = m["mean_response"]
    gs = o.global_state
    gmeas = G.submit >= t_w
    started = gmeas & ((gs == K.G_RUNNING) | (gs == K.G_DONE))
    gdec = started | (gmeas & (gs == K.G_FAILED))
    n_gdec = int(gdec.sum())
    m["global_jobs_measured"] = float(n_gdec)
    m["global_success_rate"] = float(started.sum()) / n_gdec if n_gdec else nan
    m["mean_global_tries"] = float(o.global_tries[gdec].mean()) if n_gdec else nan
    # offered loads: work submitted in [t_w, end of submissions) per unit of capacity
    horizon = scenario.run.stop.horizon
    last = horizon if horizon is not None else max(float(L.submit.max(initial=0.0)), float(G.submit.max(initial=0.0)))
    span = last - t_w
    if span > 0:
        lin = (L.submit >= t_w) & (L.submit < last)
        gin = (G.submit >= t_w) & (G.submit < last)
        m["offered_local_load"] = float((L.size[lin] * L.runtime[lin]).sum()) / (cap * span)
        m["offered_global_load"] = float((G.components[gin] * G.size[gin] * G.runtime[gin]).sum()) / (cap * span)
    else:
        m["offered_local_load"] = m["offered_global_load"] = nan
    n_finished = n_done + int((gmeas & (gs == K.G_DONE)).sum())
    m["jobs_measured"] = float(n_finished)
    m["throughput"] = n_finished / window if window > 0 else nan
    return m


def replication_metrics(scenario: Scenario, replication: int) -> dict[str, float]:
    """Metrics of one replication (no job rows, no segments)."""
    if is_koala(scenario):
        return simulate_koala_replication(scenario, replication, False, False).metrics
    w = build_workload(scenario, replication)
    return _metrics(scenario, w, _simulate(scenario, w))


# ---- rows, segments, series -----------------------------------------------------------------------

def _rows(scenario: Scenario, w: GridWorkload, o: GridOutcome, replication: int) -> tuple[dict, np.ndarray]:
    """Job rows (local jobs, then one per component), sorted by submit; and for each row of the
    unsorted concatenation its position in the sorted rows."""
    L, G = w.local, w.glob
    n = len(L)
    st = o.local_state
    started = (st == K.L_RUNNING) | (st == K.L_DONE)
    l_status = np.full(n, STATUS_UNFINISHED, np.int8)
    l_status[st == K.L_DONE] = STATUS_COMPLETED
    l_status[st == K.L_KILLED] = STATUS_KILLED
    l_status[w.local_rejected] = STATUS_REJECTED
    l_start = np.where(started | (st == K.L_KILLED), o.local_start, np.nan)
    l_end = np.where((st == K.L_DONE) | (st == K.L_KILLED), o.local_end, np.nan)
    nc = G.components
    rep = np.repeat(np.arange(len(G)), nc)
    comp = (np.arange(len(rep)) - np.repeat(o.component_offset[:-1], nc)).astype(np.int16)
    gs = o.global_state[rep]
    placed = (gs == K.G_CLAIMED) | (gs == K.G_RUNNING) | (gs == K.G_DONE)
    g_status = np.full(len(rep), STATUS_UNFINISHED, np.int8)
    g_status[gs == K.G_DONE] = STATUS_COMPLETED
    g_status[gs == K.G_FAILED] = STATUS_FAILED
    D = G.deadline[rep]
    g_start = np.where((gs == K.G_RUNNING) | (gs == K.G_DONE), D, np.nan)
    g_end = np.where(gs == K.G_DONE, D + G.runtime[rep], np.nan)
    hold = o.global_hold[rep]
    cols = {
        "job_id": np.concatenate([w.local_id, w.global_id[rep]]),
        "stream": np.concatenate([w.local_stream, w.global_stream[rep]]).astype(np.int32),
        "cluster": np.concatenate([L.cluster, np.where(placed, o.component_cluster, -1)]).astype(np.int32),
        "submit": np.concatenate([L.submit, G.submit[rep]]),
        "start": np.concatenate([l_start, g_start]),
        "end": np.concatenate([l_end, g_end]),
        "processors": np.concatenate([L.size, G.size[rep]]).astype(np.int64),
        "runtime": np.concatenate([L.runtime, G.runtime[rep]]),
        "status": np.concatenate([l_status, g_status]),
        "component": np.concatenate([np.zeros(n, np.int16), comp]),
        "deadline": np.concatenate([np.full(n, np.nan), D]),
        "claimed_at": np.concatenate([np.full(n, np.nan), np.where(placed & (hold < D), hold, np.nan)]),
        "tries": np.concatenate([np.zeros(n, np.int32), o.global_tries[rep]]).astype(np.int32),
        "kills": np.concatenate([o.local_kills, o.global_kills[rep]]).astype(np.int32),
        # the job metrics (mean wait, response, slowdowns) are the local jobs' (see _metrics)
        "measured": np.concatenate([(L.submit >= scenario.run.warmup.time) & ~w.local_rejected & (st == K.L_DONE),
                                    np.zeros(len(rep), bool)]),
    }
    cols["cluster"][:n][w.local_rejected] = -1
    return order_job_rows(cols, replication, scenario.run.warmup.time)


def _holdings(w: GridWorkload, o: GridOutcome, t_end: float):
    """Every interval a cluster's processors were held: (cluster, t0, t1, size, row, D, kind code)
    with ``row`` in the unsorted concatenation of _rows; kind: run (local), killed, global (split
    at D into claimed and run)."""
    L, G = w.local, w.glob
    n = len(L)
    st = o.local_state
    run = np.flatnonzero((st == K.L_RUNNING) | (st == K.L_DONE))
    kj = o.kills["job"]
    nc = G.components
    rep = np.repeat(np.arange(len(G)), nc)
    gs = o.global_state[rep]
    held = np.flatnonzero((gs == K.G_CLAIMED) | (gs == K.G_RUNNING) | (gs == K.G_DONE))
    gj = rep[held]
    g_t1 = np.where(gs[held] == K.G_CLAIMED, t_end, np.minimum(G.deadline[gj] + G.runtime[gj], t_end))
    return (np.concatenate([L.cluster[run], L.cluster[kj], o.component_cluster[held]]),
            np.concatenate([o.local_start[run], o.kills["start"], o.global_hold[gj]]),
            np.concatenate([np.minimum(o.local_end[run], t_end), o.kills["time"], g_t1]),
            np.concatenate([L.size[run], L.size[kj], G.size[gj]]),
            np.concatenate([run, kj, n + held]),
            np.concatenate([np.full(len(run) + len(kj), np.nan), G.deadline[gj]]),
            np.concatenate([np.full(len(run), KIND_RUN), np.full(len(kj), KIND_KILLED),
                            np.full(len(held), GLOBAL)]).astype(np.int8))


def _segments(scenario: Scenario, w: GridWorkload, o: GridOutcome, position: np.ndarray,
              component: np.ndarray) -> dict[str, np.ndarray]:
    cl, t0, t1, size, row, D, kind = _holdings(w, o, o.t_end)
    keep = ~w.local_rejected
    n, kept = len(w.local), int(keep.sum())
    # slots (simengine.grid.holdings): local jobs by their index among the simulated ones, then components
    key = kept + row - n
    local = row < n
    key[local] = (np.cumsum(keep) - 1)[row[local]]
    slots = Slots(w.processors, w.local.cluster[keep], w.local.size[keep], np.repeat(w.glob.size, w.glob.components))
    h, cluster, first, count = final_blocks(slots, cl.astype(np.int64), key, t0, t1)
    parts = []
    for mask, a, b, k in block_rows(h, t0, t1, D, kind).values():
        sel = np.flatnonzero(mask)
        rows = position[row[h[sel]]]
        parts.append({"cluster": cluster[sel].astype(np.int32), "first_processor": first[sel].astype(np.int32),
                      "processors": count[sel].astype(np.int32), "t0": a[sel], "t1": b[sel],
                      "job": rows.astype(np.int64), "component": component[rows].astype(np.int16),
                      "kind": k[sel].astype(np.int8)})
    return ordered_segments({k: np.concatenate([p[k] for p in parts]) for k in SEGMENT_COLUMNS})


def _series(scenario: Scenario, w: GridWorkload, o: GridOutcome) -> dict[str, np.ndarray]:
    t_end = o.t_end
    t = np.linspace(0.0, max(t_end, 1e-9), SERIES_POINTS)
    cl, t0, t1, size, _, D, kind = _holdings(w, o, t_end)
    procs = w.processors
    sz = size.astype(float)
    out = {"time": t, "utilisation": active_sum(t0, t1, sz, t) / max(float(procs.sum()), 1.0)}
    g = kind < 0
    claimed_to = np.where(g, np.minimum(D, t1), t0)
    out["claimed"] = active_sum(t0[g], claimed_to[g], sz[g], t) / max(float(procs.sum()), 1.0)
    for c, spec in enumerate(scenario.platform.clusters):
        on = cl == c
        out[f"utilisation.{spec.name}"] = active_sum(t0[on], t1[on], sz[on], t) / spec.processors
    L = w.local  # the local jobs' queues (global jobs wait for their deadline, not in a queue)
    began = np.where(o.local_state == K.L_WAITING, np.nan, o.local_start)
    out.update(queue_series(t, L.submit, began, L.size, L.cluster, [c.name for c in scenario.platform.clusters]))
    return out


def simulate_replication(scenario: Scenario, replication: int, with_rows: bool = True,
                         with_segments: bool = False, live: LiveGantt | None = None) -> Replication:
    """One replication: metrics, and optionally its job rows and (replication 0) segments and
    series; with ``live``, its Gantt streams while it is simulated."""
    w = build_workload(scenario, replication)
    o = _simulate(scenario, w, live)
    metrics = _metrics(scenario, w, o)
    jobs = segments = series = None
    if with_rows or with_segments:
        jobs, position = _rows(scenario, w, o, replication)
        if with_segments:
            segments = _segments(scenario, w, o, position, jobs["component"])
            series = _series(scenario, w, o)
    return Replication(metrics, jobs, segments, series, w.notes)


# ---- the model ---------------------------------------------------------------------------------

def replicate(scenario: Scenario, r: int, with_segments: bool, on_step=None, live=None,
              place=None) -> Replication:
    """One replication (simengine.driver.Replicate); ``live``: its Gantt streams while it runs."""
    return simulate_replication(scenario, r, with_segments or scenario.run.keep_jobs == "all", with_segments, live)


def _prepare(scenario: Scenario) -> None:
    warm_up()


#: the grid layer's co-allocation (one compiled kernel per replication, which releases the GIL)
MODEL = Model("co-allocation", is_grid, replicate, gil_free=True, prepare=_prepare, warm_up=warm_up)
