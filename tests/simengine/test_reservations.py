"""Advance reservations (docs/reservations.md): the schema's bad inputs, and exact schedules
of FCFS, EASY and conservative backfilling around accepted, rejected and relaxed reservations."""
from __future__ import annotations

import copy

import pytest

from simengine.errors import ScenarioError
from simengine.registry import PREEMPTION, REGISTRIES
from simengine.scenario import load_scenario, scenario_hash


def scenario(**over) -> dict:
    d = {
        "name": "r",
        "platform": {"clusters": [{"name": "a", "processors": 10, "scheduler": {"name": "easy"}},
                                  {"name": "w", "processors": 4, "scheduler": {"name": "lwr"}}]},
        "workload": {"streams": [{"kind": "synthetic", "name": "s", "target": "a", "arrival": {"rate": 0.01},
                                  "size": {"kind": "constant", "value": 2},
                                  "runtime": {"kind": "constant", "value": 100}, "count": 10}]},
        "reservations": [{"name": "r0", "cluster": "a", "processors": 4, "start": 50, "end": 150}],
    }
    d.update(over)
    return d


def errors_of(d: dict) -> dict[str, str]:
    with pytest.raises(ScenarioError) as info:
        load_scenario(d)
    return {e.path: e.message for e in info.value.errors}


def with_reservation(**fields) -> dict:
    d = scenario()
    d["reservations"][0].update(fields)
    return d


# ---- schema ------------------------------------------------------------------------------------

def test_a_valid_reservation_loads_with_its_defaults():
    s = load_scenario(with_reservation(relaxed={"earliest_start": 0, "latest_finish": 400}, job={"runtime": 80}))
    r = s.reservations[0]
    assert (r.request_time, r.relaxed.earliest_start, r.relaxed.latest_finish, r.job.runtime) == (0, 0, 400, 80)
    assert r.length == 100


def test_defaults_leave_the_scenario_hash_unchanged():
    # no reservations, priority 0 and preemption none are left out of the canonical form
    d = scenario()
    del d["reservations"]
    plain = scenario_hash(load_scenario(d))
    d2 = copy.deepcopy(d)
    d2["reservations"] = []
    d2["workload"]["streams"][0]["priority"] = 0
    d2["platform"]["clusters"][0]["preemption"] = {"name": "none"}
    assert scenario_hash(load_scenario(d2)) == plain
    d2["workload"]["streams"][0]["priority"] = 1
    assert scenario_hash(load_scenario(d2)) != plain


def test_reservation_larger_than_its_cluster():
    assert errors_of(with_reservation(processors=11)) == {
        "reservations.0.processors": "must be at most the 10 processors of cluster 'a'; got 11"}


@pytest.mark.parametrize("end", [50, 20])
def test_reservation_ending_at_or_before_its_start(end):
    assert errors_of(with_reservation(end=end)) == {"reservations.0.end": f"must be after start (50); got {end}"}


def test_reservation_starting_before_it_is_requested():
    assert errors_of(with_reservation(request_time=60)) == {
        "reservations.0.start": "must not be before request_time (60); got 50"}


def test_reservation_on_an_unknown_cluster():
    assert errors_of(with_reservation(cluster="zz")) == {
        "reservations.0.cluster": "unknown cluster 'zz'; known: a, w"}


def test_reservation_on_a_cluster_the_simulator_cannot_run():
    assert errors_of(with_reservation(cluster="w", processors=1)) == {
        "reservations.0.cluster": "cluster 'w' uses the lwr scheduler; reservations need conservative, easy, fcfs or a Python policy"}


def test_relaxed_frame_not_containing_the_window():
    got = errors_of(with_reservation(relaxed={"earliest_start": 60, "latest_finish": 140}))
    assert got == {
        "reservations.0.relaxed.earliest_start": "must be at most start (50): the frame must contain the window; "
                                                 "got 60",
        "reservations.0.relaxed.latest_finish": "must be at least end (150): the frame must contain the window; "
                                                "got 140"}


def test_job_longer_than_its_window():
    assert errors_of(with_reservation(job={"runtime": 101})) == {
        "reservations.0.job.runtime": "must fit in the window (100 s); got 101"}


def test_duplicate_reservation_names():
    d = scenario()
    d["reservations"].append(dict(d["reservations"][0]))
    assert errors_of(d) == {"reservations.1.name": "duplicate reservation name 'r0' (also reservations.0)"}


def test_unknown_preemption_policy_and_bad_overhead():
    d = scenario()
    d["platform"]["clusters"][0]["preemption"] = {"name": "pause"}
    assert errors_of(d) == {"platform.clusters.0.preemption.name":
                            "unknown preemption policy 'pause'; known: kill, none, requeue, suspend"}
    d["platform"]["clusters"][0]["preemption"] = {"name": "suspend", "params": {"overhead": -1}}
    assert list(errors_of(d)) == ["platform.clusters.0.preemption.params.overhead"]


def test_preemption_on_an_lwr_cluster():
    d = scenario()
    d["platform"]["clusters"][1]["preemption"] = {"name": "kill"}
    assert errors_of(d) == {"platform.clusters.1.preemption.name":
                            "cluster 'w' uses the lwr scheduler; preemption needs conservative, easy, fcfs or a Python policy"}


def test_preemption_registry_is_listed():
    assert PREEMPTION in REGISTRIES
    assert PREEMPTION.names() == ["kill", "none", "requeue", "suspend"]
    s = load_scenario(scenario(platform={"clusters": [
        {"name": "a", "processors": 10, "preemption": {"name": "suspend", "params": {"overhead": 60}}}]}))
    assert s.platform.clusters[0].preemption.params == {"overhead": 60.0}


# ---- exact schedules (cluster level) ---------------------------------------------------------------

from simengine.gantt import KIND_RESERVATION, KIND_RUN  # noqa: E402
from simengine.local.cluster import AR_DONE, AR_REJECTED, AdvanceReservation, ClusterSim  # noqa: E402


def four_jobs(policy):
    """10 processors; reservation of 6 over [100, 200) asked at 0; jobs (submit, size, run = estimate):
    A (0, 6, 150), B (1, 4, 100), C (2, 2, 50), D (3, 4, 120)."""
    r = AdvanceReservation(0, 6, 100.0, 200.0)
    sim = ClusterSim(10, policy, [0, 1, 2, 3], [150, 100, 50, 120], [150, 100, 50, 120], [6, 4, 2, 4],
                     reservations=[r]).run()
    return sim, r


def test_easy_backfills_around_a_reservation():
    sim, r = four_jobs("easy")
    # A needs 6 for 150 s: from 0 it would overlap the window (only 4 left on [100, 200)), so its
    # shadow time is 200 (after the window). B [1, 101) fits (4 free beside the window's 6 on
    # [100, 101)); C [2, 52) fits. D needs 4 for 120 s: on [100, 101) B and the window hold all
    # 10, so not before B ends; at 101 [101, 221) has 4 free beside the window and beside A's
    # reservation [200, 350): D starts at 101. A starts at 200 when the window ends.
    assert sim.first_start.tolist() == [200.0, 1.0, 2.0, 101.0]
    assert r.status == AR_DONE and (r.start, r.end) == (100.0, 200.0)
    # at 100 B holds processors 0-3 (C's 4-5 came free at 52): the window takes 4-9
    assert (("r", 0), 100.0, 200.0, KIND_RESERVATION, (4, 5, 6, 7, 8, 9)) in sim.pieces
    assert (("j", 0), 200.0, 350.0, KIND_RUN, (4, 5, 6, 7, 8, 9)) in sim.pieces


def test_fcfs_respects_a_reservation():
    sim, r = four_jobs("fcfs")
    # A cannot start before the window ends (it would overlap it) and FCFS does not backfill:
    # A and B start at 200 (6 + 4), C when B ends (300), D (4) when A ends (350; C holds 2)
    assert sim.first_start.tolist() == [200.0, 200.0, 300.0, 350.0]
    assert (("r", 0), 100.0, 200.0, KIND_RESERVATION, (0, 1, 2, 3, 4, 5)) in sim.pieces


def test_conservative_respects_a_reservation():
    sim, r = four_jobs("conservative")
    # reservations at arrival: A at 200 (after the window), B at 1, C at 2, D at 101 (on
    # [100, 101) B and the window hold everything); nobody ends early, so no compression
    assert sim.first_start.tolist() == [200.0, 1.0, 2.0, 101.0]


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
def test_queued_jobs_are_replanned_around_a_later_reservation(policy):
    # X (10 processors, 100 s) runs from 0; Q (10, 50 s) queued at 1 plans [100, 150). At 5 a
    # reservation of 4 over [120, 170) is asked: only X (until 100) counts, so it is accepted and
    # Q moves to the first place without overlap: 170.
    r = AdvanceReservation(0, 4, 120.0, 170.0, request_time=5.0)
    sim = ClusterSim(10, policy, [0, 1], [100, 50], [100, 50], [10, 10], reservations=[r]).run()
    assert r.status == AR_DONE
    assert sim.first_start.tolist() == [0.0, 170.0]


def test_a_reservation_that_does_not_fit_is_rejected():
    # X holds 8 of 10 processors over [0, 100) by its estimate. At 10, r0 asks for 4 over [50, 80):
    # only 2 free -> rejected; r1 asks for 2 over the same window -> accepted, its job runs [50, 70)
    r0 = AdvanceReservation(0, 4, 50.0, 80.0, request_time=10.0)
    r1 = AdvanceReservation(1, 2, 50.0, 80.0, request_time=10.0, job_runtime=20.0)
    sim = ClusterSim(10, "easy", [0], [100], [100], [8], reservations=[r0, r1]).run()
    assert r0.status == AR_REJECTED
    assert r0.note == "rejected at 10: 4 processors are not free over [50, 80)"
    assert r1.status == AR_DONE
    assert sorted(p for p in sim.pieces if p[0][0] == "r") == [
        (("r", 1), 50.0, 70.0, KIND_RUN, (8, 9)), (("r", 1), 50.0, 80.0, KIND_RESERVATION, (8, 9))]


def test_a_relaxed_reservation_slides_earlier_when_a_job_ends_early():
    # X: 8 of 10 processors, estimate 100, really 40. At 10 a relaxed reservation asks for 6 over
    # [100, 150) in the frame [20, 300]: it fits at 100 (X's planned end) and is accepted there.
    # X ends at 40: the window slides to the earliest fit >= max(EST 20, now 40) = 40 -> [40, 90);
    # its job (30 s) runs [40, 70).
    r = AdvanceReservation(0, 6, 100.0, 150.0, request_time=10.0, est=20.0, lft=300.0, job_runtime=30.0)
    sim = ClusterSim(10, "easy", [0], [40], [100], [8], reservations=[r]).run()
    assert (r.start, r.end) == (40.0, 90.0)
    assert (("r", 0), 40.0, 90.0, KIND_RESERVATION, (0, 1, 2, 3, 4, 5)) in sim.pieces
    assert (("r", 0), 40.0, 70.0, KIND_RUN, (0, 1, 2, 3, 4, 5)) in sim.pieces


def test_a_relaxed_reservation_that_does_not_fit_at_start_takes_the_earliest_later_start():
    # X holds 8 of 10 until 100 (really); a relaxed reservation of 8 asks for [50, 100) in
    # [0, 400] at 10: not at 50, so the earliest start >= 50 that fits: 100 -> [100, 150).
    # Frame [0, 120] instead: the latest start is 70, none fits -> rejected.
    r = AdvanceReservation(0, 8, 50.0, 100.0, request_time=10.0, est=0.0, lft=400.0)
    ClusterSim(10, "fcfs", [0], [100], [100], [8], reservations=[r]).run()
    assert (r.start, r.end, r.status) == (100.0, 150.0, AR_DONE)
    tight = AdvanceReservation(0, 8, 50.0, 100.0, request_time=10.0, est=0.0, lft=120.0)
    ClusterSim(10, "fcfs", [0], [100], [100], [8], reservations=[tight]).run()
    assert tight.status == AR_REJECTED


# ---- whole scenarios through simengine.run ---------------------------------------------------------

from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from simengine.gantt import KIND_NAMES  # noqa: E402
from simengine.runner import run  # noqa: E402
from simengine.workload import STATUS_COMPLETED, STATUS_REJECTED  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "reservations-preemption.yaml"


def small_run_scenario(**over):
    d = {
        "name": "r",
        "platform": {"clusters": [{"name": "a", "processors": 10, "scheduler": {"name": "easy"}}]},
        "workload": {"streams": [{"kind": "synthetic", "name": "s", "target": "a", "arrival": {"rate": 1.0},
                                  "size": {"kind": "constant", "value": 6},
                                  "runtime": {"kind": "constant", "value": 150}, "count": 1}]},
        "reservations": [{"name": "keep", "cluster": "a", "processors": 6, "start": 100, "end": 200,
                          "job": {"runtime": 60}},
                         {"name": "nope", "cluster": "a", "processors": 5, "start": 120, "end": 130,
                          "request_time": 50}],
    }
    d.update(over)
    return d


def test_a_scenario_with_reservations_runs_event_by_event():
    res = run(small_run_scenario())
    j = res.jobs
    # rows in submit order: 'keep' (asked at 0), the job (submitted at its exponential arrival),
    # 'nope' (asked at 50)... the job arrives before 50 with rate 1 and seed 1
    by_res = {int(r): i for i, r in enumerate(j["reservation"]) if r >= 0}
    job = int(np.flatnonzero(j["reservation"] < 0)[0])
    keep, nope = by_res[0], by_res[1]
    # the job (6 processors, 150 s) cannot start before the window [100, 200) ends: 4 are left beside it
    assert j["start"][job] == 200.0 and j["status"][job] == STATUS_COMPLETED
    assert (j["stream"][keep], j["job_id"][keep], j["start"][keep], j["end"][keep]) == (1, 1, 100.0, 160.0)
    assert j["status"][nope] == STATUS_REJECTED and np.isnan(j["start"][nope])
    assert "reservation 'nope' rejected at 50: 5 processors are not free over [120, 130)" in res.notes
    kinds = [KIND_NAMES[k] for k in res.segments["kind"]]
    assert sorted(kinds) == ["reservation", "run", "run"]
    win = list(kinds).index("reservation")
    assert (res.segments["t0"][win], res.segments["t1"][win], res.segments["job"][win]) == (100.0, 200.0, keep)
    assert res.metrics["reservations_accepted"].mean == 1 and res.metrics["reservations_rejected"].mean == 1
    # utilisation counts run segments only: the job's 6 x 150 and the reservation job's 6 x 60
    assert res.metrics["utilisation"].mean == pytest.approx((6 * 150 + 6 * 60) / (10 * 350))


def test_the_example_runs_reproducibly(tmp_path):
    from simengine.cli import main

    assert main(["run", str(EXAMPLE), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    assert (tmp_path / "out" / "jobs.csv").read_text().count("rejected") == 3  # one per replication
    a, b = run(EXAMPLE), run(EXAMPLE)
    for k in a.jobs:
        np.testing.assert_array_equal(a.jobs[k], b.jobs[k])
    for k in a.segments:
        np.testing.assert_array_equal(a.segments[k], b.segments[k])
    assert a.metrics["preemptions"].mean > 0 and a.metrics["reservations_rejected"].values == [1.0, 1.0, 1.0]
    kinds = {KIND_NAMES[k] for k in a.segments["kind"]}
    assert {"run", "reservation", "suspended"} <= kinds


def test_without_reservations_or_priorities_the_runner_keeps_the_kernels():
    from simengine.local.run import needs_local

    d = small_run_scenario(reservations=[])
    assert not needs_local(load_scenario(d))
    d["workload"]["streams"][0]["priority"] = 1
    assert needs_local(load_scenario(d))


def test_priority_on_an_lwr_cluster_is_refused():
    d = scenario(reservations=[])
    d["workload"]["streams"][0]["target"] = "w"
    d["workload"]["streams"][0]["size"] = {"kind": "constant", "value": 1}
    d["workload"]["streams"][0]["priority"] = 2
    assert errors_of(d) == {"workload.streams.0.priority":
                            "cluster 'w' uses the lwr scheduler; priorities need conservative, easy, fcfs or a Python policy"}


def example_with(run_control: dict, endless: bool = False) -> dict:
    import yaml

    d = yaml.safe_load(EXAMPLE.read_text())
    d["run"] = run_control
    if endless:
        for s in d["workload"]["streams"]:
            s.pop("count")
    return d


def test_horizon_stops_the_run_and_cuts_the_segments():
    res = run(example_with({"seed": 3, "stop": {"horizon": 40000}}))
    j = res.jobs
    assert res.segments["t1"].max() == 40000.0 and res.segments["t0"].max() <= 40000.0
    assert j["submit"].max() < 40000
    unfinished = j["status"] == 4
    assert unfinished.any() and np.isnan(j["end"][unfinished]).all()
    assert (j["end"][~np.isnan(j["end"])] <= 40000).all()
    # the relaxed reservation (asked at 10000) is in; every reservation row is there
    assert sorted(j["job_id"][j["reservation"] >= 0]) == [1, 2, 3, 4]


def test_completions_stop_and_warmup():
    res = run(example_with({"seed": 3, "replications": 2, "stop": {"completions": 300},
                            "warmup": {"completions": 20}}, endless=True))
    assert res.metrics["jobs_measured"].values == [280.0, 280.0]
    j = res.jobs
    first = (j["replication"] == 0) & (j["reservation"] < 0)
    done = first & (j["status"] == STATUS_COMPLETED)
    # the run stops at the 300th completion; jobs submitted after it are not kept
    t_stop = np.sort(j["end"][done])[299]
    assert j["end"][done].max() == t_stop and j["submit"][first].max() <= t_stop
    assert int(j["warmup"][done].sum()) == 20


def test_the_schedulers_command_lists_preemption_policies(capsys):
    from simengine.cli import main

    assert main(["schedulers"]) == 0
    out = capsys.readouterr().out
    assert "preemption policies:" in out and "suspend" in out and "[overhead=0.0]" in out


def test_the_example_gantt_never_uses_a_processor_twice():
    res = run(example_with({"seed": 11, "replications": 1}))
    s, j = res.segments, res.jobs
    spans: dict = {}
    for c, f, k, t0, t1, row, kind in zip(s["cluster"], s["first_processor"], s["processors"], s["t0"], s["t1"],
                                          s["job"], s["kind"]):
        own_window = kind == KIND_RUN and j["reservation"][row] >= 0  # inside its window, checked below
        if kind not in (KIND_RUN, KIND_RESERVATION) or own_window:
            continue
        for p in range(f, f + k):
            spans.setdefault((c, p), []).append((t0, t1, row))
    for key, v in spans.items():
        v.sort()
        assert all(a[1] <= b[0] for a, b in zip(v, v[1:]) if a[1] > a[0] and b[1] > b[0]), key
    for i in np.flatnonzero((s["kind"] == KIND_RUN) & (j["reservation"][s["job"]] >= 0)):
        w = np.flatnonzero((s["kind"] == KIND_RESERVATION) & (s["job"] == s["job"][i]) &
                           (s["first_processor"] == s["first_processor"][i]))
        assert len(w) == 1 and s["t0"][w[0]] == s["t0"][i] and s["t1"][i] <= s["t1"][w[0]]
    # every workload job's run segments add up to its run time + 60 s per resume (suspend, overhead 60)
    runs = np.zeros(len(j["job_id"]))
    for row, t0, t1, kind, k in zip(s["job"], s["t0"], s["t1"], s["kind"], s["processors"]):
        if kind == KIND_RUN:
            runs[row] += (t1 - t0) * k
    work = j["reservation"] < 0
    resumes = j["preemptions"][work]  # suspend: every preemption is followed by one resume
    np.testing.assert_allclose(runs[work], (j["runtime"][work] + 60.0 * resumes) * j["processors"][work])


@pytest.mark.parametrize("example", ["single-cluster-easy.yaml", "multicluster-4x32.yaml"])
def test_equal_priorities_through_the_event_driven_path_give_the_kernel_paths_result(example):
    # priority 1 on every stream sends the scenario to simengine.local; the queue order is
    # unchanged, so rows and metrics must equal those of the kernels' path
    import yaml

    d = yaml.safe_load((EXAMPLE.parent / example).read_text())
    d["run"]["replications"] = 2
    if d["run"].get("stop", {}).get("completions"):
        d["run"]["stop"]["completions"] = 2000
        d["run"]["warmup"]["completions"] = 100
    a = run(d)
    for s in d["workload"]["streams"]:
        s["priority"] = 1
    b = run(d)
    for k, m in a.metrics.items():
        np.testing.assert_allclose(b.metrics[k].values, m.values, rtol=1e-9, err_msg=k)
    for k, v in a.jobs.items():
        np.testing.assert_allclose(b.jobs[k], v, rtol=1e-12, err_msg=k) if v.dtype.kind == "f" else \
            np.testing.assert_array_equal(b.jobs[k], v, err_msg=k)
    for k, v in a.segments.items():  # the same processors too (lowest free, ends before starts)
        np.testing.assert_array_equal(b.segments[k], v, err_msg=k)
    for k, v in a.series.items():
        np.testing.assert_allclose(b.series[k], v, rtol=1e-12, err_msg=k)


def test_jobs_csv_carries_the_preemption_columns(tmp_path):
    res = run(small_run_scenario())
    res.write(tmp_path / "o")
    lines = (tmp_path / "o" / "jobs.csv").read_text().splitlines()
    assert lines[0].endswith(",warmup,measured,priority,preemptions,lost_time,reservation")
    assert sorted(line.split(",")[-1] for line in lines[1:]) == ["-1", "0", "1"]
