"""Run a scenario whose workload is one evolving stream (``simengine.run`` dispatches here).

Per replication the stream's applications (given, or drawn from that replication's
SeedSequence child with the ``generate`` ranges) are scheduled offline on the target
cluster (n_max = its processors) with the cluster's ``evolving`` algorithm. The Result
has one job row per application (submit 0, start = first hold, end = completion,
processors = largest stage), the Gantt segments of Algorithm 1's node mapping (kinds
``run`` and ``stretched``, component = stage index) and the metrics of
:mod:`simengine.evolving.metrics` next to the usual ones, with 95% CIs over replications.
"""
from __future__ import annotations

import math

import numpy as np

from simengine.evolving.generate import FlatWorkload
from simengine.evolving.metrics import app_values, per_test_metrics
from simengine.evolving.models import ALGORITHMS
from simengine.evolving.schedule import schedule, schedule_flat
from simengine.evolving.schema import is_evolving
from simengine.driver import Model, Replication
import simengine.results as results
from simengine.evolving.mapping import Mapping
from simengine.gantt import SEGMENT_COLUMNS, ordered_segments
from simengine.results import BOUNDED_SLOWDOWN_TAU, JOB_DTYPES
from simengine.scenario import EvolvingStream, Scenario
from simengine.streaming import LiveGantt, empty_rows, live_rows, run_in_slices
from simengine.workload import STATUS_COMPLETED
from simengine.workload_build import replication_rngs

#: metrics of simengine.evolving.metrics, as named in the Result (per-job ones averaged)
_NAMES = {"waste": "waste_pct", "reservation": "reservation_vs_cbf", "utilisation": "utilisation_pct",
          "makespan": "makespan_vs_cbf", "jct": "jct_vs_cbf", "jwt": "jwt_vs_cbf", "stretches": "stretches_pct",
          "job_stretch": "mean_job_stretch_pct", "job_waste": "mean_job_waste_pct"}


def applications(scenario: Scenario, replication: int) -> list[list[tuple[float, int]]]:
    """The stream's applications as (duration, nodes) stages, drawn per replication when generated."""
    index, stream = next((i, s) for i, s in enumerate(scenario.workload.streams) if isinstance(s, EvolvingStream))
    if stream.applications is not None:
        return [[(st.duration, st.nodes) for st in app.stages] for app in stream.applications]
    g = stream.generate
    rng = replication_rngs(scenario, replication)[index]
    apps = int(rng.integers(g.applications[0], g.applications[1], endpoint=True))
    stages = rng.integers(g.stages[0], g.stages[1], size=apps, endpoint=True)
    total = int(stages.sum())
    d = rng.integers(g.duration[0], g.duration[1], size=total, endpoint=True)
    n = rng.integers(g.nodes[0], g.nodes[1], size=total, endpoint=True)
    off = np.concatenate([[0], np.cumsum(stages)])
    return [[(float(d[k]), int(n[k])) for k in range(off[a], off[a + 1])] for a in range(apps)]


#: stages at which Algorithm 2's plan and Algorithm 1's mapping, as a watched run streams it,
#: take about as long (the plan grows with the square of the stages, the mapping linearly:
#: 22.9 s and 2.75 s at 200,000 stages, benchmarks/evolving_plan.py, 2026-11-29); sets the
#: plan's share of a replication's progress
EVEN_STAGES = 24_000


def plan_share(stages: int) -> float:
    """The share of a replication's work its plan takes (the rest: the mapping's simulated time)."""
    return stages / (stages + EVEN_STAGES)


def _replication(scenario: Scenario, r: int, with_segments: bool, live: LiveGantt | None = None, on_step=None):
    index, stream = next((i, s) for i, s in enumerate(scenario.workload.streams) if isinstance(s, EvolvingStream))
    c = scenario.platform.cluster_index(stream.target)
    cluster = scenario.platform.clusters[c]
    params = cluster.scheduler.params
    n_max = cluster.processors
    requested = applications(scenario, r)
    names = [a.name for a in stream.applications] if stream.applications is not None else [None] * len(requested)
    share = plan_share(sum(len(app) for app in requested))
    on_planned = None
    if on_step is not None:
        def on_planned(done: int, of: int) -> None:
            on_step(share * (done / of) ** 2, 0.0)  # (each stage's fit scans an EP that grows with the stages)
    sched = schedule({"n_max": n_max, "algorithm": params["algorithm"],
                      "move_first_stage": params["move_first_stage"], "release": params["release"],
                      "applications": [{"name": nm, "stages": [list(s) for s in app]}
                                       for nm, app in zip(names, requested)]}, on_planned)
    seg = None
    if with_segments:
        seg = _segments(sched, live, c, index, share)
    A = len(requested)
    start = np.array([sched.start(a) for a in range(A)])
    end = np.array([sched.end(a) for a in range(A)])
    runtime = end - start
    jobs = {
        "job_id": np.arange(A, dtype=np.int64), "replication": np.full(A, r, np.int32),
        "stream": np.full(A, index, np.int32), "cluster": np.full(A, c, np.int32),
        "submit": np.zeros(A), "start": start, "end": end,
        "processors": np.array([max(n for _, n in app) for app in requested], np.int64),
        "runtime": runtime, "estimate": np.array([sum(d for d, _ in app) for app in requested]),
        "wait": start.copy(), "response": end.copy(),
        "slowdown": np.where(runtime > 0, end / np.where(runtime > 0, runtime, 1), np.nan),
        "bounded_slowdown": np.maximum(1.0, end / np.maximum(runtime, BOUNDED_SLOWDOWN_TAU)),
        "status": np.full(A, STATUS_COMPLETED, np.int8), "warmup": np.zeros(A, bool),
    }
    jobs = {k: np.asarray(v, JOB_DTYPES[k]) for k, v in jobs.items()}

    w = FlatWorkload.from_tests([requested])
    alg = ALGORITHMS[params["algorithm"]]
    mine = app_values(w, sched.flat, alg.rigid)
    makespan = float(end.max())
    on_baseline = None
    if on_step is not None:
        def on_baseline(done: int, of: int) -> None:  # (the mapping is over: a chance to stop, no more progress)
            on_step(1.0, makespan)
    cbf = app_values(w, schedule_flat(w, "cbf", n_max, on_planned=on_baseline), True)
    metrics = {_NAMES[k]: float(np.mean(v)) for k, v in per_test_metrics(w, mine, cbf, n_max).items()}
    used = float(mine.used.sum())
    metrics.update({
        "jobs_measured": float(A),
        **results.job_metrics(*(jobs[k] for k in ("wait", "response", "slowdown", "bounded_slowdown"))),
        "makespan": makespan, "utilisation": used / (n_max * makespan) if makespan > 0 else math.nan,
        f"utilisation.{cluster.name}": used / (n_max * makespan) if makespan > 0 else math.nan,
        "throughput": A / makespan if makespan > 0 else math.nan,
    })
    series = None
    if with_segments:
        series = results.segment_series(seg, scenario.platform.clusters, jobs, makespan)
    return jobs, seg, metrics, series


def _segments(sched, live: LiveGantt | None, c: int, stream: int, planned: float = 0.0) -> dict[str, np.ndarray]:
    """Algorithm 1's Gantt on cluster ``c``; ``live``: fed while the mapping walks the
    schedule in time order (every application is planned at time 0, before any runs, so the
    mapping is what follows simulated time; ``planned``: the replication's share done by then)."""
    m = Mapping(sched)
    if live is not None:
        makespan = sched.makespan
        seen, later = 0, []  # rows made and not closed at the last report

        def report(T: float) -> bool:
            nonlocal seen, later
            F = min(T, makespan)
            later += m.rows[seen:]
            seen = len(m.rows)
            closed = [row for row in later if row[4] < F]
            later = [row for row in later if row[4] >= F]
            live.update(F, _live_rows(closed, c, stream), _live_rows([row for row in later if row[3] < F], c, stream))
            return m.done

        live.expect(0.0, makespan, done=planned)
        run_in_slices(0.0, makespan, m.advance, report)
    seg = m.segments()
    seg["cluster"][:] = c
    return ordered_segments(seg)


def _live_rows(rows: list[tuple], c: int, stream: int) -> dict[str, np.ndarray]:
    """Mapping rows (SEGMENT_COLUMNS order, ``job`` = the application) as streamed rows."""
    if not rows:
        return empty_rows()
    cols = dict(zip(SEGMENT_COLUMNS, zip(*rows)))
    n = len(rows)
    return live_rows({"cluster": np.full(n, c), "first_processor": cols["first_processor"],
                      "processors": cols["processors"], "t0": cols["t0"], "t1": cols["t1"], "kind": cols["kind"],
                      "component": cols["component"], "job_id": cols["job"], "stream": np.full(n, stream)}, n)


def replicate(scenario: Scenario, r: int, with_segments: bool, on_step=None, live=None,
              place=None) -> Replication:
    """One replication (simengine.driver.Replicate): planned offline (compiled, every
    application at time 0, in slices that report progress and may be stopped), then its Gantt
    streams while Algorithm 1 maps it in time order."""
    jobs, seg, metrics, series = _replication(scenario, r, with_segments=with_segments, live=live, on_step=on_step)
    return Replication(metrics, jobs, seg, series)


def warm_up() -> None:
    """Load Algorithm 2's compiled pass (compiled, the first time) on a tiny input."""
    schedule_flat(FlatWorkload.from_tests([[[(1.0, 1)]]]), "mic+c", 1)


#: evolving applications scheduled offline on one cluster (Algorithm 1's node mapping)
MODEL = Model("evolving", is_evolving, replicate, warm_up=warm_up)
