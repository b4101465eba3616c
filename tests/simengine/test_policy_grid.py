"""Grid placement and site-allocation policies written in plain Python (simengine.policy,
docs/write-a-policy.md), and the worked package's two (examples/policies): Best-Fit placement
and round-robin site allocation."""
from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

import numpy as np
import pytest
import yaml

import simengine
from simengine.errors import ScenarioError
from simengine.grid.koala import KoalaJob
from simengine.grid.placement import place, placement_policy
from simengine.policy import ENTRY_POINT_GROUP, PlacementPolicy, PolicyError, SiteAllocationPolicy, register
from simengine.registry import GRID_PLACEMENT, SITE_ALLOCATION
from tests.conftest import ROOT


def example(name: str) -> dict:
    return yaml.safe_load((ROOT / "examples" / name).read_text())


def koala(placement: dict) -> dict:
    data = example("koala-w30.yaml")
    data["grid"]["placement"] = placement
    return data


def zikos(site_allocation: dict, completions: int = 3000) -> dict:
    data = example("zikos-random.yaml")
    data["grid"]["site_allocation"] = site_allocation
    data["run"] = {"seed": 4, "replications": 2, "stop": {"completions": completions},
                   "warmup": {"completions": 100}}
    return data


def test_the_worked_package_registers_its_placement_and_site_allocation_policies():
    names = [ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)]
    assert {"best-fit", "round-robin"} <= set(names)
    assert GRID_PLACEMENT.get("best-fit").params.model_json_schema()["properties"]["headroom"]["minimum"] == 0
    assert "compiled" not in GRID_PLACEMENT.get("best-fit").capabilities
    assert SITE_ALLOCATION.get("round-robin").params().start == "first"


# ---- Best-Fit, worked by hand ---------------------------------------------------------------------

def test_best_fit_places_each_component_where_it_leaves_the_fewest_idle():
    # components largest first: 8, 6, 4 on idle [10, 20, 15]
    # 8: leaves 2 | 12 | 7 -> c0 ([2, 20, 15]); 6: c0 cannot, leaves 14 | 9 -> c2 ([2, 20, 9]);
    # 4: leaves 16 | 5 -> c2. Results come back in the job's component order (8, 4, 6).
    job = KoalaJob(0.0, 10.0, [8, 4, 6])
    idle = np.array([10, 20, 15])
    got = place(job, idle, placement_policy("best-fit", {}, idle), None)
    assert [(s, c) for s, c, _, _ in got] == [(8, 0), (4, 2), (6, 2)]
    # headroom 3: 8 would leave 2 on c0 -> c2 (7 left); 6: c0 leaves 4 -> c0; 4: c0 would leave 0,
    # c2 leaves 3 -> c2
    got = place(job, idle, placement_policy("best-fit", {"headroom": 3}, idle), None)
    assert [(s, c) for s, c, _, _ in got] == [(8, 2), (4, 2), (6, 0)]
    # nothing fits with headroom 13: the job stays queued (None), idle untouched
    assert place(job, idle, placement_policy("best-fit", {"headroom": 13}, idle), None) is None
    assert idle.tolist() == [10, 20, 15]


def test_best_fit_runs_koala_from_the_python_api_and_differs_from_worst_fit():
    best = simengine.run(koala({"name": "best-fit", "params": {"headroom": 8}}))
    worst = simengine.run(koala({"name": "worst-fit"}))
    assert best.metrics["jobs_measured"].mean == worst.metrics["jobs_measured"].mean > 0
    assert not np.array_equal(best.segments["cluster"], worst.segments["cluster"])
    assert best.scenario["grid"]["placement"] == {"name": "best-fit", "params": {"headroom": 8}}


def test_the_cli_runs_a_koala_scenario_with_the_installed_placement(tmp_path):
    path = tmp_path / "koala-best-fit.yaml"
    path.write_text(yaml.safe_dump(koala({"name": "best-fit"})))
    out = subprocess.run([sys.executable, "-m", "simengine", "run", str(path), "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "out" / "jobs.csv").exists()


def test_a_python_placement_is_accepted_for_coallocated_jobs_with_start_deadlines():
    # (it runs there: tests/simengine/test_policy_deadline_placement.py)
    data = example("ballier-4x32.yaml")
    data["grid"]["placement"] = {"name": "best-fit"}
    assert simengine.load_scenario(data).grid.placement.name == "best-fit"


def test_bad_placement_parameters_name_the_field():
    with pytest.raises(ScenarioError) as e:
        simengine.load_scenario(koala({"name": "best-fit", "params": {"headroom": -1}}))
    assert "grid.placement.params.headroom" in str(e.value)


# ---- what the engine refuses ----------------------------------------------------------------------

class _Careless(PlacementPolicy):
    name = "test-careless"

    def place(self, job, idle):
        return [0] * len(job.sizes)  # everything on cluster 0, room or not


def test_a_placement_that_overcommits_a_cluster_gets_an_error_naming_it():
    idle = np.array([10, 20])
    with pytest.raises(PolicyError, match="test-careless: components were placed on cluster 0 beyond its 10 idle"):
        place(KoalaJob(0.0, 1.0, [8, 8]), idle, _Careless(None, None), None)


def test_a_placement_that_answers_the_wrong_shape_gets_an_error():
    class Short(PlacementPolicy):
        name = "test-short"

        def place(self, job, idle):
            return [1]

    class Outside(PlacementPolicy):
        name = "test-outside"

        def place(self, job, idle):
            return [5 for _ in job.sizes]

    idle = np.array([10, 20])
    with pytest.raises(PolicyError, match="test-short: placed 1 components of a job with 2"):
        place(KoalaJob(0.0, 1.0, [4, 4]), idle, Short(None, None), None)
    with pytest.raises(PolicyError, match="test-outside: .* not a cluster index 0..1"):
        place(KoalaJob(0.0, 1.0, [4]), idle, Outside(None, None), None)


def test_placement_and_site_allocation_policies_that_raise_are_named_with_the_moment():
    class Failing(PlacementPolicy):
        name = "test-failing"

        def place(self, job, idle):
            return {}["nowhere"]

    class FailingSite(SiteAllocationPolicy):
        name = "test-failing-site"

        def choose(self, job):
            return [0][job.id]  # job 1: IndexError

    from simengine.policy import PythonSiteAllocation
    from simengine.workload import JobTable

    with pytest.raises(PolicyError, match=r"^test-failing: place\(\) for a job of 2 components submitted at t=3 "
                                          r"raised KeyError: 'nowhere' \(.*test_policy_grid.py, line \d+, in place\)$"):
        place(KoalaJob(3.0, 1.0, [4, 4]), np.array([10, 20]), Failing(None, None), None)
    jobs = JobTable(job_id=np.arange(1, 3), submit=np.arange(2.0), runtime=np.ones(2), estimate=np.ones(2),
                    processors=np.array([1, 1]), cluster=np.full(2, -1), stream=np.zeros(2))
    with pytest.raises(PolicyError, match=r"^test-failing-site: choose\(\) for job 1 \(submitted at t=1\) raised "
                                          r"IndexError: list index out of range"):
        PythonSiteAllocation(FailingSite)(jobs, np.array([8, 16]), {}, np.random.default_rng(0))


def test_register_files_each_kind_in_its_registry_and_refuses_an_incomplete_one():
    class NoPlace(PlacementPolicy):
        name = "test-no-place"

    class NoChoose(SiteAllocationPolicy):
        name = "test-no-choose"

    with pytest.raises(TypeError, match="does not define place"):
        register(NoPlace)
    with pytest.raises(TypeError, match="does not define choose"):
        register(NoChoose)
    assert "test-no-place" not in GRID_PLACEMENT and "test-no-choose" not in SITE_ALLOCATION


# ---- round-robin site allocation ------------------------------------------------------------------

def test_round_robin_sends_grid_jobs_to_the_sites_in_turn():
    def clusters(result, replication):
        jobs = result.jobs
        mine = np.flatnonzero(np.asarray(jobs["replication"]) == replication)
        return np.asarray(jobs["cluster"])[mine[np.argsort(np.asarray(jobs["job_id"])[mine])]]

    result = simengine.run(zikos({"name": "round-robin"}))
    for r in (0, 1):  # one-processor jobs fit every site: 0, 1, 2, 3, 0, 1, ... in submission order
        got = clusters(result, r)
        assert len(got) > 3000 and (got == np.arange(len(got)) % 4).all()
    again = simengine.run(zikos({"name": "round-robin", "params": {"start": "random"}}))

    for r in (0, 1):
        got = clusters(again, r)
        assert (np.diff(got) % 4 == 1).all()



def test_round_robin_skips_a_site_too_small_for_the_job():
    from simengine.policy import PythonSiteAllocation
    from simengine.workload import JobTable

    jobs = JobTable(job_id=np.arange(1, 5), submit=np.arange(4.0), runtime=np.ones(4), estimate=np.ones(4),
                    processors=np.array([1, 12, 1, 12]), cluster=np.full(4, -1), stream=np.zeros(4))
    got = SITE_ALLOCATION.get("round-robin").implementation(jobs, np.array([8, 16, 24]), {},
                                                            np.random.default_rng(0))
    assert isinstance(SITE_ALLOCATION.get("round-robin").implementation, PythonSiteAllocation)
    # job 1 -> 0; job 2 (12) -> 1; job 3 -> 2; job 4 (12): 0 is too small -> 1
    assert got.tolist() == [0, 1, 2, 1]


def test_a_site_allocation_that_answers_a_cluster_too_small_gets_an_error():
    class Stubborn(SiteAllocationPolicy):
        name = "test-stubborn"

        def choose(self, job):
            return 0

    from simengine.policy import PythonSiteAllocation
    from simengine.workload import JobTable

    jobs = JobTable(job_id=np.arange(1, 3), submit=np.arange(2.0), runtime=np.ones(2), estimate=np.ones(2),
                    processors=np.array([1, 12]), cluster=np.full(2, -1), stream=np.zeros(2))
    with pytest.raises(PolicyError, match="test-stubborn: job 1 needs 12 processors; it was sent to cluster 0, "
                                          "which has 8"):
        PythonSiteAllocation(Stubborn)(jobs, np.array([8, 16]), {}, np.random.default_rng(0))
