"""Evolving applications (Klein & Pérez) as a scenario: the ``evolving`` stream kind and local
scheduler, validation naming the field, and runs through ``simengine.run``.

The hand case is test_evolving.py's: n_max = 10, application A holds 8 nodes for 15 s, B = three
5-s stages of 2, 2 and 6 nodes. With mic, B's stage 2 is held 5..15 (computes 5..10, held idle
10..15 waiting for A's nodes) and B completes at 20; with nos B is moved to start at 5 instead.
"""
from __future__ import annotations

import copy
import importlib
from functools import partial

import numpy as np
import pytest

import simengine
from simengine import streaming
from simengine.errors import ScenarioError
from simengine.gantt import KIND_RUN, KIND_STRETCHED
from simengine.scenario import load_scenario
from simengine.workload import STATUS_COMPLETED
from tests.conftest import ROOT
from tests.simengine.live_stream import check_live_stream

B = [[5, 2], [5, 2], [5, 6]]


def scenario(algorithm="mic", processors=10, **stream):
    stream = stream or {"applications": [{"name": "A", "stages": [[15, 8]]}, {"name": "B", "stages": B}]}
    return {
        "name": "hand",
        "platform": {"clusters": [{"name": "c", "processors": processors,
                                   "scheduler": {"name": "evolving", "params": {"algorithm": algorithm}}}]},
        "workload": {"streams": [{"kind": "evolving", "name": "apps", "target": "c", **stream}]},
    }


def errors(data):
    with pytest.raises(ScenarioError) as e:
        load_scenario(data)
    return {fe.path: fe.message for fe in e.value.errors}


def test_mic_hand_case_gives_the_job_rows_and_the_stretched_segment():
    r = simengine.run(scenario("mic"))
    j = r.jobs
    assert j["start"].tolist() == [0, 0] and j["end"].tolist() == [15, 20]
    assert j["submit"].tolist() == [0, 0] and j["processors"].tolist() == [8, 6]
    assert (j["status"] == STATUS_COMPLETED).all() and j["cluster"].tolist() == [0, 0]
    seg = r.segments
    stretched = [(int(jb), int(c), float(a), float(b), int(f), int(p))
                 for jb, c, k, a, b, f, p in zip(seg["job"], seg["component"], seg["kind"], seg["t0"], seg["t1"],
                                                 seg["first_processor"], seg["processors"]) if k == KIND_STRETCHED]
    assert stretched == [(1, 1, 10.0, 15.0, 8, 2)]  # B's stage 2 held idle on nodes 8-9
    assert set(seg["kind"].tolist()) == {KIND_RUN, KIND_STRETCHED}
    m = r.metrics
    assert m["makespan"].mean == 20
    assert m["waste_pct"].mean == pytest.approx(100 * 10 / (120 + 50))  # 5 s idle on 2 nodes
    assert m["utilisation"].mean == pytest.approx(170 / (10 * 20))
    assert m["mean_wait"].mean == 0


def test_nos_hand_case_moves_b_instead_of_stretching():
    r = simengine.run(scenario("nos"))
    assert r.jobs["start"].tolist() == [0, 5] and r.jobs["end"].tolist() == [15, 20]
    assert KIND_STRETCHED not in r.segments["kind"].tolist()
    assert r.metrics["waste_pct"].mean == 0


def test_streamed_segments_equal_the_result_segments():
    chunks = []
    r = simengine.run(scenario("mic"), on_progress=chunks.append)
    assert chunks[-1]["kind"] == "metrics"
    check_live_stream(chunks, r)


def test_example_runs_with_confidence_intervals_and_reproducibly():
    path = ROOT / "examples" / "klein-evolving.yaml"
    a, b = simengine.run(path), simengine.run(path)
    assert a.replications == 5 and a.metrics["waste_pct"].ci_low is not None
    assert np.array_equal(a.jobs["end"], b.jobs["end"])
    assert set(a.jobs["replication"].tolist()) == set(range(5))
    assert (a.jobs["processors"] <= 75).all()
    assert 0 < a.metrics["utilisation"].mean <= 1


def test_too_many_nodes_is_reported_against_the_target_cluster():
    bad = scenario(processors=10, applications=[[[5, 2]], [[5, 3], [5, 11]]])
    msg = errors(bad)["workload.streams.0.applications.1.stages.1.nodes"]
    assert msg.startswith("must be at most n_max (10")
    big = scenario(processors=150, applications=[[[5, 120]]])  # above the evolving default of 100
    assert load_scenario(big).workload.streams[0].applications[0].stages[0].nodes == 120


def test_bad_profiles_name_the_field():
    e = errors(scenario(applications=[[[5, 2]], {"stages": []}, [[0, 2]], [[-3, 1]]]))
    assert "workload.streams.0.applications.1.stages" in e
    assert "workload.streams.0.applications.2.stages.0.duration" in e
    assert "workload.streams.0.applications.3.stages.0.duration" in e


def test_applications_xor_generate():
    assert "workload.streams.0.applications" in errors(scenario(generate={"applications": [2, 3]},
                                                                applications=[[[5, 2]]]))
    neither = scenario()
    del neither["workload"]["streams"][0]["applications"]
    assert "exactly one of applications or generate" in errors(neither)["workload.streams.0.applications"]
    assert "workload.streams.0.generate.nodes" in errors(scenario(generate={"nodes": [1, 11]}))
    assert "workload.streams.0.generate.stages" in errors(scenario(generate={"stages": [4, 2]}))


def test_scheduler_and_stream_must_match():
    other = scenario()
    other["platform"]["clusters"][0]["scheduler"] = {"name": "easy"}
    assert "evolving" in errors(other)["workload.streams.0.target"]
    grid = scenario()
    grid["workload"]["streams"][0]["target"] = "grid"
    assert "not the grid" in errors(grid)["workload.streams.0.target"]
    rigid = scenario()
    rigid["workload"]["streams"] = [{"kind": "synthetic", "name": "u", "target": "c", "count": 5,
                                     "arrival": {"rate": 1}, "size": {"kind": "constant", "value": 1},
                                     "runtime": {"kind": "constant", "value": 1}}]
    assert "only evolving streams" in errors(rigid)["workload.streams.0.target"]
    mixed = copy.deepcopy(scenario())
    mixed["workload"]["streams"].append(rigid["workload"]["streams"][0])
    assert "workload.streams.1.kind" in errors(mixed)
    bad_alg = scenario("fast")
    assert "platform.clusters.0.scheduler.params.algorithm" in errors(bad_alg)


def test_scheduler_defaults():
    s = load_scenario(scenario())
    s2 = load_scenario({**scenario(), "platform": {"clusters": [{"name": "c", "processors": 10,
                                                                 "scheduler": {"name": "evolving"}}]}})
    assert s.platform.clusters[0].scheduler.params["algorithm"] == "mic"
    assert s2.platform.clusters[0].scheduler.params == {"algorithm": "nos", "move_first_stage": True,
                                                        "release": "last_acquired"}


# ---- the plan in slices: progress while Algorithm 2 runs, and a stop inside it --------------------

PLAN = importlib.import_module("simengine.evolving.schedule")  # (the package's ``schedule`` is the function)

def test_the_plan_in_slices_gives_the_schedule_of_one_call(monkeypatch):
    """Every algorithm, several tests: the EP carried between slices is the whole state."""
    from simengine.evolving.generate import WorkloadSpec, generate

    plan = PLAN
    monkeypatch.setattr(plan, "run_in_slices", partial(streaming.run_in_slices, seconds=1e-6))  # an application each
    w = generate(WorkloadSpec(tests=4, applications=(30, 60), seed=3))
    for alg in ("mic", "mic+c", "inf+c", "nos", "cbf"):
        whole = plan.schedule_flat(w, alg, 100)
        seen = []
        sliced = plan.schedule_flat(w, alg, 100, on_planned=lambda done, of: seen.append((done, of)))
        for name in ("hold", "start", "end"):
            np.testing.assert_array_equal(getattr(sliced, name), getattr(whole, name))
        done = [d for d, _ in seen]
        of = len(w.d) if alg != "cbf" else len(w.app_off) - 1  # (CBF plans one rigid stage per application)
        assert len(seen) > 50 and done == sorted(done) and seen[-1] == (of, of)


def generated(applications: int, replications: int = 1) -> dict:
    return scenario("mic+c", processors=100, generate={"applications": [applications, applications],
                                                       "stages": [10, 10]}) | {"run": {"replications": replications}}


def test_a_long_plan_reports_progress_before_its_gantt(monkeypatch):
    """Progress chunks while the applications are planned (nothing can be drawn yet: Algorithm 1
    maps them only once all are planned), rising with the planned stages, then the live Gantt
    goes on from the plan's share; the fraction never goes back."""
    from simengine import driver
    from simengine.evolving import run as evolving_run

    monkeypatch.setattr(driver, "STEP_REPORT_SECONDS", 0.0)
    monkeypatch.setattr(PLAN, "run_in_slices", partial(streaming.run_in_slices, seconds=1e-6))
    chunks = []
    r = simengine.run(generated(400, replications=2), on_progress=chunks.append)
    first_gantt = next(i for i, c in enumerate(chunks) if c["kind"] == "segments")
    planning = [c["fraction"] for c in chunks[:first_gantt]]
    assert len(planning) > 20 and all(c["kind"] == "progress" for c in chunks[:first_gantt])
    share = evolving_run.plan_share(4000)
    assert planning == sorted(planning) and planning[-1] <= share / 2  # (replication 0 of 2)
    assert chunks[first_gantt]["fraction"] >= planning[-1]
    fractions = [c["fraction"] for c in chunks if c.get("fraction") is not None]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    check_live_stream(chunks, r)


def test_a_stop_inside_the_plan_ends_the_run_there(monkeypatch):
    """A cancelled run (its callback raises, as the site's does) stops inside the plan -- in
    replication 0 (from a progress chunk) and in a replication after it (from the callback's
    ``check()``) -- not when the plan is over."""
    from simengine import driver

    monkeypatch.setattr(driver, "STEP_REPORT_SECONDS", 0.0)
    monkeypatch.setattr(PLAN, "run_in_slices", partial(streaming.run_in_slices, seconds=1e-6))
    slices = []
    real = PLAN.plan_applications
    monkeypatch.setattr(PLAN, "plan_applications", lambda a0, a1, *args: (slices.append(a1), real(a0, a1, *args))[1])

    class Stop(Exception):
        pass

    def stop_in(replication: int):
        finished = []  # replications whose Gantt went out (replication 0's only)

        def on_progress(chunk):
            if chunk["kind"] == "segments" and chunk.get("final"):
                finished.append(chunk)
            elif chunk["kind"] == "progress" and replication == 0:
                raise Stop

        def check():
            if replication == 1 and finished:
                raise Stop

        on_progress.check = check
        slices.clear()
        with pytest.raises(Stop):
            simengine.run(generated(2000, replications=2), on_progress=on_progress, workers=1)
        return len(finished)

    assert stop_in(0) == 0 and 0 < slices[-1] < 2000
    # replication 0 planned whole, and its CBF baseline (which plans each application too)
    assert stop_in(1) == 1 and 0 < slices[-1] < 2000 and slices.count(2000) == 2


def test_a_stop_while_the_cbf_baseline_is_planned_ends_the_run_there(monkeypatch):
    """After the mapping each replication plans its CBF baseline for the metrics: in slices too,
    and the driver asks the callback's ``check()`` while the fraction stands still, so a cancel or
    the wall clock stops it there, not when it is over."""
    from simengine import driver

    monkeypatch.setattr(driver, "STEP_REPORT_SECONDS", 0.0)
    monkeypatch.setattr(PLAN, "run_in_slices", partial(streaming.run_in_slices, seconds=1e-6))
    planned = []  # the applications planned so far at each slice: the plan's, then the baseline's
    real = PLAN.plan_applications
    monkeypatch.setattr(PLAN, "plan_applications", lambda a0, a1, *args: (planned.append(a1), real(a0, a1, *args))[1])

    class Stop(Exception):
        pass

    def on_progress(chunk):  # (the site's callback: it sees the chunks, and check() says whether to stop)
        pass

    def check():
        if 2000 in planned and planned[-1] != 2000:  # the plan is over and the baseline under way
            raise Stop

    on_progress.check = check
    with pytest.raises(Stop):
        simengine.run(generated(2000), on_progress=on_progress, workers=1)
    assert planned.count(2000) == 1 and 0 < planned[-1] < 2000
