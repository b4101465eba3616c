"""Placement policies written in Python for co-allocated jobs with start deadlines (Ballier's
Repeated Placement Policy, MODELS.md §3; docs/policies/deadline-placement.md).

* Worst-Fit written in plain Python through the public API (the worked package's
  ``python-worst-fit``, and the built-in class run through the Python path) gives the compiled
  kernel's schedule exactly: the Ballier example and random workloads with ties, under every
  deadline-policy setting; a Worst-Fit with another tie rule does not (the comparison can fail).
* The worked example ``best-fit-deadline`` against a straightforward reference simulation of the
  model written here (checked itself against the compiled kernel with Worst-Fit).
* What a policy sees at each attempt (deadline, time, tries, the attempt at D), and the errors
  that name the policy, the job and the moment.
* The ways in: the scenario, the Python API, the CLI, the builder's catalog and the API schema.
"""
from __future__ import annotations

import copy
import heapq
import math
import subprocess
import sys

import numpy as np
import pytest
import yaml

import simengine
from simengine.grid import kernel as K
from simengine.grid.deadline_job import DeadlineJob
from simengine.grid.model import GlobalJobs, GridPolicy, GridRun, LocalJobs, simulate
from simengine.policy import PlacementPolicy, PolicyError
from simengine.registry import GRID_PLACEMENT, Entry
from tests.conftest import ROOT


def ballier(placement: dict, **run) -> dict:
    data = yaml.safe_load((ROOT / "examples" / "ballier-4x32.yaml").read_text())
    data["grid"]["placement"] = placement
    data["run"] = {**data["run"], **run}
    return data


def random_workload(seed: int):
    """A few clusters of equal sizes (so idle counts tie often), integer times (simultaneous
    events), zero run times, deadlines at the submission."""
    rng = np.random.default_rng(seed)
    C = int(rng.integers(1, 5))
    procs = rng.choice([4, 8], C)
    n, m = int(rng.integers(0, 60)), int(rng.integers(1, 30))
    cl = rng.integers(0, C, n)
    L = LocalJobs(np.sort(rng.integers(0, 300, n)).astype(float), rng.integers(0, 60, n).astype(float),
                  np.array([rng.integers(1, procs[c] + 1) for c in cl], np.int64), cl)
    gs = np.sort(rng.integers(0, 300, m)).astype(float)
    G = GlobalJobs(gs, rng.integers(0, 80, m).astype(float), rng.integers(1, procs.min() + 1, m),
                   rng.integers(1, C + 2, m), gs + rng.integers(0, 100, m))
    return procs, L, G


#: deadline-policy settings: GP and LP (both readings), Wait-X, L_p 1 (tries at D), no tries,
#: no final attempt, claims behind the local queue, requeued kills, the literal GP
VARIANTS = [dict(lp=0.5), dict(lp=0.7, wait_x=10.0), dict(lp=1.0), dict(lp=0.5, mp=0),
            dict(lp=0.5, mp=2, final_attempt=False), dict(lp=0.5, priority="LP", mp=1, final_attempt=False),
            dict(lp=0.3, priority="LP"), dict(lp=0.5, wait_x=0.0, claims_bypass_local_queue=False),
            dict(lp=0.6, killed_jobs="requeue", kill_order="earliest_started_first"),
            dict(lp=0.5, gp_cluster="most_idle")]

OUTCOME = ("local_start", "local_end", "local_state", "local_kills", "global_state", "global_hold",
           "global_decided", "global_tries", "global_kills", "component_offset", "busy")


def assert_same(a, b) -> None:
    for name in OUTCOME:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    # the clusters of every placed job's components (a job never placed has none: the kernel's
    # Worst-Fit leaves what it tried there, a Python placement nothing)
    placed = np.isin(a.global_state, (K.G_CLAIMED, K.G_RUNNING, K.G_DONE))
    for g in np.flatnonzero(placed):
        assert a.components_of(g) == b.components_of(g), f"components of global job {g}"
    for name, values in a.kills.items():
        np.testing.assert_array_equal(values, b.kills[name], err_msg=f"kills.{name}")
    assert a.t_end == b.t_end


@pytest.fixture
def placement(monkeypatch):
    """Register a placement class for one test only (the conformance suite must not see it)."""
    def add(cls, capabilities=()):
        monkeypatch.setitem(GRID_PLACEMENT._entries, cls.name,
                            Entry(cls.name, cls.Params, cls, cls.name, frozenset(capabilities)))
        return cls.name
    return add


# ---- Worst-Fit in Python = the compiled kernel ----------------------------------------------------

def test_python_worst_fit_gives_the_compiled_schedule_on_the_ballier_example():
    compiled = simengine.run(ballier({"name": "worst-fit"}, replications=2))
    python = simengine.run(ballier({"name": "python-worst-fit"}, replications=2))
    assert len(compiled.jobs["start"]) > 10000
    for column, values in compiled.jobs.items():
        assert np.array_equal(values, python.jobs[column], equal_nan=values.dtype.kind == "f"), column
    for column, values in compiled.segments.items():
        assert np.array_equal(values, python.segments[column]), column
    for name, m in compiled.metrics.items():
        assert m.mean == python.metrics[name].mean or (math.isnan(m.mean) and math.isnan(python.metrics[name].mean))
    assert 0.5 < compiled.metrics["global_success_rate"].mean < 1


@pytest.mark.parametrize("variant", VARIANTS, ids=[",".join(f"{k}={v}" for k, v in v.items()) for v in VARIANTS])
def test_python_worst_fit_gives_the_compiled_schedule_on_random_workloads_with_ties(variant, placement):
    # the built-in class too, sent through the Python path (the same object minus "compiled")
    builtin = GRID_PLACEMENT.get("worst-fit").implementation
    as_python = type("BuiltinWorstFitInPython", (builtin,), {"name": "builtin-worst-fit-in-python"})
    placement(as_python)
    for seed in range(25):
        procs, L, G = random_workload(seed)
        compiled = simulate(procs, L, G, GridPolicy(placement="worst-fit", **variant))
        for name in ("python-worst-fit", as_python.name):
            assert_same(compiled, simulate(procs, L, G, GridPolicy(placement=name, **variant)))


def test_a_worst_fit_with_another_tie_rule_is_told_apart(placement):
    """The comparison above can fail: highest index on ties changes some schedule."""

    class HighestIndexWorstFit(PlacementPolicy):
        name = "worst-fit-highest-index"

        def place(self, job, idle):
            out = []
            for s in job.sizes:
                c = max(range(len(idle)), key=lambda c: (idle[c], c))
                if idle[c] < s:
                    return None
                idle[c] -= s
                out.append(c)
            return out

    placement(HighestIndexWorstFit)
    differ = 0
    for seed in range(25):
        procs, L, G = random_workload(seed)
        compiled = simulate(procs, L, G, GridPolicy(lp=0.5))
        other = simulate(procs, L, G, GridPolicy(placement=HighestIndexWorstFit.name, lp=0.5))
        try:
            assert_same(compiled, other)
        except AssertionError:
            differ += 1
    assert differ > 0


def test_a_python_placement_gives_the_same_schedule_however_the_run_is_sliced():
    procs, L, G = random_workload(11)
    whole = simulate(procs, L, G, GridPolicy(placement="best-fit-deadline", placement_params={"headroom": 3}, lp=0.5))
    run = GridRun(procs, L, G, GridPolicy(placement="best-fit-deadline", placement_params={"headroom": 3}, lp=0.5))
    t = 0.0
    while not run.advance(t):
        t += 7.0
    assert_same(whole, run.outcome())


def test_a_python_placement_streams_exactly_its_gantt(monkeypatch):
    from simengine import streaming
    from simengine.grid import holdings
    from tests.simengine.live_stream import check_live_stream
    from tests.simengine.test_live_stream import fixed_slices

    monkeypatch.setattr(streaming, "LIVE_INTERVAL", 0.0)
    monkeypatch.setattr(holdings, "run_in_slices", fixed_slices(300))  # attempts in every slice
    data = ballier({"name": "best-fit-deadline", "params": {"headroom": 8}}, replications=1,
                   stop={"horizon": 30000.5}, warmup={"time": 0})
    chunks = []
    result = simengine.run(data, on_progress=chunks.append)
    assert (np.asarray(result.segments["kind"]) == 1).any()  # claims
    check_live_stream(chunks, result, during=True)
    assert_same_jobs(result, simengine.run(data))


def assert_same_jobs(a, b) -> None:
    for column, values in a.jobs.items():
        assert np.array_equal(values, b.jobs[column], equal_nan=values.dtype.kind == "f"), column


# ---- best-fit-deadline against a reference simulation ----------------------------------------------

LOCAL_END, GLOBAL_END, GLOBAL_START, ATTEMPT, ARRIVAL = range(5)


def reference(procs, L, G, pol: GridPolicy, place) -> dict:
    """MODELS.md §3 simulated plainly: one heap of (time, class, index) events in the documented
    order at an instant (local ends, global ends, claimed jobs starting at D, placement attempts,
    local arrivals), then strict FCFS on every cluster once the instant is over.
    ``place(g, now, tries, idle)`` -> a cluster per component, or None. GP kills the latest
    started local jobs and drops them; a component that fits nowhere idle goes to the cluster
    with most idle + local-occupied processors."""
    assert pol.kill_order == "latest_started_first" and pol.killed_jobs == "drop"
    assert pol.gp_cluster == "most_idle_plus_local"
    C, n, m = len(procs), len(L), len(G)
    free, lbusy = [int(p) for p in procs], [0] * C
    queue, running = [[] for _ in range(C)], [[] for _ in range(C)]  # running: in start order
    out = {"l_start": [math.nan] * n, "l_end": [math.nan] * n, "l_state": [K.L_WAITING] * n, "l_kills": [0] * n,
           "g_state": [K.G_WAITING] * m, "g_hold": [math.nan] * m, "g_decided": [math.nan] * m, "g_tries": [0] * m,
           "g_kills": [0] * m, "where": [None] * m, "kills": []}
    events = [(float(L.submit[j]), ARRIVAL, j) for j in range(n)]
    for g in range(m):
        S, D = float(G.submit[g]), float(G.deadline[g])
        if pol.mp == 0 and not pol.final_attempt:
            out["g_state"][g], out["g_decided"][g] = K.G_FAILED, S
            continue
        sp = S if pol.wait_x is None else max(S, D - pol.wait_x)
        events.append((D if pol.mp == 0 else min(sp + pol.lp * (D - sp), D), ATTEMPT, g))
    heapq.heapify(events)

    def gp_room(g, s, nc, t):
        avail, room, need, where = free[:], lbusy[:], [0] * C, []
        for _ in range(nc):
            c = max(range(C), key=lambda c: (avail[c], -c))
            if avail[c] >= s:
                avail[c] -= s
            else:  # room made by killing local jobs
                c = max(range(C), key=lambda c: (avail[c] + room[c], -c))
                if avail[c] + room[c] < s:
                    return None
                room[c] -= s - avail[c]
                need[c] += s - avail[c]
                avail[c] = 0
            where.append(c)
        for c in range(C):
            freed = 0
            while freed < need[c]:
                j = running[c].pop()
                freed += int(L.size[j])
                free[c] += int(L.size[j])
                lbusy[c] -= int(L.size[j])
                out["kills"].append((j, out["l_start"][j], t))
                out["l_state"][j], out["l_end"][j] = K.L_KILLED, t
                out["l_kills"][j] += 1
                out["g_kills"][g] += 1
        return where

    while events:
        t, kind, i = heapq.heappop(events)
        if kind == ARRIVAL:
            queue[int(L.cluster[i])].append(i)
        elif kind == LOCAL_END:
            if out["l_state"][i] == K.L_RUNNING and out["l_end"][i] == t:  # (not killed)
                c = int(L.cluster[i])
                free[c] += int(L.size[i])
                lbusy[c] -= int(L.size[i])
                running[c].remove(i)
                out["l_state"][i] = K.L_DONE
        elif kind == GLOBAL_END:
            for c in out["where"][i]:
                free[c] += int(G.size[i])
            out["g_state"][i] = K.G_DONE
        elif kind == GLOBAL_START:
            out["g_state"][i], out["g_decided"][i] = K.G_RUNNING, t
            heapq.heappush(events, (t + float(G.runtime[i]), GLOBAL_END, i))
        else:  # a placement attempt
            g, D, s, nc = i, float(G.deadline[i]), int(G.size[i]), int(G.components[i])
            out["g_tries"][g] += 1
            idle = [free[c] if (pol.claims_bypass_local_queue or not queue[c] or t >= D) else 0 for c in range(C)]
            where = place(g, t, out["g_tries"][g] - 1, idle)
            if t < D:
                if where is not None:
                    for c in where:
                        free[c] -= s
                    out["g_state"][g], out["g_hold"][g], out["where"][g] = K.G_CLAIMED, t, where
                    heapq.heappush(events, (D, GLOBAL_START, g))
                elif out["g_tries"][g] < pol.mp:
                    heapq.heappush(events, (min(t + pol.lp * (D - t), D), ATTEMPT, g))
                elif pol.final_attempt:
                    heapq.heappush(events, (D, ATTEMPT, g))
                else:
                    out["g_state"][g], out["g_decided"][g] = K.G_FAILED, t
            else:
                if where is None and pol.priority == "GP":
                    where = gp_room(g, s, nc, t)
                if where is None:
                    out["g_state"][g], out["g_decided"][g] = K.G_FAILED, t
                else:
                    for c in where:
                        free[c] -= s
                    out["g_state"][g], out["where"][g] = K.G_RUNNING, where
                    out["g_hold"][g] = out["g_decided"][g] = t
                    heapq.heappush(events, (t + float(G.runtime[g]), GLOBAL_END, g))
        if not events or events[0][0] > t:  # the instant is over: strict FCFS
            for c in range(C):
                while queue[c] and int(L.size[queue[c][0]]) <= free[c]:
                    j = queue[c].pop(0)
                    free[c] -= int(L.size[j])
                    lbusy[c] += int(L.size[j])
                    running[c].append(j)
                    out["l_state"][j], out["l_start"][j] = K.L_RUNNING, t
                    out["l_end"][j] = t + float(L.runtime[j])
                    heapq.heappush(events, (out["l_end"][j], LOCAL_END, j))
    return out


def assert_matches_reference(o, ref, G) -> None:
    for mine, theirs in (("local_start", "l_start"), ("local_end", "l_end"), ("local_state", "l_state"),
                         ("local_kills", "l_kills"), ("global_state", "g_state"), ("global_hold", "g_hold"),
                         ("global_decided", "g_decided"), ("global_tries", "g_tries"), ("global_kills", "g_kills")):
        np.testing.assert_array_equal(getattr(o, mine), np.asarray(ref[theirs], getattr(o, mine).dtype), err_msg=mine)
    for g, where in enumerate(ref["where"]):
        if where is not None:
            assert o.components_of(g) == where, g
    assert list(zip(*(o.kills[k].tolist() for k in ("job", "start", "time")))) == ref["kills"]


def reference_worst_fit(G):
    def place(g, now, tries, idle):
        idle, where = list(idle), []
        for _ in range(int(G.components[g])):
            c = max(range(len(idle)), key=lambda c: (idle[c], -c))
            if idle[c] < G.size[g]:
                return None
            idle[c] -= int(G.size[g])
            where.append(c)
        return where
    return place


def reference_best_fit_deadline(G, headroom: int):
    """docs/policies/deadline-placement.md's rule: keep floor(headroom x (D - now) / (D - S))
    idle; each component where it leaves the fewest idle (ties: lowest index)."""
    def place(g, now, tries, idle):
        S, D, s = float(G.submit[g]), float(G.deadline[g]), int(G.size[g])
        keep = int(headroom * max(D - now, 0.0) / (D - S)) if D > S else 0
        idle, where = list(idle), []
        for _ in range(int(G.components[g])):
            fits = sorted((idle[c] - s, c) for c in range(len(idle)) if idle[c] - s >= keep)
            if not fits:
                return None
            idle[fits[0][1]] -= s
            where.append(fits[0][1])
        return where
    return place


REFERENCE_VARIANTS = [v for v in VARIANTS if not ({"killed_jobs", "kill_order", "gp_cluster"} & set(v))]


@pytest.mark.parametrize("variant", REFERENCE_VARIANTS,
                         ids=[",".join(f"{k}={v}" for k, v in v.items()) for v in REFERENCE_VARIANTS])
def test_the_reference_simulation_gives_the_compiled_kernels_schedule(variant):
    """(so it can judge a policy: it is the model, not a copy of one engine path)"""
    for seed in range(25):
        procs, L, G = random_workload(seed)
        pol = GridPolicy(**variant)
        assert_matches_reference(simulate(procs, L, G, pol), reference(procs, L, G, pol, reference_worst_fit(G)), G)


@pytest.mark.parametrize("headroom", [0, 2, 5])
@pytest.mark.parametrize("variant", REFERENCE_VARIANTS,
                         ids=[",".join(f"{k}={v}" for k, v in v.items()) for v in REFERENCE_VARIANTS])
def test_best_fit_deadline_matches_the_reference_simulation(variant, headroom):
    for seed in range(25):
        procs, L, G = random_workload(seed)
        pol = GridPolicy(placement="best-fit-deadline", placement_params={"headroom": headroom}, **variant)
        assert_matches_reference(simulate(procs, L, G, pol),
                                 reference(procs, L, G, pol, reference_best_fit_deadline(G, headroom)), G)


def test_best_fit_deadline_packs_where_worst_fit_spreads_and_its_headroom_shrinks_to_the_deadline():
    # two idle clusters of 8 and 4; a job of 2 x 2 at t=0 with D=100, L_p 0.5: the try is at 50
    procs, L = [8, 4], LocalJobs([], [], [], [])
    G = GlobalJobs([0.0], [10.0], [2], [2], [100.0])
    best = simulate(procs, L, G, GridPolicy(placement="best-fit-deadline", lp=0.5))
    assert best.components_of(0) == [1, 1] and best.global_hold[0] == 50  # packed into the small one
    assert simulate(procs, L, G, GridPolicy(lp=0.5)).components_of(0) == [0, 0]  # Worst-Fit: both on the 8
    # headroom 8: at t=50 (half the time left) keep 4 -> only cluster 0 (8 - 2 >= 4), twice (6 - 2 >= 4)
    held = simulate(procs, L, G, GridPolicy(placement="best-fit-deadline", placement_params={"headroom": 8}, lp=0.5))
    assert held.components_of(0) == [0, 0] and held.global_hold[0] == 50
    # headroom 24: keep 12 at t=50 (nothing), 6 at t=75 (one component only), 3 at t=87.5: claimed then
    late = simulate(procs, L, G, GridPolicy(placement="best-fit-deadline", placement_params={"headroom": 24}, lp=0.5))
    assert late.global_hold[0] == 87.5 and late.global_tries[0] == 3 and late.components_of(0) == [0, 0]


# ---- what the policy sees, and its errors -----------------------------------------------------------

class Recording(PlacementPolicy):
    name = "recording-worst-fit"
    seen: list = []

    def place(self, job, idle):
        Recording.seen.append((type(job), job.id, job.sizes, job.submit, job.deadline, job.now, job.tries, job.final,
                               idle.tolist()))
        return GRID_PLACEMENT.get("python-worst-fit").implementation.place(self, job, idle)


def test_the_policy_sees_the_deadline_the_moment_and_the_tries_so_far(placement):
    placement(Recording)
    Recording.seen = []
    # 4 processors busy until 80; a job of 1 x 2 submitted at 0, deadline 100, L_p 0.5: tries at 50 and
    # 75 see nothing idle, the one at 87.5 all 4
    o = simulate([4], LocalJobs([0.0], [80.0], [4], [0]), GlobalJobs([0.0], [10.0], [2], [1], [100.0]),
                 GridPolicy(placement=Recording.name, lp=0.5))
    assert [s[1:] for s in Recording.seen] == [(0, (2,), 0.0, 100.0, 50.0, 0, False, [0]),
                                               (0, (2,), 0.0, 100.0, 75.0, 1, False, [0]),
                                               (0, (2,), 0.0, 100.0, 87.5, 2, False, [4])]
    assert all(s[0] is DeadlineJob for s in Recording.seen)
    assert o.global_hold[0] == 87.5 and o.global_state[0] == K.G_DONE
    # the attempt at D is final: None there lets GP kill (the local job runs until 1000), LP fail
    for priority, state, kills in (("GP", K.G_DONE, 1), ("LP", K.G_FAILED, 0)):
        Recording.seen = []
        o = simulate([4], LocalJobs([0.0], [1000.0], [4], [0]), GlobalJobs([0.0], [10.0], [2], [1], [100.0]),
                     GridPolicy(placement=Recording.name, lp=0.5, mp=1, priority=priority))
        assert [(s[5], s[6], s[7]) for s in Recording.seen] == [(50.0, 0, False), (100.0, 1, True)]
        assert o.global_state[0] == state and o.global_kills[0] == kills


def test_claims_behind_the_local_queue_show_the_policy_no_idle_processors(placement):
    placement(Recording)
    Recording.seen = []
    # cluster 0: 2 of 4 busy until 100 and a local job of 4 queued behind; cluster 1 idle
    L = LocalJobs([0.0, 1.0], [100.0, 5.0], [2, 4], [0, 0])
    simulate([4, 4], L, GlobalJobs([0.0], [10.0], [1], [1], [100.0]),
             GridPolicy(placement=Recording.name, lp=0.5, claims_bypass_local_queue=False))
    assert Recording.seen[0][-1] == [0, 4]


@pytest.mark.parametrize("answer,says", [
    (lambda job, idle: [0], "placed 1 components of global job 0 (2 x 2 processors, submitted at t=0, deadline 100) "
                            "at t=50, which has 2"),
    (lambda job, idle: [0, "c1"], "was placed on 'c1', not a cluster index 0..1"),
    (lambda job, idle: [(0, 0), 0], "was placed on (0, 0)"),
    (lambda job, idle: [1, 1], "placed on cluster 1 beyond its 3 idle processors"),
    (lambda job, idle: {}["x"], "best-answer: place() for global job 0 (2 x 2 processors, submitted at t=0, deadline "
                                "100) at t=50 raised KeyError: 'x' (simengine/test_policy_deadline_placement.py"),
])
def test_a_wrong_answer_or_an_exception_names_the_policy_the_job_and_the_moment(placement, answer, says):
    class Answer(PlacementPolicy):
        name = "best-answer"

        def place(self, job, idle):
            return answer(job, idle)

    placement(Answer)
    with pytest.raises(PolicyError) as e:
        simulate([4, 3], LocalJobs([], [], [], []), GlobalJobs([0.0], [10.0], [2], [2], [100.0]),
                 GridPolicy(placement=Answer.name, lp=0.5))
    assert says in str(e.value) and str(e.value).startswith("best-answer: ")


# ---- the ways in -------------------------------------------------------------------------------------

def test_the_worked_package_registers_its_deadline_placements():
    from importlib.metadata import entry_points

    from simengine.policy import ENTRY_POINT_GROUP

    assert "best-fit-deadline" in {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)}
    for name in ("best-fit-deadline", "python-worst-fit"):
        assert "compiled" not in GRID_PLACEMENT.get(name).capabilities
    assert GRID_PLACEMENT.get("best-fit-deadline").params.model_json_schema()["properties"]["headroom"]["minimum"] == 0
    from simengine.policy import DeadlineJob as exported

    assert exported is DeadlineJob


def test_a_scenario_runs_every_placement_on_the_deadline_path_from_the_python_api():
    data = ballier({"name": "best-fit-deadline", "params": {"headroom": 16}}, replications=1,
                   stop={"horizon": 40000}, warmup={"time": 2000})
    del data["grid"]["deadline_policy"]["params"]["wait_x"]  # pure RPP: early tries (Wait-10 tries at D - 3 s)
    kept = simengine.run(copy.deepcopy(data))
    assert kept.scenario["grid"]["placement"] == {"name": "best-fit-deadline", "params": {"headroom": 16}}
    data["grid"]["placement"]["params"]["headroom"] = 0
    packed = simengine.run(data)
    # the headroom delays claims: fewer processor-seconds claimed and idle
    assert kept.metrics["processor_wasted_time"].mean < packed.metrics["processor_wasted_time"].mean
    for name in GRID_PLACEMENT.names():
        scenario = simengine.load_scenario(ballier({"name": name}))
        assert scenario.grid.placement.name == name


def test_bad_parameters_of_a_deadline_placement_name_the_field():
    from simengine.errors import ScenarioError

    with pytest.raises(ScenarioError) as e:
        simengine.load_scenario(ballier({"name": "best-fit-deadline", "params": {"headroom": -1}}))
    assert "grid.placement.params.headroom" in str(e.value)


def test_the_cli_runs_the_ballier_example_with_an_installed_placement(tmp_path):
    path = tmp_path / "ballier-best-fit-deadline.yaml"
    path.write_text(yaml.safe_dump(ballier({"name": "best-fit-deadline", "params": {"headroom": 8}}, replications=1,
                                           stop={"horizon": 20000}, warmup={"time": 1000})))
    out = subprocess.run([sys.executable, "-m", "simengine", "run", str(path), "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "out" / "jobs.csv").exists()
    listing = subprocess.run([sys.executable, "-m", "simengine", "schedulers"], capture_output=True, text=True,
                             cwd=ROOT)
    assert "best-fit-deadline" in listing.stdout


def test_the_builder_and_the_api_schema_offer_every_placement():
    from gridweb.scenarios.catalog import engine_catalog, spec_schema

    names = set(GRID_PLACEMENT.names())
    assert {"worst-fit", "python-worst-fit", "best-fit-deadline"} <= names
    grid = spec_schema()["properties"]["grid"]["properties"]
    assert set(grid["placement"]["properties"]["name"]["enum"]) == names
    catalog = engine_catalog()
    field = next(f for f in catalog["grid_policies"] if f["field"] == "placement")
    assert {p["name"] for p in catalog["registries"][field["registry"]]["policies"]} == names
