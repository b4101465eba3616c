"""A trace's cancelled jobs withdrawn at their cancellation time (docs/traces.md, "Cancelled
jobs"; issue 37): the event core against a straightforward FCFS reference, the plain-Python twins
(fcfs, easy, conservative through the event API) against the compiled passes with reservations,
priorities and every preemption mode, hand-worked cases for each consequence (a waiting job leaves
the queue and conservative compresses, a running one is killed, one cancelled at its submission
never arrives, a job ending as it is cancelled completes), and a replay of an SWF file through
simengine.run: statuses, metrics, notes, the queue series, and field errors."""
from __future__ import annotations

import copy
import gzip
import math

import numpy as np
import pytest

import simengine
from simengine.errors import ScenarioError
from simengine.gantt import KIND_KILLED, KIND_RUN, KIND_SUSPENDED
from simengine.local.cluster import CANCELLED, DONE, AdvanceReservation, ClusterSim
from simengine.local.schema import PYTHON_TWINS
from simengine.local.twins.queue import EventsFCFS
from simengine.policy import EventScheduler
from simengine.registry import LOCAL_SCHEDULERS, NoParams
from simengine.scenario import load_scenario
from simengine.workload import STATUS_CANCELLED, STATUS_NAMES
from tests.simengine.test_policy_events import MODES, assert_same
from tests.simengine.test_policy_twins import mixed

INF = math.inf


def reference_fcfs(P, submit, runtime, size, cancel):
    """FCFS on P processors in plain Python: at each instant the completions, then the
    cancellations (a running job is killed, a waiting one leaves the queue, one not yet arrived
    never arrives), then the arrivals, then queue heads start on the lowest free processors while
    they fit."""
    n = len(submit)
    owner = [-1] * P
    start, end, state = [np.nan] * n, [np.nan] * n, ["waiting"] * n
    run_end, procs, queue = {}, {}, []
    arrived = 0
    times = sorted(set(submit) | {c for c in cancel if c < INF})
    while True:
        cands = times + list(run_end.values())
        if not cands:
            break
        t = min(cands)
        times = [x for x in times if x > t]
        for j in sorted(j for j, e in run_end.items() if e <= t):
            del run_end[j]
            end[j], state[j] = t, "done"
            for p in procs.pop(j):
                owner[p] = -1
        for j in range(n):
            if cancel[j] != t or state[j] in ("done", "cancelled"):
                continue
            if state[j] == "running":
                del run_end[j]
                for p in procs.pop(j):
                    owner[p] = -1
            elif state[j] == "queued":
                queue.remove(j)
            state[j], end[j] = "cancelled", t
        while arrived < n and submit[arrived] <= t:
            if state[arrived] == "waiting":
                queue.append(arrived)
                state[arrived] = "queued"
            arrived += 1
        while queue and sum(o == -1 for o in owner) >= size[queue[0]]:
            j = queue.pop(0)
            mine = [p for p in range(P) if owner[p] == -1][:size[j]]
            for p in mine:
                owner[p] = j
            procs[j] = mine
            start[j] = t
            run_end[j] = t + runtime[j]
            state[j] = "running"
    return np.array(start), np.array(end), state


def _cancels(rng, submit, share=0.3, most=400.0):
    """A cancellation for about ``share`` of the jobs, 0 to ``most`` seconds after the submission
    (whole seconds: ties with ends, arrivals and other cancellations)."""
    cancel = np.full(len(submit), INF)
    some = rng.random(len(submit)) < share
    cancel[some] = submit[some] + np.round(rng.uniform(0, most, some.sum()))
    return cancel


@pytest.mark.parametrize("seed", range(12))
def test_fcfs_with_cancellations_follows_a_straightforward_reference(seed):
    rng = np.random.default_rng(seed)
    P, n = 16, 80
    submit = np.sort(np.round(rng.uniform(0, 8000, n)))
    runtime = np.round(rng.exponential(300, n)) + 1
    size = rng.integers(1, 9, n)
    cancel = _cancels(rng, submit)
    sim = ClusterSim(P, "fcfs", submit, runtime, runtime, size, cancel=cancel).run()
    start, end, state = reference_fcfs(P, submit.tolist(), runtime.tolist(), size.tolist(), cancel.tolist())
    np.testing.assert_array_equal(sim.first_start, start)
    np.testing.assert_array_equal(sim.end, end)
    names = {DONE: "done", CANCELLED: "cancelled"}
    assert [names[x] for x in sim.state] == state
    # the cases withdraw waiting jobs and kill running ones
    assert sum(s == "cancelled" and np.isnan(a) for s, a in zip(state, start)) > 0
    assert sum(s == "cancelled" and not np.isnan(a) for s, a in zip(state, start)) > 0


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("policy", sorted(PYTHON_TWINS))
@pytest.mark.parametrize("seed", range(3))
def test_the_python_twins_withdraw_as_the_compiled_passes_do(policy, seed, mode):
    """Reservations, four priorities, every preemption mode, and a third of the jobs cancelled:
    the twin (plain Python, told through on_cancelled) gives every start, end, state and piece."""
    P, (submit, runtime, estimate, size, prio, ars) = mixed(seed)
    cancel = _cancels(np.random.default_rng(100 + seed), submit, share=0.35, most=600.0)
    twin = LOCAL_SCHEDULERS.get(PYTHON_TWINS[policy]).implementation.policy
    a, b = (ClusterSim(P, policy, submit, runtime, estimate, size, prio, copy.deepcopy(ars), MODES[mode],
                       cancel=cancel, python=python).run() for python in (None, twin))
    assert_same(a, b)
    assert (a.state == CANCELLED).sum() > 0


def test_a_suspended_job_cancelled_gives_up_its_processors():
    # job 0 (priority 0) runs from 0; job 1 (priority 1) arrives at 5 and suspends it; job 0 is
    # cancelled at 8 while suspended: its suspended piece ends then, and job 2 (queued behind it)
    # takes its processors when job 1 ends
    for python in (None, LOCAL_SCHEDULERS.get(PYTHON_TWINS["fcfs"]).implementation.policy):
        sim = ClusterSim(4, "fcfs", [0, 5, 6], [20, 10, 5], [20, 10, 5], [4, 4, 4], [0, 1, 0], mode=MODES["suspend"],
                         cancel=[8, INF, INF], python=python).run()
        assert sim.state.tolist() == [CANCELLED, DONE, DONE]
        assert sim.end[0] == 8 and sim.first_start[1] == 5
        assert sim.first_start[2] == sim.end[1] == 15
        suspended = [p for p in sim.pieces if p[0] == ("j", 0) and p[3] == KIND_SUSPENDED]
        assert [(p[1], p[2]) for p in suspended] == [(5.0, 8.0)]


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative", "events-conservative"])
def test_a_waiting_job_withdrawn_lets_the_next_one_start_sooner(policy):
    # job 0 holds the 4 processors until 10; job 1 (4, 10 s) waits and is withdrawn at 5; job 2
    # (4, 5 s) starts at 10 instead of 20 -- under conservative its reservation moves earlier
    submit, runtime, size = [0, 1, 2], [10, 10, 5], [4, 4, 4]
    sim = ClusterSim(4, policy, submit, runtime, runtime, size, cancel=[INF, 5, INF]).run()
    assert sim.state.tolist() == [DONE, CANCELLED, DONE]
    assert np.isnan(sim.first_start[1]) and sim.end[1] == 5
    assert sim.first_start[2] == 10
    without = ClusterSim(4, policy, submit, runtime, runtime, size).run()
    assert without.first_start[2] == 20


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
def test_a_running_job_is_killed_and_one_ending_as_it_is_cancelled_completes(policy):
    sim = ClusterSim(4, policy, [0, 0], [10, 10], [10, 10], [2, 2], cancel=[4, 10]).run()
    assert sim.state.tolist() == [CANCELLED, DONE]
    assert sim.end.tolist() == [4, 10] and sim.lost.tolist() == [4, 0] and sim.preemptions.tolist() == [0, 0]
    assert [(p[0], p[1], p[2], p[3]) for p in sim.pieces] == [(("j", 0), 0.0, 4.0, KIND_KILLED),
                                                              (("j", 1), 0.0, 10.0, KIND_RUN)]


def test_a_job_cancelled_at_its_submission_never_arrives_and_a_policy_hears_of_the_others():
    heard = []

    class Recorder(EventsFCFS):
        name = "cancel-recorder"

        def on_submit(self, now, jobs):
            heard.extend(("submit", now, j.id) for j in jobs)

        def on_cancelled(self, now, jobs):
            heard.extend(("cancelled", now, j.id, j.status, not math.isnan(j.start)) for j in jobs)

    # job 0 runs 0-10 on all 4; job 1 is cancelled at its submission; job 2 waits and is withdrawn;
    # job 3 runs from 10 and is cancelled running
    sim = ClusterSim(4, "cancel-recorder", [0, 1, 2, 3], [10, 5, 5, 50], [10, 5, 5, 50], [4, 1, 4, 4],
                     cancel=[INF, 1, 6, 20], python=Recorder).run()
    assert sim.state.tolist() == [DONE, CANCELLED, CANCELLED, CANCELLED]
    assert ("submit", 1.0, 1) not in heard
    assert [h for h in heard if h[0] == "cancelled"] == [("cancelled", 6.0, 2, "cancelled", False),
                                                         ("cancelled", 20.0, 3, "cancelled", True)]
    assert sim.first_start[3] == 10 and sim.end[3] == 20


class _Bare(EventScheduler):
    """A policy that only decides: it starts queue heads (it keeps no list of its own)."""

    name = "cancel-bare"
    Params = NoParams

    def decide(self, now):
        c = self.cluster
        while c.queue and c.queue[0].size <= c.free:
            c.start(c.queue[0])


def test_a_policy_without_on_cancelled_sees_the_queue_without_the_withdrawn_job():
    sim = ClusterSim(4, "cancel-bare", [0, 1, 2], [10, 10, 5], [10, 10, 5], [4, 4, 4], cancel=[INF, 5, INF],
                     python=_Bare).run()
    assert sim.state.tolist() == [DONE, CANCELLED, DONE] and sim.first_start[2] == 10


@pytest.mark.parametrize("policy", ["pybatsim-filler", "pybatsim-easy"])
def test_the_pybatsim_examples_hear_of_cancellations_as_kills(policy):
    import gridweb_example_policies.pybatsim_style  # noqa: F401  (registers them)

    sim = ClusterSim(4, policy, [0, 1, 2, 3], [10, 10, 5, 50], [10, 10, 5, 50], [4, 4, 2, 2],
                     cancel=[INF, 5, INF, 12]).run()
    assert sim.state.tolist() == [DONE, CANCELLED, DONE, CANCELLED]
    assert sim.first_start.tolist()[2:] == [10, 10] and sim.end[3] == 12


def test_a_cancellation_before_the_submission_is_refused():
    with pytest.raises(ValueError, match="cancelled before its submission"):
        ClusterSim(4, "fcfs", [0, 5], [1, 1], [1, 1], [1, 1], cancel=[INF, 4])


# ---- through simengine.run, from an SWF file -------------------------------------------------------------


def _swf(path, rows):
    """An SWF file of (id, submit, wait, run, processors, requested time, status)."""
    lines = ["; MaxProcs: 8"]
    for i, submit, wait, run, procs, req, status in rows:
        lines.append(f"{i} {submit} {wait} {run} {procs} -1 -1 {procs} {req} -1 {status} 1 1 1 1 -1 -1 -1")
    with gzip.open(path, "wt") as fh:
        fh.write("\n".join(lines) + "\n")
    return str(path)


#: job 1 holds all 8 processors for 100 s; job 2 waits and is cancelled at 30 (never ran in the
#: trace); job 3 (ran, then cancelled) is replayed with the 20 s it ran; job 4 never ran, waited 0
#: (cancelled at its submission); job 5 waits behind job 1 (starts at 100)
ROWS = [(1, 0, 0, 100, 8, 100, 1), (2, 10, 20, 0, 8, 50, 5), (3, 20, 80, 20, 4, 60, 5),
        (4, 25, 0, 0, 2, 30, 5), (5, 40, 60, 10, 4, 10, 1)]


def _scenario(path, cancelled, scheduler="conservative"):
    return load_scenario({
        "platform": {"clusters": [{"name": "c", "processors": 8, "scheduler": {"name": scheduler}}]},
        "workload": {"streams": [{"kind": "trace", "name": "t", "path": path, "target": "c",
                                  "cancelled": cancelled}]},
        "run": {"seed": 1}})


def test_a_replay_withdraws_the_trace_s_cancelled_jobs_and_reports_them(tmp_path):
    path = _swf(tmp_path / "c.swf.gz", ROWS)
    r = simengine.run(_scenario(path, "withdraw"))
    j = r.jobs
    by_id = {int(i): k for k, i in enumerate(j["job_id"])}
    status = [STATUS_NAMES[j["status"][by_id[i]]] for i in range(1, 6)]
    assert status == ["completed", "cancelled", "completed", "cancelled", "completed"]
    assert np.isnan(j["start"][by_id[2]]) and j["end"][by_id[2]] == 30
    assert j["start"][by_id[3]] == 100 and j["end"][by_id[3]] == 120  # (it ran 20 s in the trace)
    assert np.isnan(j["start"][by_id[4]])
    assert r.metrics["jobs_withdrawn"].mean == 2 and r.metrics["jobs_cancelled_running"].mean == 0
    assert r.metrics["jobs_measured"].mean == 3  # (the withdrawn jobs are not measured)
    assert r.status_counts()["cancelled"] == 2
    assert any("1 ran before their cancellation" in n and "2 never ran" in n and "withdrawn" in n for n in r.notes)
    # the queue series: job 2 leaves the queue at 30
    t, q = r.series["time"], r.series["queue_length"]
    assert q[(t > 12) & (t < 19)].min() == 1 and q[(t > 31) & (t < 39)].max() == 1  # (job 3 waits from 20)
    # keep: the never-run jobs replay as jobs of run time 0; drop: they are left out
    keep = simengine.run(_scenario(path, "keep"))
    assert "jobs_withdrawn" not in keep.metrics and "cancelled" not in keep.status_counts()
    assert sorted(keep.jobs["job_id"].tolist()) == [1, 2, 3, 4, 5]
    drop = simengine.run(_scenario(path, "drop"))
    assert sorted(drop.jobs["job_id"].tolist()) == [1, 3, 5]


def test_a_withdrawn_job_the_schedule_starts_sooner_runs_its_requested_time_or_until_its_cancellation(tmp_path):
    # nothing blocks them here: job 2 (requested 50 s) runs 10-40 and is killed at its cancellation
    # (30 + 10); job 6 (requested 5 s, cancelled at 100) completes its request
    rows = [(2, 10, 30, 0, 8, 50, 5), (6, 60, 40, 0, 2, 5, 5)]
    r = simengine.run(_scenario(_swf(tmp_path / "s.swf.gz", rows), "withdraw", "easy"))
    j = r.jobs
    assert [STATUS_NAMES[s] for s in j["status"]] == ["cancelled", "completed"]
    assert j["start"].tolist() == [10, 60] and j["end"].tolist() == [40, 65]
    assert j["runtime"].tolist() == [50, 5] and j["lost_time"].tolist() == [30, 0]
    assert r.metrics["jobs_cancelled_running"].mean == 1 and r.metrics["lost_work"].mean == 30 * 8


def test_withdraw_is_refused_where_it_is_not_simulated(tmp_path):
    path = _swf(tmp_path / "c.swf.gz", ROWS)
    with pytest.raises(ScenarioError) as e:
        _scenario(path, "withdraw", "lwr")
    assert any(err.path == "workload.streams.0.cancelled" and "lwr scheduler" in err.message
               for err in e.value.errors), e.value.errors
    with pytest.raises(ScenarioError) as e:
        _scenario(path, "sometimes")
    assert any(err.path == "workload.streams.0.cancelled" for err in e.value.errors), e.value.errors


def test_the_status_names_and_the_swf_export_know_cancelled():
    from simengine.traces.swf import swf_status

    assert STATUS_NAMES[STATUS_CANCELLED] == "cancelled"
    assert swf_status(np.array([STATUS_CANCELLED])).tolist() == [5]


def test_an_outage_and_a_cancellation_together(tmp_path):
    # the failure kills job 0 at 5 (requeued); it is cancelled at 8 while waiting again
    down = [AdvanceReservation(index=0, processors=4, start=5.0, end=20.0, request_time=5.0, outage=1, first=0)]
    sim = ClusterSim(4, "easy", [0, 1], [10, 3], [10, 3], [4, 4], outages=down, cancel=[8, INF]).run()
    assert sim.state.tolist() == [CANCELLED, DONE] and sim.failures.tolist() == [1, 0]
    assert sim.end[0] == 8 and np.isnan(sim.first_start[0]) is np.False_ and sim.first_start[1] == 20


def test_events_lwr_takes_a_withdrawn_job_off_its_processor_s_line():
    # one processor: job 1 waits in its line behind job 0 and is withdrawn at 5; job 2 starts at 10
    sim = ClusterSim(1, "events-lwr", [0, 1, 2], [10, 10, 10], [10, 10, 10], [1, 1, 1], cancel=[INF, 5, INF]).run()
    assert sim.state.tolist() == [DONE, CANCELLED, DONE] and sim.first_start[2] == 10
