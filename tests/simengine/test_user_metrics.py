"""Per-user metrics (issue 15): when every job of the workload carries a user (SWF traces), each
replication reports how many users were measured, Jain's fairness index over the users' mean
waits and mean bounded slowdowns, and the worst user's means; ``users.csv`` has the table."""
from __future__ import annotations

import csv
import math
from collections import defaultdict

import numpy as np
import pytest

import simengine
from simengine.results import USER_METRICS, jain_index, per_user, user_metrics
from simengine.statistics import domain
from tests.conftest import ROOT

DAS2 = ROOT / "gridweb" / "demo" / "DAS2-fs1-2003-1.swf.gz"


def das2(**run) -> dict:
    return {"platform": {"clusters": [{"name": "c", "processors": 64, "scheduler": {"name": "easy"}}]},
            "workload": {"streams": [{"kind": "trace", "name": "das2", "target": "c", "path": str(DAS2),
                                      "limit": 6000, "target_load": 0.9}]},
            "run": {"seed": 1, **run}}


def test_jain_index():
    assert jain_index(np.array([3.0, 3.0, 3.0])) == 1.0
    assert jain_index(np.array([1.0, 0.0, 0.0])) == pytest.approx(1 / 3)
    assert jain_index(np.array([1.0, 2.0])) == pytest.approx(9 / 10)  # (1 + 2)^2 / (2 (1 + 4))
    assert jain_index(np.zeros(4)) == 1.0  # nobody waits: everyone equal
    assert math.isnan(jain_index(np.zeros(0)))
    assert domain("jain_wait") == domain("jain_bounded_slowdown") == (0.0, 1.0)


def test_per_user_leaves_unknown_users_out():
    user = np.array([7, 3, 7, -1, 3, 3])
    wait = np.array([10.0, 0.0, 30.0, 99.0, 6.0, 3.0])
    bsld = np.array([2.0, 1.0, 4.0, 50.0, 1.0, 1.0])
    jobs = {"user": user, "wait": wait, "bounded_slowdown": bsld}
    got = per_user(jobs)
    assert got["user"].tolist() == [3, 7] and got["jobs"].tolist() == [3, 2]
    assert got["mean_wait"].tolist() == [3.0, 20.0] and got["mean_bounded_slowdown"].tolist() == [1.0, 3.0]
    m = user_metrics(jobs)
    assert per_user(jobs, user != 7)["user"].tolist() == [3]  # only the rows asked for
    assert m["users_measured"] == 2 and m["worst_user_mean_wait"] == 20.0
    assert m["jain_wait"] == pytest.approx(23 ** 2 / (2 * (9 + 400)))
    assert m["jain_bounded_slowdown"] == pytest.approx(16 / (2 * 10))
    unknown = {"user": np.array([-1]), "wait": np.ones(1), "bounded_slowdown": np.ones(1)}
    assert all(math.isnan(v) for v in user_metrics(unknown).values())


def by_hand(jobs: dict, replication: int) -> dict[str, float]:
    """The metrics from the rows, the plain way: group the measured jobs by user in a dict."""
    waits, slow = defaultdict(list), defaultdict(list)
    for i in range(len(jobs["job_id"])):
        if jobs["replication"][i] == replication and jobs["measured"][i] and jobs["user"][i] >= 0:
            waits[int(jobs["user"][i])].append(float(jobs["wait"][i]))
            slow[int(jobs["user"][i])].append(float(jobs["bounded_slowdown"][i]))
    w = [sum(v) / len(v) for v in waits.values()]
    s = [sum(v) / len(v) for v in slow.values()]
    return {"users_measured": len(w), "jain_wait": sum(w) ** 2 / (len(w) * sum(x * x for x in w)),
            "jain_bounded_slowdown": sum(s) ** 2 / (len(s) * sum(x * x for x in s)),
            "worst_user_mean_wait": max(w), "worst_user_mean_bounded_slowdown": max(s)}


def test_a_trace_replay_reports_per_user_metrics_for_every_replication():
    result = simengine.run(das2(replications=2, keep_jobs="all"))
    assert "user" in result.jobs and set(USER_METRICS) <= set(result.metrics)
    for r in (0, 1):
        expected = by_hand(result.jobs, r)
        for name in USER_METRICS:
            assert result.metrics[name].values[r] == pytest.approx(expected[name], rel=1e-12), (name, r)
    assert 0 < result.metrics["jain_wait"].mean <= 1 and result.metrics["users_measured"].mean > 10
    # with keep_jobs: first the other replications keep no rows but still report their metrics
    first = simengine.run(das2(replications=2, keep_jobs="first"))
    assert set(first.jobs["replication"].tolist()) == {0}
    assert first.metrics["jain_wait"].values == result.metrics["jain_wait"].values


def test_the_event_driven_path_reports_them_too_and_a_reservation_has_no_user():
    scenario = das2(replications=1)
    scenario["reservations"] = [{"name": "maint", "cluster": "c", "processors": 32, "start": 50000.0,
                                 "end": 60000.0}]
    result = simengine.run(scenario)
    jobs = result.jobs
    assert (jobs["user"][jobs["reservation"] >= 0] == -1).all()
    expected = by_hand(jobs, 0)
    assert result.metrics["jain_bounded_slowdown"].mean == pytest.approx(expected["jain_bounded_slowdown"])


def test_users_csv_is_written_with_the_result_and_only_when_there_are_users(tmp_path):
    result = simengine.run(das2(replications=1))
    result.write(tmp_path / "das2")
    rows = list(csv.DictReader(open(tmp_path / "das2" / "users.csv")))
    table = result.users()
    assert [int(r["user"]) for r in rows] == table["user"].tolist()
    assert sum(int(r["jobs"]) for r in rows) == int(result.jobs["measured"].sum())
    synthetic = simengine.run({"platform": {"clusters": [{"name": "c", "processors": 8}]},
                               "workload": {"streams": [{"kind": "synthetic", "name": "s", "target": "c",
                                                         "count": 200, "arrival": {"target_load": 0.5},
                                                         "size": {"kind": "constant", "value": 1},
                                                         "runtime": {"kind": "exponential", "mean": 60}}]}})
    synthetic.write(tmp_path / "synthetic")
    assert result.users() is not None and synthetic.users() is None
    assert not (tmp_path / "synthetic" / "users.csv").exists() and "jain_wait" not in synthetic.metrics
