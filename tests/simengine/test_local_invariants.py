"""Invariants of the event-driven cluster simulator on random small clusters with advance
reservations (rigid and relaxed, with and without a job), priorities and every preemption mode
(hypothesis, derandomized so CI is reproducible):

- no processor runs two things at once: job run segments and reservation windows never overlap
  on a processor; a reservation's own job runs inside its window on its processors;
- every job's work is conserved: suspend -> its run segments add up to runtime + overhead per
  resume; requeue -> its last run is runtime (+ overhead if it was requeued) and its lost time
  is its killed segments; kill -> a killed job ran only killed segments;
- accepted reservations are honoured: the window is held exactly (rigid: where asked; relaxed:
  inside its frame, never later than asked), on as many processors as asked;
- every job ends (no job waits for ever), and a suspended job resumes on its own processors.
"""
from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simengine.gantt import KIND_KILLED, KIND_RESERVATION, KIND_RUN, KIND_SUSPENDED
from simengine.local.cluster import AR_DONE, AR_REJECTED, DONE, KILLED, AdvanceReservation, ClusterSim
from simengine.preemption import preemption_mode

MODES = [("none", 0.0), ("kill", 0.0), ("requeue", 0.0), ("requeue", 7.0), ("suspend", 0.0), ("suspend", 7.0)]


@st.composite
def cluster_case(draw):
    P = draw(st.integers(1, 8))
    n = draw(st.integers(0, 10))
    submit = sorted(draw(st.lists(st.integers(0, 60), min_size=n, max_size=n)))
    runtime = draw(st.lists(st.integers(0, 40), min_size=n, max_size=n))
    # estimates: exact, generous, or too short (overruns)
    factor = draw(st.lists(st.sampled_from([1.0, 2.0, 0.5, 0.0]), min_size=n, max_size=n))
    estimate = [float(round(r * f)) for r, f in zip(runtime, factor)]
    size = draw(st.lists(st.integers(1, P), min_size=n, max_size=n))
    priority = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    ars = []
    for i in range(draw(st.integers(0, 3))):
        start = draw(st.integers(0, 80))
        length = draw(st.integers(1, 40))
        req = draw(st.integers(0, start))
        relaxed = draw(st.booleans())
        est = draw(st.integers(0, start)) if relaxed else None
        lft = start + length + draw(st.integers(0, 60)) if relaxed else None
        job = draw(st.one_of(st.none(), st.integers(0, length)))
        ars.append(AdvanceReservation(i, draw(st.integers(1, P)), float(start), float(start + length), float(req),
                                      est, lft, job))
    policy = draw(st.sampled_from(["fcfs", "easy", "conservative"]))
    mode = draw(st.sampled_from(MODES))
    return P, policy, mode, submit, runtime, estimate, size, priority, ars


def check(case):
    P, policy, (mode_name, overhead), submit, runtime, estimate, size, priority, ars = case
    asked = [(r.start, r.end) for r in ars]
    mode = preemption_mode({"name": mode_name, "params": {"overhead": overhead}} if mode_name in ("requeue", "suspend")
                           else mode_name)
    sim = ClusterSim(P, policy, submit, runtime, estimate, size, priority, ars, mode).run()
    n = len(submit)
    # every job ends
    assert all(s in (DONE, KILLED) for s in sim.state), sim.state
    assert not sim.running and not sim.queue
    pieces = defaultdict(list)
    for owner, t0, t1, kind, procs in sim.pieces:
        assert t1 >= t0 and len(set(procs)) == len(procs) and all(0 <= p < P for p in procs)
        pieces[owner].append((t0, t1, kind, procs))
    # no processor runs two things at once
    busy = defaultdict(list)
    for owner, ps in pieces.items():
        for t0, t1, kind, procs in ps:
            if (owner[0] == "j" and kind == KIND_RUN) or kind == KIND_RESERVATION:
                for p in procs:
                    busy[p].append((t0, t1, owner))
    for p, spans in busy.items():
        spans.sort()
        for a, b in zip(spans, spans[1:]):
            assert a[1] <= b[0] or a[0] == a[1] or b[0] == b[1], f"processor {p}: {a} and {b} overlap"
    # work conserved per job
    for j in range(n):
        ps = sorted(pieces[("j", j)])
        run = [x for x in ps if x[2] == KIND_RUN]
        killed = [x for x in ps if x[2] == KIND_KILLED]
        suspended = [x for x in ps if x[2] == KIND_SUSPENDED]
        assert sum(x[1] - x[0] for x in killed) == pytest.approx(sim.lost[j])
        assert all(len(x[3]) == size[j] for x in ps)
        if sim.state[j] == KILLED:
            assert not run and len(killed) >= 1 and sim.end[j] == killed[-1][1]
            continue
        if mode.resumes:
            assert not killed
            assert sum(x[1] - x[0] for x in run) == pytest.approx(runtime[j] + overhead * sim.resumes[j])
            assert len(suspended) == sim.resumes[j] == sim.preemptions[j] == len(run) - 1
            assert len({x[3] for x in run + suspended}) == 1  # resumes on its own processors
        else:
            assert len(run) == 1
            extra = overhead if (mode.restarts and sim.preemptions[j]) else 0.0
            assert run[0][1] - run[0][0] == pytest.approx(runtime[j] + extra)
            assert len(killed) == sim.preemptions[j]
        assert sim.end[j] == run[-1][1] and sim.first_start[j] == ps[0][0]
    # accepted reservations honoured
    for r, (s0, e0) in zip(ars, asked):
        mine = pieces[("r", r.index)]
        if r.status == AR_REJECTED:
            assert not mine
            continue
        assert r.status == AR_DONE
        win = [x for x in mine if x[2] == KIND_RESERVATION]
        assert len(win) == 1 and win[0][:2] == (r.start, r.end) and len(win[0][3]) == r.processors
        assert r.end - r.start == pytest.approx(e0 - s0)
        if r.est is None:
            assert r.start == s0
        else:
            assert r.est <= r.start <= s0 or s0 <= r.start <= r.lft - (e0 - s0)
            assert r.end <= r.lft + 1e-9 * max(1.0, r.lft)
        runs = [x for x in mine if x[2] == KIND_RUN]
        if r.job_runtime is None:
            assert not runs
        else:
            assert runs == [(r.start, r.start + r.job_runtime, KIND_RUN, win[0][3])]


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(cluster_case())
def test_invariants_on_random_clusters(case):
    check(case)


def test_a_known_case_with_everything():
    # 4 processors, EASY, suspend with overhead 5: a reservation of 2 over [20, 40) with a job of 10 s,
    # a relaxed one of 3 over [60, 70) in [30, 100]; low-priority long jobs and a high-priority one
    ars = [AdvanceReservation(0, 2, 20.0, 40.0, 0.0, None, None, 10.0),
           AdvanceReservation(1, 3, 60.0, 70.0, 10.0, 30.0, 100.0, None)]
    check((4, "easy", ("suspend", 5.0), [0, 0, 15], [50, 30, 10], [25, 30, 10], [2, 2, 3], [0, 0, 1], ars))


def test_jobs_ending_at_this_instant_are_never_victims():
    # found by hypothesis: at 218 (a window ends) jobs of run time 0 were "running" (in conservative
    # they hold no processor) and were picked as victims, which gave back processors they never held
    ars = [AdvanceReservation(0, 7, 158.0, 218.0, 6.0), AdvanceReservation(1, 6, 239.0, 240.0, 10.0),
           AdvanceReservation(2, 1, 30.0, 31.0, 0.0), AdvanceReservation(3, 1, 0.0, 1.0, 0.0)]
    runtime = [0, 0, 6, 7, 0, 0, 0, 0, 25, 0, 5, 0, 33, 22, 22, 0, 0, 0, 0]
    estimate = [0, 0, 7.8, 9.1, 0, 0, 0, 0, 25, 0, 5, 0, 33, 11, 22, 0, 0, 0, 0]
    check((8, "conservative", ("kill", 0.0), [0] * 12 + [207, 207, 208, 213, 214, 214, 220], runtime, estimate,
           [1] * 13 + [2, 2, 1, 1, 1, 1], [0] * 6 + [1] + [0] * 6 + [1, 1, 0, 0, 0, 0], ars))


@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(cluster_case(), st.integers(0, 120))
def test_a_horizon_leaves_consistent_open_pieces(case, horizon):
    P, policy, (mode_name, overhead), submit, runtime, estimate, size, priority, ars = case
    mode = preemption_mode({"name": mode_name, "params": {"overhead": overhead}} if mode_name in ("requeue", "suspend")
                           else mode_name)
    sim = ClusterSim(P, policy, submit, runtime, estimate, size, priority, ars, mode, horizon=float(horizon)).run()
    busy = defaultdict(list)
    for owner, t0, t1, kind, procs in sim.pieces + sim.open_pieces():
        assert t0 <= horizon  # nothing happens after the horizon
        t1 = min(horizon, t1) if t1 == t1 else horizon
        if (owner[0] == "j" and kind == KIND_RUN) or kind == KIND_RESERVATION:
            for p in procs:
                busy[p].append((t0, t1))
    for spans in busy.values():
        spans.sort()
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]) if a[1] > a[0] and b[1] > b[0])
    assert all(s != s or s <= horizon for s in sim.first_start)


# ---- whole scenarios: the Result's rows and segments -------------------------------------------------

@st.composite
def scenario_case(draw):
    import numpy as np  # noqa: F401

    clusters = []
    for c in range(draw(st.integers(1, 2))):
        mode = draw(st.sampled_from(MODES))
        pre = {"name": mode[0]} if mode[0] in ("none", "kill") else {"name": mode[0], "params": {"overhead": mode[1]}}
        clusters.append({"name": f"c{c}", "processors": draw(st.integers(2, 8)),
                         "scheduler": {"name": draw(st.sampled_from(["fcfs", "easy", "conservative"]))},
                         "preemption": pre})
    streams = []
    for i in range(draw(st.integers(1, 2))):
        streams.append({"kind": "synthetic", "name": f"s{i}", "target": "grid", "priority": draw(st.integers(0, 2)),
                        "arrival": {"rate": draw(st.sampled_from([0.05, 0.2]))},
                        "size": {"kind": "uniform", "low": 1, "high": 2, "integer": True},
                        "runtime": {"kind": "exponential", "mean": 20},
                        "estimate": {"kind": "factor", "factor": {"kind": "uniform", "low": 1, "high": 2}},
                        "count": draw(st.integers(1, 15))})
    reservations = []
    for k in range(draw(st.integers(0, 3))):
        c = draw(st.integers(0, len(clusters) - 1))
        start = draw(st.integers(0, 60))
        length = draw(st.integers(1, 30))
        r = {"name": f"r{k}", "cluster": f"c{c}", "processors": draw(st.integers(1, clusters[c]["processors"])),
             "start": start, "end": start + length, "request_time": draw(st.integers(0, start))}
        if draw(st.booleans()):
            r["relaxed"] = {"earliest_start": draw(st.integers(0, start)), "latest_finish": start + length + 30}
        if draw(st.booleans()):
            r["job"] = {"runtime": draw(st.integers(0, length))}
        reservations.append(r)
    return {"platform": {"clusters": clusters}, "workload": {"streams": streams}, "reservations": reservations,
            "run": {"seed": draw(st.integers(0, 100))}}


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(scenario_case())
def test_invariants_of_whole_runs(d):
    import numpy as np

    from simengine.runner import run

    res = run(d)
    s, j = res.segments, dict(res.jobs)
    n = len(j["job_id"])
    if "reservation" not in j:  # nothing needed the event-driven path: the kernels ran it
        j.update(reservation=np.full(n, -1), preemptions=np.zeros(n), lost_time=np.zeros(n))
    spans = defaultdict(list)
    for c, f, k, t0, t1, row, kind in zip(s["cluster"], s["first_processor"], s["processors"], s["t0"], s["t1"],
                                          s["job"], s["kind"]):
        if kind == KIND_RESERVATION or (kind == KIND_RUN and j["reservation"][row] < 0):
            for p in range(f, f + k):
                spans[(c, p)].append((t0, t1))
    for v in spans.values():
        v.sort()
        assert all(a[1] <= b[0] for a, b in zip(v, v[1:]) if a[1] > a[0] and b[1] > b[0])
    overhead = {i: (c["preemption"].get("params") or {}).get("overhead", 0.0)
                for i, c in enumerate(d["platform"]["clusters"])}
    for row in np.flatnonzero((j["reservation"] < 0) & (j["status"] == 0)):
        mine = s["job"] == row
        run_time = float(((s["t1"] - s["t0"]) * s["processors"])[mine & (s["kind"] == KIND_RUN)].sum())
        lost = float(((s["t1"] - s["t0"]) * s["processors"])[mine & (s["kind"] == KIND_KILLED)].sum())
        mode = d["platform"]["clusters"][j["cluster"][row]]["preemption"]["name"]
        # suspend: one overhead per resume; requeue: the last run from scratch has one overhead
        times = j["preemptions"][row] if mode == "suspend" else min(j["preemptions"][row], 1) if mode == "requeue" else 0
        extra = overhead[j["cluster"][row]] * times
        assert run_time == pytest.approx((j["runtime"][row] + extra) * j["processors"][row])
        assert lost == pytest.approx(j["lost_time"][row] * j["processors"][row])
    if d["reservations"]:
        rows = (j["reservation"] >= 0).sum()
        assert res.metrics["reservations_accepted"].mean + res.metrics["reservations_rejected"].mean == rows
