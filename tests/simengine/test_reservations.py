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
        "reservations.0.cluster": "cluster 'w' uses the lwr scheduler; reservations need fcfs, easy, conservative"}


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
                            "cluster 'w' uses the lwr scheduler; preemption needs fcfs, easy, conservative"}


def test_preemption_registry_is_listed():
    assert PREEMPTION in REGISTRIES
    assert PREEMPTION.names() == ["kill", "none", "requeue", "suspend"]
    s = load_scenario(scenario(platform={"clusters": [
        {"name": "a", "processors": 10, "preemption": {"name": "suspend", "params": {"overhead": 60}}}]}))
    assert s.platform.clusters[0].preemption.params == {"overhead": 60.0}
