"""The compiled compression of simengine.local.profile (conservative backfilling in the
event-driven simulator) skips searches with bounds (reach per size, per-class bounds, slides);
it must give exactly what searching every queued job does. Brute force here: each job, in
queue order, moves to prof_find_start(max(t, after), own window counted free, limit = its
start) when that is sooner -- the definition in the compress_queue docstring.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from simengine.local.profile import compress_queue, replan_queue
from tests.simengine.reference_cluster import Profile, replan_one_by_one
from simengine.profile import prof_add, prof_find_start, prof_grow
from simengine.schedulers.conservative import job_classes

INF = math.inf


def brute_compress(prof: Profile, t, qj, after, rstart, pend, pplan, size):
    times, free, lo, n = prof.times, prof.free, prof.lo, prof.n
    for j in qj:
        s_old = rstart[j]
        a = max(t, after[j])
        if s_old <= t or a >= s_old:
            continue
        s = prof_find_start(times, free, lo, n, a, pplan[j], size[j], s_old, s_old, pend[j], size[j])
        if s < s_old:
            times, free, lo, n = prof_add(times, free, lo, n, s_old, pend[j], size[j])
            times, free, lo, n = prof_add(times, free, lo, n, s, s + pplan[j], -size[j])
            rstart[j], pend[j] = s, s + pplan[j]
    return times[lo:n].copy(), free[lo:n].copy()


def random_case(seed: int):
    """A cluster mid-run: running jobs' plans and advance reservations on the profile, a queue
    planned by conservative backfilling, then some processors given back early (completions),
    some taken (overrun extensions, which may drive the profile below zero) and some jobs
    resumed with a shorter plan than their class's or suspended (a later earliest start)."""
    rng = np.random.default_rng(seed)
    P = int(rng.integers(1, 17))
    n = int(rng.integers(1, 40))
    size = rng.integers(1, P + 1, n).astype(np.int64)
    plan = rng.choice([0.0, 5.0, 6.0, 10.0, 30.0, 100.0], n) * rng.choice([1.0, 1.1, 3.0], n)
    cls, csize, cdlo = job_classes(size, plan.copy())
    pplan = plan.copy()
    resumed = rng.random(n) < 0.1
    pplan[resumed] = np.floor(pplan[resumed] * rng.random(resumed.sum()))
    prof = Profile(P, 0.0)
    for _ in range(int(rng.integers(0, 6))):  # running jobs and reservations
        a = float(rng.integers(0, 50))
        prof.add(0.0 if rng.random() < 0.5 else a, a + float(rng.integers(1, 80)), -int(rng.integers(1, P + 1)))
    qj = rng.permutation(n).astype(np.int64)
    rstart, pend = np.full(n, INF), np.full(n, INF)
    after = np.full(n, -INF)
    prof.times, prof.free, prof.lo, prof.n, _ = replan_queue(
        prof.times, prof.free, prof.lo, prof.n, 0.0, qj[:0], qj, after, rstart, pend, pplan, size, cls, cdlo)
    for _ in range(int(rng.integers(1, 6))):  # given back early
        a = float(rng.integers(0, 60))
        prof.add(a, a + float(rng.integers(1, 60)), int(rng.integers(1, P + 1)))
    if rng.random() < 0.3:  # an overrun extension
        a = float(rng.integers(0, 40))
        prof.add(a, a + 20.0, -int(rng.integers(1, P + 1)))
    t = float(rng.integers(0, 10))
    prof.advance(t)
    susp = rng.random(n) < 0.1
    after[susp] = t + rng.integers(0, 40, susp.sum())
    return P, prof, t, qj, after, rstart, pend, pplan, size, cls, csize, cdlo


@pytest.mark.parametrize("seed", range(400))
def test_compression_equals_searching_every_job(seed):
    P, prof, t, qj, after, rstart, pend, pplan, size, cls, csize, cdlo = random_case(seed)
    ref = Profile(P)
    ref.times, ref.free, ref.lo, ref.n = prof.times.copy(), prof.free.copy(), prof.lo, prof.n
    r_start, r_pend = rstart.copy(), pend.copy()
    want_times, want_free = brute_compress(ref, t, qj, after, r_start, r_pend, pplan, size)
    times, free, lo, n, first = compress_queue(prof.times, prof.free, prof.lo, prof.n, t, qj, after, rstart, pend,
                                               pplan, size, P, cls, csize, cdlo)
    np.testing.assert_array_equal(rstart, r_start)
    np.testing.assert_array_equal(pend, r_pend)
    np.testing.assert_array_equal(times[lo:n], want_times)
    np.testing.assert_array_equal(free[lo:n], want_free)


def test_a_hand_checked_compression():
    """4 processors, now t = 0: a running job holds all 4 until 10; queued A (2 procs, 10 s)
    at [10, 20), B (4 procs, 5 s) at [20, 25), C (3 procs, 10 s) at [25, 35) (only 2 are free
    next to A). The running job ends now (its 4 come back on [0, 10)): A slides to [0, 10);
    B slides to where 4 are free before it, [10, 15); C to where 3 are, [15, 25)."""
    size = np.array([2, 4, 3], np.int64)
    pplan = np.array([10.0, 5.0, 10.0])
    cls, csize, cdlo = job_classes(size, pplan.copy())
    prof = Profile(4, 0.0)
    prof.add(0.0, 10.0, -4)  # the running job
    qj = np.arange(3, dtype=np.int64)
    rstart, pend, after = np.full(3, INF), np.full(3, INF), np.full(3, -INF)
    prof.times, prof.free, prof.lo, prof.n, _ = replan_queue(
        prof.times, prof.free, prof.lo, prof.n, 0.0, qj[:0], qj, after, rstart, pend, pplan, size, cls, cdlo)
    assert rstart.tolist() == [10.0, 20.0, 25.0]
    prof.add(0.0, 10.0, 4)  # it ended at 0 instead of 10
    times, free, lo, n, first = compress_queue(prof.times, prof.free, prof.lo, prof.n, 0.0, qj, after, rstart, pend,
                                               pplan, size, 4, cls, csize, cdlo)
    assert rstart.tolist() == [0.0, 10.0, 15.0]
    assert pend.tolist() == [10.0, 15.0, 25.0]
    assert first == 0.0
    assert times[lo:n].tolist() == [0.0, 10.0, 15.0, 25.0] and free[lo:n].tolist() == [2, 0, 1, 4]


@pytest.mark.parametrize("seed", range(300))
def test_a_move_is_the_two_edits(seed):
    """_move (one pass) leaves the same steps as giving back then taking with prof_add."""
    from simengine.local.profile import _move
    rng = np.random.default_rng(seed)
    prof = Profile(8, 0.0)
    for _ in range(int(rng.integers(0, 12))):
        a = float(rng.integers(0, 40))
        prof.add(a, a + float(rng.integers(1, 30)), int(rng.integers(-8, 9)))
    prof.advance(float(rng.integers(0, 5)))
    lo_t = max(float(prof.times[prof.lo]), 0.0)
    a1 = lo_t + float(rng.integers(0, 40))
    b1 = a1 + float(rng.choice([0, 1, 5, 20]))
    a2 = lo_t + float(rng.integers(0, 45))
    b2 = a2 + float(rng.choice([0, 1, 5, 20]))
    p = int(rng.integers(1, 9))
    t1, f1, lo1, n1 = prof_add(prof.times.copy(), prof.free.copy(), prof.lo, prof.n, a1, b1, p)
    t1, f1, lo1, n1 = prof_add(t1, f1, lo1, n1, a2, b2, -p)
    room = int(rng.integers(0, 12))  # scratch too small for the touched steps sometimes
    t2, f2, lo2, n2 = prof_grow(prof.times.copy(), prof.free.copy(), prof.lo, prof.n, 4)
    n2 = _move(t2, f2, lo2, n2, a1, b1, a2, b2, p, np.empty(4), np.empty(room), np.empty(room, np.int64))
    assert t2[lo2:n2].tolist() == t1[lo1:n1].tolist()
    assert f2[lo2:n2].tolist() == f1[lo1:n1].tolist()


def canonical(times, free):
    """The step function with one step per change of the free count."""
    keep = np.ones(len(free), bool)
    keep[1:] = free[1:] != free[:-1]
    return times[keep].tolist(), free[keep].tolist()


@pytest.mark.parametrize("seed", range(300))
def test_replanning_equals_placing_one_by_one(seed):
    """replan_queue (one sweep to give back, placements on a linked copy from each class's last
    fit) against the plain loop (tests/simengine/reference_cluster.replan_one_by_one): a newcomer
    placed before a suffix of the queue (a priority arrival or a requeued job), or the queued jobs
    starting before some time placed again after the others (overrun repair)."""
    P, prof, t, qj, after, rstart, pend, pplan, size, cls, csize, cdlo = random_case(seed)
    qj = qj[rstart[qj] >= t]  # the others were due by t: in a cluster they run or hold a later reservation
    if len(qj) == 0:
        return
    rng = np.random.default_rng(10_000 + seed)
    if rng.random() < 0.5:
        pos = int(rng.integers(0, len(qj)))
        give_back, place = qj[pos + 1:].copy(), qj[pos:].copy()
        rstart[qj[pos]], pend[qj[pos]] = INF, INF  # the newcomer holds nothing yet
    else:
        until = t + float(rng.integers(0, 60))
        give_back = qj[rstart[qj] < until].copy()
        place = give_back.copy()
    want_start, want_pend = rstart.copy(), pend.copy()
    wt, wf, wlo, wn, want_first = replan_one_by_one(prof.times.copy(), prof.free.copy(), prof.lo, prof.n, t,
                                                    give_back, place, after, want_start, want_pend, pplan, size)
    times, free, lo, n, first = replan_queue(prof.times.copy(), prof.free.copy(), prof.lo, prof.n, t, give_back,
                                             place, after, rstart, pend, pplan, size, cls, cdlo)
    np.testing.assert_array_equal(rstart, want_start)
    np.testing.assert_array_equal(pend, want_pend)
    assert first == want_first
    assert canonical(times[lo:n], free[lo:n]) == canonical(wt[wlo:wn], wf[wlo:wn])
