"""Conservative backfilling's compression and replanning in the event-driven simulator: the
kernel's pass (simengine.schedulers.conservative.compress) on the linked profile, and
simengine.local.profile.replan_queue, skip searches with bounds (class bounds kept across
calls, slides, each class's last fit); they must give exactly what searching every queued job
does. Brute force here: each job, in queue order, moves to prof_find_start(max(t, after), own
window counted free, limit = its start) when that is sooner -- the definition in compress's
docstring. The same brute force checks the array compression the previous event loop (the
tests' oracle, tests/simengine/reference_cluster.py) still uses.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from simengine.local.profile import give_window, replan_queue
from simengine.profile import prof_add, prof_find_start
from simengine.schedulers._linked_profile import (DLO, GEN, HEAD, LB, LBGEN, LBNODE, NEXT, REF, SIZE, lp_activate,
                                                  lp_advance, lp_new, lp_new_classes)
from simengine.schedulers.conservative import compress, job_classes, take_window
from tests.simengine.reference_cluster import Profile, compress_queue, replan_one_by_one

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
    resumed with a shorter plan than their class's or suspended (a later earliest start).

    Built on the array profile; ``ops`` (before, after the queue's placement: (a, b, delta))
    let :func:`linked_twin` build the same cluster on the linked profile."""
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
    before, after_ops = [], []
    for _ in range(int(rng.integers(0, 6))):  # running jobs and reservations
        a = float(rng.integers(0, 50))
        before.append((0.0 if rng.random() < 0.5 else a, a + float(rng.integers(1, 80)), -int(rng.integers(1, P + 1))))
    for op in before:
        prof.add(*op)
    qj = rng.permutation(n).astype(np.int64)
    rstart, pend = np.full(n, INF), np.full(n, INF)
    after = np.full(n, -INF)
    prof.times, prof.free, prof.lo, prof.n, _ = replan_one_by_one(
        prof.times, prof.free, prof.lo, prof.n, 0.0, qj[:0], qj, after, rstart, pend, pplan, size)
    for _ in range(int(rng.integers(1, 6))):  # given back early
        a = float(rng.integers(0, 60))
        after_ops.append((a, a + float(rng.integers(1, 60)), int(rng.integers(1, P + 1))))
    if rng.random() < 0.3:  # an overrun extension
        a = float(rng.integers(0, 40))
        after_ops.append((a, a + 20.0, -int(rng.integers(1, P + 1))))
    for op in after_ops:
        prof.add(*op)
    t = float(rng.integers(0, 10))
    prof.advance(t)
    susp = rng.random(n) < 0.1
    after[susp] = t + rng.integers(0, 40, susp.sum())
    case = dict(P=P, t=t, qj=qj, after=after, pplan=pplan, size=size, cls=cls, csize=csize, cdlo=cdlo,
                before=before, after_ops=after_ops)
    return P, prof, t, qj, after, rstart, pend, pplan, size, cls, csize, cdlo, case


class Linked:
    """A cluster on the linked profile, with the event core's bookkeeping (class bounds of the
    queued jobs' classes, each reservation's nodes)."""

    def __init__(self, P, n, csize, cdlo, room):
        self.prof = lp_new(2 * n + 2 * room + len(csize) + 16, 0.0, P)
        self.CI, self.CF = lp_new_classes(csize, cdlo)
        self.act = np.empty(len(csize), np.int64)
        self.nact = 0
        self.snode = np.full(n, -1, np.int64)
        self.enode = np.full(n, -1, np.int64)

    def queue(self, cls, qj):
        """Bounds are kept for the classes of queued jobs."""
        for c in np.unique(cls[qj]):
            self.nact = lp_activate(int(c), self.act, self.nact, self.CI)

    def change(self, a, b, delta, t):
        """delta more free processors on [a, b), held for good; a release lowers the bounds."""
        nt, nf, L, fs, S = self.prof
        if b <= a:
            return
        if delta > 0:  # given: the window is taken back at once, then given back by give_window
            na, nb = take_window(S[HEAD], a, b, 0, nt, nf, L, fs, S)
            L[REF, na] += 1  # held for good, so that the given processors stay
            L[REF, nb] += 1
            give_window(na, nb, a, b, delta, t, nt, nf, L, fs, S, self.CI, self.CF, self.act, self.nact)
        else:
            take_window(S[HEAD], a, b, -delta, nt, nf, L, fs, S)

    def dangling_bounds(self):
        """The active classes whose bound claims a node (its generation matches) that is not a
        referenced node of the list: a bound may not hold a node that was let go."""
        nt, nf, L, fs, S = self.prof
        linked = set()
        x = S[HEAD]
        while x >= 0:
            linked.add(int(x))
            x = L[NEXT, x]
        return [int(c) for c in self.act[:self.nact]
                if self.CI[c, LBNODE] >= 0 and L[GEN, self.CI[c, LBNODE]] == self.CI[c, LBGEN]
                and (int(self.CI[c, LBNODE]) not in linked or L[REF, self.CI[c, LBNODE]] < 1)]

    def steps(self):
        """The step function from the head on, one step per change of the free count."""
        nt, nf, L, fs, S = self.prof
        times, free = [], []
        x = S[HEAD]
        while x >= 0:
            if not free or nf[x] != free[-1]:
                times.append(float(nt[x]))
                free.append(int(nf[x]))
            x = L[NEXT, x]
        return times, free


def linked_twin(case, rstart_want, pend_want):
    """The cluster of :func:`random_case` on the linked profile; its queue placed by replan_queue
    must be the array placement's (checked here)."""
    n = len(case["size"])
    tw = Linked(case["P"], n, case["csize"], case["cdlo"], len(case["before"]) + len(case["after_ops"]) + 4)
    qj = case["qj"]
    tw.queue(case["cls"], qj)
    for op in case["before"]:
        tw.change(*op, 0.0)
    rstart, pend = np.full(n, INF), np.full(n, INF)
    replan_queue(0.0, qj[:0], qj, np.full(n, -INF), rstart, pend, case["pplan"], case["size"], case["cls"],
                 tw.snode, tw.enode, *tw.prof, tw.CI, tw.CF, tw.act, tw.nact)
    np.testing.assert_array_equal(rstart, rstart_want)
    np.testing.assert_array_equal(pend, pend_want)
    for op in case["after_ops"]:
        tw.change(*op, 0.0)
    nt, nf, L, fs, S = tw.prof
    lp_advance(case["t"], nt, L, fs, S)
    return tw, rstart, pend


def array_steps(prof, t):
    """The array profile's steps from t on, one step per change of the free count."""
    times, free = prof.times[prof.lo:prof.n].copy(), prof.free[prof.lo:prof.n].copy()
    k = max(int(np.searchsorted(times, t, side="right")) - 1, 0)  # the step holding t
    times, free = times[k:], free[k:]
    times[0] = max(times[0], t)
    return canonical(times, free)


def linked_compress(tw, case, t, rstart, pend):
    below_zero = min(tw.steps()[1]) < 0
    return compress(t, case["qj"], len(case["qj"]), case["after"], rstart, pend, case["pplan"], case["size"],
                    case["cls"], tw.snode, tw.enode, *tw.prof, tw.CI, tw.CF, tw.act, tw.nact, below_zero)


@pytest.mark.parametrize("seed", range(400))
def test_compression_equals_searching_every_job(seed):
    """Two compressions in a row, some processors given back between them (the class bounds the
    first one set must be lowered): the kernel's pass on the linked profile gives brute force's
    reservations and profile each time."""
    P, prof, t, qj, after, rstart, pend, pplan, size, cls, csize, cdlo, case = random_case(seed)
    tw, l_start, l_pend = linked_twin(case, rstart, pend)
    rng = np.random.default_rng(20_000 + seed)
    for round_ in range(2):
        if round_:
            a = t + float(rng.integers(0, 30))
            b, k = a + float(rng.integers(1, 40)), int(rng.integers(1, P + 1))
            prof.add(a, b, k)
            tw.change(a, b, k, t)
            t2 = t + float(rng.integers(0, 5))
            prof.advance(t2)
            lp_advance(t2, tw.prof[0], tw.prof[2], tw.prof[3], tw.prof[4])
            t = case["t"] = t2
        want_times, want_free = brute_compress(prof, t, qj, after, rstart, pend, pplan, size)
        prof.times, prof.free, prof.lo, prof.n = want_times, want_free, 0, len(want_times)
        first = linked_compress(tw, case, t, l_start, l_pend)
        np.testing.assert_array_equal(l_start, rstart)
        np.testing.assert_array_equal(l_pend, pend)
        assert tw.steps() == array_steps(prof, t)
        moved = l_start[qj] < np.inf
        assert first == INF or first in l_start[qj[moved]]


@pytest.mark.parametrize("seed", range(100))
def test_the_previous_loops_array_compression_equals_searching_every_job(seed):
    """The oracle's own compression (tests/simengine/reference_cluster.compress_queue)."""
    P, prof, t, qj, after, rstart, pend, pplan, size, cls, csize, cdlo, _ = random_case(seed)
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
    tw = Linked(4, 3, csize, cdlo, 4)
    qj = np.arange(3, dtype=np.int64)
    tw.queue(cls, qj)
    nt, nf, L, fs, S = tw.prof
    running = take_window(S[HEAD], 0.0, 10.0, 4, nt, nf, L, fs, S)
    rstart, pend, after = np.full(3, INF), np.full(3, INF), np.full(3, -INF)
    replan_queue(0.0, qj[:0], qj, after, rstart, pend, pplan, size, cls, tw.snode, tw.enode, *tw.prof,
                 tw.CI, tw.CF, tw.act, tw.nact)
    assert rstart.tolist() == [10.0, 20.0, 25.0]
    give_window(*running, 0.0, 10.0, 4, 0.0, nt, nf, L, fs, S, tw.CI, tw.CF, tw.act, tw.nact)  # it ended at 0
    first = compress(0.0, qj, 3, after, rstart, pend, pplan, size, cls, tw.snode, tw.enode, *tw.prof,
                     tw.CI, tw.CF, tw.act, tw.nact, False)
    assert rstart.tolist() == [0.0, 10.0, 15.0]
    assert pend.tolist() == [10.0, 15.0, 25.0]
    assert first == 0.0
    assert tw.steps() == ([0.0, 10.0, 15.0, 25.0], [2, 0, 1, 4])


def canonical(times, free):
    """The step function with one step per change of the free count."""
    keep = np.ones(len(free), bool)
    keep[1:] = free[1:] != free[:-1]
    return times[keep].tolist(), free[keep].tolist()


@pytest.mark.parametrize("seed", range(300))
def test_replanning_equals_placing_one_by_one(seed):
    """replan_queue (placements on the linked profile from each class's last fit) against the
    plain loop (tests/simengine/reference_cluster.replan_one_by_one): a newcomer placed before a
    suffix of the queue (a priority arrival or a requeued job), or the queued jobs starting
    before some time placed again after the others (overrun repair)."""
    P, prof, t, qj, after, rstart, pend, pplan, size, cls, csize, cdlo, case = random_case(seed)
    tw, l_start, l_pend = linked_twin(case, rstart, pend)
    qj = qj[rstart[qj] >= t]  # the others were due by t: in a cluster they run or hold a later reservation
    if len(qj) == 0:
        return
    rng = np.random.default_rng(10_000 + seed)
    if rng.random() < 0.5:
        pos = int(rng.integers(0, len(qj)))
        give_back, place = qj[pos + 1:].copy(), qj[pos:].copy()
        new = qj[pos]  # the newcomer holds nothing yet
        replan_queue(t, qj[pos:pos + 1], qj[:0], after, l_start, l_pend, pplan, size, cls, tw.snode, tw.enode,
                     *tw.prof, tw.CI, tw.CF, tw.act, tw.nact)
        prof.add(rstart[new], pend[new], size[new])
        rstart[new], pend[new] = INF, INF
        l_start[new], l_pend[new] = INF, INF
    else:
        until = t + float(rng.integers(0, 60))
        give_back = qj[rstart[qj] < until].copy()
        place = give_back.copy()
    want_start, want_pend = rstart.copy(), pend.copy()
    wt, wf, wlo, wn, want_first = replan_one_by_one(prof.times.copy(), prof.free.copy(), prof.lo, prof.n, t,
                                                    give_back, place, after, want_start, want_pend, pplan, size)
    first = replan_queue(t, give_back, place, after, l_start, l_pend, pplan, size, cls, tw.snode, tw.enode,
                         *tw.prof, tw.CI, tw.CF, tw.act, tw.nact)
    np.testing.assert_array_equal(l_start, want_start)
    np.testing.assert_array_equal(l_pend, want_pend)
    assert first == want_first
    prof.times, prof.free, prof.lo, prof.n = wt, wf, wlo, wn
    assert tw.steps() == array_steps(prof, t)
    # the bounds the replan mended (lowered, or set anew from its searches) still hold: no window
    # of a class begins before its bound
    for c in tw.act[:tw.nact]:
        assert tw.CF[c, LB] <= prof.earliest(t, tw.CF[c, DLO], int(tw.CI[c, SIZE])), c
    assert tw.dangling_bounds() == []
