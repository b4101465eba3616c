"""Local schedulers: compiled kernels against straightforward references, and the
invariants every schedule must keep (checked on random workloads with hypothesis)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simengine.schedulers  # noqa: F401  (registration)
from simengine.profile import AvailabilityProfile
from simengine.registry import LOCAL_SCHEDULERS
from tests.simengine import reference_schedulers as ref

P = 8


@st.composite
def workloads(draw, overruns=False, max_size=P):
    n = draw(st.integers(1, 25))
    submit = sorted(draw(st.lists(st.integers(0, 60), min_size=n, max_size=n)))
    size = draw(st.lists(st.integers(1, max_size), min_size=n, max_size=n))
    runtime = draw(st.lists(st.integers(0, 20), min_size=n, max_size=n))
    if overruns:
        estimate = draw(st.lists(st.integers(0, 25), min_size=n, max_size=n))
    else:
        estimate = [r + draw(st.integers(0, 10)) for r in runtime]
    return (np.array(submit, float), np.array(runtime, float), np.array(estimate, float),
            np.array(size, np.int64))


def run(name, submit, runtime, estimate, size, processors=P):
    entry = LOCAL_SCHEDULERS.get(name)
    return entry.implementation(submit, runtime, estimate, size, processors, entry.params()).start


@settings(max_examples=300, deadline=None)
@given(workloads(overruns=True))
def test_fcfs_matches_reference(w):
    submit, runtime, estimate, size = w
    np.testing.assert_array_equal(run("fcfs", *w), ref.fcfs(submit, runtime, size, P))


@settings(max_examples=300, deadline=None)
@given(workloads())
def test_easy_matches_reference(w):
    submit, runtime, estimate, size = w
    np.testing.assert_array_equal(run("easy", *w), ref.easy(submit, runtime, estimate, size, P))


@settings(max_examples=300, deadline=None)
@given(workloads())
def test_conservative_matches_reference(w):
    submit, runtime, estimate, size = w
    np.testing.assert_array_equal(run("conservative", *w), ref.conservative(submit, runtime, estimate, size, P))


@pytest.mark.parametrize("name", ["fcfs", "easy", "conservative"])
@settings(max_examples=200, deadline=None)
@given(w=workloads(overruns=True))
def test_schedule_invariants(name, w):
    """With jobs outliving their estimates too: every job starts, never before its
    submission, and the cluster is never over-committed."""
    submit, runtime, estimate, size = w
    start = run(name, *w)
    assert not np.isnan(start).any()
    assert (start >= submit).all()
    end = start + runtime
    for t in np.unique(start):
        busy = size[(start <= t) & (end > t)].sum()
        assert busy <= P, f"{busy} processors busy at {t}"
    if name == "fcfs":
        assert (np.diff(start) >= 0).all(), "FCFS starts jobs in submission order"


def test_zero_runtime_jobs_finish_at_start_and_free_processors_at_once():
    submit = np.array([0.0, 0.0, 0.0])
    runtime = np.array([0.0, 5.0, 5.0])
    size = np.array([8, 8, 8])
    for name in ("fcfs", "easy", "conservative"):
        start = run(name, submit, runtime, runtime.copy(), size)
        np.testing.assert_array_equal(start, [0.0, 0.0, 5.0])


def test_easy_backfills_only_what_does_not_delay_the_head():
    # job 0 holds 6 of 8 until 100; the head (job 1, 8 procs) waits for it;
    # job 2 (2 procs, 50 s) ends before the shadow time -> backfilled at once;
    # job 3 (2 procs, 200 s) would delay the head and there are no extra processors.
    submit = np.array([0.0, 1.0, 2.0, 3.0])
    runtime = np.array([100.0, 10.0, 50.0, 200.0])
    size = np.array([6, 8, 2, 2])
    start = run("easy", submit, runtime, runtime.copy(), size)
    np.testing.assert_array_equal(start, [0.0, 100.0, 2.0, 110.0])


def test_overrunning_job_is_planned_in_growing_steps():
    # job 0 asks for 10 s and runs 100 s; EASY must not start the 8-processor head
    # while it still runs, and must start it as soon as it ends.
    submit = np.array([0.0, 1.0])
    runtime = np.array([100.0, 1.0])
    estimate = np.array([10.0, 1.0])
    size = np.array([4, 8])
    for name in ("easy", "conservative"):
        np.testing.assert_array_equal(run(name, submit, runtime, estimate, size), [0.0, 100.0])


def test_lwr_joins_the_processor_with_least_remaining_work():
    entry = LOCAL_SCHEDULERS.get("lwr")
    out = entry.implementation(np.array([0.0, 0.0, 0.0, 1.0]), np.array([5.0, 3.0, 1.0, 1.0]), None,
                               np.ones(4, np.int64), 2, entry.params())
    np.testing.assert_array_equal(out.start, [0.0, 0.0, 3.0, 4.0])
    np.testing.assert_array_equal(out.processor, [0, 1, 1, 1])


def test_horizon_leaves_later_jobs_unstarted():
    start = run_h = LOCAL_SCHEDULERS.get("fcfs").implementation(
        np.array([0.0, 5.0, 50.0]), np.array([10.0, 10.0, 1.0]), None, np.array([8, 8, 1]), P, None,
        horizon=12.0).start
    assert run_h is start
    assert start[0] == 0.0 and start[1] == 10.0 and np.isnan(start[2])


def test_availability_profile_reserve_and_release():
    p = AvailabilityProfile(10)
    p.reserve(0.0, 5.0, 6)
    assert p.earliest_start(6, 2.0, after=0.0) == 5.0
    assert p.earliest_start(4, 100.0, after=0.0) == 0.0
    with pytest.raises(ValueError, match="not free"):
        p.reserve(1.0, 2.0, 5)
    p.release(0.0, 5.0, 6)
    times, free = p.steps()
    assert list(free) == [10]
    assert p.earliest_start(11, 1.0, after=0.0) == float("inf")
