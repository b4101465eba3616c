"""The compiled event core (simengine.local.core, behind ClusterSim) against the plain-Python
simulator it replaced (tests/simengine/reference_cluster.py): on random clusters with advance
reservations (rigid and relaxed, with and without a job), priorities, every preemption mode,
overruns, zero run times, ties and horizons, every output must be the same -- start and end
times, states, preemptions, resumes, lost time, the pieces and their processors in the same
order, the reservations' windows, statuses and notes, and the order jobs completed in. Also in
slices (run(until=...) again and again, as the live Gantt calls it) and with progress reports.
"""
from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simengine.gantt import KIND_RESERVATION, KIND_RUN, KIND_SUSPENDED
from simengine.local.cluster import AdvanceReservation, ClusterSim
from simengine.preemption import preemption_mode
from tests.simengine import reference_cluster
from tests.simengine.test_local_invariants import MODES, cluster_case


def both(case, horizon=float("inf"), overrun_step=60.0):
    P, policy, (mode_name, overhead), submit, runtime, estimate, size, priority, ars = case
    mode = preemption_mode({"name": mode_name, "params": {"overhead": overhead}} if mode_name in ("requeue", "suspend")
                           else mode_name)
    args = (P, policy, submit, runtime, estimate, size, priority)
    ref = reference_cluster.ClusterSim(*args, copy.deepcopy(ars), mode, overrun_step, horizon)
    new = ClusterSim(*args, copy.deepcopy(ars), mode, overrun_step, horizon)
    return ref, new


def assert_same(ref, new):
    for name in ("first_start", "end", "state", "preemptions", "resumes", "lost"):
        np.testing.assert_array_equal(np.asarray(getattr(new, name), float), np.asarray(getattr(ref, name), float),
                                      err_msg=name)
    assert new.pieces == ref.pieces
    assert list(new.completed) == ref.completed
    assert new.queue == ref.queue and new.running == list(ref.running)
    assert new.suspended == sorted(ref.suspended)
    assert new.finished == ref.finished
    for a, b in zip(new.ars, ref.ars):
        assert (a.index, a.status, a.start, a.end, a.procs, a.note) == (b.index, b.status, b.start, b.end, b.procs,
                                                                          b.note)


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(cluster_case(), st.one_of(st.just(float("inf")), st.integers(0, 120).map(float)))
def test_the_core_gives_the_reference_schedules(case, horizon):
    ref, new = both(case, horizon)
    ref.run()
    new.run()
    assert_same(ref, new)


def blocks(procs):
    """(first, count) of each run of consecutive processor ids."""
    out = []
    for p in sorted(procs):
        if out and out[-1][0] + out[-1][1] == p:
            out[-1] = (out[-1][0], out[-1][1] + 1)
        else:
            out.append((p, 1))
    return out


def assert_table_is_the_pieces(sim):
    """piece_table (numpy, what the runs read) says what pieces + open_pieces say."""
    pieces = sim.pieces + sim.open_pieces()
    T = sim.piece_table(still_open=True)
    assert len(T["t0"]) == len(pieces)
    for k, (owner, t0, t1, kind, procs) in enumerate(pieces):
        assert (T["job"][k], T["reservation"][k]) == ((owner[1], -1) if owner[0] == "j" else (-1, owner[1]))
        assert T["t0"][k] == t0 and (T["t1"][k] == t1 or (t1 != t1 and T["t1"][k] != T["t1"][k]))
        assert (T["kind"][k], T["count"][k]) == (kind, len(procs))
        mine = T["block_piece"] == k
        assert list(zip(T["block_first"][mine].tolist(), T["block_count"][mine].tolist())) == blocks(procs)
    assert np.all(np.diff(T["block_piece"]) >= 0)


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(cluster_case(), st.one_of(st.just(float("inf")), st.integers(0, 120).map(float)))
def test_the_piece_table_is_the_pieces(case, horizon):
    _, new = both(case, horizon)
    assert_table_is_the_pieces(new.run())


@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(cluster_case(), st.lists(st.integers(0, 150), min_size=1, max_size=6))
def test_the_core_in_slices_is_the_core_in_one_go(case, cuts):
    ref, new = both(case)
    for until in sorted(cuts):
        ref.run(until=float(until))
        new.run(until=float(until))
        assert_same(ref, new)
        assert _same_pieces(new.open_pieces(), _open(ref))
    ref.run()
    new.run()
    assert_same(ref, new)


def _same_pieces(a, b):
    """Equal, NaN ends included."""
    key = lambda p: (p[0], p[1], -1.0 if p[2] != p[2] else p[2], p[3], p[4])  # noqa: E731
    return [key(p) for p in a] == [key(p) for p in b]


def _open(sim):
    """The reference's open pieces, as simengine/local/run.py listed them before the core."""
    out = [(("j", j), sim.run_start[j], float("nan"), KIND_RUN, sim.procs[j]) for j in sim.running]
    out += [(("j", j), sim.susp_at[j], float("nan"), KIND_SUSPENDED, sim.procs[j]) for j in sorted(sim.suspended)]
    out += [(("r", r.index), r.start, r.end, KIND_RESERVATION, r.procs) for r in sim.ars if r.status == reference_cluster.AR_ACTIVE]
    return out


@pytest.mark.parametrize("policy", ["fcfs", "easy", "conservative"])
@pytest.mark.parametrize("mode", MODES, ids=[f"{m}-{o:g}" for m, o in MODES])
def test_a_larger_random_workload_matches(policy, mode):
    """Hundreds of jobs: long queues, many preemptions, reservations across the run."""
    rng = np.random.default_rng(7)
    P, n = 32, 600
    submit = np.sort(rng.integers(0, 20_000, n)).astype(float)
    runtime = rng.exponential(300, n).round()
    estimate = runtime * rng.choice([1.0, 2.0, 0.5, 0.0], n)
    size = rng.integers(1, P + 1, n)
    priority = rng.integers(0, 3, n)
    ars = [AdvanceReservation(i, int(rng.integers(1, P + 1)), float(s), float(s + rng.integers(100, 2000)),
                              float(s - rng.integers(0, 3000)),
                              *((float(s - 500), float(s + 4000)) if i % 2 else (None, None)),
                              float(rng.integers(0, 100)) if i % 3 == 0 else None)
           for i, s in enumerate(rng.integers(0, 20_000, 12))]
    case = (P, policy, mode, submit, runtime, estimate, size, priority, ars)
    ref, new = both(case)
    steps_ref, steps_new = [], []
    ref.run(on_step=lambda f, t: steps_ref.append(t))
    new.run(on_step=lambda f, t: steps_new.append(t))
    assert_same(ref, new)
    assert len(steps_new) == len(steps_ref)  # progress is reported as often (every STEP_EVENTS event times)


def test_fit_limits_say_what_the_profile_scan_says():
    """EASY's backfill reads a candidate's fit from fit_limits: the same answer as the scan of the
    step function (_min_free_lo) for every size and duration, on random profiles from t."""
    from simengine.local.profile import _min_free_lo, fit_limits
    rng = np.random.default_rng(3)
    for _ in range(300):
        m = int(rng.integers(1, 8))
        t = float(rng.integers(0, 5))
        times = np.concatenate([[t], t + np.cumsum(rng.integers(1, 4, m - 1)).astype(float)])
        free = rng.integers(-2, 9, m).astype(np.int64)
        nfree = int(rng.integers(1, 10))
        lim = np.full(nfree + 1, np.nan)
        fit_limits(times, free, t, nfree, lim)
        for p in range(1, nfree + 1):
            for d in np.arange(0.5, times[-1] - t + 3, 0.5):
                want = _min_free_lo(times, free, 0, m, t, t + d) >= p
                assert (t + d <= lim[p]) == want, (times, free, p, d)
