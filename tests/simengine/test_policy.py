"""Local schedulers researchers write in plain Python (simengine.policy, docs/write-a-policy.md),
and the worked package examples/policies that `make venv` installs."""
from __future__ import annotations

import math
import subprocess
import sys
from importlib.metadata import entry_points

import numpy as np
import pytest
from pydantic import BaseModel, ConfigDict

import simengine
import simengine.policy as policy_api
from simengine.conformance import PROCESSORS, read_case
from simengine.policy import ENTRY_POINT_GROUP, LocalScheduler, PolicyError, register
from simengine.registry import LOCAL_SCHEDULERS
from tests.conftest import ROOT
from tests.simengine.live_stream import check_live_stream
from tests.simengine.test_conformance import PARAMS

import gridweb_example_policies.reference  # noqa: F401  (registers python-fcfs, python-easy, python-easy-arrays)
from gridweb_example_policies.reference import start_from_head

DAS2 = ROOT / "gridweb" / "demo" / "DAS2-fs1-2003-1.swf.gz"


def das2_scenario(scheduler: str, **params) -> dict:
    return {"platform": {"clusters": [{"name": "das2", "processors": 64,
                                       "scheduler": {"name": scheduler, "params": params}}]},
            "workload": {"streams": [{"kind": "trace", "name": "das2", "path": str(DAS2), "target": "das2",
                                      "target_load": 0.9}]},
            "run": {"seed": 1}}


def test_the_worked_package_registers_through_its_entry_point():
    assert "sjf-backfill" in [ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)]
    entry = LOCAL_SCHEDULERS.get("sjf-backfill")
    assert entry.params.model_json_schema()["properties"]["key"]["enum"] == ["estimate", "area"]
    assert entry.implementation.event_driven is True  # (issue 35: reservations, priorities, preemption)


# ---- SJF backfilling against a straightforward reference ------------------------------------------

def reference_sjf_backfill(submit, runtime, rank, size, processors, planning=None):
    """Shortest job first with EASY backfilling, simulated the plain way: at every moment
    something happens (arrivals, ends -- a job that ends the instant it starts makes its own),
    one pass over the waiting jobs in (rank, submit, index) order; ``planning`` (default: the
    rank) are the requested times the reservation is planned with."""
    estimate = rank if planning is None else planning
    n = len(submit)
    start = [math.nan] * n
    t = min(submit)
    while True:
        running = [j for j in range(n) if start[j] <= t and start[j] + runtime[j] > t]
        free = processors - sum(size[j] for j in running)
        waiting = sorted((j for j in range(n) if math.isnan(start[j]) and submit[j] <= t),
                         key=lambda j: (rank[j], submit[j], j))
        now_started = []
        blocked = None
        for j in waiting:
            if blocked is None and size[j] <= free:
                now_started.append(j)
                free -= size[j]
            elif blocked is None:
                blocked = j
                planned = sorted([(max(start[r] + estimate[r], t), size[r]) for r in running]
                                 + [(t + estimate[s], size[s]) for s in now_started])
                shadow, spare = math.inf, free
                for end, sz in planned:
                    spare += sz
                    if spare >= size[j]:
                        shadow = end
                        break
                extra = spare - size[j]
            elif size[j] <= free and (t + estimate[j] <= shadow or size[j] <= extra):
                if t + estimate[j] > shadow:
                    extra -= size[j]
                now_started.append(j)
                free -= size[j]
        for j in now_started:
            start[j] = t
        if any(runtime[j] == 0 for j in now_started):
            continue  # their processors come back at this very instant: look again
        later = [submit[j] for j in range(n) if submit[j] > t]
        later += [start[j] + runtime[j] for j in range(n) if start[j] + runtime[j] > t]
        if not later:
            return np.array(start)
        t = min(later)


CASES = sorted({path for _, path in PARAMS}, key=lambda p: p.name)


@pytest.mark.parametrize("path", CASES, ids=[p.name for p in CASES])
def test_sjf_backfill_gives_the_reference_schedule_on_the_pyss_inputs(path):
    case = read_case(path)
    entry = LOCAL_SCHEDULERS.get("sjf-backfill")
    got = entry.implementation(case.submit, case.runtime, case.estimate, case.processors, PROCESSORS,
                               entry.params()).start
    want = reference_sjf_backfill(case.submit.tolist(), case.runtime.tolist(), case.estimate.tolist(),
                                  case.processors.tolist(), PROCESSORS)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("key", ["estimate", "area"])
def test_sjf_backfill_gives_the_reference_schedule_on_random_workloads(seed, key):
    """Integer times (ties everywhere), zero run times, jobs outliving their estimates."""
    rng = np.random.default_rng(seed)
    n, P = 250, 16
    submit = np.sort(rng.integers(0, 2000, n)).astype(float)
    runtime = rng.integers(0, 120, n).astype(float)
    estimate = np.maximum(runtime + rng.integers(-30, 60, n), 1).astype(float)
    size = rng.integers(1, P + 1, n)
    entry = LOCAL_SCHEDULERS.get("sjf-backfill")
    got = entry.implementation(submit, runtime, estimate, size, P, entry.params(key=key)).start
    rank = estimate * size if key == "area" else estimate
    want = reference_sjf_backfill(submit.tolist(), runtime.tolist(), rank.tolist(), size.tolist(), P,
                                  planning=estimate.tolist())
    np.testing.assert_array_equal(got, want)


def test_sjf_is_not_easy_on_those_inputs():
    """(So the test above would notice a policy that ignored its order.)"""
    differ = 0
    for path in CASES:
        case = read_case(path)
        sjf = LOCAL_SCHEDULERS.get("sjf-backfill")
        easy = LOCAL_SCHEDULERS.get("easy")
        a = sjf.implementation(case.submit, case.runtime, case.estimate, case.processors, PROCESSORS, sjf.params())
        b = easy.implementation(case.submit, case.runtime, case.estimate, case.processors, PROCESSORS, easy.params())
        differ += not np.array_equal(a.start, b.start)
    assert differ >= 10


# ---- plain-Python FCFS and EASY: the built-in kernels' schedules --------------------------------

#: (the built-in kernel, the plain-Python policy that must give its schedules)
PYTHON_TWINS = [("fcfs", "python-fcfs"), ("easy", "python-easy"), ("easy", "python-easy-arrays")]


@pytest.mark.parametrize("builtin,python,path", [(b, p, c) for b, p in PYTHON_TWINS for s, c in PARAMS if s == b],
                         ids=[f"{p}-{c.name}" for b, p in PYTHON_TWINS for s, c in PARAMS if s == b])
def test_python_fcfs_and_easy_reproduce_the_pyss_finish_times(builtin, python, path):
    case = read_case(path)
    entry = LOCAL_SCHEDULERS.get(python)
    start = entry.implementation(case.submit, case.runtime, case.estimate, case.processors, PROCESSORS,
                                 entry.params()).start
    np.testing.assert_array_equal(np.floor(case.runtime + start).astype(np.int64), case.expected_finish)


@pytest.mark.parametrize("builtin,python", PYTHON_TWINS)
def test_python_fcfs_and_easy_give_the_kernels_schedule_on_das2(builtin, python):
    """A whole trace at load 0.9 with overrunning jobs (EASY's plan extensions): the same starts."""
    kernel = simengine.run(das2_scenario(builtin))
    plain = simengine.run(das2_scenario(python))
    np.testing.assert_array_equal(plain.jobs["start"], kernel.jobs["start"])
    assert (plain.jobs["runtime"] > plain.jobs["estimate"]).any()  # overruns happen


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("builtin,python", PYTHON_TWINS)
def test_python_fcfs_and_easy_give_the_kernels_schedule_on_random_workloads(builtin, python, seed):
    """Integer times (ties of arrivals, ends and shadow times everywhere), zero run times, jobs
    outliving their estimates, 3,000 jobs (python-easy-arrays grows its arrays past 1,024)."""
    rng = np.random.default_rng(seed)
    n, P = 3000, 16
    submit = np.sort(rng.integers(0, 20 * n, n)).astype(float)
    runtime = rng.integers(0, 300, n).astype(float)
    estimate = np.maximum(runtime + rng.integers(-60, 120, n), 1).astype(float)
    size = rng.integers(1, P + 1, n)
    kernel, plain = LOCAL_SCHEDULERS.get(builtin), LOCAL_SCHEDULERS.get(python)
    want = kernel.implementation(submit, runtime, estimate, size, P, kernel.params()).start
    got = plain.implementation(submit, runtime, estimate, size, P, plain.params()).start
    np.testing.assert_array_equal(got, want)
    assert (submit[1:] == submit[:-1]).any() and (runtime > estimate).any()


# ---- the three ways in: Python API (with its live Gantt), CLI, scenario checks -------------------

def test_a_python_scheduler_runs_from_the_python_api_and_streams_its_gantt(monkeypatch):
    from simengine import streaming

    monkeypatch.setattr(streaming, "LIVE_INTERVAL", 0.0)
    chunks = []
    scenario = das2_scenario("sjf-backfill", key="area")
    scenario["run"]["stop"] = {"completions": 8000}
    result = simengine.run(scenario, on_progress=chunks.append)
    assert result.metrics["jobs_measured"].mean == 8000
    check_live_stream(chunks, result, during=True)
    easy = simengine.run({**scenario, "platform": das2_scenario("easy")["platform"]})
    assert result.metrics["mean_wait"].mean < easy.metrics["mean_wait"].mean  # shortest first pays off here


def test_the_cli_lists_and_replays_with_the_installed_scheduler(tmp_path):
    listed = subprocess.run([sys.executable, "-m", "simengine", "schedulers"], capture_output=True, text=True,
                            cwd=ROOT, check=True).stdout
    assert "sjf-backfill" in listed and "python-easy" not in listed  # (the entry point loads sjf only)
    out = subprocess.run([sys.executable, "-m", "simengine", "replay", str(DAS2), "--processors", "64",
                          "--scheduler", "sjf-backfill", "--limit", "2000", "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "sjf-backfill" in out.stdout and (tmp_path / "out" / "jobs.csv").exists()


def test_a_python_scheduler_takes_reservations():
    """(Refused before issue 35: a Python policy is the event core's scheduling pass now.)"""
    scenario = das2_scenario("sjf-backfill")
    scenario["reservations"] = [{"name": "r1", "cluster": "das2", "processors": 8, "start": 1000.0, "end": 2000.0}]
    scenario["workload"]["streams"][0]["limit"] = 500
    result = simengine.run(scenario)
    reservation = result.jobs["reservation"] == 0
    assert reservation.sum() == 1 and result.jobs["start"][reservation][0] == 1000.0


# ---- what the engine refuses ----------------------------------------------------------------------

class GreedyParams(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


def test_a_policy_that_overcommits_gets_an_error_naming_it_and_the_moment():
    class Greedy(LocalScheduler):
        name = "test-greedy"

        def schedule(self, now, queue, free, running):
            return list(queue)  # ignores free

    impl = policy_api.PythonScheduler(Greedy)
    submit = np.array([0.0, 0.0])
    with pytest.raises(PolicyError, match=r"test-greedy: at t=0 it started job 1 needing 3 processors with 1 free"):
        impl(submit, np.ones(2), np.ones(2), np.array([3, 3]), 4, GreedyParams())


def test_a_policy_that_starts_a_job_twice_gets_an_error():
    class Twice(LocalScheduler):
        name = "test-twice"

        def schedule(self, now, queue, free, running):
            return [queue[0], queue[0]]

    impl = policy_api.PythonScheduler(Twice)
    with pytest.raises(PolicyError, match="not a waiting job"):
        impl(np.array([0.0]), np.ones(1), np.ones(1), np.array([1]), 4, GreedyParams())


class Crashing(LocalScheduler):
    """Starts jobs FCFS until t > 1000, then divides by zero (from a generator: the policy's code
    runs while the engine reads its answer)."""

    name = "test-crashing"

    def schedule(self, now, queue, free, running):
        if now > 1000:
            yield 1 / 0
        yield from start_from_head(queue, free)[0]


def test_a_policy_that_raises_fails_the_run_naming_it_the_moment_and_its_line():
    with pytest.raises(PolicyError) as e:
        policy_api.PythonScheduler(Crashing)(np.arange(0.0, 3000.0, 500.0), np.full(6, 100.0), np.full(6, 100.0),
                                             np.ones(6, np.int64), 4, GreedyParams())
    message = str(e.value)
    assert message.startswith("test-crashing: schedule() at t=1500 (1 waiting, 4 processors free) raised "
                              "ZeroDivisionError: division by zero (")
    assert "(simengine/test_policy.py, line " in message and message.endswith(", in schedule)")
    assert isinstance(e.value.__cause__, ZeroDivisionError)  # the traceback is kept for the Python API


def test_the_cli_reports_a_policy_that_raises_as_an_error_not_a_traceback(tmp_path):
    code = ("import sys; from simengine import cli; from simengine.policy import register; "
            "from tests.simengine.test_policy import Crashing; register(Crashing); "
            f"sys.exit(cli.main(['replay', {str(DAS2)!r}, '--processors', '64', '--scheduler', 'test-crashing', "
            f"'--limit', '200', '--out', {str(tmp_path / 'out')!r}]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith("error: test-crashing: schedule() at t=") and "ZeroDivisionError" in out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "out" / "jobs.csv").exists()


def test_register_refuses_what_is_not_a_policy():
    class Nameless(LocalScheduler):
        def schedule(self, now, queue, free, running):
            return []

    class NoSchedule(LocalScheduler):
        name = "test-no-schedule"

    with pytest.raises(ValueError, match="no name"):
        register(Nameless)
    with pytest.raises(TypeError, match="does not define schedule"):
        register(NoSchedule)
    with pytest.raises(TypeError, match="not a subclass of a policy kind .*LocalScheduler"):
        register(object)
    assert "test-no-schedule" not in LOCAL_SCHEDULERS


def test_a_package_that_fails_to_load_is_a_warning_not_a_crash(monkeypatch):
    class Broken:
        name, value = "broken", "nowhere.module"

        def load(self):
            raise ImportError("No module named 'nowhere'")

    monkeypatch.setattr(policy_api, "entry_points", lambda group: [Broken()])
    with pytest.warns(UserWarning, match="policy package 'broken' .*could not be loaded"):
        assert policy_api.load_entry_points() == []
