"""Conservative backfilling's linked profile and earliest-fit bounds
(simengine/schedulers/_linked_profile.py), checked against plain arrays and a
plain-Python scheduler on random inputs."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simengine.profile import AvailabilityProfile
from simengine.schedulers import _linked_profile as lp
from simengine.schedulers.base import planned_end
from simengine.schedulers.base import ClusterSteps
from simengine.schedulers.conservative import conservative_kernel, job_classes

P = 8


# ---- a plain-Python conservative backfilling, jobs outliving their plan included ----

def _usage(windows, tau):
    return sum(p for s, e, p in windows if s <= tau < e)


def _earliest(windows, processors, after, d, p):
    """Earliest s >= after with p processors free on [s, s + d) (at the instant s if d == 0)."""
    for s in sorted({after} | {e for _, e, _ in windows if e > after}):
        points = [s] + [a for a, _, _ in windows if s < a < s + d]
        if all(_usage(windows, x) + p <= processors for x in points):
            return s
    raise AssertionError("no start found")


def reference_conservative(submit, runtime, plan, size, processors, overrun_step=60.0):
    """Every queued job holds a reservation. A running job's plan that runs out is
    extended (overrun_step, twice that, ...); reservations the extension collides with
    are placed again in arrival order. An early completion (or such a repair)
    compresses the schedule once: in arrival order, each reservation moves to the
    earliest time it fits with its own processors counted free."""
    n = len(submit)
    start = [math.nan] * n
    pstart, pend = {}, {}  # queued jobs
    running = {}  # job -> planned end
    arrived = 0

    def windows(exclude=None):
        w = [(start[j], e, size[j]) for j, e in running.items()]
        w += [(pstart[j], pend[j], size[j]) for j in pstart if j != exclude]
        return [x for x in w if x[1] > x[0]]

    while True:
        events = ([submit[arrived]] if arrived < n else []) + list(pstart.values())
        events += [start[j] + runtime[j] for j in running] + list(running.values())
        if not events:
            return start
        t = min(events)
        early = False
        for j in sorted(running):
            if start[j] + runtime[j] <= t:
                early = early or running[j] > t
                del running[j]
        ext_hi = -math.inf
        for j in sorted(running):
            if running[j] == t:
                running[j] = planned_end(start[j], plan[j], t, overrun_step, True)
                ext_hi = max(ext_hi, running[j])
        repaired = False
        if ext_hi > t:
            w = windows()
            if any(_usage(w, x) > processors for x in [t] + [a for a, _, _ in w if t < a < ext_hi]):
                evicted = [j for j in sorted(pstart) if pstart[j] < ext_hi]
                for j in evicted:
                    del pstart[j], pend[j]
                for j in evicted:
                    s = _earliest(windows(), processors, t, plan[j], size[j])
                    pstart[j], pend[j] = s, s + plan[j]
                repaired = True
        if early or repaired:
            for j in sorted(pstart):
                if pstart[j] > t:
                    s = _earliest(windows(exclude=j), processors, t, plan[j], size[j])
                    if s < pstart[j]:
                        pstart[j], pend[j] = s, s + plan[j]
        while arrived < n and submit[arrived] <= t:
            s = _earliest(windows(), processors, t, plan[arrived], size[arrived])
            pstart[arrived], pend[arrived] = s, s + plan[arrived]
            arrived += 1
        for j in sorted(pstart):
            if pstart[j] <= t:
                start[j] = t
                running[j] = pend[j]
                del pstart[j], pend[j]


@st.composite
def workloads(draw):
    n = draw(st.integers(1, 25))
    scale = draw(st.sampled_from([1.0, 0.5, 1.25]))
    submit = sorted(draw(st.lists(st.integers(0, 60), min_size=n, max_size=n)))
    runtime = draw(st.lists(st.integers(0, 20), min_size=n, max_size=n))
    if draw(st.booleans()):  # estimates unrelated to run times: many overruns
        estimate = draw(st.lists(st.integers(0, 25), min_size=n, max_size=n))
    else:
        estimate = [max(0, r + draw(st.integers(-4, 10))) for r in runtime]
    size = draw(st.lists(st.integers(1, P), min_size=n, max_size=n))
    return (np.array(submit, float) * scale, np.array(runtime, float) * scale,
            np.array(estimate, float) * scale, np.array(size, np.int64))


def run_kernel(submit, runtime, plan, size, ratio):
    cls, csize, cdlo = job_classes(size, plan, ratio)
    start, until = ClusterSteps.outputs(len(submit))
    return ClusterSteps(conservative_kernel(submit, runtime, plan, size, P, math.inf, 60.0, cls, csize, cdlo, start,
                                            until), start, until).to_end().start


@st.composite
def fine_workloads(draw):
    """Few sizes, many distinct requested times (fractions of a second apart), run times
    mostly below them: many classes per size, long compressions."""
    n = draw(st.integers(2, 40))
    submit = sorted(draw(st.lists(st.integers(0, 40), min_size=n, max_size=n)))
    estimate = [draw(st.integers(1, 80)) / 4 for _ in range(n)]
    runtime = [e * draw(st.sampled_from([0.0, 0.25, 0.5, 1.0])) for e in estimate]
    size = draw(st.lists(st.sampled_from([1, 2, 3, P]), min_size=n, max_size=n))
    return (np.array(submit, float), np.array(runtime, float), np.array(estimate, float), np.array(size, np.int64))


@settings(max_examples=300, deadline=None)
@given(fine_workloads(), st.sampled_from([1.0, 1.05, 1.25]))
def test_kernel_with_many_classes_per_size(w, ratio):
    """Each size's shortest active class is searched first (its fit bounds the others'):
    the starts are still those of searching every job from scratch."""
    submit, runtime, plan, size = w
    expected = reference_conservative(submit.tolist(), runtime.tolist(), plan.tolist(), size.tolist(), P)
    np.testing.assert_array_equal(run_kernel(submit, runtime, plan, size, ratio), expected)


@settings(max_examples=300, deadline=None)
@given(workloads(), st.sampled_from([1.0, 1.25, 4.0]))
def test_kernel_matches_plain_conservative_with_overruns(w, ratio):
    submit, runtime, estimate, size = w
    plan = np.where((estimate == 0) & (runtime > 0), 60.0, estimate)
    expected = reference_conservative(submit.tolist(), runtime.tolist(), plan.tolist(), size.tolist(), P)
    np.testing.assert_array_equal(run_kernel(submit, runtime, plan, size, ratio), expected)


# ---- the linked profile against the array profile ----------------------------------

def steps(nt, nf, L, S):
    """(times, free) from the head on, equal neighbours merged."""
    times, free = [], []
    x = S[lp.HEAD]
    while x >= 0:
        if not free or nf[x] != free[-1]:
            times.append(float(nt[x]))
            free.append(int(nf[x]))
        x = L[lp.NEXT, x]
    return times, free


def check_links(nt, L, S):
    x, prev = S[lp.HEAD], -1
    while x >= 0:
        assert L[lp.PREV, x] == prev
        assert x == S[lp.HEAD] or L[lp.REF, x] > 0, "a node nobody holds stayed in the list"
        if prev >= 0:
            assert nt[x] > nt[prev]
        prev, x = x, L[lp.NEXT, x]


class Mirror:
    """The same reservations on a linked profile and on the array profile."""

    def __init__(self, processors, capacity=400):
        self.processors = processors
        self.nt, self.nf, self.L, self.fs, self.S = lp.lp_new(capacity, 0.0, processors)
        self.ref = AvailabilityProfile(processors)
        self.windows = []  # (start, end, size, start node, end node)

    def fit(self, after, d, p, limit=math.inf):
        x = lp.lp_seek(self.S[lp.HEAD], after, self.nt, self.L)
        return lp.lp_fit(x, after, d, p, limit, self.nt, self.nf, self.L)

    def reserve(self, after, d, p):
        s, x = self.fit(after, d, p)
        a = (self.nt, self.nf, self.L, self.fs, self.S)
        sn = lp.lp_at(x, s, *a)
        self.L[lp.REF, sn] += 1
        en = -1
        if s + d > s:
            en = lp.lp_take(sn, s + d, -p, *a)
            self.L[lp.REF, en] += 1
        if d > 0:
            self.ref.reserve(s, s + d, p)
        self.windows.append((s, s + d, p, sn, en))
        return s

    def release(self, k):
        s, e, p, sn, en = self.windows.pop(k)
        a = (self.nt, self.nf, self.L, self.fs, self.S)
        if en >= 0:
            lp.lp_add(sn, e, p, self.nt, self.nf, self.L)
            self.ref.release(s, e, p)
        lp.lp_release(sn, *a)
        if en >= 0:
            lp.lp_release(en, *a)
        return s, e, p, sn

    def assert_same(self):
        check_links(self.nt, self.L, self.S)
        times, free = steps(self.nt, self.nf, self.L, self.S)
        # the array profile keeps the steps before the head too: compare from the head on
        rt, rf = self.ref.steps()
        later = rt > times[0]
        expected_t = [times[0]] + rt[later].tolist()
        expected_f = [self.ref.free_at(times[0])] + rf[later].tolist()
        assert times == expected_t and free == expected_f


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 40), st.integers(0, 15), st.integers(1, P)),
                min_size=1, max_size=60))
def test_linked_profile_matches_array_profile(ops):
    m = Mirror(P)
    now = 0.0
    for kind, a, b, p in ops:
        if kind <= 1 or not m.windows:  # reserve at the earliest fit
            m.reserve(now + a, float(b), p)
        elif kind == 2:  # give a reservation back
            m.release(a % len(m.windows))
        else:  # time passes, up to the earliest reservation
            first = min(w[0] for w in m.windows)
            now = min(first, now + a)
            lp.lp_advance(now, m.nt, m.L, m.fs, m.S)
        m.assert_same()
        for after in (now, now + a, now + b):
            for d in (0.0, 1.0, float(b)):
                got = m.fit(after, d, p)[0]
                assert got == m.ref.earliest_start(p, d, after), (after, d, p)


# ---- earliest-fit bounds stay below the earliest fit --------------------------------

def new_classes(sizes_durations):
    """CI/CF for classes (size, shortest duration), all active, bounds unknown (-inf)."""
    pairs = sorted(sizes_durations)
    CI, CF = lp.lp_new_classes(np.array([p for p, _ in pairs], np.int64), np.array([d for _, d in pairs], float))
    return CI, CF, np.arange(len(pairs), dtype=np.int64)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, P), st.sampled_from([0.0, 1.0, 3.0, 7.5, 20.0])),
                min_size=1, max_size=6, unique=True),
       st.lists(st.tuples(st.integers(0, 4), st.integers(0, 30), st.integers(0, 12), st.integers(1, P)),
                min_size=1, max_size=50))
def test_class_bounds_stay_below_earliest_fit(classes, ops):
    check_class_bounds(classes, ops)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3), st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0, 4.5, 6.0, 9.0, 14.0, 20.0])),
                min_size=2, max_size=14, unique=True),
       st.lists(st.tuples(st.integers(0, 4), st.integers(0, 30), st.integers(0, 12), st.integers(1, P)),
                min_size=1, max_size=50))
def test_class_bounds_many_classes_per_size(classes, ops):
    """lp_lower_bounds walks once per size for all its classes (sorted by DLO) and stops at
    the first whose window does not fit: many classes of a size exercise that."""
    check_class_bounds(classes, ops)


def check_class_bounds(classes, ops):
    m = Mirror(P, capacity=600)
    CI, CF, act = new_classes(classes)
    a = (m.nt, m.nf, m.L, m.fs, m.S)
    now = 0.0
    for kind, x, y, p in ops:
        if kind <= 1 or not m.windows:  # consuming processor time keeps every bound valid
            m.reserve(now + x, float(y), p)
        elif kind == 2:  # freeing it: the bounds are lowered where a window may now fit
            s, e, size, sn = m.release(x % len(m.windows))
            if e > s:
                x0 = lp.lp_seek(m.S[lp.HEAD], s, m.nt, m.L)
                lp.lp_lower_bounds(x0, s, e, size, now, act, len(act), CI, CF, *a)
        elif kind == 3:  # a search from the bound makes it exact again, as compression does
            c = x % len(act)
            after, node = lp.lp_bound_node(c, now, CI, CF, m.nt, m.L, m.S)
            e, k = lp.lp_fit(node, after, CF[c, lp.DLO], CI[c, lp.SIZE], math.inf, m.nt, m.nf, m.L)
            old = lp.lp_set_bound(c, e, k, CI, CF, *a)
            if old >= 0:
                lp.lp_release(old, *a)
        else:
            first = min(w[0] for w in m.windows)
            now = min(first, now + x)
            lp.lp_advance(now, m.nt, m.L, m.fs, m.S)
        check_links(m.nt, m.L, m.S)
        for c in range(len(act)):
            fit = m.ref.earliest_start(int(CI[c, lp.SIZE]), float(CF[c, lp.DLO]), now)
            assert CF[c, lp.LB] <= fit, (c, CF[c, lp.LB], fit)
