"""KOALA's soft errors (thesis §3.2.2, §5.2.4; docs/grid.md): a component fails at its job's start
with its cluster's probability, the whole job goes back to its placement queue, and KOALA stops
placing on a cluster after ``exclude_after`` consecutive soft errors there."""
from __future__ import annotations

import math

import numpy as np
import pytest

from simengine.errors import ScenarioError
from simengine.grid.koala import Files, KoalaJob, KoalaPolicy, SoftErrors, simulate_koala
from simengine.grid.koala_run import simulate_koala_replication
from simengine.results import Metric
from simengine.scenario import load_scenario


def test_failures_follow_a_straightforward_reference_draw_by_draw():
    # jobs far apart on an idle grid, no files: each job starts at its first scan and, after a
    # failure, at the next; the reference draws one uniform per component of each start in order
    q = np.array([0.3, 0.5])
    jobs = [KoalaJob(10_000.0 * i + 1.0, 50.0, [4] * c) for i, c in enumerate([1, 2, 3, 4, 2, 1, 3, 4] * 5)]
    out = simulate_koala([8, 8], jobs, KoalaPolicy(placement="worst-fit"),
                         soft_errors=SoftErrors(q, np.random.default_rng(7)))
    rng = np.random.default_rng(7)
    expected, per_cluster = [], np.zeros(2, np.int64)
    for k in out.jobs:
        failures = 0
        while True:  # the components of a start, in order; the clusters are those of the final placement
            clusters = [cp[1] for cp in k.comps]
            bad = [c for c in clusters if rng.random() < q[c]]
            per_cluster += np.bincount(bad, minlength=2)
            if not bad:
                break
            failures += 1
        expected.append(failures)
    assert [k.failures for k in out.jobs] == expected
    assert sum(expected) > 10  # the test exercises failures
    assert all(k.state == "done" for k in out.jobs)
    assert out.soft_errors.tolist() == per_cluster.tolist()
    # a failed start gives the processors back at once and the job starts again at a later scan
    for k in out.jobs:
        assert k.start >= k.job.submit + 60.0 * k.failures


def _grid_scenario(q: float, components: int, **params) -> dict:
    return {
        "platform": {"clusters": [{"name": "a", "processors": 64, "soft_errors": q},
                                  {"name": "b", "processors": 64, "soft_errors": q}]},
        "workload": {"streams": [{"kind": "koala", "name": "k", "count": 100, "arrival": {"rate": 0.002},
                                  "shapes": [{"components": components, "size": 4, "runtime": 60.0}]}]},
        "grid": {"placement": {"name": "worst-fit"}, "deadline_policy": {"name": "koala", "params": params}},
        "run": {"seed": 11, "replications": 1},
    }


@pytest.mark.parametrize("components", [1, 3])
def test_failures_per_job_match_the_geometric_law(components):
    # an uncontended grid: each start fails with p = 1 - (1 - q)^c, so a job's failures are
    # geometric: E[F] = p / (1 - p); the thesis's failure rate F / (F + 1) has mean
    # 1 - (1 - p) / p * (-ln(1 - p))
    q = 0.2
    s = load_scenario(_grid_scenario(q, components))
    per_job, rate = [], []
    for r in range(20):
        m = simulate_koala_replication(s, r, False, False).metrics
        per_job.append(m["failures_per_job"])
        rate.append(m["failure_rate"])
    p = 1.0 - (1.0 - q) ** components
    f, fr = Metric.from_values("failures_per_job", per_job), Metric.from_values("failure_rate", rate)
    assert f.ci_low <= p / (1.0 - p) <= f.ci_high, (f.mean, p / (1.0 - p))
    theory = 1.0 - (1.0 - p) / p * -math.log(1.0 - p)
    assert fr.ci_low <= theory <= fr.ci_high, (fr.mean, theory)


def test_a_cluster_with_consecutive_soft_errors_is_excluded():
    d = _grid_scenario(0.0, 1, exclude_after=3)
    d["platform"]["clusters"][0]["soft_errors"] = 0.9
    s = load_scenario(d)
    out = simulate_koala_replication(s, 0, True, False)
    o = out.outcome
    assert [c for c, _ in o.excluded] == [0] and out.metrics["excluded_clusters"] == 1.0
    t_out = o.excluded[0][1]
    assert o.soft_errors[0] >= 3 and o.soft_errors[1] == 0
    # placed after the exclusion: never on cluster a; every job still runs
    later = [k for k in o.jobs if k.jpt > t_out]
    assert later and all(cp[1] == 1 for k in later for cp in k.comps)
    assert all(k.state == "done" for k in o.jobs)
    assert out.jobs["failures"].sum() == sum(k.failures for k in o.jobs) > 0


def test_a_fixed_job_on_an_excluded_cluster_fails_instead_of_waiting_for_ever():
    jobs = [KoalaJob(1.0, 50.0, [4]), KoalaJob(2.0, 50.0, [4]), KoalaJob(5_000.0, 50.0, [4], [0])]
    out = simulate_koala([8, 8], jobs, KoalaPolicy(placement="worst-fit", exclude_after=1),
                         soft_errors=SoftErrors(np.array([1.0 - 1e-12, 0.0]), np.random.default_rng(1)))
    assert [c for c, _ in out.excluded] == [0]
    assert out.jobs[2].state == "failed" and 2 in out.unplaceable
    assert out.jobs[0].state == out.jobs[1].state == "done"


def test_soft_errors_draw_apart_from_the_workload():
    # the failure draws come from their own generator: the jobs are those of the run without them
    with_soft = simulate_koala_replication(load_scenario(_grid_scenario(0.3, 2)), 0, False, False).outcome
    without = simulate_koala_replication(load_scenario(_grid_scenario(0.0, 2)), 0, False, False).outcome
    assert [k.job.submit for k in with_soft.jobs] == [k.job.submit for k in without.jobs]
    assert sum(k.failures for k in with_soft.jobs) > 0 and without.soft_errors is None
    # left at 0, the field is not written: older scenarios keep their hash
    assert "soft_errors" not in load_scenario(_grid_scenario(0.0, 2)).platform.clusters[0].model_dump()


def _problems(data) -> dict[str, str]:
    with pytest.raises(ScenarioError) as info:
        load_scenario(data)
    return {e.path: e.message for e in info.value.errors}


def test_bad_soft_errors_name_their_field():
    d = _grid_scenario(1.0, 1)
    assert "less than 1" in _problems(d)["platform.clusters.0.soft_errors"]
    d = _grid_scenario(0.1, 1, exclude_after=0)
    assert "greater than or equal to 1" in _problems(d)["grid.deadline_policy.params.exclude_after"]
    plain = {"platform": {"clusters": [{"name": "a", "processors": 4, "soft_errors": 0.1}]},
             "workload": {"streams": [{"kind": "synthetic", "name": "s", "target": "a", "count": 10, "arrival": {"rate": 0.1},
                                       "size": {"kind": "constant", "value": 1},
                                       "runtime": {"kind": "constant", "value": 5}}]}}
    assert "KOALA jobs only" in _problems(plain)["platform.clusters.0.soft_errors"]


def test_the_example_is_the_reproductions_scenario():
    # examples/koala-unreliable.yaml is what `reproduce koala-unreliable` runs (its replications aside)
    import yaml

    from simengine.reproductions.koala_unreliable import scenario
    from tests.conftest import ROOT

    example = yaml.safe_load((ROOT / "examples" / "koala-unreliable.yaml").read_text())
    mine = scenario()
    for d in (example, mine):
        d.pop("name"), d.pop("description", None), d.pop("run")
    assert load_scenario(example).model_dump() == load_scenario(mine).model_dump()


def test_re_placement_never_offers_a_cluster_koala_excluded(monkeypatch):
    # X (fixed on a, no file) starts at the scan at 60 and fails there: a is excluded at 60. Y, placed
    # on a at that scan with a far file (JST 160), asks at its tries where its component could go now:
    # a is no longer an answer, and b (2 processors) cannot hold it. X, back in its queue and fixed on a,
    # fails instead of being scanned for ever
    from simengine.grid.claiming import ClaimingPolicy, Fail
    from simengine.registry import CLAIMING, Entry, NoParams
    asked = []

    class Ask(ClaimingPolicy):
        name = "ask-where"

        def claim(self, now, job, grid):
            if job.id == 0:  # X claims at once
                grid.claim(job.components[0])
                return None
            asked.append((now, job.components[0].cluster, grid.where(job.components[0])))
            return Fail()

    monkeypatch.setitem(CLAIMING._entries, Ask.name, Entry(Ask.name, NoParams, Ask, "test"))
    files = Files([0, 1], np.array([[np.inf, 10.0], [10.0, np.inf]]), ["s0", "s1"])
    jobs = [KoalaJob(1.0, 50.0, [4], [0]), KoalaJob(2.0, 50.0, [4], file_size=1000.0, file_sites=[1])]
    out = simulate_koala([8, 2], jobs, KoalaPolicy(placement="worst-fit", exclude_after=1, claiming=Ask.name), files,
                         soft_errors=SoftErrors(np.array([1.0 - 1e-12, 0.0]), np.random.default_rng(1)))
    assert [c for c, _ in out.excluded] == [0]
    assert out.jobs[0].state == "failed" and 0 in out.unplaceable  # X went back fixed on a: it fails, not loops
    assert asked and all(t > 60.0 and cluster == 0 and got is None for t, cluster, got in asked), asked


def test_the_breakdowns_by_components_and_priority_follow_the_geometric_law():
    # one grid, jobs of 1 and 3 components in two streams of high and low priority: each group's
    # failure rate is the geometric law's of its own number of components (priority changes nothing
    # on an uncontended grid, so each priority's rate is the mix of both shapes')
    q = 0.2
    d = _grid_scenario(q, 1)
    stream = d["workload"]["streams"][0]
    stream["shapes"] = [{"components": 1, "size": 4, "runtime": 60.0}, {"components": 3, "size": 4, "runtime": 60.0}]
    d["workload"]["streams"] = [dict(stream, name="hi", priority="high"), dict(stream, name="lo", priority="low")]
    s = load_scenario(d)
    per: dict[str, list] = {}
    for r in range(20):
        m = simulate_koala_replication(s, r, False, False).metrics
        for name in ("components_1", "components_3", "priority_high", "priority_low"):
            per.setdefault(name, []).append(m[f"failure_rate.{name}"])
        assert m["mean_placement_time.components_3"] >= 0.0 and "mean_start_delay.priority_low" in m
        assert m["failure_rate.size_4"] == m["failure_rate.components_1"]  # (the sizes are 4 and 12)
        assert m["failure_rate.size_12"] == m["failure_rate.components_3"]

    def theory(c):
        p = 1.0 - (1.0 - q) ** c
        return 1.0 - (1.0 - p) / p * -math.log(1.0 - p)
    for c in (1, 3):
        fr = Metric.from_values("failure_rate", per[f"components_{c}"])
        assert fr.ci_low <= theory(c) <= fr.ci_high, (c, fr.mean, theory(c))
    mix = (theory(1) + theory(3)) / 2
    for p in ("high", "low"):
        fr = Metric.from_values("failure_rate", per[f"priority_{p}"])
        assert fr.ci_low - 0.02 <= mix <= fr.ci_high + 0.02, (p, fr.mean, mix)


def test_no_breakdown_without_failures():
    m = simulate_koala_replication(load_scenario(_grid_scenario(0.0, 2)), 0, False, False).metrics
    assert not any("." in name and name.split(".")[0] in ("failure_rate", "mean_placement_time") for name in m)
