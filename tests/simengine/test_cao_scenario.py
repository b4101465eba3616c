"""Cao's system as an ordinary scenario (simengine.cao.scheduler, simengine.cao.run, docs/cao.md):
the schema's defaults and errors, a hand-checked schedule through simengine.run, the example's
invariants, reproducibility, and that the integration gives the engine's own schedule."""
from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pytest

import simengine
from simengine.cao.run import is_cao, replication_input
from simengine.cao.simulate import simulate, workflows_from_split
from simengine.cao.workflows import COMM_RANGE, split_workflows
from simengine.errors import ScenarioError
from simengine.gantt import KIND_RESERVATION, KIND_RUN, KIND_SUSPENDED
from simengine.scenario import load_scenario, scenario_hash
from simengine.workload import STATUS_COMPLETED, STATUS_UNFINISHED, JobTable

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cao-scojo-rars.yaml"


def cao(clusters=2, processors=128, count=60, workflows=True, **extra):
    doc = {
        "platform": {"clusters": [{"name": f"c{i}", "processors": processors, "scheduler": {"name": "scojo-pect"}}
                                  for i in range(clusters)]},
        "workload": {"streams": [{"kind": "lublin", "name": f"s{i}", "target": f"c{i}", "count": count,
                                  "job_types": "typeless"} for i in range(clusters)]},
        "run": {"seed": 3},
    }
    if workflows:
        doc["grid"] = {"workflow_scheduling": {"name": "rars-heft", "params": {"fraction": 1.0}}}
    doc.update(extra)
    return doc


def errors_of(doc) -> dict[str, str]:
    with pytest.raises(ScenarioError) as e:
        load_scenario(doc)
    return {err.path: err.message for err in e.value.errors}


# ---- schema ------------------------------------------------------------------------------------

def test_defaults_are_caos():
    s = load_scenario(cao())
    assert is_cao(s)
    assert s.platform.clusters[0].scheduler.params == {
        "interval": 3600.0, "short_limit": 600.0, "medium_limit": 10800.0, "short_slice_max": 600.0,
        "medium_share": 0.3, "overhead": 60.0, "cross_slice_backfill": True}
    assert s.grid.workflow_scheduling.params == {
        "fraction": 1.0, "streams": None, "comm": [20.0, 600.0], "slpa": 1.0, "slpb": 0.0, "maf": 4.0,
        "nbp_medium": 0.025, "nbp_long": 0.04, "propagation": True, "propagation_replan": "queue",
        "late_task": "replan"}
    assert load_scenario({**cao(), "grid": {"workflow_scheduling": {"name": "rars-heft"}}}) \
        .grid.workflow_scheduling.params["fraction"] == 0.4


def test_no_workflows_is_the_default_and_left_out_of_the_json():
    doc = cao(workflows=False)
    s = load_scenario(doc)
    assert s.grid.workflow_scheduling.name == "none"
    assert "workflow_scheduling" not in s.model_dump(mode="json")["grid"]
    # so the hash is the one of the scenario with the field given explicitly at its default
    explicit = {**doc, "grid": {"workflow_scheduling": {"name": "none"}}}
    assert scenario_hash(load_scenario(explicit)) == scenario_hash(s)
    # and a scenario of another model is as it was (no new key)
    other = load_scenario({"platform": {"clusters": [{"name": "a", "processors": 4}]},
                           "workload": {"streams": [{"kind": "synthetic", "name": "x", "target": "a", "count": 3,
                                                     "arrival": {"rate": 1},
                                                     "size": {"kind": "constant", "value": 1},
                                                     "runtime": {"kind": "constant", "value": 5}}]}})
    assert not is_cao(other) and "workflow_scheduling" not in other.model_dump(mode="json")["grid"]


def test_mixed_clusters_name_the_scheduler_field():
    doc = cao()
    doc["platform"]["clusters"][1]["scheduler"] = {"name": "easy"}
    found = errors_of(doc)
    assert "scojo-pect" in found["platform.clusters.1.scheduler.name"]
    assert "rars-heft needs every cluster" in found["grid.workflow_scheduling.name"]


def test_rars_heft_needs_scojo_pect():
    doc = cao(workflows=True)
    for c in doc["platform"]["clusters"]:
        c["scheduler"] = {"name": "conservative"}
    found = errors_of(doc)
    assert list(found) == ["grid.workflow_scheduling.name"]
    assert "cluster 'c0' uses conservative" in found["grid.workflow_scheduling.name"]


@pytest.mark.parametrize("edit, path, words", [
    (lambda d: d["platform"]["clusters"][1].update(processors=64), "platform.clusters.1.processors", "same"),
    (lambda d: d["platform"]["clusters"][1].update(speed=2.0), "platform.clusters.1.speed", "must be 1"),
    (lambda d: d["platform"]["clusters"][1]["scheduler"].update(params={"overhead": 30}),
     "platform.clusters.1.scheduler.params", "calendar"),
    (lambda d: d["platform"]["clusters"][0]["scheduler"].update(params={"medium_share": 1.5}),
     "platform.clusters.0.scheduler.params.medium_share", "less than 1"),
    (lambda d: d["platform"]["clusters"][0]["scheduler"].update(params={"overhead": 1000}),
     "platform.clusters.0.scheduler.params", "overhead: must be shorter than the shortest slice"),
    (lambda d: d["platform"]["clusters"][0].update(preemption={"name": "suspend"}),
     "platform.clusters.0.preemption.name", "preemption needs"),
    (lambda d: d["workload"]["streams"].__setitem__(0, {
        "kind": "synthetic", "name": "s0", "target": "c0", "count": 5, "priority": 2, "arrival": {"rate": 0.01},
        "size": {"kind": "constant", "value": 4}, "runtime": {"kind": "constant", "value": 900}}),
     "workload.streams.0.priority", "priorities need"),
    (lambda d: d.update(reservations=[{"name": "r", "cluster": "c0", "processors": 4, "start": 0, "end": 10}]),
     "reservations.0.cluster", "reservations need"),
    (lambda d: d["grid"]["workflow_scheduling"]["params"].update(fraction=2),
     "grid.workflow_scheduling.params.fraction", "less than or equal to 1"),
    (lambda d: d["grid"]["workflow_scheduling"]["params"].update(comm=[600, 20]),
     "grid.workflow_scheduling.params", "low <= high"),
    (lambda d: d["grid"]["workflow_scheduling"]["params"].update(streams=["s0", "nope"]),
     "grid.workflow_scheduling.params.streams.1", "unknown stream 'nope'"),
    (lambda d: d["grid"]["workflow_scheduling"]["params"].update(propagation_replan="holes"),
     "grid.workflow_scheduling.params.propagation_replan", "'queue' or 'gaps'"),
    (lambda d: d["grid"]["workflow_scheduling"]["params"].update(late_task="later"),
     "grid.workflow_scheduling.params.late_task", "'behind' or 'replan'"),
    (lambda d: d["grid"]["workflow_scheduling"].update(name="heft"), "grid.workflow_scheduling.name",
     "known: none, rars-heft"),
])
def test_bad_input_names_the_field(edit, path, words):
    doc = cao()
    edit(doc)
    found = errors_of(doc)
    assert path in found, found
    assert words in found[path]


def test_only_synthetic_trace_and_lublin_streams():
    doc = cao(clusters=1)
    doc["workload"]["streams"] = [{"kind": "evolving", "name": "e", "target": "c0",
                                   "generate": {"nodes": [1, 8]}}]
    found = errors_of(doc)
    assert "synthetic, trace and lublin" in found["workload.streams.0.kind"]


# ---- a schedule by hand, through simengine.run ------------------------------------------------

def test_a_long_job_through_the_scenario(tmp_path):
    # One job (12000 s on 2 of 4 processors) submitted at 0, no short slices (short_slice_max 0):
    # each hour is a medium slice [0, 1080) then a long one [1080, 3600). The long job starts at
    # 1080 and runs 2520 s per long slice, each suspension adding 60 s to what is left:
    # 12000 -> 9540 -> 7080 -> 4620 -> 2160, so it ends at 4 x 3600 + 1080 + 2160 = 17640
    # (the same case as tests/simengine/test_cao.py, here from a trace file through the schema).
    (tmp_path / "one.swf").write_text("1 0 0 12000 2 -1 -1 2 12000 -1 1 1 1 1 1 -1 -1 -1\n")
    doc = {"platform": {"clusters": [{"name": "c", "processors": 4,
                                      "scheduler": {"name": "scojo-pect", "params": {"short_slice_max": 0}}}]},
           "workload": {"streams": [{"kind": "trace", "name": "t", "path": "one.swf", "target": "c"}]}}
    res = simengine.run(load_scenario(doc, base_dir=tmp_path))
    j = res.jobs
    assert (j["start"][0], j["end"][0], j["status"][0], j["preemptions"][0]) == (1080.0, 17640.0, 0, 4)
    assert j["job_class"][0] == 2 and j["wait"][0] == 1080.0 and j["response"][0] == 17640.0
    seg = res.segments
    runs = [(a, b) for a, b, k in zip(seg["t0"], seg["t1"], seg["kind"]) if k == KIND_RUN]
    sus = [(a, b) for a, b, k in zip(seg["t0"], seg["t1"], seg["kind"]) if k == KIND_SUSPENDED]
    assert runs == [(1080.0, 3600.0), (4680.0, 7200.0), (8280.0, 10800.0), (11880.0, 14400.0), (15480.0, 17640.0)]
    assert sus == [(3600.0, 4680.0), (7200.0, 8280.0), (10800.0, 11880.0), (14400.0, 15480.0)]
    assert set(seg["first_processor"]) == {0} and set(seg["processors"]) == {2}
    assert res.metrics["preemptions"].mean == 4
    # utilisation: 2 of 4 processors busy for 12000 + 4 x 60 s over [0, 17640]
    assert res.metrics["utilisation"].mean == pytest.approx(2 * 12240 / (4 * 17640))
    # cut at a horizon of 9000: started, not ended; its open pieces end there
    doc["run"] = {"stop": {"horizon": 9000}}
    cut = simengine.run(load_scenario(doc, base_dir=tmp_path))
    assert cut.jobs["status"][0] == STATUS_UNFINISHED and math.isnan(cut.jobs["end"][0])
    assert cut.jobs["start"][0] == 1080.0
    assert cut.segments["t1"].max() == 9000.0
    assert [(a, b) for a, b, k in zip(cut.segments["t0"], cut.segments["t1"], cut.segments["kind"])
            if k == KIND_RUN] == [(1080.0, 3600.0), (4680.0, 7200.0), (8280.0, 9000.0)]


# ---- the example -------------------------------------------------------------------------------

def _overlaps(seg) -> int:
    """Pairs of run segments sharing a processor at the same time (per cluster)."""
    bad = 0
    run = seg["kind"] == KIND_RUN
    for c in np.unique(seg["cluster"][run]):
        m = run & (seg["cluster"] == c)
        procs = int((seg["first_processor"][m] + seg["processors"][m]).max())
        events = {}
        for f, k, a, b in zip(seg["first_processor"][m], seg["processors"][m], seg["t0"][m], seg["t1"][m]):
            for p in range(f, f + k):
                events.setdefault(p, []).append((a, b))
        for p in range(procs):
            iv = sorted(events.get(p, []))
            bad += sum(1 for (a0, b0), (a1, b1) in zip(iv, iv[1:]) if a1 < b0 - 1e-6)
    return bad


@pytest.fixture(scope="module")
def example():
    s = load_scenario(EXAMPLE)
    chunks = []
    return s, simengine.run(s, on_progress=chunks.append), chunks


def test_example_invariants(example):
    s, res, chunks = example
    seg, j = res.segments, res.jobs
    kinds = set(seg["kind"].tolist())
    assert {KIND_RUN, KIND_SUSPENDED, KIND_RESERVATION} <= kinds
    assert _overlaps(seg) == 0
    first = j["replication"] == 0
    assert (j["status"][first] == STATUS_COMPLETED).all()
    # each segment names its job's row: on the row's cluster, and the run pieces of a row add up
    # to its processors x (runtime + 60 s per preemption)
    assert (j["cluster"][seg["job"]] == seg["cluster"]).all()
    run = seg["kind"] == KIND_RUN
    work = np.bincount(seg["job"][run], (seg["t1"] - seg["t0"])[run] * seg["processors"][run],
                       minlength=int(first.sum()))
    rows = np.flatnonzero(first)
    np.testing.assert_allclose(work[rows], j["processors"][rows] * (j["runtime"][rows] + 60.0 * j["preemptions"][rows]),
                               rtol=1e-9, atol=1e-6)
    assert (seg["component"][seg["kind"] == KIND_RESERVATION] == j["task"][seg["job"][seg["kind"] == KIND_RESERVATION]]).all()
    for r in range(s.run.replications):
        *_, local, wf_rows, table, workflows, params, _ = replication_input(s, r)
        mine = j["replication"] == r
        assert int(mine.sum()) == len(table) + 5 * len(workflows)
        assert len(workflows) > 0
        # every task starts after each predecessor's end + its communication time
        for w, wf in enumerate(workflows):
            rows = np.flatnonzero(mine & (j["workflow"] == w))
            by_task = {int(j["task"][i]): i for i in rows}
            assert sorted(by_task) == [0, 1, 2, 3, 4]
            for a, b, comm in wf.edges:
                assert j["start"][by_task[b]] >= j["end"][by_task[a]] + comm - 1e-6
    # streamed: segments of replication 0, then progress per replication, metrics last
    assert [c["seq"] for c in chunks] == list(range(len(chunks)))
    streamed = sum(len(c["segments"]["t0"]) for c in chunks if c["kind"] == "segments")
    assert streamed == len(seg["t0"]) and chunks[-1]["kind"] == "metrics"
    assert "rr_long_task" in chunks[-1]["metrics"] and "grid_makespan" in chunks[-1]["metrics"]
    assert res.metrics["workflows"].half_width is not None  # a CI over the two replications


def test_same_scenario_and_seed_same_result(example):
    s, res, _ = example
    again = simengine.run(EXAMPLE)
    for k in res.jobs:
        np.testing.assert_array_equal(again.jobs[k], res.jobs[k])
    for k in res.segments:
        np.testing.assert_array_equal(again.segments[k], res.segments[k])
    assert {k: m.values for k, m in again.metrics.items()} == {k: m.values for k, m in res.metrics.items()}
    other = simengine.run(load_scenario({**copy.deepcopy(s.model_dump(mode="json")), "run": {"seed": 5}}))
    assert len(other.jobs["start"]) != len(res.jobs["start"]) or \
        not np.array_equal(other.jobs["start"], res.jobs["start"], equal_nan=True)


def test_the_run_is_the_engines_schedule():
    # Build replication 0's workload independently from the runner's pieces (same SeedSequence
    # children), split it with the documented child and call simulate: same start and end per job.
    from simengine.cao.engine import CaoParams
    from simengine.workload_build import build_workload, replication_rngs

    s = load_scenario(cao(clusters=2, count=150))
    res = simengine.run(s)
    rngs = replication_rngs(s, 0)
    jobs, _ = build_workload(s, rngs[:-1], None, None)  # every stream targets a cluster: no routing
    split = split_workflows(jobs, 1.0, np.random.default_rng(np.random.SeedSequence(3, spawn_key=(0, 3))))
    assert COMM_RANGE == (20.0, 600.0)  # the default comm: the split's own times are used as they are
    wfs = workflows_from_split(split)
    direct = simulate(split.local, wfs, CaoParams(clusters=2, processors=128, propagation=True))
    D = direct.jobs
    key = lambda stream, job, task: (int(stream), int(job), int(task))  # noqa: E731
    # stream of each engine row: local rows from the local table, tasks from their workflow's job
    wf_stream = [int(jobs.stream[np.flatnonzero((jobs.job_id == jid) & (jobs.submit == sub))[0]])
                 for jid, sub in zip(split.job_id, split.submit)]
    nl = len(split.local)
    eng = {}
    for r in range(len(D["job_id"])):
        st = int(split.local.stream[r]) if r < nl else wf_stream[int(D["workflow"][r])]
        eng[key(st, D["job_id"][r], D["task"][r])] = (D["start"][r], D["end"][r])
    J = res.jobs
    got = {key(J["stream"][i], J["job_id"][i], J["task"][i]): (J["start"][i], J["end"][i])
           for i in range(len(J["job_id"]))}
    assert len(split) > 0 and len(got) == len(eng) == nl + 5 * len(split)
    assert got == eng


def test_horizon_and_completions_cut_the_run():
    s = cao(clusters=2, count=150)
    full = simengine.run(s)
    ends = np.sort(full.jobs["end"])
    s["run"]["stop"] = {"completions": 50}
    cut = simengine.run(s)
    # causal engine, counted lublin streams: the 50th completion is the full run's 50th end
    t50 = ends[49]
    assert int((cut.jobs["status"] == STATUS_COMPLETED).sum()) == 50
    assert np.nanmax(cut.jobs["end"]) == t50 and cut.segments["t1"].max() <= t50
    assert (cut.jobs["submit"] <= t50).all()
    s["run"]["stop"] = {"horizon": 20000.0}
    h = simengine.run(s)
    assert (h.jobs["submit"] < 20000).all() and h.segments["t1"].max() <= 20000.0
    assert (h.jobs["start"][~np.isnan(h.jobs["start"])] <= 20000).all()
    assert (h.jobs["status"] == STATUS_UNFINISHED).any()


def test_grid_streams_are_routed_and_rejected_jobs_kept():
    doc = cao(clusters=2, count=80)
    doc["workload"]["streams"] = [{"kind": "lublin", "name": "g", "target": "grid", "count": 200,
                                   "job_types": "typeless"}]
    doc["platform"]["clusters"] = [{"name": f"c{i}", "processors": 64, "scheduler": {"name": "scojo-pect"}}
                                   for i in range(2)]
    doc["workload"]["streams"][0]["processors"] = 64
    res = simengine.run(doc)
    assert set(np.unique(res.jobs["cluster"])) == {0, 1}
    assert (res.jobs["status"] == STATUS_COMPLETED).all()
    assert _overlaps(res.segments) == 0


def test_replication_input_is_the_runners_workload():
    s = load_scenario(cao(clusters=2, count=100, workflows=False))
    jobs, cluster, runtime, killed, local, wf_rows, table, workflows, params, _ = replication_input(s, 0)
    assert workflows == [] and len(wf_rows) == 0 and len(table) == len(jobs) == 200
    assert (params.clusters, params.processors, params.interval, params.propagation) == (2, 128, 3600.0, False)
    assert isinstance(table, JobTable) and np.array_equal(table.cluster, cluster)


def test_propagation_rules_reach_the_engine():
    doc = cao(clusters=2, count=100, workflows=True)
    doc["grid"]["workflow_scheduling"]["params"].update(propagation_replan="gaps", late_task="replan")
    params = replication_input(load_scenario(doc), 0)[8]
    assert (params.propagation, params.propagation_replan, params.late_task) == (True, "gaps", "replan")
