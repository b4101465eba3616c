"""The compiled event loop of Cao's system (simengine.cao.core, behind simengine.cao.simulate)
against the plain-Python loop it replaced (tests/simengine/reference_cao.py): on random
workloads with workflows, for every propagation rule, late-task rule, with and without
cross-slice backfilling, small and odd platforms (one cluster, few processors, short slices
capped low, no overhead), every output must be the same -- every job row (start, end, ready
time, cluster, preemptions, reservation frame ...), each job's run pieces and processors, the
workflows' makespans, the utilisation, the short slices and the number of events. Also run in slices
(as the live Gantt runs it) and with progress reports.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simengine.cao.engine import CaoParams, Workflow
from simengine.cao.simulate import CaoSim, simulate
from simengine.reproductions.cao import _workload
from simengine.workload import JobTable
from tests.simengine import reference_cao


def assert_same(new, ref):
    for k in ref.jobs:
        np.testing.assert_array_equal(new.jobs[k], ref.jobs[k], err_msg=f"jobs.{k}")
    for k in ref.workflows:
        np.testing.assert_array_equal(new.workflows[k], ref.workflows[k], err_msg=f"workflows.{k}")
    assert new.pieces == ref.pieces
    assert new.procs == ref.procs
    assert new.short_slices == ref.short_slices
    assert new.events == ref.events
    np.testing.assert_array_equal(new.utilisation, ref.utilisation)
    np.testing.assert_array_equal(new.utilisation_all, ref.utilisation_all)
    # the Gantt segments (vectorised) as the reference's loop drew them, whole and in a window
    for window in ((-math.inf, math.inf), (5000.0, 20000.0)):
        got, want = new.segments(*window), reference_cao.segments(ref, *window)
        for c in want:
            np.testing.assert_array_equal(got[c], want[c], err_msg=f"segments.{c} {window}")
    assert new.metrics.keys() == ref.metrics.keys()
    for k in ref.metrics:
        assert new.metrics[k] == ref.metrics[k] or (math.isnan(new.metrics[k]) and math.isnan(ref.metrics[k])), k


@st.composite
def cao_case(draw):
    """A small random system: 1-3 clusters of 4-24 processors, 0-60 local jobs, 0-4 workflows
    of 1-6 tasks with random edges (a DAG: edges go from lower to higher task index)."""
    clusters = draw(st.integers(1, 3))
    P = draw(st.integers(4, 24))
    short_max = draw(st.sampled_from([120.0, 300.0, 600.0]))
    params = CaoParams(
        clusters=clusters, processors=P, short_slice_max=short_max, overhead=draw(st.sampled_from([0.0, 60.0])),
        cross_slice_backfill=draw(st.booleans()), propagation=draw(st.booleans()),
        propagation_replan=draw(st.sampled_from(["queue", "gaps"])), late_task=draw(st.sampled_from(["replan", "behind"])),
        distribution=draw(st.sampled_from(["round_robin", "random"])), seed=draw(st.integers(0, 9)),
        slpa=draw(st.sampled_from([0.0, 1.0, 3.5])), maf=draw(st.sampled_from([0.0, 4.0])))
    n = draw(st.integers(0, 60))
    times = st.floats(0, 40000, allow_nan=False).map(round)
    # (no run time of 0: without cross-slice backfilling such short jobs can wait forever, in
    # both loops -- docs/cao.md, "Known limit")
    runs = st.sampled_from([1.0, 30.0, 599.0, 600.0, 1800.0, 5000.0, 10799.0, 10800.0, 20000.0, 45000.0])
    sub = np.sort(np.array(draw(st.lists(times, min_size=n, max_size=n)), float))
    rt = np.array(draw(st.lists(runs, min_size=n, max_size=n)), float)
    factor = np.array(draw(st.lists(st.sampled_from([0.5, 1.0, 1.5, 3.0]), min_size=n, max_size=n)), float)
    size = np.array(draw(st.lists(st.integers(1, P), min_size=n, max_size=n)), np.int64)
    cl = np.array(draw(st.lists(st.integers(-1, clusters - 1), min_size=n, max_size=n)), np.int64)
    jobs = JobTable(np.arange(1, n + 1), sub, rt, rt * factor, size, cl, np.zeros(n))
    wfs = []
    for w in range(draw(st.integers(0, 4))):
        k = draw(st.integers(1, 6))
        edges = [(a, b, float(draw(st.integers(0, 900)))) for b in range(1, k) for a in range(b)
                 if draw(st.booleans())]
        wfs.append(Workflow(float(draw(times)), draw(st.lists(st.integers(1, P), min_size=k, max_size=k)),
                            draw(st.lists(runs, min_size=k, max_size=k)), edges, job_id=1000 + w))
    return jobs, wfs, params


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(cao_case())
def test_the_core_gives_the_reference_schedules(case):
    jobs, wfs, p = case
    assert_same(simulate(jobs, wfs, p), reference_cao.simulate(jobs, wfs, p))


@pytest.mark.parametrize("seed, fraction", [(71, 0.4), (13, 1.0)])
@pytest.mark.parametrize("propagation, replan, late, cross", [
    (False, "queue", "replan", True), (True, "queue", "replan", True), (True, "gaps", "behind", True),
    (True, "queue", "behind", False)])
def test_cao_workloads_give_the_reference_schedules(seed, fraction, propagation, replan, late, cross):
    # the reproduction's own workloads (Lublin-Feitelson streams, H2's workflows), smaller
    local, wfs = _workload(seed, fraction, 400)
    p = CaoParams(propagation=propagation, propagation_replan=replan, late_task=late, cross_slice_backfill=cross)
    assert_same(simulate(local, wfs, p), reference_cao.simulate(local, wfs, p))


def test_in_slices_and_with_progress_reports_the_schedule_is_the_same():
    local, wfs = _workload(3, 0.8, 1500)  # about 25,000 events: several progress reports
    p = CaoParams(propagation=True)
    whole = reference_cao.simulate(local, wfs, p)
    sim = CaoSim(local, wfs, p)
    T, calls = 0.0, 0
    while not sim.run(until=T):
        T += 5000.0
        calls += 1
    assert calls > 50
    assert_same(sim.result(), whole)
    # the same progress reports, at the same events
    reports, want = [], []
    assert_same(simulate(local, wfs, p, on_step=lambda f, t: reports.append((f, t))), whole)
    reference_cao.simulate(local, wfs, p, on_step=lambda f, t: want.append((f, t)))
    assert len(want) >= 3
    assert reports == want


def test_invalid_jobs_are_named_as_before():
    jobs = JobTable(np.arange(1, 4), np.zeros(3), np.array([10.0, -1.0, 10.0]), np.full(3, 10.0),
                    np.array([1, 1, 500]), np.full(3, -1), np.zeros(3))
    p = CaoParams()
    for fn in (simulate, reference_cao.simulate):
        with pytest.raises(ValueError, match=r"jobs\.runtime\[1\]: must not be negative"):
            fn(jobs, [], p)
