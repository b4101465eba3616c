"""Site allocation: Deferred and SB-Deferred (Zikos & Karatza, MODELS.md §5) over LWR sites."""
from __future__ import annotations

import numpy as np
import pytest

import simengine
from simengine.errors import ScenarioError
from simengine.grid_lwr import POLICY_DEFERRED, POLICY_SB_DEFERRED, simulate


def test_deferred_dispatches_batches_fcfs_and_updates_the_load_within_a_batch():
    # sites of 1 and 2 processors, A_I = 1; the job at t = 1.0 still belongs to the batch at 1
    submit = [0.2, 0.5, 1.0, 1.5]
    work = [3.0, 1.0, 1.0, 1.0]
    site, proc, dispatch, start = simulate(submit, work, [-1] * 4, POLICY_DEFERRED, 1.0, 0.0, np.zeros(4),
                                           [1, 2], [1, 2])
    # batch at 1: all loads 0 -> job 0 to site 0 (tie: lowest index), then site 0 has 3/1 of work
    # per processor, so job 1 goes to site 1 (0), job 2 also to site 1 (1/2 < 3), on its idle processor.
    # batch at 2: site 0 has 2/1 left, site 1 is idle -> job 3 to site 1, processor 0 (tie).
    assert site.tolist() == [0, 1, 1, 1]
    assert proc.tolist() == [0, 0, 1, 0]
    assert dispatch.tolist() == [1.0, 1.0, 1.0, 2.0]
    assert start.tolist() == [1.0, 1.0, 1.0, 2.0]


def test_deferred_queues_behind_busy_processors_and_honours_the_interval():
    # one site of one processor, A_I = 0.5: jobs start when the processor's queue drains
    site, proc, dispatch, start = simulate([0.1, 0.2, 0.7], [1.0, 1.0, 1.0], [-1] * 3, POLICY_DEFERRED, 0.5,
                                           0.0, np.zeros(3), [1], [1])
    assert dispatch.tolist() == [0.5, 0.5, 1.0]
    assert start.tolist() == [0.5, 1.5, 2.5]


def test_sb_deferred_sends_small_jobs_at_once_at_random_and_defers_big_ones():
    # two sites of one processor (random weights 1/2, 1/2), SDT = 2
    submit = [0.1, 0.3, 0.6]
    work = [5.0, 1.0, 1.0]
    u = [0.9, 0.2, 0.7]  # job 0's draw is unused: it is deferred
    site, proc, dispatch, start = simulate(submit, work, [-1] * 3, POLICY_SB_DEFERRED, 1.0, 2.0, u, [1, 1],
                                           [1, 1])
    # job 1 (u 0.2 < 0.5) -> site 0 at 0.3, job 2 (u 0.7) -> site 1 at 0.6; at the batch at 1.0
    # site 0 has 0.3 left, site 1 0.6 -> job 0 to site 0, behind job 1
    assert site.tolist() == [0, 0, 1]
    assert dispatch.tolist() == [1.0, 0.3, 0.6]
    assert start == pytest.approx([1.3, 0.3, 0.6])


def test_a_job_pinned_to_a_cluster_skips_the_grid_queue():
    site, _, dispatch, start = simulate([0.2, 0.4], [1.0, 1.0], [-1, 1], POLICY_DEFERRED, 1.0, 0.0,
                                        np.zeros(2), [1, 1], [1, 1])
    assert site.tolist() == [0, 1] and dispatch.tolist() == [1.0, 0.4] and start.tolist() == [1.0, 0.4]


def zikos(policy: str, params: dict | None = None, completions=20000, replications=2, seed=5,
          alpha=1.5) -> dict:
    return {
        "name": f"zikos {policy}",
        "platform": {"preset": "grid-4site-zikos"},
        "workload": {"streams": [{
            "kind": "synthetic", "name": "grid-jobs", "target": "grid",
            "arrival": {"mean_interarrival": 0.014}, "size": {"kind": "constant", "value": 1},
            "runtime": {"kind": "bounded_pareto", "alpha": alpha, "high": 100, "mean": 1}}]},
        "grid": {"site_allocation": {"name": policy, "params": params or {}}},
        "run": {"seed": seed, "replications": replications, "stop": {"completions": completions},
                "warmup": {"completions": 2000}},
    }


def test_deferred_utilisation_matches_the_offered_load():
    # alpha 2 (the least variable demands) and 4 x 60,000 completions: the sampled load stays
    # within the tolerance for every seed tried (1..5)
    result = simengine.run(zikos("deferred", completions=60000, replications=4, alpha=2))
    expected = (1 / 0.014) * 1.0 / 80
    assert result.metrics["utilisation"].mean == pytest.approx(expected, abs=0.01)
    jobs = result.jobs
    done = jobs["status"] == 0
    # every job waited for a batch instant (A_I = 1): it starts no earlier than ceil(submit)
    assert (jobs["start"][done] >= np.ceil(jobs["submit"][done] - 1e-12) - 1e-9).all()
    assert (jobs["response"][done] >= jobs["runtime"][done]).all()


def test_stateful_policies_are_reproducible_and_replication_independent():
    a = simengine.run(zikos("sb_deferred", {"sdt": 3}, completions=3000, replications=3))
    b = simengine.run(zikos("sb_deferred", {"sdt": 3}, completions=3000, replications=3))
    for k in a.jobs:
        np.testing.assert_array_equal(a.jobs[k], b.jobs[k])
    # a replication does not depend on how many run with it (lock step vs one at a time)
    one = simengine.run(zikos("sb_deferred", {"sdt": 3}, completions=3000, replications=1))
    first = a.jobs["replication"] == 0
    np.testing.assert_array_equal(one.jobs["start"], a.jobs["start"][first])


@pytest.mark.parametrize("policy,params,path", [
    ("deferred", {"allocation_interval": 0}, "grid.site_allocation.params.allocation_interval"),
    ("sb_deferred", {"allocation_interval": -1}, "grid.site_allocation.params.allocation_interval"),
    ("sb_deferred", {"sdt": 0}, "grid.site_allocation.params.sdt"),
    ("sb_deferred", {"weights": "size"}, "grid.site_allocation.params.weights"),
])
def test_bad_parameters_name_the_field(policy, params, path):
    with pytest.raises(ScenarioError) as e:
        simengine.load_scenario(zikos(policy, params))
    assert path in [err.path for err in e.value.errors]


def test_stateful_policy_needs_lwr_clusters():
    data = zikos("deferred")
    data["platform"] = {"clusters": [{"name": "a", "processors": 4, "scheduler": {"name": "lwr"}},
                                     {"name": "b", "processors": 4, "scheduler": {"name": "fcfs"}}]}
    with pytest.raises(ScenarioError) as e:
        simengine.load_scenario(data)
    paths = {err.path: err.message for err in e.value.errors}
    assert "grid.site_allocation.name" in paths and "'b'" in paths["grid.site_allocation.name"]
