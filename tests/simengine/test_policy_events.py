"""Local schedulers on the event API (simengine.policy.EventScheduler, simengine.local.external):
Python policies as the scheduling pass of the event core, with advance reservations, priorities and
preemption; the actions (chosen processors, reject, kill/requeue/suspend, timers); the simple form
as an adapter; and the pybatsim shape (simengine.pybatsim)."""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest

import simengine
from simengine.conformance import PROCESSORS, read_case
from simengine.local.cluster import KILLED, REJECTED, AdvanceReservation, ClusterSim
from simengine.policy import EventScheduler, PolicyError, register
from simengine.preemption import PreemptionMode
from simengine.registry import LOCAL_SCHEDULERS
from simengine.workload import STATUS_COMPLETED, STATUS_KILLED, STATUS_REJECTED
from tests.simengine import reference_cluster
from tests.simengine.test_conformance import PARAMS

import simengine.local.twins.queue
import gridweb_example_policies.pybatsim_style  # noqa: F401  (registers pybatsim-filler, pybatsim-easy)

MODES = {"none": PreemptionMode("none", False, False, False),
         "kill": PreemptionMode("kill", True, False, False),
         "requeue": PreemptionMode("requeue", True, True, False, 20.0),
         "suspend": PreemptionMode("suspend", True, False, True, 30.0)}


def workload(seed: int, n: int = 300, P: int = 32, nar: int = 6, relaxed: bool = False):
    """Jobs with ties (rounded times), zero run times, overruns and underruns, three priorities,
    and advance reservations (rigid or relaxed) over the run."""
    rng = np.random.default_rng(seed)
    submit = np.sort(np.round(rng.uniform(0, n * 40 / P, n)))
    runtime = np.round(rng.exponential(100, n))
    estimate = np.round(runtime * rng.choice([0.5, 1, 1.5, 3], n))
    size = rng.integers(1, P + 1, n)
    prio = rng.choice([0, 0, 0, 1, 2], n)
    ars = []
    for i in range(nar):
        start = float(rng.uniform(0, submit[-1]))
        length = float(rng.uniform(50, 500))
        ars.append(AdvanceReservation(i, int(rng.integers(1, P // 2)), start, start + length,
                                      request_time=max(0.0, start - float(rng.uniform(0, 1000))),
                                      est=start - 100 if relaxed else None, lft=start + length + 500 if relaxed else None))
    return submit, runtime, estimate, size, prio, ars


def simulate(policy, seed, mode="suspend", relaxed=False, **kw):
    submit, runtime, estimate, size, prio, ars = workload(seed, relaxed=relaxed, **kw)
    return ClusterSim(32, policy, submit, runtime, estimate, size, prio, copy.deepcopy(ars), MODES[mode]).run()


def assert_same(a: ClusterSim, b: ClusterSim):
    np.testing.assert_array_equal(a.first_start, b.first_start)
    np.testing.assert_array_equal(a.end, b.end)
    np.testing.assert_array_equal(a.state, b.state)
    np.testing.assert_array_equal(a.preemptions, b.preemptions)
    assert a.pieces == b.pieces  # the same processors, the same segments
    assert [(r.status, r.start, r.end) for r in a.ars] == [(r.status, r.start, r.end) for r in b.ars]


# ---- the built-ins, written against the event API -----------------------------------------------------------


#: (compiled built-in, its plain-Python twin on the event API)
TWINS = [("fcfs", "events-fcfs"), ("easy", "events-easy"), ("easy", "events-easy-arrays")]


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("builtin,twin", TWINS)
@pytest.mark.parametrize("seed", range(4))
def test_events_fcfs_and_easy_give_the_builtin_schedules_with_reservations_priorities_preemption(builtin, twin, seed,
                                                                                                 mode):
    compiled = simulate(builtin, seed, mode, relaxed=seed % 2 == 1)
    python = simulate(twin, seed, mode, relaxed=seed % 2 == 1)
    assert_same(compiled, python)
    if mode != "none" and builtin == "easy":  # (FCFS on this overloaded queue runs few low-priority jobs)
        assert python.preemptions.sum() > 0  # preemption happened: the test reached that code


@pytest.mark.parametrize("builtin,twin", TWINS)
def test_events_fcfs_and_easy_match_the_plain_python_reference_simulator(builtin, twin):
    """The reference the compiled core was checked against (tests/simengine/reference_cluster.py)."""
    submit, runtime, estimate, size, prio, ars = workload(7)
    ref = reference_cluster.ClusterSim(32, builtin, submit, runtime, estimate, size, prio, copy.deepcopy(ars),
                                       MODES["suspend"]).run()
    python = simulate(twin, 7)
    np.testing.assert_array_equal(python.first_start, ref.first_start)
    np.testing.assert_array_equal(python.end, ref.end)


@pytest.mark.parametrize("builtin,twin,path", [(b, t, c) for b, t in TWINS for s, c in PARAMS if s == b],
                         ids=lambda v: getattr(v, "name", v))
def test_events_fcfs_and_easy_reproduce_the_pyss_finish_times(builtin, twin, path):
    case = read_case(path)
    entry = LOCAL_SCHEDULERS.get(twin)
    sim = ClusterSim(PROCESSORS, twin, case.submit, case.runtime, case.estimate, case.processors).run()
    assert entry.implementation.kernel_path is False
    np.testing.assert_array_equal(np.floor(case.runtime + sim.first_start).astype(np.int64), case.expected_finish)


def test_waiting_ids_is_the_queue_and_easy_arrays_looks_at_arrivals_alone_when_it_can():
    """cluster.waiting_ids (the core's queue) lists cluster.queue at every decision, through
    priorities, preemptions and backfilling; events-easy-arrays takes its arrivals-only shortcut
    (and still gives the compiled schedule, above)."""
    seen = {"decisions": 0, "shortcuts": 0}

    @register
    class Checked(simengine.local.twins.queue.EventsEASYArrays):
        name = "test-checked-easy-arrays"

        def decide(self, now):
            c = self.cluster
            assert c.waiting_ids().tolist() == [job.id for job in c.queue]
            seen["decisions"] += 1
            super().decide(now)
            assert c.waiting_ids().tolist() == [job.id for job in c.queue]

        def _arrivals_only(self, head, free, lim):
            ids = super()._arrivals_only(head, free, lim)
            if ids is not None:
                # the shortcut's claim: no waiting job but the arrivals fits now
                seen["shortcuts"] += 1
                c, new = self.cluster, set(ids.tolist())
                for j in c.waiting_ids()[1:].tolist():
                    job = c.job(j)
                    if j not in new and job.size <= free and (job.plan <= 0 or c.now + job.plan <= lim[job.size]):
                        assert job.status == "suspended" and not c.own_processors_free(job)
            return ids

    try:
        assert_same(simulate("easy", 2, "suspend"), simulate("test-checked-easy-arrays", 2, "suspend"))
        assert seen["shortcuts"] > 10 and seen["decisions"] > 300
    finally:
        LOCAL_SCHEDULERS._entries.pop("test-checked-easy-arrays")


def limits_by_scan(profile, now: float, free: int) -> list[float]:
    """For p = 0 .. free, straight from the step function: -inf if fewer than p are free now, else
    the first step time after now with fewer than p free (inf: none)."""
    k = max(i for i, t in enumerate(profile.times) if t <= now)
    out = []
    for p in range(free + 1):
        if p == 0:
            out.append(math.inf)
        elif min(profile.free[k], free) < p:
            out.append(-math.inf)
        else:
            out.append(next((profile.times[i] for i in range(k + 1, len(profile.times)) if profile.free[i] < p),
                            math.inf))
    return out


@pytest.mark.parametrize("mode", ["none", "suspend"])
def test_fit_limits_say_what_the_profile_says_with_and_without_a_reserved_head(mode):
    """cluster.fit_limits (computed by the engine) against a scan of cluster.profile with the
    head held at its earliest fit by the Profile's own methods, at every backfill of a run with
    reservations, priorities and suspended heads."""
    seen = {"checked": 0, "suspended heads": 0}

    @register
    class Checked(simengine.local.twins.queue.EventsEASY):
        name = "test-checked-limits"

        def backfill_behind(self, head, now):
            c = self.cluster
            assert c.fit_limits().tolist() == limits_by_scan(c.profile(), now, c.free)
            expected = limits_by_scan(self.shadow_profile(head, now), now, c.free)
            assert c.fit_limits(head).tolist() == expected
            seen["checked"] += 1
            seen["suspended heads"] += head.status == "suspended"
            super().backfill_behind(head, now)

    try:
        assert_same(simulate("easy", 3, mode), simulate("test-checked-limits", 3, mode))
        assert seen["checked"] > 100 and (mode == "none" or seen["suspended heads"] > 0)
    finally:
        LOCAL_SCHEDULERS._entries.pop("test-checked-limits")


def test_the_comparison_can_fail():
    """An EASY that forgets the reservations gives another schedule: the tests above can fail."""

    @register
    class CarelessEASY(simengine.local.twins.queue.EventsEASY):
        name = "test-careless-easy"

        def can_start(self, job, profile):
            return super().can_start(job, None)

    try:
        with pytest.raises(AssertionError):
            assert_same(simulate("easy", 0, "suspend"), simulate("test-careless-easy", 0, "suspend"))
    finally:
        LOCAL_SCHEDULERS._entries.pop("test-careless-easy")


# ---- the actions ----------------------------------------------------------------------------------------------


class _Recorder(EventScheduler):
    """Remembers what it was told, in order."""

    def __init__(self, params, cluster):
        super().__init__(params, cluster)
        self.told = []

    def on_submit(self, now, jobs):
        self.told.append((now, "submit", [j.id for j in jobs]))

    def on_complete(self, now, jobs):
        self.told.append((now, "complete", [j.id for j in jobs]))

    def on_preempted(self, now, jobs):
        self.told.append((now, "preempted", [(j.id, j.status) for j in jobs]))

    def on_reservation(self, now, reservation, event):
        self.told.append((now, "reservation", (reservation.index, event)))

    def on_timer(self, now):
        self.told.append((now, "timer", None))


def registered(cls):
    register(cls)
    return cls


@pytest.fixture
def scratch_policies():
    before = set(LOCAL_SCHEDULERS.names())
    yield
    for name in set(LOCAL_SCHEDULERS.names()) - before:
        LOCAL_SCHEDULERS._entries.pop(name)


def test_a_policy_chooses_the_processors_and_the_gantt_shows_them(scratch_policies):
    @registered
    class TopDown(EventScheduler):
        """FCFS on the highest-numbered idle processors."""
        name = "test-top-down"

        def decide(self, now):
            c = self.cluster
            while c.queue and c.queue[0].size <= c.free:
                job = c.queue[0]
                c.start(job, c.idle_processors()[-job.size:])

    sim = ClusterSim(8, "test-top-down", [0, 0, 5], [10, 10, 10], [10, 10, 10], [3, 2, 4]).run()
    fcfs = ClusterSim(8, "fcfs", [0, 0, 5], [10, 10, 10], [10, 10, 10], [3, 2, 4]).run()
    np.testing.assert_array_equal(sim.first_start, fcfs.first_start)
    procs = {owner[1]: p for owner, *_, p in sim.pieces}
    assert procs == {0: (5, 6, 7), 1: (3, 4), 2: (4, 5, 6, 7)}  # (job 2 waits for four: all are idle at t=10)


def test_reject_kill_requeue_suspend_and_timers(scratch_policies):
    @registered
    class Strict(_Recorder):
        """Rejects jobs wider than half the cluster; starts the rest FCFS; ten seconds after a start
        it preempts the job in the way its id says (kill, requeue or suspend)."""
        name = "test-strict"

        def decide(self, now):
            c = self.cluster
            for job in list(c.queue):
                if job.size > c.processors // 2 and job.status == "waiting" and math.isnan(job.end):
                    c.reject(job)
                elif job.size <= c.free:
                    first = job.status == "waiting" and job.id not in getattr(self, "ran", set())
                    c.start(job)
                    if first:
                        self.ran = getattr(self, "ran", set()) | {job.id}
                        c.wake_me_up_at(now + 10)
                else:
                    break

        def on_timer(self, now):
            super().on_timer(now)
            for job in list(self.cluster.running.values()):
                if job.start == now - 10 and job.id < 3:
                    (self.cluster.kill, self.cluster.requeue, self.cluster.suspend)[job.id](job)

    sim = ClusterSim(8, "test-strict", [0, 0, 0, 1], [100, 100, 100, 5], [100, 100, 100, 5], [2, 2, 2, 6],
                     mode=PreemptionMode("suspend", True, False, True, 7.0)).run()
    policy = sim.external.policy
    assert sim.state[3] == REJECTED and np.isnan(sim.first_start[3])
    assert sim.state[0] == KILLED and sim.end[0] == 10
    # requeued at 10, restarts at once from scratch with the overhead: 100 + 7
    assert sim.first_start[1] == 0 and sim.end[1] == 10 + 107
    # suspended at 10, resumes at once on its own processors: 90 left + 7
    assert sim.first_start[2] == 0 and sim.end[2] == 10 + 97
    assert (10.0, "timer", None) in policy.told
    assert [t for t in policy.told if t[1] == "complete"] == [(107.0, "complete", [2]), (117.0, "complete", [1])]
    # the job table says rejected and killed
    rows = simengine.run({
        "platform": {"clusters": [{"name": "c", "processors": 8, "scheduler": {"name": "test-strict"},
                                   "preemption": {"name": "suspend", "params": {"overhead": 7}}}]},
        "workload": {"streams": [{"kind": "trace", "name": "t", "target": "c", "path": str(_tiny_swf())}]}}).jobs
    assert list(rows["status"]) == [STATUS_KILLED, STATUS_COMPLETED, STATUS_COMPLETED, STATUS_REJECTED]


def _tiny_swf():
    import tempfile
    from pathlib import Path
    path = Path(tempfile.mkdtemp()) / "tiny.swf"
    lines = ["; tiny", "1 0 0 100 2 -1 -1 2 100 -1 1 1 1 1 1 -1 -1 -1", "2 0 0 100 2 -1 -1 2 100 -1 1 1 1 1 1 -1 -1 -1",
             "3 0 0 100 2 -1 -1 2 100 -1 1 1 1 1 1 -1 -1 -1", "4 1 0 5 6 -1 -1 6 5 -1 1 1 1 1 1 -1 -1 -1"]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_policy_is_told_of_reservations_and_the_preemptions_they_force(scratch_policies):
    @registered
    class Greedy(_Recorder):
        name = "test-greedy"

        def decide(self, now):
            c = self.cluster
            while c.queue and c.queue[0].size <= c.free:
                c.start(c.queue[0])

    ar = AdvanceReservation(0, 6, 50.0, 80.0, request_time=0.0)
    sim = ClusterSim(8, "test-greedy", [0, 20], [100, 100], [100, 100], [2, 4], reservations=[ar],
                     mode=MODES["requeue"]).run()
    told = sim.external.policy.told
    assert (0.0, "reservation", (0, "accepted")) in told
    assert (50.0, "reservation", (0, "started")) in told
    # the window needs 6 of 8: one job must go (the newest start first), and it is requeued
    assert (50.0, "preempted", [(1, "waiting")]) in told
    assert (80.0, "reservation", (0, "ended")) in told
    assert sim.end[1] == 80 + 100 + 20  # restarted when the window closed, with the overhead


@pytest.mark.parametrize("bad,why", [
    ("twice", "named twice"), ("busy", "not free"), ("outside", "distinct processor ids"),
    ("not-waiting", "not waiting"), ("past", "in the past")])
def test_a_wrong_action_is_an_error_naming_the_policy_the_job_and_the_moment(scratch_policies, bad, why):
    @registered
    class Wrong(EventScheduler):
        name = "test-wrong"

        def decide(self, now):
            c = self.cluster
            if now < 5:
                c.start(c.queue[0], [0, 1])
                return
            job = c.queue[0] if c.queue else None
            if bad == "twice":
                c.start(job, [2, 2])
            elif bad == "busy":
                c.start(job, [1, 2])
            elif bad == "outside":
                c.start(job, [7, 8])
            elif bad == "not-waiting":
                c.start(next(iter(c.running.values())))
            else:
                c.wake_me_up_at(now - 1)

    with pytest.raises(PolicyError, match=f"test-wrong: at t=5 .*{why}"):
        ClusterSim(8, "test-wrong", [0, 5], [100, 100], [100, 100], [2, 2]).run()


def test_an_exception_in_a_callback_names_the_policy_and_the_line(scratch_policies):
    @registered
    class Raises(EventScheduler):
        name = "test-raises"

        def on_submit(self, now, jobs):
            raise KeyError("x")

    with pytest.raises(PolicyError, match=r"test-raises: a call at t=0 .* raised KeyError: 'x' \(.*line"):
        ClusterSim(8, "test-raises", [0], [1], [1], [1]).run()


# ---- whole scenarios: no refusal any more ---------------------------------------------------------------------


def scenario(scheduler: str) -> dict:
    return {"platform": {"clusters": [{"name": "c", "processors": 32, "scheduler": {"name": scheduler},
                                       "preemption": {"name": "suspend", "params": {"overhead": 30}}}]},
            "workload": {"streams": [
                {"kind": "synthetic", "name": "low", "target": "c", "count": 400, "arrival": {"target_load": 0.6},
                 "size": {"kind": "uniform", "low": 1, "high": 16}, "runtime": {"kind": "exponential", "mean": 200}},
                {"kind": "synthetic", "name": "high", "target": "c", "count": 100, "priority": 1,
                 "arrival": {"target_load": 0.3}, "size": {"kind": "uniform", "low": 1, "high": 32},
                 "runtime": {"kind": "exponential", "mean": 100}}]},
            "reservations": [{"name": f"r{i}", "cluster": "c", "processors": 8, "start": 2000.0 * (i + 1),
                              "end": 2000.0 * (i + 1) + 600} for i in range(4)],
            "run": {"seed": 3, "replications": 2}}


@pytest.mark.parametrize("builtin,twin", TWINS)
def test_a_python_policy_runs_with_reservations_priorities_and_preemption(builtin, twin):
    compiled = simengine.run(scenario(builtin))
    python = simengine.run(scenario(twin))
    assert (compiled.jobs["preemptions"] > 0).any()
    for column, values in compiled.jobs.items():
        np.testing.assert_array_equal(python.jobs[column], values, err_msg=column)
    assert python.metrics == compiled.metrics


def test_the_simple_form_runs_with_reservations_priorities_and_preemption():
    """A `schedule(now, queue, free, running)` policy is no longer refused there; it sees the queue
    in priority order (python-fcfs then is FCFS on that queue, without the reservation guard)."""
    import gridweb_example_policies.reference  # noqa: F401
    result = simengine.run(scenario("python-fcfs"))
    workload = result.jobs["reservation"] == -1
    done = result.jobs["status"][workload] == STATUS_COMPLETED
    assert done.sum() > 0.9 * len(done)
    assert (result.jobs["preemptions"] > 0).any()


@pytest.mark.parametrize("mode", ["suspend", "requeue"])
@pytest.mark.parametrize("seed", range(3))
def test_the_array_easy_example_schedules_as_the_loop_when_jobs_jump_or_rejoin_the_queue(seed, mode):
    """python-easy-arrays keeps the queue in arrays that follow a plain cluster's (arrivals at the
    end, started jobs out); with priorities and preemption it must fall back to python-easy's loop,
    not scan stale arrays."""
    import gridweb_example_policies.reference  # noqa: F401
    loop, arrays = simulate("python-easy", seed, mode), simulate("python-easy-arrays", seed, mode)
    assert_same(loop, arrays)
    assert loop.preemptions.sum() > 0


# ---- the pybatsim shape ---------------------------------------------------------------------------------------


def test_a_pybatsim_filler_gives_a_straightforward_first_fit_schedule():
    """pybatsim-filler starts, at every event, each waiting job that fits, in queue order."""
    submit, runtime, estimate, size, _, _ = workload(5, nar=0)
    sim = ClusterSim(32, "pybatsim-filler", submit, runtime, estimate, size).run()
    # the reference: a direct simulation of first-fit filling
    free, running, start = 32, [], np.full(len(submit), np.nan)
    times = sorted(set(submit.tolist()))
    waiting, arrived, t = [], 0, 0.0
    events = list(times)
    while arrived < len(submit) or running or waiting:
        t = min([x for x in [submit[arrived] if arrived < len(submit) else math.inf] + [e for e, _ in running]])
        for e, j in [r for r in running if r[0] <= t]:
            free += size[j]
        running = [r for r in running if r[0] > t]
        while arrived < len(submit) and submit[arrived] <= t:
            waiting.append(arrived)
            arrived += 1
        for j in list(waiting):
            if size[j] <= free:
                free -= size[j]
                start[j] = t
                running.append((t + runtime[j], j))
                waiting.remove(j)
        if not running and waiting and arrived == len(submit):
            break
    del events
    np.testing.assert_array_equal(sim.first_start, start)


def test_pybatsim_easy_with_chosen_allocations_gives_easy_and_its_allocations():
    submit, runtime, estimate, size, _, _ = workload(6, nar=0)
    sim = ClusterSim(32, "pybatsim-easy", submit, runtime, estimate, size).run()
    easy = ClusterSim(32, "easy", submit, runtime, estimate, size).run()
    np.testing.assert_array_equal(sim.first_start, easy.first_start)
    # it packs from the top: every job's processors are the highest idle ones at its start
    assert any(p[-1] == 31 for *_, p in sim.pieces)
    assert sim.pieces != easy.pieces
