"""Resource failures of local clusters (simengine.local.failures, docs/failures.md): down intervals
kill the jobs on their processors (requeued or lost) against a straightforward reference, break
reservations, are seen by Python policies as by the compiled ones, and give the availability of
the alternating renewal process, MTBF / (MTBF + MTTR)."""
from __future__ import annotations

import numpy as np
import pytest

import simengine
from simengine.errors import ScenarioError
from simengine.grid.koala import KoalaJob, KoalaPolicy, simulate_koala
from simengine.grid.koala_run import simulate_koala_replication
from simengine.gantt import KIND_DOWN, KIND_KILLED, KIND_RUN
from simengine.local import core
from simengine.local.cluster import AR_DONE, DONE, KILLED, AdvanceReservation, ClusterSim
from simengine.local.failures import Failures, down_time, draw_outages
from simengine.registry import LOCAL_SCHEDULERS
from simengine.local.schema import PYTHON_TWINS
from simengine.results import Metric
from simengine.scenario import load_scenario


def _outages(rows, mode=core.DOWN_REQUEUE):
    return [AdvanceReservation(index=k, processors=int(r[3]), start=float(r[0]), end=float(r[1]),
                               request_time=float(r[0]), outage=mode, first=int(r[2])) for k, r in enumerate(rows)]


def reference_fcfs(P, submit, runtime, size, rows, lose):
    """FCFS on P processors, event by event in plain Python: at each instant ends and repairs, then
    failures (the jobs holding a failed processor are killed: back in the queue in submit order, or
    lost), then arrivals, then heads start on the lowest free processors while they fit."""
    n = len(submit)
    owner = [-1] * P  # job, -1 free, -2 down
    start, end, state, failures = [np.nan] * n, [np.nan] * n, ["wait"] * n, [0] * n
    run_end, procs, queue = {}, {}, []
    times = sorted(set(submit) | {r[0] for r in rows} | {r[1] for r in rows})
    arrived = 0
    while True:
        cands = [t for t in times] + list(run_end.values())
        cands = [t for t in cands if t is not None]
        if not cands:
            break
        t = min(cands)
        times = [x for x in times if x > t]
        for j in [j for j, e in run_end.items() if e <= t]:
            del run_end[j]
            end[j], state[j] = t, "done"
            for p in procs.pop(j):
                owner[p] = -1
        for r in rows:
            if r[1] == t:
                for p in range(int(r[2]), int(r[2] + r[3])):
                    owner[p] = -1
        for r in rows:
            if r[0] == t:
                for p in range(int(r[2]), int(r[2] + r[3])):
                    j = owner[p]
                    if j >= 0:
                        failures[j] += 1
                        del run_end[j]
                        for q in procs.pop(j):
                            owner[q] = -1
                        if lose:
                            state[j], end[j] = "killed", t
                        else:
                            state[j] = "queued"
                            queue.append(j)
                    owner[p] = -2
        while arrived < n and submit[arrived] <= t:
            queue.append(arrived)
            state[arrived] = "queued"
            arrived += 1
        queue.sort()
        while queue and sum(o == -1 for o in owner) >= size[queue[0]]:
            j = queue.pop(0)
            mine = [p for p in range(P) if owner[p] == -1][:size[j]]
            for p in mine:
                owner[p] = j
            procs[j] = mine
            if np.isnan(start[j]):
                start[j] = t
            run_end[j] = t + runtime[j]
            state[j] = "running"
        if not run_end and arrived == n and not times:
            break
    return np.array(start), np.array(end), state, failures


def _case(seed):
    rng = np.random.default_rng(seed)
    P, n = 16, 60
    submit = np.sort(rng.uniform(0, 20_000, n)).round(1)
    runtime = rng.exponential(900, n).round(1) + 1.0
    size = rng.integers(1, 9, n)
    f = Failures.model_validate({"mtbf": {"kind": "exponential", "mean": 8000.0},
                                 "mttr": {"kind": "exponential", "mean": 1500.0}, "group": int(rng.choice([1, 4]))})
    rows = draw_outages(f, P, 40_000.0, rng).round(1)
    return P, submit, runtime, size, rows


@pytest.mark.parametrize("lose", [False, True])
def test_fcfs_with_failures_follows_a_straightforward_reference(lose):
    killed = 0
    for seed in range(12):
        P, submit, runtime, size, rows = _case(seed)
        mode = core.DOWN_LOSE if lose else core.DOWN_REQUEUE
        sim = ClusterSim(P, "fcfs", submit, runtime, runtime, size, outages=_outages(rows, mode)).run()
        start, end, state, failures = reference_fcfs(P, submit.tolist(), runtime.tolist(), size.tolist(),
                                                     rows.tolist(), lose)
        np.testing.assert_array_equal(sim.first_start, start, err_msg=f"seed {seed}")
        np.testing.assert_array_equal(sim.end, end, err_msg=f"seed {seed}")
        assert sim.failures.tolist() == failures, seed
        assert [{DONE: "done", KILLED: "killed"}[x] for x in sim.state] == state, seed
        killed += sum(failures)
        # no job runs on a processor while it is down
        down = [(p[1], p[2], set(p[4])) for p in sim.pieces if p[3] == KIND_DOWN]
        # (the run ends with its last job: later outages are not simulated, an open one is not a piece)
        last = float(np.nanmax(sim.end))
        assert sorted((a, b) for a, b, _ in down) == sorted((r[0], r[1]) for r in rows.tolist() if r[1] < last)
        for owner, t0, t1, kind, procs in sim.pieces:
            if kind in (KIND_RUN, KIND_KILLED):
                assert not any(a < t1 and t0 < b and set(procs) & ps for a, b, ps in down), (seed, owner)
    assert killed > 20  # the cases exercise kills


@pytest.mark.parametrize("policy", sorted(PYTHON_TWINS))
def test_a_python_policy_sees_the_outages_as_the_compiled_pass_does(policy):
    # the plain-Python twin decides through the event API (free processors, the reservations'
    # windows): with failures and announced maintenance it must give the compiled pass's schedule
    twin = LOCAL_SCHEDULERS.get(PYTHON_TWINS[policy]).implementation.policy
    for seed in range(4):
        P, submit, runtime, size, rows = _case(seed)
        estimate = (runtime * 1.5).round(1)

        def outages():  # the drawn failures, and a maintenance window of half the cluster announced an hour before
            maintenance = AdvanceReservation(index=len(rows), processors=P // 2, start=9000.0, end=12600.0,
                                             request_time=5400.0, outage=core.DOWN_REQUEUE, first=0)
            return _outages(rows) + [maintenance]

        a = ClusterSim(P, policy, submit, runtime, estimate, size, outages=outages()).run()
        b = ClusterSim(P, policy, submit, runtime, estimate, size, outages=outages(), python=twin).run()
        np.testing.assert_array_equal(a.first_start, b.first_start, err_msg=f"{policy} seed {seed}")
        np.testing.assert_array_equal(a.end, b.end)
        assert a.failures.sum() > 0


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
def test_a_reservation_on_failed_processors_is_broken_and_nothing_runs_there(policy):
    # 8 processors; a reservation of 6 over [100, 200); processors 0-3 go down over [50, 150):
    # the window opens with 4 up and free (broken: 2 missing); at 120 the whole cluster fails,
    # taking the reservation's processors (broken further)
    ar = AdvanceReservation(index=0, processors=6, start=100.0, end=200.0, request_time=0.0, job_runtime=90.0)
    rows = [(50.0, 150.0, 0, 4), (120.0, 130.0, 0, 8)]
    sim = ClusterSim(8, policy, [0.0, 1.0], [300.0, 30.0], [300.0, 30.0], [2, 2], reservations=[ar],
                     outages=_outages(rows)).run()
    assert ar.status == AR_DONE and ar.broken == 2 + 4
    # job 1 ended at 31; job 0, on 0-1, was killed at 50 and restarted at 150, when processors 0-3 were
    # back and the reservation's 6 left room for it
    assert sim.failures.tolist() == [1, 0] and sim.state.tolist() == [DONE, DONE]
    assert sim.lost.tolist() == [50.0, 0.0] and sim.first_start.tolist() == [0.0, 1.0]
    assert sim.end.tolist() == [450.0, 31.0]
    # the second outage found 0-3 down until later: it took the reservation's 4-7 only
    downs = sorted((p[1], p[2], p[4]) for p in sim.pieces if p[3] == KIND_DOWN)
    assert downs == [(50.0, 150.0, (0, 1, 2, 3)), (120.0, 130.0, (4, 5, 6, 7))]
    assert all(p[0][0] == "d" for p in sim.pieces if p[3] == KIND_DOWN)


@pytest.mark.parametrize("mttr", [{"kind": "exponential", "mean": 250.0},
                                  {"kind": "lognormal", "mean": 250.0, "sigma": 1.2}])
@pytest.mark.parametrize("group", [1, 8])
def test_availability_is_mtbf_over_mtbf_plus_mttr(mttr, group):
    # an alternating renewal process, up at 0: the long-run share of time up is E[up] / (E[up] + E[down])
    # whatever the distributions (one job, long after it ends, the cluster only fails)
    d = {"platform": {"clusters": [{"name": "a", "processors": 8, "failures": {
        "mtbf": {"kind": "exponential", "mean": 1000.0}, "mttr": mttr, "group": group}}]},
         "workload": {"streams": [{"kind": "synthetic", "name": "s", "target": "a", "count": 1,
                                   "arrival": {"rate": 0.01}, "size": {"kind": "constant", "value": 1},
                                   "runtime": {"kind": "constant", "value": 10.0}}]},
         "run": {"seed": 3, "replications": 20, "stop": {"horizon": 400_000.0}}}
    result = simengine.run(load_scenario(d))
    m = result.metrics["availability"]
    assert m.ci_low <= 1000.0 / 1250.0 <= m.ci_high, (m.mean, m.ci_low, m.ci_high)
    assert m.ci_high - m.ci_low < 0.05  # tight enough to mean something
    assert 0.0 <= m.ci_low and m.ci_high <= 1.0


def test_down_time_counts_overlapping_intervals_once():
    rows = np.array([[0.0, 10.0, 0, 4], [5.0, 20.0, 2, 4], [30.0, 40.0, 0, 8]])
    # processors 0-1: [0, 10) and [30, 40); 2-3: [0, 20) and [30, 40); 4-5: [5, 20), [30, 40); 6-7: [30, 40)
    assert down_time(rows, 8, 0.0, 100.0) == 2 * 20 + 2 * 30 + 2 * 25 + 2 * 10
    assert down_time(rows, 8, 35.0, 100.0) == 8 * 5


def _scenario(**failures):
    return {"platform": {"clusters": [{"name": "a", "processors": 16, "scheduler": {"name": "easy"},
                                       "failures": failures}]},
            "workload": {"streams": [{"kind": "synthetic", "name": "s", "target": "a", "count": 200,
                                      "arrival": {"target_load": 0.6},
                                      "size": {"kind": "uniform", "low": 1, "high": 8, "integer": True},
                                      "runtime": {"kind": "exponential", "mean": 600.0}}]},
            "run": {"seed": 5, "replications": 2}}


def test_a_run_with_failures_reports_them_and_without_keeps_its_results():
    exp = {"kind": "exponential", "mean": 20_000.0}
    d = _scenario(mtbf=exp, mttr={"kind": "exponential", "mean": 2000.0}, group=4)
    with_f = simengine.run(load_scenario(d))
    del d["platform"]["clusters"][0]["failures"]
    without = simengine.run(load_scenario(d))
    assert "availability" not in without.metrics and "failures" not in without.jobs
    m = with_f.metrics
    assert 0 < m["availability"].mean < 1 and 0 < m["goodput"].mean < 1 and m["failures_per_job"].mean > 0
    assert m["lost_work"].mean > 0
    # the workload is the same: failures draw from their own generator
    assert np.array_equal(with_f.jobs["submit"], without.jobs["submit"])
    assert int(with_f.jobs["failures"].sum()) > 0
    seg = with_f.segments
    down = seg["kind"] == KIND_DOWN
    assert down.any() and (seg["job"][down] == -1).all()
    # lost work is the killed segments' processor time
    killed = seg["kind"] == KIND_KILLED
    rep0 = float(((seg["t1"] - seg["t0"]) * seg["processors"])[killed].sum())
    assert rep0 == pytest.approx(m["lost_work"].values[0])


@pytest.mark.parametrize("failures,path,message", [
    ({"mtbf": {"kind": "exponential", "mean": 10.0}}, "platform.clusters.0.failures", "mttr is missing"),
    ({"down": [{"start": 5.0, "end": 4.0}]}, "platform.clusters.0.failures.down.0", "end must be after start"),
    ({"down": [{"start": 5.0, "end": 9.0, "first": 16}]}, "platform.clusters.0.failures.down.0.first",
     "must be below the cluster's 16 processors"),
    ({"mtbf": {"kind": "exponential", "mean": 10.0}, "mttr": {"kind": "exponential", "mean": 1.0}, "group": 17},
     "platform.clusters.0.failures.group", "must be at most the cluster's 16 processors"),
    ({}, "platform.clusters.0.failures", "no failures"),
])
def test_bad_failures_are_refused_naming_the_field(failures, path, message):
    with pytest.raises(ScenarioError) as e:
        load_scenario(_scenario(**failures))
    assert any(err.path == path and message in err.message for err in e.value.errors), e.value.errors


def _koala(**failures):
    return {"platform": {"clusters": [{"name": "a", "processors": 32, "failures": failures},
                                      {"name": "b", "processors": 32}]},
            "workload": {"streams": [{"kind": "koala", "name": "k", "count": 60, "arrival": {"rate": 0.01},
                                      "shapes": [{"components": 2, "size": 8, "runtime": 300.0}]}]},
            "run": {"seed": 4, "replications": 3}}


def test_partial_failures_on_a_koala_grid_and_failures_on_a_coallocation_grid_are_refused():
    exp = {"kind": "exponential", "mean": 1000.0}
    with pytest.raises(ScenarioError) as e:
        load_scenario(_koala(mtbf=exp, mttr=exp, group=4, down=[{"start": 1, "end": 2, "processors": 8}]))
    paths = {err.path: err.message for err in e.value.errors}
    assert "KOALA's clusters fail whole: give group 32" in paths["platform.clusters.0.failures.group"]
    assert "fail whole" in paths["platform.clusters.0.failures.down.0"]
    d = _koala(down=[{"start": 1, "end": 2}])
    d["workload"]["streams"][0] = {"kind": "coallocated", "name": "g", "count": 10, "arrival": {"rate": 0.01},
                                   "size": {"kind": "constant", "value": 4},
                                   "runtime": {"kind": "constant", "value": 60.0}, "deadline": {"min": 1, "max": 60}}
    with pytest.raises(ScenarioError) as e:
        load_scenario(d)
    assert any(err.path == "platform.clusters.0.failures" and "not simulated with coallocated streams" in err.message
               for err in e.value.errors), e.value.errors


@pytest.mark.parametrize("requeue", [True, False])
def test_a_koala_job_fails_whole_when_a_cluster_of_its_components_fails(requeue):
    # two components of 4 placed on both 8-processor clusters at the scan at 60 (no files: they start
    # there); cluster 1 is down over [100, 400): the job loses its 40 s on both clusters, goes back to
    # placement, and the scan at 120 places both components on cluster 0. The local job on cluster 1
    # (50 .. 250) is killed at 100: requeued, it restarts at the repair; else it is lost.
    local = (np.array([50.0]), np.array([200.0]), np.array([2]), np.array([1]))
    o = simulate_koala([8, 8], [KoalaJob(1.0, 500.0, [4, 4])], KoalaPolicy(placement="worst-fit"), None, local,
                       outages=[(1, 100.0, 400.0)], local_requeue=requeue)
    k = o.jobs[0]
    assert (k.state, k.failures, k.start, k.end, k.placements) == ("done", 1, 120.0, 620.0, 2)
    assert [c[1] for c in k.comps] == [0, 0]
    killed = sorted(h[:4] for h in o.holdings if h[5] == "killed" and h[4][0] == "K")
    assert killed == [(0, 60.0, 100.0, 4), (1, 60.0, 100.0, 4)]
    assert [h[:4] for h in o.holdings if h[5] == "down"] == [(1, 100.0, 400.0, 8)] and o.down == [(1, 100.0, 400.0)]
    if requeue:
        assert (o.local_start[0], o.local_end[0], o.local_state[0]) == (400.0, 600.0, 2)
    else:
        assert (o.local_end[0], o.local_state[0]) == (100.0, 3)


def test_koala_completes_every_job_through_cluster_failures_and_nothing_runs_on_a_cluster_down():
    exp = {"kind": "exponential", "mean": 1500.0}
    d = _koala(mtbf=exp, mttr={"kind": "exponential", "mean": 600.0}, group=32)
    d["platform"]["clusters"][1]["failures"] = {"down": [{"start": 2000.0, "end": 3000.0}], "jobs": "lose"}
    s = load_scenario(d)
    failures = 0
    for r in range(3):
        out = simulate_koala_replication(s, r, True, True)
        o = out.outcome
        assert all(k.state == "done" for k in o.jobs), r  # "KOALA succeeds in getting all jobs to complete"
        assert (1, 2000.0, 3000.0) in o.down
        for c, a, b in o.down:
            assert not [h for h in o.holdings if h[0] == c and h[5] != "down" and h[1] < b and a < h[2]
                        and h[2] > h[1]], (r, c, a, b)
        failures += sum(k.failures for k in o.jobs)
        m = out.metrics
        assert 0.0 < m["availability"] < 1.0 and m["failures_per_job"] >= 0.0
        seg = out.segments
        assert (seg["kind"] == KIND_DOWN).sum() == len(o.down) and (seg["job"][seg["kind"] == KIND_DOWN] == -1).all()
    assert failures > 0


def test_a_koala_run_streams_its_down_intervals_live(monkeypatch):
    from simengine import streaming
    from tests.simengine.live_stream import check_live_stream
    monkeypatch.setattr(streaming, "LIVE_INTERVAL", 0.0)
    d = _koala(down=[{"start": 400.0, "end": 1500.0}])
    chunks = []
    result = simengine.run(load_scenario(d), on_progress=chunks.append)
    check_live_stream(chunks, result, during=True, late_rows=False)
    assert (result.segments["kind"] == KIND_DOWN).any()


def test_too_many_down_intervals_are_refused_before_the_run():
    d = _scenario(mtbf={"kind": "constant", "value": 0.001}, mttr={"kind": "constant", "value": 0.001})
    d["run"]["stop"] = {"horizon": 1e6}
    with pytest.raises(ScenarioError, match="platform.clusters.0.failures.mtbf: .* down intervals"):
        simengine.run(load_scenario(d))


def test_metric_values_stay_in_their_domain():
    m = Metric.from_values("availability", [0.999, 1.0, 0.998])
    assert m.ci_high <= 1.0


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
def test_announced_maintenance_is_planned_around_and_a_surprise_one_kills(policy):
    # 8 processors down over [1000, 2000). Job 0 (8 processors, 1500 s) arrives at 0; job 1 (4
    # processors, 500 s) at 10. Announced at 0, the window is a reservation every policy plans
    # around: job 0 cannot finish before it and waits until 2000; job 1 fits before it (EASY and
    # conservative backfill it; FCFS keeps it behind job 0). Unannounced, job 0 starts at 0 and is
    # killed at 1000.
    def run(notice):
        d = Failures.model_validate({"down": [{"start": 1000.0, "end": 2000.0, "notice": notice}]})
        rows = draw_outages(d, 8, 0.0, np.random.default_rng(0))
        out = [AdvanceReservation(index=k, processors=int(r[3]), start=float(r[0]), end=float(r[1]),
                                  request_time=float(r[4]), outage=core.DOWN_REQUEUE, first=int(r[2]))
               for k, r in enumerate(rows)]
        return ClusterSim(8, policy, [0.0, 10.0], [1500.0, 500.0], [1500.0, 500.0], [8, 4], outages=out).run()

    told = run(1000.0)
    assert told.failures.tolist() == [0, 0] and told.first_start[0] == 2000.0 and told.end[0] == 3500.0
    assert told.first_start[1] == (3500.0 if policy == "fcfs" else 10.0)
    surprise = run(0.0)
    assert surprise.failures.tolist() == [1, 0] and surprise.first_start[0] == 0.0 and surprise.lost[0] == 1000.0
    assert surprise.end[0] == 3500.0  # restarted at the repair


def test_notice_is_left_out_when_zero_and_refused_on_koala():
    d = _scenario(down=[{"start": 5.0, "end": 9.0}])
    assert "notice" not in load_scenario(d).platform.clusters[0].failures.down[0].model_dump()
    with pytest.raises(ScenarioError) as e:
        load_scenario(_koala(down=[{"start": 1.0, "end": 2.0, "notice": 60.0}]))
    assert any(err.path == "platform.clusters.0.failures.down.0.notice" for err in e.value.errors), e.value.errors


# ---- down intervals from a CSV file ------------------------------------------------------------------------


def _with_down(tmp_path, text, **failures):
    (tmp_path / "down.csv").write_text(text)
    d = _scenario(down_file="down.csv", **failures)
    d["run"]["replications"] = 3
    return d


DOWN_CSV = """# a node twice, then half the cluster announced ahead
start,end,first,processors,notice
1200,4800,0,4,
9000.5,12000,4,4,0
20000,30000,,8,3600
"""


def test_a_down_interval_file_gives_what_the_same_intervals_inline_give(tmp_path):

    d = _with_down(tmp_path, DOWN_CSV)
    from_file = load_scenario(d, base_dir=tmp_path)
    inline = [{"start": 1200.0, "end": 4800.0, "first": 0, "processors": 4},
              {"start": 9000.5, "end": 12000.0, "first": 4, "processors": 4},
              {"start": 20000.0, "end": 30000.0, "processors": 8, "notice": 3600.0}]
    assert [i.model_dump() for i in from_file.platform.clusters[0].failures.intervals] == \
        [load_scenario(_scenario(down=inline)).platform.clusters[0].failures.down[k].model_dump() for k in range(3)]
    a = simengine.run(from_file, workers=1)
    d2 = _scenario(down=inline)
    d2["run"]["replications"] = 3
    b = simengine.run(load_scenario(d2), workers=1)
    for k in a.jobs:
        np.testing.assert_array_equal(a.jobs[k], b.jobs[k], err_msg=k)
    assert a.metrics["availability"].values == b.metrics["availability"].values
    assert a.metrics["availability"].mean < 1
    # the scenario keeps the file's name; replications in worker processes read it again
    assert from_file.model_dump(mode="json")["platform"]["clusters"][0]["failures"]["down_file"] == "down.csv"
    pooled = simengine.run(from_file, workers=2)
    for k in a.jobs:
        np.testing.assert_array_equal(a.jobs[k], pooled.jobs[k], err_msg=k)


@pytest.mark.parametrize("text,message", [
    ("start,end\n5,4\n", "down.csv, line 2, column end: end must be after start (5); got 4"),
    ("start,end,first\n5,9,x\n", "down.csv, line 2, column first: not a number: 'x'"),
    ("start,end,first\n5,9,1.5\n", "down.csv, line 2, column first: must be a whole number; got '1.5'"),
    ("start,stop\n5,9\n", "down.csv, line 1: unknown column 'stop'"),
    ("start,end\n\n# note\n5,9,3\n", "down.csv, line 4: 3 values for the header's 2 columns"),
    ("start,end\n-5,9\n", "down.csv, line 2, column start"),
    ("# nothing\n", "no header row"),
    ("start,end,first\n5,9,16\n", "row 1: first must be below the cluster's 16 processors; got 16"),
])
def test_a_bad_down_interval_file_is_refused_naming_the_field_line_and_column(tmp_path, text, message):
    with pytest.raises(ScenarioError) as e:
        load_scenario(_with_down(tmp_path, text), base_dir=tmp_path)
    assert any(err.path == "platform.clusters.0.failures.down_file" and message in err.message
               for err in e.value.errors), e.value.errors


def test_a_missing_down_interval_file_is_refused_naming_the_field(tmp_path):
    with pytest.raises(ScenarioError) as e:
        load_scenario(_scenario(down_file="nowhere.csv"), base_dir=tmp_path)
    assert [err.path for err in e.value.errors] == ["platform.clusters.0.failures.down_file"]
    assert "cannot read" in e.value.errors[0].message
