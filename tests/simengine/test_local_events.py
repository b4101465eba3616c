"""The event-driven cluster simulator (simengine.local) against the compiled kernels: with no
reservations, priorities or preemption it must give exactly the same start times, on the
pyss conformance cases and on random workloads (overruns, zero run times and estimates, ties)."""
from __future__ import annotations

import numpy as np
import pytest

import simengine.schedulers  # noqa: F401  (registration)
from simengine.conformance import PROCESSORS, read_case
from simengine.local.cluster import DONE, ClusterSim
from simengine.registry import LOCAL_SCHEDULERS
from tests.simengine.test_conformance import PARAMS


def kernel_start(policy, submit, runtime, estimate, size, processors):
    entry = LOCAL_SCHEDULERS.get(policy)
    return entry.implementation(submit, runtime, estimate, size, processors, entry.params()).start


def event_start(policy, submit, runtime, estimate, size, processors):
    return np.array(ClusterSim(processors, policy, submit, runtime, estimate, size).run().first_start)


@pytest.mark.parametrize("scheduler,path", PARAMS, ids=[f"{s}-{p.name}" for s, p in PARAMS])
def test_conformance_cases_same_starts_as_the_kernels(scheduler, path):
    case = read_case(path)
    got = event_start(scheduler, case.submit, case.runtime, case.estimate, case.processors, PROCESSORS)
    np.testing.assert_array_equal(got, kernel_start(scheduler, case.submit, case.runtime, case.estimate,
                                                    case.processors, PROCESSORS))
    # and so every expected finish time of the case
    np.testing.assert_array_equal(np.floor(got + case.runtime).astype(np.int64), case.expected_finish)


def random_workload(rng, n, processors, integer):
    gaps = rng.exponential(20, n)
    runtime = rng.exponential(100, n)
    estimate = runtime * rng.choice([1.0, 1.5, 3.0], n)
    if integer:  # many ties
        gaps, runtime, estimate = np.round(gaps), np.round(runtime), np.round(estimate)
    over = rng.random(n) < 0.2  # jobs outliving their estimate: the overrun rules
    estimate[over] = np.round(runtime[over] * 0.5)
    runtime[rng.random(n) < 0.05] = 0.0
    estimate[rng.random(n) < 0.03] = 0.0
    return np.cumsum(gaps), runtime, estimate, rng.integers(1, processors + 1, n)


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
def test_random_small_workloads_same_starts_as_the_kernels(policy):
    for seed in range(150):
        rng = np.random.default_rng(seed)
        processors = int(rng.integers(4, 20))
        submit, runtime, estimate, size = random_workload(rng, int(rng.integers(5, 80)), processors, seed % 3 != 0)
        got = event_start(policy, submit, runtime, estimate, size, processors)
        want = kernel_start(policy, submit, runtime, estimate, size, processors)
        assert np.array_equal(got, want, equal_nan=True), f"seed {seed}: {np.flatnonzero(got != want)[:5]}"


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
def test_random_loaded_workloads_same_starts_as_the_kernels(policy):
    for seed in range(6):
        rng = np.random.default_rng(1000 + seed)
        processors = int(rng.integers(16, 128))
        submit, runtime, estimate, size = random_workload(rng, 400, processors, bool(seed % 2))
        submit = submit / (processors / 10)  # queues build up
        got = event_start(policy, submit, runtime, estimate, size, processors)
        want = kernel_start(policy, submit, runtime, estimate, size, processors)
        assert np.array_equal(got, want, equal_nan=True), f"seed {seed}: {np.flatnonzero(got != want)[:5]}"


def test_horizon_stops_like_the_kernels():
    rng = np.random.default_rng(7)
    submit, runtime, estimate, size = random_workload(rng, 200, 16, True)
    horizon = float(submit[100])
    for policy in ("fcfs", "easy", "conservative"):
        entry = LOCAL_SCHEDULERS.get(policy)
        want = entry.implementation(submit, runtime, estimate, size, 16, entry.params(), horizon=horizon).start
        sim = ClusterSim(16, policy, submit, runtime, estimate, size, horizon=horizon).run()
        np.testing.assert_array_equal(np.array(sim.first_start), want)


def test_every_job_is_one_run_segment_on_its_processors_and_none_overlap():
    rng = np.random.default_rng(3)
    submit, runtime, estimate, size = random_workload(rng, 300, 24, False)
    for policy in ("fcfs", "easy", "conservative"):
        sim = ClusterSim(24, policy, submit, runtime, estimate, size).run()
        assert all(s == DONE for s in sim.state)
        runs = {}
        for owner, t0, t1, kind, procs in sim.pieces:
            assert owner[0] == "j" and kind == 0 and owner[1] not in runs
            runs[owner[1]] = (t0, t1, procs)
            assert len(procs) == size[owner[1]] and t1 - t0 == pytest.approx(runtime[owner[1]])
        busy = {}
        for j, (t0, t1, procs) in runs.items():
            if t1 > t0:
                for p in procs:
                    busy.setdefault(p, []).append((t0, t1))
        for p, spans in busy.items():
            spans.sort()
            assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), f"processor {p} runs two jobs"
