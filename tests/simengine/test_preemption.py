"""Preemption (docs/reservations.md): exact schedules for suspend/resume with overhead, requeue
losing progress, kill, the choice of victims, priorities, and jobs overrunning into a
reservation window."""
from __future__ import annotations

import pytest

from simengine.gantt import KIND_KILLED, KIND_RESERVATION, KIND_RUN, KIND_SUSPENDED
from simengine.local.cluster import DONE, KILLED, AdvanceReservation, ClusterSim
from simengine.preemption import choose_victims, preemption_mode

POLICIES = ["fcfs", "easy", "conservative"]


def low_then_high(policy, mode):
    """4 processors. L (priority 0): submit 0, 4 processors, 100 s (= estimate). H (priority 1):
    submit 30, 2 processors, 50 s. At 30 H cannot start (nothing free) and L has a lower
    priority: L is the one victim needed."""
    return ClusterSim(4, policy, [0, 30], [100, 50], [100, 50], [4, 2], priority=[0, 1],
                      mode=preemption_mode(mode)).run()


def job_pieces(sim, j):
    return sorted((p[1], p[2], p[3], p[4]) for p in sim.pieces if p[0] == ("j", j))


@pytest.mark.parametrize("policy", POLICIES)
def test_suspend_and_resume_with_overhead(policy):
    sim = low_then_high(policy, {"name": "suspend", "params": {"overhead": 10}})
    # L runs [0, 30) on 0-3 and is suspended; H takes the lowest processors, 0-1, for [30, 80).
    # L's checkpoint stays on 0-3: it resumes there at 80 with 70 s left + 10 s overhead -> 160.
    assert sim.first_start.tolist() == [0.0, 30.0] and sim.end.tolist() == [160.0, 80.0]
    assert job_pieces(sim, 0) == [(0.0, 30.0, KIND_RUN, (0, 1, 2, 3)), (30.0, 80.0, KIND_SUSPENDED, (0, 1, 2, 3)),
                                  (80.0, 160.0, KIND_RUN, (0, 1, 2, 3))]
    assert job_pieces(sim, 1) == [(30.0, 80.0, KIND_RUN, (0, 1))]
    assert (sim.preemptions.tolist(), sim.resumes.tolist(), sim.lost.tolist()) == ([1, 0], [1, 0], [0.0, 0.0])
    assert sim.state.tolist() == [DONE, DONE]


@pytest.mark.parametrize("policy", POLICIES)
def test_requeue_loses_the_progress(policy):
    sim = low_then_high(policy, {"name": "requeue", "params": {"overhead": 5}})
    # L's 30 s are lost (a killed segment); it restarts from scratch when H ends: 80 + 100 + 5
    assert sim.end.tolist() == [185.0, 80.0]
    assert job_pieces(sim, 0) == [(0.0, 30.0, KIND_KILLED, (0, 1, 2, 3)), (80.0, 185.0, KIND_RUN, (0, 1, 2, 3))]
    assert sim.lost.tolist() == [30.0, 0.0] and sim.preemptions.tolist() == [1, 0]


@pytest.mark.parametrize("policy", POLICIES)
def test_kill(policy):
    sim = low_then_high(policy, "kill")
    assert sim.state.tolist() == [KILLED, DONE] and sim.end.tolist() == [30.0, 80.0]
    assert job_pieces(sim, 0) == [(0.0, 30.0, KIND_KILLED, (0, 1, 2, 3))]
    assert sim.lost.tolist() == [30.0, 0.0]


@pytest.mark.parametrize("policy", POLICIES)
def test_no_preemption_only_reorders_the_queue(policy):
    # mode none: H waits for L (160 would be wrong); priorities still order the queue: with
    # L running, M (priority 0, submit 10) and H (priority 1, submit 30) both wait; H goes first.
    sim = ClusterSim(4, policy, [0, 10, 30], [100, 50, 50], [100, 50, 50], [4, 4, 4], priority=[0, 0, 1],
                     mode=preemption_mode("none")).run()
    assert sim.first_start.tolist() == [0.0, 150.0, 100.0]


def test_victims_lowest_priority_first_then_newest_start():
    # 6 processors, kill. A (priority 0) from 0 on 0-1, B (priority 0) from 10 on 2-3, C
    # (priority 1) from 20 on 4-5, all 1000 s. D (priority 2, 3 processors) arrives at 30:
    # priority 0 first, newest first: B (2, not enough), then A (4 >= 3). C keeps running.
    sim = ClusterSim(6, "easy", [0, 10, 20, 30], [1000] * 4, [1000] * 4, [2, 2, 2, 3], priority=[0, 0, 1, 2],
                     mode=preemption_mode("kill")).run()
    assert sim.state.tolist() == [KILLED, KILLED, DONE, DONE]
    assert sim.end.tolist() == [30.0, 30.0, 1020.0, 1030.0]
    assert job_pieces(sim, 3) == [(30.0, 1030.0, KIND_RUN, (0, 1, 2))]


def test_nobody_is_preempted_when_even_all_victims_would_not_do():
    # H needs 4 of 4 but only L1 (2 processors) has a lower priority; M (priority 5) keeps 2
    sim = ClusterSim(4, "easy", [0, 0, 10], [100, 100, 10], [100, 100, 10], [2, 2, 4], priority=[0, 5, 3],
                     mode=preemption_mode("kill")).run()
    assert sim.state.tolist() == [DONE, DONE, DONE] and sim.first_start.tolist() == [0.0, 0.0, 100.0]


def test_a_suspended_job_resumes_before_queued_jobs_of_its_priority():
    # 4 processors, suspend. L (priority 0, 4 procs, 100 s) from 0; Q (priority 0, 4 procs, 10 s)
    # queued at 5; H (priority 1, 4 procs, 20 s) at 30 suspends L. When H ends at 50, L (suspended,
    # same priority as Q) goes first: 50 + 70 -> 120; Q then runs [120, 130).
    sim = ClusterSim(4, "fcfs", [0, 5, 30], [100, 10, 20], [100, 10, 20], [4, 4, 4], priority=[0, 0, 1],
                     mode=preemption_mode("suspend")).run()
    assert sim.end.tolist() == [120.0, 130.0, 50.0]


@pytest.mark.parametrize("mode,state,end", [("none", KILLED, 100.0), ("kill", KILLED, 100.0),
                                            ({"name": "suspend", "params": {"overhead": 10}}, DONE, 180.0),
                                            ({"name": "requeue", "params": {"overhead": 0}}, DONE, 270.0)])
def test_a_job_overrunning_into_a_reservation_is_preempted_by_it(mode, state, end):
    # 4 processors; a reservation of all 4 over [100, 150). J (2 processors) asks for 50 s but runs
    # 120: at 0 it fits before the window, at 100 it is still running and the window needs its
    # processors. none/kill: killed at 100. suspend: resumes at 150 on the same processors with
    # 20 s + 10 s overhead -> 180. requeue: restarts at 150, 120 s -> 270.
    r = AdvanceReservation(0, 4, 100.0, 150.0)
    sim = ClusterSim(4, "easy", [0], [120], [50], [2], reservations=[r], mode=preemption_mode(mode)).run()
    assert sim.state.tolist() == [state] and sim.end.tolist() == [end]
    assert (("r", 0), 100.0, 150.0, KIND_RESERVATION, (0, 1, 2, 3)) in sim.pieces
    first = job_pieces(sim, 0)[0]
    assert first == (0.0, 100.0, KIND_RUN if state == DONE and end == 180.0 else KIND_KILLED, (0, 1))


def test_choose_victims_is_the_shortest_prefix():
    jobs = [("a", 0, 0.0, 2), ("b", 0, 5.0, 2), ("c", 1, 9.0, 8)]
    pick = choose_victims(jobs, lambda j: j[1], lambda j: j[2], lambda v: sum(j[3] for j in v) >= 3, below=2)
    assert [j[0] for j in pick] == ["b", "a"]
    assert choose_victims(jobs, lambda j: j[1], lambda j: j[2], lambda v: sum(j[3] for j in v) >= 5, below=1) is None


def test_preemption_mode_from_refs():
    assert preemption_mode(None).name == "none" and not preemption_mode(None).preempts
    m = preemption_mode({"name": "suspend", "params": {"overhead": 60}})
    assert (m.resumes, m.restarts, m.overhead, m.kills) == (True, False, 60.0, False)
    assert preemption_mode("kill").kills and preemption_mode("requeue").restarts


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 16, 33])
def test_the_victim_order_is_the_plain_sort(n):
    """order_victims (the one definition the event core and choose_victims use) against Python's
    sort on the key it states: lowest priority, newest start, then the order given."""
    import numpy as np

    from simengine.preemption import order_victims
    rng = np.random.default_rng(n)
    for _ in range(50):
        prio = rng.integers(0, 3, n)
        started = rng.integers(0, 4, n).astype(float)  # ties on both keys, often
        seq = rng.permutation(n)
        ids = rng.permutation(n)  # any candidates' order in
        want = sorted(ids.tolist(), key=lambda i: (prio[i], -started[i], seq[i]))
        got = ids.copy()
        order_victims(got, prio, started, seq)
        assert got.tolist() == want


def test_choose_victims_keeps_the_candidates_order_on_ties():
    jobs = [("a", 0, 5.0, 1), ("b", 1, 9.0, 1), ("c", 0, 5.0, 1), ("d", 0, 7.0, 1)]
    pick = choose_victims(jobs, lambda j: j[1], lambda j: j[2], lambda v: len(v) >= 4)
    assert [j[0] for j in pick] == ["d", "a", "c", "b"]
