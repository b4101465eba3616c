"""simengine.limits: a scenario past a deployment's limits is named by the field to change, with
the estimate and the limit; a scenario within them passes (issue 14, runs have no limits)."""
from __future__ import annotations

import copy

import pytest

import simengine
from simengine.limits import Limits, estimated_jobs, limit_problems
from tests.conftest import TRACE_DIR

SPEC = {
    "name": "limits",
    "platform": {"clusters": [{"name": "a", "processors": 64, "scheduler": {"name": "easy"}},
                              {"name": "b", "processors": 64, "scheduler": {"name": "easy"}}]},
    "workload": {"streams": [
        {"kind": "synthetic", "name": "u", "target": "a", "arrival": {"rate": 0.3},
         "size": {"kind": "uniform", "low": 1, "high": 4}, "runtime": {"kind": "exponential", "mean": 60}},
        {"kind": "synthetic", "name": "v", "target": "b", "arrival": {"rate": 0.1},
         "size": {"kind": "uniform", "low": 1, "high": 4}, "runtime": {"kind": "exponential", "mean": 60}}]},
    "run": {"replications": 10, "stop": {"completions": 100_000}},
}
SITE = Limits(jobs=1_000_000, replications=100, cluster_processors=4096, platform_processors=6000,
              horizon=10**8, stored_rows=2_000_000)


def problems(**changes) -> dict[str, str]:
    spec = copy.deepcopy(SPEC)
    for path, value in changes.items():
        node, *keys = path.split("__")
        target = spec[node]
        for k in keys[:-1]:
            target = target[int(k)] if k.isdigit() else target[k]
        target[keys[-1] if not keys[-1].isdigit() else int(keys[-1])] = value
    return dict(limit_problems(simengine.load_scenario(spec, base_dir=str(TRACE_DIR)), SITE))


def test_a_scenario_within_the_limits_passes():
    assert problems() == {}


def test_completions_are_shared_by_arrival_rate_with_the_engines_margin():
    counts = estimated_jobs(simengine.load_scenario(SPEC))
    assert [p for p, _ in counts] == ["run.stop.completions"] * 2
    assert [round(n) for _, n in counts] == [90_000, 30_000]  # 100,000 x 1.2, shared 3:1


def test_each_limit_names_its_field():
    assert "run.replications" in problems(run__replications=101)
    found = problems(run__stop={"completions": 5_000_000}, run__keep_jobs="first")
    assert list(found) == ["run.stop.completions"] and "6,000,000 jobs per replication" in found["run.stop.completions"]
    assert "1,000,000" in found["run.stop.completions"]
    assert list(problems(workload__streams__0__count=2_000_000, run__replications=1)) == ["workload.streams.0.count"]
    found = problems(platform__clusters__1__processors=10**15)  # (past 2^63 the schema refuses it: too large)
    assert set(found) == {"platform.clusters.1.processors", "platform.clusters"}
    assert "run.stop.horizon" in problems(run__stop={"horizon": 10**9})
    # a horizon-only run: the endless streams' rates times the horizon
    assert "about 4,000,000 jobs" in problems(run__stop={"horizon": 10**7})["run.stop.horizon"]


def test_stored_rows_count_every_kept_replication():
    found = problems(run__replications=40, run__stop={"completions": 50_000})
    assert list(found) == ["run.keep_jobs"] and "2,400,000 job rows" in found["run.keep_jobs"]
    assert problems(run__replications=40, run__stop={"completions": 50_000}, run__keep_jobs="first") == {}


def test_a_mean_so_large_that_no_job_arrives_is_named():
    found = problems(workload__streams__1__arrival={"target_load": 0.5},
                     workload__streams__1__runtime={"kind": "exponential", "mean": 1e308})
    assert list(found) == ["workload.streams.1.arrival"], found


def test_a_traces_length_counts(tmp_path):
    spec = copy.deepcopy(SPEC)
    spec["workload"]["streams"] = [{"kind": "trace", "name": "das2", "target": "a",
                                    "path": "DAS2-fs1-2003-1.swf.gz"}]
    spec["platform"]["clusters"][0]["processors"] = 128
    scenario = simengine.load_scenario(spec, base_dir=str(TRACE_DIR))
    (field, n), = estimated_jobs(scenario)
    assert field == "workload.streams.0.limit" and n > 30_000
    assert list(dict(limit_problems(scenario, Limits(jobs=10_000)))) == ["workload.streams.0.limit"]
    spec["workload"]["streams"][0]["limit"] = 5_000
    assert limit_problems(simengine.load_scenario(spec, base_dir=str(TRACE_DIR)), Limits(jobs=10_000)) == []


@pytest.mark.parametrize("field", ["jobs", "replications", "stored_rows"])
def test_no_limit_means_none(field):
    spec = copy.deepcopy(SPEC)
    spec["run"]["replications"] = 10**4
    assert field not in dict(limit_problems(simengine.load_scenario(spec), Limits()))


def test_evolving_applications_count_as_jobs_and_their_stages_are_bounded():
    spec = {"name": "evolving", "platform": {"clusters": [
                {"name": "m", "processors": 100, "scheduler": {"name": "evolving", "params": {"algorithm": "mic+c"}}}]},
            "workload": {"streams": [{"kind": "evolving", "name": "k", "target": "m", "generate": {
                "applications": [10, 20_000], "stages": [1, 20], "duration": [500, 3600], "nodes": [1, 75]}}]},
            "run": {"replications": 2}}
    scenario = simengine.load_scenario(spec)
    assert estimated_jobs(scenario) == [("workload.streams.0.generate.applications", 20_000.0)]
    found = dict(limit_problems(scenario, Limits(evolving_stages=200_000)))
    assert list(found) == ["workload.streams.0.generate.applications"]
    assert "400,000 stages" in found["workload.streams.0.generate.applications"]
    assert limit_problems(scenario, Limits(evolving_stages=400_000)) == []
    found = dict(limit_problems(scenario, Limits(jobs=10_000)))
    assert "about 20,000 jobs" in found["workload.streams.0.generate.applications"]


def _coallocated(components: dict, rate: float, horizon: float = 3600.0) -> simengine.Scenario:
    return simengine.load_scenario({
        "platform": {"clusters": [{"name": f"c{i}", "processors": 32} for i in range(4)]},
        "workload": {"streams": [{"kind": "coallocated", "name": "global", "arrival": {"rate": rate},
                                  "components": components, "size": {"kind": "constant", "value": 1},
                                  "runtime": {"kind": "exponential", "mean": 100},
                                  "deadline": {"min": 1, "max": 100}}]},
        "grid": {"placement": {"name": "worst-fit"}},
        "run": {"seed": 1, "stop": {"horizon": horizon}}})


def test_a_co_allocated_jobs_components_count_against_the_job_limit():
    # about 3,600 jobs of half a billion components each: 1.8 x 10^12 rows a run would draw
    huge = _coallocated({"kind": "uniform", "low": 2, "high": 1e9, "integer": True}, rate=1.0)
    found = dict(limit_problems(huge, Limits(jobs=5_000_000)))
    assert list(found) == ["workload.streams.0.components"]
    assert "job components per replication" in found["workload.streams.0.components"]
    # the same jobs with the paper's 2..4 components are far inside the limit
    assert limit_problems(_coallocated({"kind": "uniform", "low": 2, "high": 4, "integer": True}, rate=1.0),
                          Limits(jobs=5_000_000)) == []
    # and the count is jobs x mean components: 3,600 x 3 = 10,800 is past a limit of 10,000
    assert list(dict(limit_problems(
        _coallocated({"kind": "uniform", "low": 2, "high": 4, "integer": True}, rate=1.0),
        Limits(jobs=10_000)))) == ["workload.streams.0.components"]
