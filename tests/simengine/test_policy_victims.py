"""Victim choice as a policy kind (simengine.preemption.VictimChoice, registry VICTIMS, a cluster's
``victims``; docs/policies/victim-choice.md): the built-in order rewritten in plain Python gives the
compiled schedules exactly (the cluster then runs the compiled pass's plain-Python twin), the worked
example ``least-work-lost`` gives the schedules of the plain-Python reference simulator taking victims
by the same rule, what a policy is told and may answer, and the errors of a bad configuration."""
from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np
import pytest

import simengine
from simengine.errors import ScenarioError
from simengine.local.cluster import ClusterSim
from simengine.local.schema import PYTHON_TWINS
from simengine.local.twins.queue import EventsEASY
from simengine.policy import Job, PolicyError, VictimChoice, register
from simengine.preemption import LowestPriorityNewest, choose_victims, victim_choice
from simengine.registry import VICTIMS
from tests.simengine import reference_cluster
from tests.simengine.test_policy_events import MODES, assert_same, scenario, workload

import gridweb_example_policies.victims as example

PREEMPTING = ("kill", "requeue", "suspend")


def jobs(seed: int, priorities: int, stretch: float = 30.0, **kw):
    """test_policy_events' workload (ties, zero run times, overruns, reservations) with two
    priorities (0, 1) or three (0, 1, 2), its times ``stretch`` times as far apart (that workload
    is overloaded: FCFS, which does not backfill, then rarely runs a low-priority job to preempt)."""
    submit, runtime, estimate, size, prio, ars = workload(seed, **kw)
    ars = [replace(r, start=r.start * stretch, end=r.start * stretch + r.length, request_time=r.request_time * stretch,
                   est=None if r.est is None else r.est * stretch, lft=None if r.lft is None else r.lft * stretch)
           for r in ars]
    return submit * stretch, runtime, estimate, size, (np.minimum(prio, 1) if priorities == 2 else prio), ars


def simulate(policy: str, seed: int, mode: str, priorities: int = 3, victims=None, **kw) -> ClusterSim:
    submit, runtime, estimate, size, prio, ars = jobs(seed, priorities, **kw)
    return ClusterSim(32, policy, submit, runtime, estimate, size, prio, copy.deepcopy(ars), MODES[mode],
                      victims=victims).run()


@pytest.fixture
def scratch_victims():
    before = set(VICTIMS.names())
    yield
    for name in set(VICTIMS.names()) - before:
        VICTIMS._entries.pop(name)


# ---- (a) the built-in order through the API gives the compiled schedules ------------------------------------


@pytest.mark.parametrize("priorities", (2, 3))
@pytest.mark.parametrize("mode", PREEMPTING)
@pytest.mark.parametrize("policy", ("fcfs", "easy"))
def test_the_built_in_order_in_plain_python_gives_the_compiled_schedules(policy, mode, priorities, monkeypatch):
    asked = []
    order = example.PythonLowestPriorityNewest.order
    monkeypatch.setattr(example.PythonLowestPriorityNewest, "order",
                        lambda self, *a: asked.append(a[0]) or order(self, *a))
    compiled = simulate(policy, 0, mode, priorities)
    python = simulate(policy, 0, mode, priorities, victims="python-lowest-priority-newest")
    assert compiled.external is None and python.external.policy.name == PYTHON_TWINS[policy]  # the twin ran
    assert asked and python.preemptions.sum() > 0  # the order was asked for, and taken
    assert_same(compiled, python)  # every start, end, state, preemption count and Gantt piece


def test_the_default_keeps_the_compiled_pass_and_the_core_order():
    assert victim_choice(None) is None and victim_choice({"name": "lowest-priority-newest"}) is None
    assert simulate("easy", 0, "suspend", victims="lowest-priority-newest").external is None


def test_the_built_in_entry_orders_jobs_as_the_plain_sort_does():
    """LowestPriorityNewest.order (order_victims, as the core applies it) on Job candidates with ties."""
    rng = np.random.default_rng(4)
    for _ in range(50):
        candidates = []
        for i in range(int(rng.integers(0, 12))):
            job = Job(i, 0.0, 1, 1.0, int(rng.integers(0, 3)))
            job.start = float(rng.integers(0, 4))
            candidates.append(job)
        candidates.sort(key=lambda j: j.start)  # (candidates come in start order)
        got = LowestPriorityNewest(None, None).order(0.0, None, list(candidates))
        assert got == example.built_in_order(candidates)


def test_a_scenario_names_the_victim_choice_per_cluster():
    """Through simengine.run (the scenario's `victims`): the built-in order in Python gives the default
    run exactly; least-work-lost changes it."""
    def with_victims(name):
        data = scenario("easy")
        data["platform"]["clusters"][0]["victims"] = {"name": name}
        return simengine.run(data)

    default = simengine.run(scenario("easy"))
    python = with_victims("python-lowest-priority-newest")
    for column, values in default.jobs.items():
        np.testing.assert_array_equal(python.jobs[column], values, err_msg=column)
    assert python.metrics == default.metrics
    other = with_victims("least-work-lost")
    assert not np.array_equal(other.jobs["start"], default.jobs["start"], equal_nan=True)


# ---- (b) least-work-lost against the plain-Python reference simulator ---------------------------------------


def reference_least_work_lost(policy: str, seed: int, mode: str, priorities: int, monkeypatch):
    """tests/simengine/reference_cluster.py taking a waiting job's victims by least work lost --
    processor-seconds since their current start, ties lowest priority, then newest start, then start
    order -- through choose_victims' ``order``; a reservation window keeps the built-in order (as the
    event core does)."""
    submit, runtime, estimate, size, prio, ars = jobs(seed, priorities)
    ref = reference_cluster.ClusterSim(32, policy, submit, runtime, estimate, size, prio, copy.deepcopy(ars),
                                       MODES[mode])
    now = [0.0]
    preempt_for = ref._preempt_for

    def noting_the_time(j, t):
        now[0] = t
        return preempt_for(j, t)

    def least_work_lost(pool):  # job ids, in start order
        t = now[0]
        return sorted(pool, key=lambda j: ((t - ref.run_start[j]) * ref.size[j], ref.prio[j], -ref.run_start[j]))

    def chooser(candidates, priority, started, enough, below=None):
        return choose_victims(candidates, priority, started, enough, below,
                              order=None if below is None else least_work_lost)

    ref._preempt_for = noting_the_time
    monkeypatch.setattr(reference_cluster, "choose_victims", chooser)
    return ref.run()


@pytest.mark.parametrize("mode", PREEMPTING)
@pytest.mark.parametrize("policy", ("fcfs", "easy"))
def test_least_work_lost_gives_the_reference_schedules(policy, mode, monkeypatch):
    python = simulate(policy, 2, mode, victims="least-work-lost")
    ref = reference_least_work_lost(policy, 2, mode, 3, monkeypatch)
    np.testing.assert_array_equal(python.first_start, ref.first_start)
    np.testing.assert_array_equal(python.end, ref.end)
    np.testing.assert_array_equal(python.state, ref.state)
    np.testing.assert_array_equal(python.preemptions, ref.preemptions)
    assert python.preemptions.sum() > 0


def test_least_work_lost_takes_other_victims_than_the_default_and_the_comparison_can_fail(monkeypatch):
    """The rule matters on these inputs, so the test above compares something: the default order's
    schedule differs from the reference's with least work lost."""
    default = simulate("easy", 2, "requeue")
    ref = reference_least_work_lost("easy", 2, "requeue", 3, monkeypatch)
    assert not np.array_equal(default.first_start, ref.first_start, equal_nan=True)


# ---- what a victim choice is told, and what it may answer ---------------------------------------------------


def test_the_policy_is_told_the_job_to_start_and_the_candidates_in_start_order(scratch_victims):
    calls = []

    @register
    class Watching(VictimChoice):
        name = "test-watching"

        def order(self, now, preemptor, candidates):
            c = self.cluster
            assert preemptor is c.queue[0] and preemptor.status in ("waiting", "suspended")
            assert candidates and all(c.running.get(v.id) is v and v.priority < preemptor.priority
                                      for v in candidates)
            assert [v.id for v in candidates] == [j for j, v in c.running.items() if v in candidates]  # start order
            calls.append(now)
            return candidates[::-1]  # the oldest start first

    sim = simulate("easy", 0, "suspend", victims="test-watching")
    assert calls and sim.preemptions.sum() > 0


def test_an_event_policy_names_the_job_to_start_by_passing_it(scratch_victims):
    """cluster.victims(job): the victim choice is told that job (here never the first of its priority,
    the one a bare priority names)."""
    told = []

    class Asking(EventsEASY):
        name = "test-asking"
        passing = None  # the job passed to cluster.victims now

        def decide(self, now):
            c = self.cluster
            for job in c.queue[1:]:
                if job.priority > 0 and job is not next(q for q in c.queue if q.priority == job.priority):
                    self.passing = job
                    c.victims(job)
            self.passing = None
            super().decide(now)

    @register
    class Telling(VictimChoice):
        name = "test-telling"

        def order(self, now, preemptor, candidates):
            passing = self.cluster.policy.passing
            if passing is not None:
                told.append(preemptor is passing)
            return candidates

    submit, runtime, estimate, size, prio, ars = jobs(0, 3)
    ClusterSim(32, "test-asking", submit, runtime, estimate, size, prio, ars, MODES["suspend"], python=Asking,
               victims="test-telling").run()
    assert told and all(told)


def test_candidates_left_out_are_never_taken(scratch_victims):
    @register
    class Nobody(VictimChoice):
        name = "test-nobody"

        def order(self, now, preemptor, candidates):
            return []

    assert simulate("easy", 0, "kill", nar=0).preemptions.sum() > 0
    assert simulate("easy", 0, "kill", victims="test-nobody", nar=0).preemptions.sum() == 0


@pytest.mark.parametrize("answer,why", [
    (lambda c, candidates: c.queue[-1:], r"it named Job\(id=\d+.*which is not one of the \d+ candidates"),
    (lambda c, candidates: candidates[:1] * 2, r"it named job \d+ twice"),
])
def test_an_answer_that_is_not_an_order_of_the_candidates_is_an_error(scratch_victims, answer, why):
    @register
    class Wrong(VictimChoice):
        name = "test-wrong"

        def order(self, now, preemptor, candidates):
            return answer(self.cluster, candidates)

    with pytest.raises(PolicyError, match=r"test-wrong: at t=[\d.e+]+, ordering victims for job \d+, " + why):
        simulate("easy", 0, "suspend", victims="test-wrong")


def test_an_exception_names_the_policy_the_call_and_the_line(scratch_victims):
    @register
    class Raises(VictimChoice):
        name = "test-raises"

        def order(self, now, preemptor, candidates):
            return {}["x"]

    with pytest.raises(PolicyError, match=r"test-raises: order\(\) at t=[\d.e+]+ for job \d+ \(\d+ candidates\) "
                                          r"raised KeyError: 'x' \(.*test_policy_victims.py, line \d+, in order\)"):
        simulate("easy", 0, "suspend", victims="test-raises")


# ---- (c) a bad configuration --------------------------------------------------------------------------------


def two_clusters(victims: dict, **east) -> dict:
    data = scenario("easy")
    data["platform"]["clusters"].append({**data["platform"]["clusters"][0], "name": "west",
                                         "scheduler": {"name": "conservative"}})
    data["platform"]["clusters"][0].update(victims=victims, **east)
    return data


@pytest.mark.parametrize("victims,east,field,message", [
    ({"name": "newest"}, {}, "platform.clusters.0.victims.name",
     "unknown victim choice 'newest'; known: least-work-lost, lowest-priority-newest"),
    ({"name": "least-work-lost", "params": {"x": 1}}, {}, "platform.clusters.0.victims.params.x", "unknown field 'x'"),
    ({"name": "least-work-lost"}, {"preemption": {"name": "none"}}, "platform.clusters.0.victims.name",
     "cluster 'c' preempts nobody for a waiting job (preemption none): victim choice least-work-lost needs "
     "preemption kill, requeue or suspend"),
    ({"name": "least-work-lost"}, {"scheduler": {"name": "conservative"}}, "platform.clusters.0.victims.name",
     "cluster 'c' uses the conservative scheduler, which takes victims in the event core's own order and has no "
     "plain-Python twin yet; a Python victim choice (least-work-lost) needs fcfs, easy or a Python scheduler"),
])
def test_a_bad_victim_choice_is_an_error_naming_the_field(victims, east, field, message, monkeypatch):
    # (every compiled pass has its twin now: a pass without one is made by taking conservative's out)
    monkeypatch.setattr("simengine.local.schema.PYTHON_TWINS", {"fcfs": "events-fcfs", "easy": "events-easy-arrays"})
    with pytest.raises(ScenarioError) as err:
        simengine.load_scenario(two_clusters(victims, **east))
    assert [(e.path, e.message[:len(message)]) for e in err.value.errors] == [(field, message)]


def test_the_default_is_left_out_of_the_scenario_and_a_choice_round_trips():
    plain = simengine.load_scenario(scenario("easy"))
    assert "victims" not in plain.model_dump(mode="json")["platform"]["clusters"][0]  # the hash is unchanged
    chosen = simengine.load_scenario(two_clusters({"name": "least-work-lost"}))
    assert chosen.model_dump(mode="json")["platform"]["clusters"][0]["victims"] == {"name": "least-work-lost",
                                                                                     "params": {}}
    # the built-in order on a conservative cluster (no Python) is fine
    simengine.load_scenario(two_clusters({"name": "lowest-priority-newest"}, scheduler={"name": "conservative"}))


def test_a_compiled_pass_without_a_twin_refuses_a_python_victim_choice_when_simulated_directly(monkeypatch):
    monkeypatch.delitem(PYTHON_TWINS, "conservative")
    with pytest.raises(ValueError, match="the conservative scheduler has no plain-Python twin yet"):
        simulate("conservative", 0, "suspend", victims="least-work-lost")


def test_conservative_with_a_python_victim_choice_runs_its_twin_and_takes_the_victims_it_names():
    python = simulate("conservative", 0, "suspend", victims="python-lowest-priority-newest")
    assert python.external.policy.name == "events-conservative" and python.preemptions.sum() > 0
    compiled = simulate("conservative", 0, "suspend")
    np.testing.assert_array_equal(python.first_start, compiled.first_start)  # the built-in order, written again
    lost = simulate("conservative", 0, "suspend", victims="least-work-lost")
    assert not np.array_equal(lost.first_start, compiled.first_start)  # another order: another schedule
