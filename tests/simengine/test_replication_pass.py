"""The compiled per-replication pass and the threaded replication path give exactly what
the plain-numpy definitions give (rows, statuses, warm-up, metrics: bit for bit)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import simengine
from simengine.results import JOB_COLUMNS, finish_rows, percentile_linear
from simengine import kernel_model
from simengine.driver import SharedRows
from simengine.site_allocation import choose
from simengine.workload import STATUS_COMPLETED, STATUS_KILLED, STATUS_REJECTED, STATUS_UNFINISHED

TAU = 10.0


def reference_finish(submit, runtime, killed, cluster, start, t_stop, keep, warm_time, w, processors):
    """The step the way it was written in numpy (docs/output.md): rows and metrics."""
    n = len(submit)
    end = start + runtime
    started = ~np.isnan(start) & (start <= t_stop)
    start = np.where(started, start, np.nan)
    done = started & (end <= t_stop)
    held = np.where(started, np.minimum(end, t_stop), np.nan)
    end = np.where(done, end, np.nan)
    status = np.full(n, STATUS_UNFINISHED, np.int8)
    status[done] = STATUS_COMPLETED
    status[done & killed] = STATUS_KILLED
    status[cluster < 0] = STATUS_REJECTED
    warmup = submit < warm_time
    t_warm = warm_time
    if w and done.sum() >= w:
        ends = np.where(done, end, np.inf)
        t_w = float(np.partition(ends, w - 1)[w - 1])
        before = ends < t_w
        warmup |= before
        warmup[np.flatnonzero(ends == t_w)[:w - int(before.sum())]] = True
        t_warm = max(t_warm, t_w)
    wait, response = start - submit, end - submit
    with np.errstate(divide="ignore", invalid="ignore"):
        slowdown = np.where(runtime > 0, response / runtime, np.nan)
        bounded = np.maximum(response / np.maximum(runtime, TAU), 1.0)
    rows = {"submit": submit, "start": start, "end": end, "runtime": runtime, "wait": wait, "response": response,
            "slowdown": slowdown, "bounded_slowdown": bounded, "status": status, "warmup": warmup,
            "cluster": cluster.astype(np.int32)}
    rows = {k: v[:keep] for k, v in rows.items()}
    held = held[:keep]
    measured = ~rows["warmup"] & np.isin(rows["status"], (STATUS_COMPLETED, STATUS_KILLED))
    m = int(measured.sum())
    out = {"jobs_measured": float(m)}
    for key in ("wait", "response", "slowdown", "bounded_slowdown"):
        v = rows[key][measured]
        out[f"mean_{key}"] = (float(np.nanmean(v)) if key == "slowdown" else float(v.mean())) if m else math.nan
    out["max_response"] = float(rows["response"][measured].max()) if m else math.nan
    out["p95_wait"] = float(np.percentile(rows["wait"][measured], 95)) if m else math.nan
    t0, t1 = t_warm, t_stop
    on = ~np.isnan(rows["start"])
    busy = (np.clip(held[on], t0, t1) - np.clip(rows["start"][on], t0, t1)) * 1
    capacity = sum(processors)
    out["utilisation"] = float(busy.sum()) / (capacity * (t1 - t0)) if t1 > t0 else math.nan
    out["throughput"] = m / (t1 - t0) if t1 > t0 else math.nan
    out["makespan"] = float(np.nanmax(held) - np.nanmin(rows["submit"])) if on.any() else math.nan
    per = np.bincount(rows["cluster"][on], weights=busy, minlength=len(processors))
    per = per / (np.asarray(processors) * (t1 - t0)) if t1 > t0 else np.full(len(processors), math.nan)
    for c, u in enumerate(per):
        out[f"utilisation.c{c}"] = float(u)
    return rows, out


def same(a, b):
    return a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))


@pytest.mark.parametrize("seed", range(12))
def test_compiled_pass_equals_the_numpy_definitions(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    processors = [3, 5, 8]
    submit = np.sort(rng.exponential(1.0, n).cumsum() * rng.choice([1, 0.5]))
    submit[rng.random(n) < 0.05] = submit[0]  # ties in submit times
    submit.sort()
    runtime = rng.exponential(5.0, n)
    runtime[rng.random(n) < 0.05] = 0.0  # zero-length jobs
    runtime = np.round(runtime, 1)  # ties in end times
    start = np.round(submit + rng.exponential(3.0, n), 1)
    start = np.maximum(start, submit)
    start[rng.random(n) < 0.1] = np.nan  # never started
    cluster = rng.integers(0, len(processors), n).astype(np.int64)
    cluster[rng.random(n) < 0.03] = -1
    start[cluster < 0] = np.nan
    killed = rng.random(n) < 0.1
    ends = np.sort((start + runtime)[~np.isnan(start)])
    t_stop = float(ends[len(ends) // 2]) if len(ends) and seed % 3 else float(submit[-1] + 7.5)
    keep = int(np.searchsorted(submit, t_stop, side="right")) if seed % 2 else n
    w = [0, 1, 10, 10 ** 6][seed % 4]
    warm_time = [0.0, float(submit[n // 4])][seed % 2]
    rows, ref = reference_finish(submit, runtime, killed, cluster, start, t_stop, keep, warm_time, w, processors)
    out = {k: np.empty(keep, v.dtype) for k, v in simengine.results.empty_job_rows(0).items()}
    held = np.empty(keep)
    ones = np.ones(n, np.int64)
    got = finish_rows(submit, runtime, killed, cluster, start, np.arange(n, dtype=np.int64), np.zeros(n, np.int32),
                      ones, runtime * 2, 4, keep, t_stop, warm_time, w, ["c0", "c1", "c2"], processors, out, held)
    for k, v in rows.items():
        assert v.tobytes() == out[k].tobytes(), k
    assert (out["replication"] == 4).all() and (out["job_id"] == np.arange(keep)).all()
    assert list(got) == list(ref)
    for k in ref:
        assert same(got[k], ref[k]), (k, got[k], ref[k])
    metrics_only = finish_rows(submit, runtime, killed, cluster, start, np.arange(n, dtype=np.int64),
                               np.zeros(n, np.int32), ones, runtime, 4, keep, t_stop, warm_time, w,
                               ["c0", "c1", "c2"], processors, None, None)
    assert all(same(metrics_only[k], got[k]) for k in got)


def test_percentile_equals_numpy():
    rng = np.random.default_rng(1)
    for n in list(range(1, 60)) + [1000, 75001]:
        for x in (rng.exponential(size=n), rng.integers(0, 4, n).astype(float)):
            for q in (0, 12.5, 50, 95, 99.9, 100):
                assert percentile_linear(x, q) == float(np.percentile(x, q))


@pytest.mark.parametrize("weights", [[8, 16, 24, 32], [1, 0, 3], [5], [1, 1, 1, 1, 1, 1, 1]])
def test_choose_draws_what_rng_choice_draws(weights):
    p = np.asarray(weights, float) / sum(weights)
    for seed in range(20):
        m = 1 + 37 * seed
        a = np.random.default_rng(seed)
        b = np.random.default_rng(seed)
        out = np.empty(m, np.int32)
        choose(a, p, out)
        np.testing.assert_array_equal(out, b.choice(len(p), size=m, p=p))
        assert a.random() == b.random()  # and used the stream the same way


def test_rows_that_do_not_fit_the_shared_columns_are_joined_in_order():
    rows = SharedRows(3)
    parts = [rows.take(0, 5, 2), rows.take(1, 4000, 2), rows.take(2, 3, 2)]  # capacity 3 x 1026 rows
    assert 1 in rows.spilled and 2 in rows.spilled
    for r, part in enumerate(parts):
        for k in JOB_COLUMNS:
            part[k][:] = r
    got = rows.result()
    assert len(got["submit"]) == 4008
    np.testing.assert_array_equal(got["replication"], np.repeat([0, 1, 2], [5, 4000, 3]))


def zikos_grid(**run):
    s = {"name": "grid", "platform": {"preset": "grid-4site-zikos"},
         "workload": {"streams": [{"kind": "synthetic", "name": "g", "target": "grid",
                                   "arrival": {"mean_interarrival": 0.02},
                                   "size": {"kind": "constant", "value": 1},
                                   "runtime": {"kind": "bounded_pareto", "alpha": 1.5, "high": 100, "mean": 1}}]},
         "run": {"seed": 3, "replications": 3, "stop": {"completions": 2000}, "warmup": {"completions": 100}}}
    s["run"].update(run)
    return s


@pytest.mark.parametrize("policy", ["random", "deferred"])
def test_a_horizon_before_the_completions_ends_the_run(policy):
    # the streams end at the horizon, so drawing more jobs cannot reach 4000 completions
    s = zikos_grid(stop={"horizon": 50, "completions": 4000})
    s["grid"] = {"site_allocation": {"name": policy}}
    result = simengine.run(s)
    assert all("of 4000 completions" in n for n in result.notes) and len(result.notes) == 3
    assert (result.jobs["submit"] < 50).all()


def test_threaded_replications_equal_one_at_a_time():
    together = simengine.run(zikos_grid(replications=4))
    for r in range(4):
        # the kernel path (the LWR scheduler kernel, cluster by cluster), not the one-pass LWR grid
        alone = kernel_model.replicate(simengine.load_scenario(zikos_grid(replications=4)), r, with_segments=False)
        mine = together.jobs["replication"] == r
        for k in JOB_COLUMNS:
            if k != "replication":
                assert together.jobs[k][mine].tobytes() == alone.jobs[k].tobytes(), k
        assert all(same(together.metrics[k].values[r], v) for k, v in alone.metrics.items())


@pytest.mark.parametrize("grid,workers", [(True, None), (False, 1), (False, 2)])
def test_keep_jobs_first_keeps_replication_0s_rows_and_every_metric(grid, workers):
    if grid:
        s = zikos_grid(replications=4)
    else:
        s = {"name": "easy", "platform": {"clusters": [{"name": "c", "processors": 16,
                                                          "scheduler": {"name": "easy"}}]},
             "workload": {"streams": [{"kind": "synthetic", "name": "s", "target": "c",
                                       "arrival": {"target_load": 0.8}, "size": {"kind": "uniform", "low": 1, "high": 8},
                                       "runtime": {"kind": "exponential", "mean": 50}}]},
             "run": {"seed": 4, "replications": 3, "stop": {"completions": 1500}, "warmup": {"completions": 50}}}
    everything = simengine.run(s, workers=workers)
    s["run"]["keep_jobs"] = "first"
    first = simengine.run(s, workers=workers)
    mine = everything.jobs["replication"] == 0
    for k in JOB_COLUMNS:
        assert first.jobs[k].tobytes() == everything.jobs[k][mine].tobytes(), k
    for k, m in everything.metrics.items():
        assert all(same(a, b) for a, b in zip(m.values, first.metrics[k].values)), k
    for k in everything.segments:
        assert first.segments[k].tobytes() == everything.segments[k].tobytes()
    assert first.replications == everything.replications and first.summary()["jobs"] == int(mine.sum())


def test_keep_jobs_is_recorded_only_when_not_the_default():
    s = zikos_grid()
    default = simengine.load_scenario(s)
    assert "keep_jobs" not in default.model_dump(mode="json")["run"]  # hashes of older scenarios stay
    s["run"]["keep_jobs"] = "first"
    first = simengine.load_scenario(s)
    assert first.model_dump(mode="json")["run"]["keep_jobs"] == "first"
    assert simengine.scenario_hash(first) != simengine.scenario_hash(default)
    assert simengine.load_scenario(first.to_json()).run.keep_jobs == "first"
    s["run"]["keep_jobs"] = "none"
    with pytest.raises(simengine.errors.ScenarioError) as e:
        simengine.load_scenario(s)
    assert any(err.path == "run.keep_jobs" for err in e.value.errors)
