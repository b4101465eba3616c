"""The co-allocation grid layer with start deadlines (Ballier et al., MODELS.md §3).

Small schedules worked out by hand (placement tries PT_m, claims, Worst-Fit ties, GP kills,
LP failures, Wait-X), invariants on random workloads (hypothesis), a theory check (no global
jobs: every cluster is a plain FCFS queue), and the scenario's errors for bad input.
"""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simengine
from simengine.errors import ScenarioError
from simengine.gantt import KIND_NAMES
from simengine.grid import kernel as K
from simengine.grid.model import GlobalJobs, GridPolicy, LocalJobs, simulate
from simengine.scenario import load_scenario


def local(*jobs):
    """Local jobs from (submit, runtime, size, cluster) tuples."""
    s, r, z, c = zip(*jobs) if jobs else ((), (), (), ())
    return LocalJobs(np.array(s, float), np.array(r, float), np.array(z), np.array(c))


def glob(*jobs):
    """Global jobs from (submit, runtime, size, components, deadline) tuples."""
    s, r, z, n, d = zip(*jobs)
    return GlobalJobs(np.array(s, float), np.array(r, float), np.array(z), np.array(n), np.array(d, float))


# ---- placement tries and claims --------------------------------------------------------------------

def test_tries_at_pt_m_and_the_claim_at_the_first_that_fits():
    # 4 processors busy until 80 with a local job; a global job (1 x 2 processors) submitted at
    # S = 0 with deadline D = 100, L_p = 0.5: PT_0 = 0 + 0.5 * 100 = 50 (busy),
    # PT_1 = 50 + 0.5 * 50 = 75 (busy), PT_2 = 75 + 0.5 * 25 = 87.5: idle since 80 -> claimed.
    o = simulate([4], local((0, 80, 4, 0)), glob((0, 10, 2, 1, 100)), GridPolicy(lp=0.5))
    assert o.global_tries[0] == 3
    assert o.global_hold[0] == 87.5
    assert o.global_decided[0] == 100.0  # started together at D
    assert o.global_state[0] == K.G_DONE
    assert o.components_of(0) == [0]


def test_lp_one_tries_only_at_the_deadline():
    # L_p = 1: PT_0 = S + (D - S) = D, the only attempt; no claim before D
    o = simulate([4], local(), glob((0, 10, 2, 1, 100)), GridPolicy(lp=1.0))
    assert o.global_tries[0] == 1 and o.global_hold[0] == 100.0 and o.global_decided[0] == 100.0


def test_claimed_processors_idle_until_d_count_as_wasted_time():
    # claimed at PT_0 = 0 + 0.25 * 40 = 10, held idle until D = 40: 2 processors x 30 s wasted;
    # then busy 2 x 5 s with the global job (the horizon, 100 s, is the measurement window)
    o = simulate([4], local(), glob((0, 5, 2, 1, 40)), GridPolicy(lp=0.25), horizon=100.0)
    assert o.global_hold[0] == 10.0
    local_busy, claimed, global_busy = o.busy[0]
    assert (local_busy, claimed, global_busy) == (0.0, 60.0, 10.0)


def test_after_mp_tries_one_final_attempt_at_exactly_d():
    # M_p = 2: tries at 50 and 75 (both busy), then the attempt at D = 100: the local job
    # (started at 0, runs 1000) is killed there under GP and the global job starts at 100
    o = simulate([4], local((0, 1000, 4, 0)), glob((0, 10, 2, 1, 100)), GridPolicy(lp=0.5, mp=2))
    assert o.global_tries[0] == 3  # 2 tries + the final attempt
    assert o.global_decided[0] == 100.0 and o.global_hold[0] == 100.0
    assert o.local_state[0] == K.L_KILLED and o.local_end[0] == 100.0
    assert o.kills["time"].tolist() == [100.0] and o.kills["start"].tolist() == [0.0]


def test_without_the_final_attempt_the_job_fails_at_its_last_try():
    o = simulate([4], local((0, 1000, 4, 0)), glob((0, 10, 2, 1, 100)),
                 GridPolicy(lp=0.5, mp=2, final_attempt=False))
    assert o.global_state[0] == K.G_FAILED and o.global_decided[0] == 75.0
    assert o.local_state[0] == K.L_DONE and o.local_end[0] == 1000.0  # never killed


def test_lp_fails_at_the_deadline_instead_of_killing():
    o = simulate([4], local((0, 1000, 4, 0)), glob((0, 10, 2, 1, 100)),
                 GridPolicy(lp=0.5, mp=2, priority="LP"))
    assert o.global_state[0] == K.G_FAILED and o.global_decided[0] == 100.0
    assert o.local_state[0] == K.L_DONE and o.local_end[0] == 1000.0 and len(o.kills["job"]) == 0



def test_lp_with_later_tries_succeeds_where_a_single_failed_try_would_fail_the_job():
    # (docs/reproductions.md, Ballier fig 4 under LP.) The local job holds all 4 processors until 60.
    # The earlier LP reading (M_p = 10 + the deadline attempt, lp_failure: after_tries): PT_0 = 0 + 0.5 * 100 = 50 is busy, PT_1 = 75 is idle:
    # claimed at 75, started at D = 100. The default LP (M_p = 1, no final attempt) fails
    # the job at PT_0 = 50 although the cluster is idle from 60 on.
    jobs, g = local((0, 60, 4, 0)), glob((0, 10, 2, 1, 100))
    o = simulate([4], jobs, g, GridPolicy(lp=0.5, priority="LP"))
    assert o.global_state[0] == K.G_DONE and o.global_hold[0] == 75.0 and o.global_tries[0] == 2
    o = simulate([4], jobs, g, GridPolicy(lp=0.5, priority="LP", mp=1, final_attempt=False))
    assert o.global_state[0] == K.G_FAILED and o.global_decided[0] == 50.0 and o.global_tries[0] == 1

# ---- Wait-X ----------------------------------------------------------------------------------------

def _wait_case(wait_x, priority="GP"):
    # the local job on all 4 processors ends at 50; another arrives at 92 and takes them all
    jobs = local((0, 50, 4, 0), (92, 500, 4, 0))
    return simulate([4], jobs, glob((0, 10, 2, 1, 100)), GridPolicy(lp=0.5, wait_x=wait_x, priority=priority))


def test_pure_rpp_claims_early():
    # Wait-inf: PT_0 = 50; the local job ends at 50 (ends come before attempts): claimed at 50.
    # The later local job (4 processors, arriving at 92) must then wait for the global job
    # (claimed 2 of 4) to end at 110.
    o = _wait_case(None)
    assert o.global_hold[0] == 50.0 and o.global_tries[0] == 1
    assert o.local_start[1] == 110.0


def test_wait_x_ignores_the_job_until_d_minus_x():
    # Wait-10: S' = max(0, 100 - 10) = 90, PT_0 = 90 + 0.5 * 10 = 95; the cluster is free from 50
    # to 92 but the job is ignored then; at 95, 97.5, ... it is full (the local job started at 92),
    # so at D the local job is killed (GP) and the global job starts at 100.
    o = _wait_case(10.0)
    assert o.global_hold[0] == 100.0 and o.global_decided[0] == 100.0
    assert o.global_tries[0] == 11  # M_p = 10 tries in (95, 100) + the deadline attempt
    assert o.local_state[1] == K.L_KILLED and o.local_end[1] == 100.0 and o.local_start[1] == 92.0
    # under LP the same job fails at its deadline and the local job runs on
    o = _wait_case(10.0, "LP")
    assert o.global_state[0] == K.G_FAILED and o.local_state[1] == K.L_DONE


def test_wait_zero_tries_only_at_the_deadline():
    o = simulate([4], local(), glob((0, 10, 2, 1, 100)), GridPolicy(lp=0.5, wait_x=0.0))
    assert o.global_tries[0] == 1 and o.global_hold[0] == 100.0


# ---- Worst-Fit -------------------------------------------------------------------------------------

def test_worst_fit_ties_go_to_the_lowest_index_and_counts_update_after_each_component():
    # 3 components of 4 on two idle clusters of 8: [8, 8] -> c0 (tie) -> [4, 8] -> c1 -> [4, 4] -> c0
    o = simulate([8, 8], local(), glob((0, 10, 4, 3, 0)))
    assert o.components_of(0) == [0, 1, 0]


def test_worst_fit_prefers_the_cluster_with_most_idle_processors():
    # idle [8 - 5, 8 - 1, 8] = [3, 7, 8]: 2 components of 3 -> c2 (8 -> 5) -> c1 (7 > 5)
    o = simulate([8, 8, 8], local((0, 100, 5, 0), (0, 100, 1, 1)), glob((1, 10, 3, 2, 1)))
    assert o.components_of(0) == [2, 1]


def test_placement_is_all_or_nothing():
    # 3 components of 6 on [8, 8]: c0, c1, then no cluster has 6 idle: nothing is claimed, so a
    # local job of 8 submitted right after the failed try (PT_0 = 5) starts at once
    o = simulate([8, 8], local((6, 10, 8, 0)), glob((0, 10, 6, 3, 10)), GridPolicy(lp=0.5, priority="LP"))
    assert o.global_state[0] == K.G_FAILED
    assert o.local_start[0] == 6.0


# ---- GP kills --------------------------------------------------------------------------------------

def _three_locals(kill_order="latest_started_first"):
    # 8 processors: A (2) from 0, B (3) from 10, C (3) from 20; a global component of 4 at D = 50
    jobs = local((0, 1000, 2, 0), (10, 1000, 3, 0), (20, 1000, 3, 0))
    return simulate([8], jobs, glob((0, 10, 4, 1, 50)), GridPolicy(wait_x=0.0, kill_order=kill_order))


def test_gp_kills_the_most_recently_started_first_and_only_as_many_as_needed():
    # no processor idle at 50; need 4: C (3, started 20) is not enough, then B (3, started 10)
    o = _three_locals()
    assert o.local_state.tolist() == [K.L_DONE, K.L_KILLED, K.L_KILLED]
    assert sorted(zip(o.kills["job"].tolist(), o.kills["start"].tolist())) == [(1, 10.0), (2, 20.0)]
    assert o.global_decided[0] == 50.0 and o.global_kills[0] == 2


def test_gp_kill_order_earliest_first_is_an_option():
    o = _three_locals("earliest_started_first")  # A (2) then B (3): 5 >= 4
    assert o.local_state.tolist() == [K.L_KILLED, K.L_KILLED, K.L_DONE]


def test_gp_sends_a_component_to_the_cluster_with_most_idle_plus_local_processors():
    # G1 (4 processors, D = 0) takes c0 (tie). Local L (6) starts on c1 at 1. At D = 10, G2
    # (1 x 6): idle [4, 2] -> does not fit idle anywhere; idle + local-occupied [4, 8] -> c1,
    # where 6 - 2 = 4 are missing: L is killed.
    jobs = local((1, 1000, 6, 1))
    o = simulate([8, 8], jobs, glob((0, 1000, 4, 1, 0), (0, 10, 6, 1, 10)), GridPolicy(wait_x=0.0))
    assert o.components_of(0) == [0] and o.components_of(1) == [1]
    assert o.local_state[0] == K.L_KILLED and o.local_end[0] == 10.0
    # no cluster can make room when global jobs hold it: the job fails and nothing is killed
    o = simulate([8], local((1, 1000, 2, 0)), glob((0, 1000, 4, 1, 0), (0, 10, 6, 1, 10)), GridPolicy(wait_x=0.0))
    assert o.global_state[1] == K.G_FAILED and o.local_state[0] == K.L_DONE and len(o.kills["job"]) == 0


def test_killed_jobs_can_be_requeued_at_the_head_of_their_queue():
    # C (3, from 20) and B (3, from 10) are killed at 50 and requeued ahead of E (4, queued since
    # 30). A (2) and the global job (4) leave 2 free until the global job ends at 60: then B and
    # C restart (full runtime 1000, both end at 1060); E waits for them (A's end at 1000 frees 2)
    jobs = local((0, 1000, 2, 0), (10, 1000, 3, 0), (20, 1000, 3, 0), (30, 5, 4, 0))
    o = simulate([8], jobs, glob((0, 10, 4, 1, 50)), GridPolicy(wait_x=0.0, killed_jobs="requeue"))
    assert o.local_kills.tolist() == [0, 1, 1, 0]
    assert o.local_start.tolist() == [0.0, 60.0, 60.0, 1060.0]
    assert o.local_end.tolist() == [1000.0, 1060.0, 1060.0, 1065.0]
    assert (o.local_state == K.L_DONE).all()


# ---- claims versus local queues -----------------------------------------------------------------------

def test_claims_take_idle_processors_even_when_local_jobs_are_queued():
    # A (6 of 8) runs 0-100; B (4) queues at 5; the global try at PT_0 = 10 claims the 2 idle ones
    jobs = local((0, 100, 6, 0), (5, 10, 4, 0))
    o = simulate([8], jobs, glob((0, 200, 2, 1, 20)), GridPolicy(lp=0.5))
    assert o.global_hold[0] == 10.0
    assert o.local_start[1] == 100.0  # B starts when A ends (the global job keeps its 2 until 220)
    # ... unless the option says a cluster with queued local jobs offers nothing to the grid
    o = simulate([8], jobs, glob((0, 200, 2, 1, 20)), GridPolicy(lp=0.5, claims_bypass_local_queue=False))
    assert o.global_hold[0] == 20.0  # every try failed; the deadline attempt takes the idle 2
    assert o.local_state[0] == K.L_DONE  # ... without killing A


def test_local_jobs_never_use_claimed_processors():
    # 2 of 4 claimed at PT_0 = 0.1 * 100 = 10 (start at D = 100, run 50: held until 150); a local
    # job of 3 arriving at 20 sees 2 free processors: it waits until the global job ends at 150
    o = simulate([4], local((20, 10, 3, 0)), glob((0, 50, 2, 1, 100)), GridPolicy(lp=0.1))
    assert o.global_hold[0] == 10.0
    assert o.local_start[0] == 150.0


# ---- theory: no global jobs -> FCFS per cluster ----------------------------------------------------------

def plain_fcfs(submit, runtime, size, processors):
    """Strict FCFS on one cluster, written out plainly: job k starts at the first instant at or
    after its submission and after job k-1's start when enough processors are free."""
    running: list[tuple[float, int]] = []  # (end, size)
    starts = []
    t_prev = 0.0
    for s, r, z in zip(submit, runtime, size):
        t = max(s, t_prev)
        while True:
            running = [(e, k) for e, k in running if e > t]
            if processors - sum(k for _, k in running) >= z:
                break
            t = min(e for e, _ in running)
        starts.append(t)
        running.append((t + r, z))
        t_prev = t
    return starts


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 3), st.integers(1, 120))
def test_without_global_jobs_each_cluster_is_a_plain_fcfs_queue(seed, C, n):
    rng = np.random.default_rng(seed)
    procs = rng.integers(1, 9, C)
    cluster = rng.integers(0, C, n)
    submit = np.sort(np.round(rng.exponential(3.0, n).cumsum(), 1))  # rounding makes ties
    runtime = np.round(rng.exponential(10.0, n), 1)
    size = np.array([rng.integers(1, procs[c] + 1) for c in cluster])
    o = simulate(procs, LocalJobs(submit, runtime, size, cluster))
    for c in range(C):
        mine = cluster == c
        assert o.local_start[mine].tolist() == plain_fcfs(submit[mine], runtime[mine], size[mine], procs[c])


# ---- invariants on random workloads ---------------------------------------------------------------------

def _holdings(procs, L, G, o):
    """(cluster, t0, t1, size, is_global, local flag) of every interval processors were held."""
    out = []
    for j in range(len(L)):
        if o.local_state[j] in (K.L_RUNNING, K.L_DONE):
            out.append((L.cluster[j], o.local_start[j], o.local_end[j], L.size[j], False))
    for j, t0, t1 in zip(o.kills["job"], o.kills["start"], o.kills["time"]):
        out.append((L.cluster[j], t0, t1, L.size[j], False))
    for g in range(len(G)):
        if o.global_state[g] in (K.G_CLAIMED, K.G_RUNNING, K.G_DONE):
            for c in o.components_of(g):
                out.append((c, o.global_hold[g], G.deadline[g] + G.runtime[g], G.size[g], True))
    return out


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 4), st.sampled_from([None, 0.0, 10.0, 100.0]),
       st.sampled_from(["GP", "LP"]), st.sampled_from(["drop", "requeue"]), st.floats(0.05, 1.0))
def test_invariants_on_random_workloads(seed, C, wait_x, priority, killed, lp):
    rng = np.random.default_rng(seed)
    procs = rng.integers(2, 17, C)
    n, m = int(rng.integers(0, 80)), int(rng.integers(1, 25))
    cl = rng.integers(0, C, n)
    L = LocalJobs(np.sort(rng.uniform(0, 500, n)), rng.exponential(30, n),
                  np.array([rng.integers(1, procs[c] + 1) for c in cl], dtype=np.int64), cl)
    gs = np.sort(rng.uniform(0, 500, m))
    G = GlobalJobs(gs, rng.exponential(40, m), rng.integers(1, procs.min() + 1, m), rng.integers(1, C + 2, m),
                   gs + rng.uniform(0, 150, m))
    pol = GridPolicy(lp=lp, wait_x=wait_x, priority=priority, killed_jobs=killed)
    o = simulate(procs, L, G, pol)
    held = _holdings(procs, L, G, o)
    # never more processors held (local busy + claimed + global busy) than a cluster has; since
    # local jobs only start on processors that are neither claimed nor busy, this is also
    # "claimed processors are never used by local jobs"
    for c in range(C):
        mine = [(t0, t1, z) for k, t0, t1, z, _ in held if k == c]
        for t in {t0 for t0, _, _ in mine}:
            assert sum(z for t0, t1, z in mine if t0 <= t < t1) <= procs[c]
    for g in range(m):
        D = G.deadline[g]
        if o.global_state[g] in (K.G_RUNNING, K.G_DONE):
            assert o.global_decided[g] == D  # all components start together at D
            hold = o.global_hold[g]
            assert hold <= D and hold >= max(G.submit[g], D - (math.inf if wait_x is None else wait_x))
            assert len(o.components_of(g)) == G.components[g]
        if o.global_state[g] == K.G_FAILED and priority == "GP":
            assert o.global_decided[g] == D  # GP gives up only at the deadline
        if priority == "LP":
            assert o.global_kills[g] == 0
    if priority == "LP":
        assert len(o.kills["job"]) == 0
    # strict FCFS: per cluster, local jobs (never killed) start in submit order
    for c in range(C):
        js = [j for j in range(n) if cl[j] == c and o.local_kills[j] == 0 and not np.isnan(o.local_start[j])]
        starts = [o.local_start[j] for j in js]
        assert starts == sorted(starts)


# ---- the scenario path -------------------------------------------------------------------------------------

def scenario(**grid_params) -> dict:
    locals_ = [{"kind": "synthetic", "name": f"local-{c}", "target": c, "arrival": {"target_load": 0.3},
                "size": {"kind": "rsd", "low": 1, "high": 32, "q": 0.9}, "runtime": {"kind": "exponential", "mean": 100}}
               for c in ("c1", "c2", "c3", "c4")]
    return {
        "name": "ballier test", "platform": {"preset": "multicluster-4x32"},
        "workload": {"streams": locals_ + [{
            "kind": "coallocated", "name": "global", "arrival": {"target_load": 0.2},
            "size": {"kind": "rsd", "low": 4, "high": 32, "q": 0.9}, "runtime": {"kind": "exponential", "mean": 200},
            "deadline": {"min": 1, "max": 3599}}]},
        "grid": {"deadline_policy": {"name": "rpp", "params": grid_params}},
        "run": {"seed": 3, "replications": 2, "stop": {"horizon": 60000}, "warmup": {"time": 5000}},
    }


def problems(data) -> dict[str, str]:
    with pytest.raises(ScenarioError) as info:
        load_scenario(data)
    return {e.path: e.message for e in info.value.errors}


def test_defaults_are_the_models_decisions():
    s = load_scenario(scenario())
    g = s.grid
    assert g.placement.name == "worst-fit" and g.placement.params == {"tie_break": "lowest_index"}
    p = g.deadline_policy.params
    assert (p["mp"], p["final_attempt"], p["priority"], p["kill_order"], p["killed_jobs"]) == \
        (10, True, "GP", "latest_started_first", "drop")
    assert p["claims_bypass_local_queue"] is True and p["local_jobs_use_claimed"] is False
    assert p["wait_x"] is None  # Wait-infinity = pure RPP
    comp = s.workload.streams[4].components
    assert (comp.kind, comp.low, comp.high, comp.integer) == ("uniform", 2, 4, True)  # U{2..C}
    # lambda_g = U_g * N * C / (E[N_c] E[S_g] E[runtime]) = 0.2 * 128 / (3 * 10.44 * 200) = 0.004087
    assert s.workload.streams[4].arrival_rate(s.platform) == pytest.approx(0.2 * 128 / (3 * 10.4412 * 200), rel=1e-3)


def test_bad_inputs_name_their_field():
    d = scenario()
    d["workload"]["streams"][4]["size"] = {"kind": "uniform", "low": 4, "high": 48, "integer": True}
    assert "larger than every cluster" in problems(d)["workload.streams.4.size"]
    d = scenario()
    d["workload"]["streams"][4]["deadline"] = {"min": -5, "max": 100}
    assert "in the past" in problems(d)["workload.streams.4.deadline.min"]
    d["workload"]["streams"][4]["deadline"] = {"min": 50, "max": 10}
    assert "D_min" in problems(d)["workload.streams.4.deadline.max"]
    for lp in (0, -0.5, 1.01):
        assert "grid.deadline_policy.params.lp" in problems(scenario(lp=lp))
    assert "grid.deadline_policy.params.priority" in problems(scenario(priority="both"))
    d = scenario()
    d["grid"]["placement"] = {"name": "no-such-placement"}
    assert "worst-fit" in problems(d)["grid.placement.name"]  # (the known ones are listed)
    d = scenario()
    d["platform"] = {"clusters": [{"name": c, "processors": 32, "scheduler": {"name": "easy"}}
                                  for c in ("c1", "c2", "c3", "c4")]}
    assert "FCFS" in problems(d)["platform.clusters.0.scheduler.name"]


def test_run_returns_a_normal_result_with_components_sharing_their_job_id():
    r = simengine.run(scenario(wait_x=10))
    jobs, seg = r.jobs, r.segments
    statuses = set(np.unique(jobs["status"]).tolist())
    assert {0, 1, 2} <= statuses  # completed, killed (GP), failed
    g = (jobs["stream"] == 4) & (jobs["replication"] == 0)
    started = g & ~np.isnan(jobs["start"])
    assert (jobs["start"][started] == jobs["deadline"][started]).all()
    # every component of a started job: same job id, same start, its own cluster row
    ids, counts = np.unique(jobs["job_id"][started], return_counts=True)
    assert counts.max() >= 2 and counts.min() >= 2  # 2..4 components each
    kinds = {KIND_NAMES[k] for k in np.unique(seg["kind"])}
    assert kinds == {"run", "claimed", "killed"}
    claimed = seg["kind"] == 1
    rows = seg["job"][claimed]
    assert (seg["t1"][claimed] == jobs["deadline"][rows]).all()  # claimed until D
    m = r.metrics
    for k in ("global_success_rate", "local_kill_rate", "total_load", "global_load", "processor_wasted_time",
              "local_response"):
        assert k in m and m[k].ci_low is not None
    assert m["total_load"].mean == pytest.approx(
        m["local_load"].mean + m["processor_wasted_time"].mean + m["global_load"].mean)
    assert m["total_load"].mean <= 1.0


def test_a_run_is_reproducible_and_policies_see_the_same_jobs():
    a, b = simengine.run(scenario(wait_x=10)), simengine.run(scenario(wait_x=10))
    for k in a.jobs:
        np.testing.assert_array_equal(a.jobs[k], b.jobs[k])
    c = simengine.run(scenario(wait_x=None))
    np.testing.assert_array_equal(a.jobs["submit"], c.jobs["submit"])  # common random numbers
    assert not np.array_equal(a.jobs["status"], c.jobs["status"])


def test_example_scenario_validates():
    s = load_scenario("examples/ballier-4x32.yaml")
    assert s.grid.deadline_policy.params["wait_x"] == 10 and len(s.workload.streams) == 5
    assert copy.deepcopy(s.model_dump(mode="json"))["grid"]["placement"]["name"] == "worst-fit"


def test_lp_fails_a_job_at_its_first_unsuccessful_try_by_default():
    """MODELS.md §3 (revised): under LP a placement try that fails fails the job -- no further
    tries, no attempt at D; the earlier reading (M_p tries, then the attempt at D) is
    ``lp_failure: after_tries``. GP keeps its tries and its killing attempt at D."""
    lp = GridPolicy.from_params(deadline_params={"priority": "LP"})
    assert (lp.mp, lp.final_attempt) == (1, False)
    earlier = GridPolicy.from_params(deadline_params={"priority": "LP", "lp_failure": "after_tries"})
    assert (earlier.mp, earlier.final_attempt) == (10, True)
    gp = GridPolicy.from_params(deadline_params={"priority": "GP"})
    assert (gp.mp, gp.final_attempt) == (10, True)
    none = GridPolicy.from_params(deadline_params={"priority": "LP", "mp": 0})  # no tries: D is the one attempt
    assert (none.mp, none.final_attempt) == (0, True)
    # the case below: the local job holds the cluster until 60, PT_0 = 50 fails, PT_1 = 75 would succeed
    jobs, g = local((0, 60, 4, 0)), glob((0, 10, 2, 1, 100))
    lp.lp = earlier.lp = 0.5
    assert simulate([4], jobs, g, lp).global_state[0] == K.G_FAILED
    assert simulate([4], jobs, g, earlier).global_state[0] == K.G_DONE


def test_the_literal_gp_goes_to_the_cluster_with_most_idle_processors_and_may_fail():
    """MODELS.md §3: GP's default sends a component that fits nowhere idle to the cluster with most
    idle + local-occupied processors; the paper's literal reading (``gp_cluster: most_idle``) to the
    one with most idle processors, kills local jobs there and fails the job if that is not enough.
    Cluster 0: 1 idle, 3 under a local job; cluster 1: 2 idle, 2 under a running global job (not
    killable). A 1 x 4 job at its deadline (L_p = 1: the deadline is its only attempt)."""
    jobs = local((0, 1000, 3, 0))
    g = glob((0, 1000, 2, 1, 5), (10, 10, 4, 1, 50))  # the first runs on cluster 1 from 5 on
    default = simulate([4, 4], jobs, g, GridPolicy(lp=1.0))
    assert default.components_of(0) == [1]
    assert default.global_state[1] == K.G_DONE and default.components_of(1) == [0]
    assert default.local_state[0] == K.L_KILLED
    literal = simulate([4, 4], jobs, g, GridPolicy(lp=1.0, gp_cluster="most_idle"))
    assert literal.components_of(0) == [1]
    assert literal.global_state[1] == K.G_FAILED and literal.global_decided[1] == 50.0
    assert literal.local_state[0] == K.L_DONE  # nothing killed for a job that failed
    assert GridPolicy.from_params(deadline_params={"gp_cluster": "most_idle"}).gp_cluster == "most_idle"
