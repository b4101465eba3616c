"""KOALA (Mohamed's thesis, MODELS.md §4): placement policies, claiming, ICP, the band controller.

Every expected value below is worked out by hand from the thesis's rules and MODELS.md's
decisions (the comments show the arithmetic), not copied from the code's output.
"""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import simengine
from simengine.errors import ScenarioError
from simengine.grid.koala import Band, Files, KoalaJob, KoalaPolicy, simulate_koala, wrr_sequence
from simengine.grid.placement import place, placement_policy
from simengine.grid.koala_run import koala_files
from simengine.preemption import preemption_mode
from simengine.scenario import load_scenario
from tests.conftest import ROOT

# ---- placement policies ---------------------------------------------------------------------------


def test_worst_fit_places_components_in_decreasing_size_on_the_emptiest_cluster():
    # sizes 8, 4, 6 on idle [10, 20, 15]: 8 -> c1 (20 -> 12); 6 -> c2 (15 > 12; -> 9); 4 -> c1 (12 > 10, 9)
    job = KoalaJob(0.0, 10.0, [8, 4, 6])
    wf = placement_policy("worst-fit", {}, [10, 20, 15])
    got = place(job, np.array([10, 20, 15]), wf, None)
    assert [(s, c) for s, c, _, _ in got] == [(8, 1), (4, 1), (6, 2)]
    # atomic: a component of 21 fits nowhere, so nothing is placed
    assert place(KoalaJob(0.0, 10.0, [8, 21]), np.array([10, 20, 15]), wf, None) is None


def _files():
    # site 'zz' at cluster 0, 'aa' at cluster 2, 'mm' at cluster 1; 50 MB/s everywhere except 'zz' -> c1: 25,
    # and within a site at once (infinite intra-site bandwidth)
    bw = np.full((3, 3), 50.0)
    bw[0, 1] = 25.0
    bw[[0, 1, 2], [0, 2, 1]] = np.inf
    return Files([0, 2, 1], bw, ["zz", "aa", "mm"])


def test_close_to_files_uses_file_sites_alphabetically_then_the_history_table():
    files = _files()
    job = KoalaJob(0.0, 10.0, [8, 8, 8], file_size=1000.0, file_sites=[0, 1])  # file at 'zz' (c0) and 'aa' (c2)
    pol = placement_policy("close-to-files", {}, [10, 10, 10], files)
    assert pol.history == {(e, f) for e in range(3) for f in range(3)}  # all pairs at the start (the default)
    pol.history = H = {(1, 0)}  # only (cluster 1, site 'zz')
    got = place(job, np.array([10, 10, 10]), pol, files)
    # 1st: both file sites have room -> 'aa' (alphabetical) = c2, no transfer; 2nd: 'aa' has 2 left -> 'zz' = c0;
    # 3rd: no file site has room -> the pair (c1, 'zz') of H: 1000 MB / 25 MB/s = 40 s
    assert [(c, site, t) for _, c, site, t in got] == [(2, 1, 0.0), (0, 0, 0.0), (1, 0, 40.0)]
    assert H == {(1, 0), (1, 1)}  # (E, F') inserted for every file site F' of the job
    # an empty history table never grows: the third component cannot be placed
    empty = placement_policy("close-to-files", {"history": "empty"}, [10, 10, 10], files)
    assert place(job, np.array([10, 10, 10]), empty, files) is None and empty.history == set()


def test_cluster_minimization_fills_the_emptiest_cluster_first_worst_fit_spreads():
    job = KoalaJob(0.0, 10.0, [8, 8, 8])
    idle = np.array([10, 30, 20])
    cm = place(job, idle, placement_policy("cluster-minimization", {}, idle), None)
    assert [c for _, c, _, _ in cm] == [1, 1, 1]  # 30 -> 22 -> 14 -> 6: one cluster
    wf = place(job, idle, placement_policy("worst-fit", {}, idle), None)
    assert [c for _, c, _, _ in wf] == [1, 1, 2]  # 30 -> 22; 22 > 20 -> 14; 20 > 14


def test_flexible_cluster_minimization_splits_the_total_over_the_emptiest_clusters():
    idle = np.array([5, 30, 20])
    pol = placement_policy("flexible-cluster-minimization", {}, idle)
    got = place(KoalaJob(0.0, 1.0, [40], flexible=True), idle, pol, None)
    assert [(s, c) for s, c, _, _ in got] == [(30, 1), (10, 2)]
    got = place(KoalaJob(0.0, 1.0, [53], flexible=True), idle, pol, None)
    assert [(s, c) for s, c, _, _ in got] == [(30, 1), (20, 2), (3, 0)]
    assert place(KoalaJob(0.0, 1.0, [56], flexible=True), idle, pol, None) is None  # only 55 idle
    # no component smaller than 8 (FCM's min_component) unless it is the rest of the job: 30 + 20 leaves 4
    # of 54 -> c0 gives 4
    pol8 = placement_policy("flexible-cluster-minimization", {"min_component": 8}, idle)
    assert [s for s, _, _, _ in place(KoalaJob(0.0, 1.0, [54], flexible=True), idle, pol8, None)] == [30, 20, 4]
    assert place(KoalaJob(0.0, 1.0, [56], flexible=True), np.array([5, 30, 30]), pol8, None) is not None
    assert place(KoalaJob(0.0, 1.0, [66], flexible=True), np.array([5, 30, 30]), pol8, None) is None


def test_weighted_round_robin_sequence():
    assert wrr_sequence((1, 1, 1, 1, 1, 1)) == [0, 1, 2, 3]
    # N_h = 2: the higher queues twice (super-high n1 = 2 times, high once), then the lower ones once
    assert wrr_sequence((2, 1, 2, 1, 1, 1)) == [0, 0, 1, 0, 0, 1, 2, 3]


# ---- claiming ----------------------------------------------------------------------------------------

def _far_file(bw=10.0):
    # one file site at no cluster, bw MB/s to both clusters
    return Files([-1], np.full((1, 2), bw), ["store"])


def test_claim_at_jct0_then_hold_until_jst():
    # submit 5, first scan after it at 60 = JPT; FTT = 1000 MB / 10 MB/s = 100 s; JST = 160;
    # JCT_0 = 60 + 0.75 * 100 = 135: claimed (PWT 135..160), starts at 160, ends at 160 + 50
    job = KoalaJob(5.0, 50.0, [4], clusters=[1], file_size=1000.0, file_sites=[0])
    o = simulate_koala([4, 4], [job], KoalaPolicy(), _far_file())
    k = o.jobs[0]
    assert (k.jpt, k.ftt, k.jct, k.jst, k.start, k.end) == (60.0, 100.0, 135.0, 160.0, 160.0, 210.0)
    assert k.claim_tries == 1 and k.pgt == 75.0
    claimed = [h for h in o.holdings if h[5] == "claimed"]
    assert [(h[0], h[1], h[2], h[3]) for h in claimed] == [(1, 135.0, 160.0, 4)]
    assert o.busy[1, 2] == 4 * 25.0 and o.busy[1, 1] == 4 * 50.0


def test_failed_claims_retry_then_go_back_to_placement_with_smaller_l():
    # a local job takes the 4 placed (unclaimed) processors at t = 100 until 1100.
    # JCT_0 = 135 fails; JCT_1 = 135 + 0.75 (160 - 135) = 153.75 fails;
    # JCT_2 = 153.75 + 0.75 * 6.25 = 158.4375 fails; JCT_3 would be 159.609375: JST - JCT_3 < 1 s,
    # so at 158.4375 the job goes back to placement with L = 0.5. Scans at 180 .. 1080 fail (the
    # local job ends at 1100), 1140 places it: JCT_0 = 1140 + 0.5 * 100 = 1190, JST = 1240.
    job = KoalaJob(5.0, 50.0, [4], clusters=[1], file_size=1000.0, file_sites=[0])
    local = (np.array([100.0]), np.array([1000.0]), np.array([4]), np.array([1]))
    o = simulate_koala([4, 4], [job], KoalaPolicy(), _far_file(), local)
    k = o.jobs[0]
    assert k.L == 0.5
    assert k.claim_tries == 4  # 3 failed + the one that succeeded
    assert (k.jpt, k.jct, k.jst, k.start) == (1140.0, 1190.0, 1240.0, 1240.0)
    assert k.jst0 == 160.0 and k.jst - k.jst0 == 1080.0  # start delay
    assert k.place_tries == 1 + (1140 - 180) // 60 + 1  # 60, then 180, 240, ..., 1140
    assert k.placement_time == pytest.approx((60 - 5) + (1140 - 158.4375))
    assert o.local_start[0] == 100.0  # the local job did take the placed processors


def _icp_case(T, preemption="requeue", overhead=0.0):
    # B (high) fixed on c0 and c1, 4 + 4, FTT 100: placed at 60, JCT_0 135, JST 160.
    # A (low) fixed on c1, 4 processors, no file: placed at 120 (its queue's turn), claimed and
    # started at once (FTT 0), runs 1000 s. A local job at 130 takes B's placed processors on c1.
    B = KoalaJob(5.0, 100.0, [4, 4], clusters=[0, 1], priority=1, file_size=1000.0, file_sites=[0])
    A = KoalaJob(61.0, 1000.0, [4], clusters=[1], priority=2)
    local = (np.array([130.0]), np.array([10000.0]), np.array([4]), np.array([1]))
    mode = preemption_mode({"name": preemption, "params": {"overhead": overhead} if preemption == "requeue" else {}})
    return simulate_koala([8, 8], [B, A], KoalaPolicy(T=T, preemption=mode), _far_file(), local)


def test_icp_below_one_preempts_a_lower_priority_job():
    o = _icp_case(0.5)
    B, A = o.jobs
    # at 135: c0 can start, c1 cannot (F = 1/2 >= T); c1 is fixed, so ICP preempts A on c1 (4 of
    # lower priority + 0 idle >= 4): A is killed (120..135) and goes back to the low queue
    assert A.preempted == 1 and B.claim_tries == 1 and B.start == 160.0 and B.end == 260.0
    assert any(h[4] == ("K", 1, 0) and h[5] == "killed" and (h[1], h[2]) == (120.0, 135.0) for h in o.holdings)
    # A is re-placed at the first scan after B ends (260): 300; no transfer, so it starts there
    assert A.start == 300.0 and A.end == 1300.0


def test_icp_requeue_overhead_lengthens_the_restart():
    o = _icp_case(0.5, "requeue", overhead=60.0)
    B, A = o.jobs
    # as above, but A's restart at 300 takes its 1000 s plus the 60 s overhead of the requeue policy
    assert A.preempted == 1 and A.start == 300.0 and A.end == 1360.0 and A.state == "done"


def test_icp_kill_ends_the_victim_for_good():
    o = _icp_case(0.5, "kill")
    B, A = o.jobs
    # A is preempted at 135 exactly as with requeue, but never re-placed: its 120..135 run is lost
    assert A.preempted == 1 and A.state == "killed" and math.isnan(A.end)
    assert B.start == 160.0 and B.end == 260.0
    assert any(h[4] == ("K", 1, 0) and h[5] == "killed" and (h[1], h[2]) == (120.0, 135.0) for h in o.holdings)


def test_icp_without_preemption_waits_instead():
    o = _icp_case(0.5, "none")
    B, A = o.jobs
    # nobody is preempted: A keeps c1 until 1120, so B's c1 component cannot be claimed at 135
    assert A.preempted == 0 and A.start == 120.0 and A.end == 1120.0
    assert B.start > 160.0


def test_icp_all_or_nothing_does_not_preempt():
    o = _icp_case(1.0)
    B, A = o.jobs
    assert A.preempted == 0 and A.start == 120.0
    assert B.claim_tries > 1 and B.start > 160.0  # F = 1/2 < T = 1: the claim fails


# ---- background band and files --------------------------------------------------------------------

def test_band_controller_injects_up_to_low_and_kills_background_above_high():
    # 10 processors, band [3, 4]: at t = 0 it injects 2 + 2 (the second is cut to floor(4) - 2 = 2).
    # A local job of 3 arrives at 10: 7 > 4 at the tick at 60, so both background jobs are killed,
    # newest first (7 -> 5 -> 3); the local job is never killed; 3 >= low, so nothing is injected.
    band = Band(0.3, 0.4, 60.0, size=lambda: 2, runtime=lambda: 1000.0)
    local = (np.array([10.0]), np.array([5000.0]), np.array([3]), np.array([0]))
    o = simulate_koala([10], [KoalaJob(100.0, 10.0, [1])], KoalaPolicy(), None, local, band)
    bg = np.flatnonzero(o.local_background)
    assert len(bg) == 2 and list(o.local_size[bg]) == [2, 2]
    assert list(o.local_state[bg]) == [3, 3] and list(o.local_end[bg]) == [60.0, 60.0]
    assert o.local_state[0] != 3
    # the band injects again once the local job is gone: none here (the run ends with the KOALA job)
    assert o.jobs[0].start == 120.0


def test_transfer_times_come_from_the_bandwidth_matrix():
    d = _koala_scenario()
    d["platform"]["file_sites"] = [{"name": "s0", "cluster": "c0"}, {"name": "s1"}]
    d["platform"]["bandwidth"] = {"s0": {"c1": 20.0}, "s1": {"c0": 40.0, "c1": 80.0}}
    f = koala_files(load_scenario(d).platform)
    assert f.time(1000.0, 0, 0) == 0.0          # E = F
    assert f.time(1000.0, 0, 1) == 50.0         # 1000 / 20
    assert f.time(1000.0, 1, 0) == 25.0         # 1000 / 40
    assert f.time(1000.0, 1, 1) == 12.5         # 1000 / 80


# ---- invariants -------------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(["worst-fit", "close-to-files", "cluster-minimization"]),
       st.sampled_from([0.5, 1.0]))
def test_never_more_processors_held_than_a_cluster_has(seed, placement, T):
    rng = np.random.default_rng(seed)
    P = [int(x) for x in rng.integers(4, 17, 3)]
    jobs = []
    for i in range(int(rng.integers(1, 12))):
        nc = int(rng.integers(1, 4))
        jobs.append(KoalaJob(float(rng.uniform(0, 600)), float(rng.uniform(1, 300)),
                             [int(rng.integers(1, min(P) + 1)) for _ in range(nc)], priority=int(rng.integers(0, 4)),
                             file_size=float(rng.choice([0, 500, 2000])), file_sites=[int(rng.integers(0, 3))],
                             flexible=bool(rng.random() < 0.2) and nc == 1))
    files = Files([0, 1, -1], rng.uniform(5, 50, (3, 3)), ["a", "b", "c"])
    n = int(rng.integers(0, 15))
    cl = rng.integers(0, 3, n)
    local = (np.sort(rng.uniform(0, 900, n)), rng.uniform(1, 500, n),
             np.array([int(rng.integers(1, P[c] + 1)) for c in cl], np.int64), cl)
    band = Band(0.2, 0.5, 60.0, size=lambda: int(rng.integers(1, 5)), runtime=lambda: float(rng.uniform(10, 400)))
    o = simulate_koala(P, jobs, KoalaPolicy(placement=placement, T=T), files, local, band, horizon=50_000.0)
    for c in range(3):
        ev = sorted([(h[1], h[3]) for h in o.holdings if h[0] == c] + [(h[2], -h[3]) for h in o.holdings if h[0] == c],
                    key=lambda e: (e[0], e[1]))
        use = 0
        for _, d in ev:
            use += d
            assert use <= P[c]
    for k in o.jobs:
        assert k.state in ("done", "failed", "queued", "claiming", "claimed", "running")
        if k.state == "done":
            assert k.start >= k.job.submit and k.end == pytest.approx(k.start + k.job.runtime)
            assert k.start == pytest.approx(k.jpt + k.ftt) and k.jpt <= k.jct <= k.jst


# ---- scenario level ---------------------------------------------------------------------------------

def _koala_scenario(**params):
    return {
        "platform": {"clusters": [{"name": "c0", "processors": 16}, {"name": "c1", "processors": 8}],
                     "bandwidth": {"c0": {"c1": 50.0}}},
        "workload": {"streams": [{
            "kind": "koala", "name": "k", "count": 30, "arrival": {"target_load": 0.3},
            "components": {"kind": "choice", "values": [1, 2]}, "size": {"kind": "choice", "values": [2, 4]},
            "runtime": {"kind": "exponential", "mean": 100},
            "file": {"size": {"kind": "constant", "value": 1000}}, "background": {}}]},
        "grid": {"placement": {"name": "close-to-files"}, "deadline_policy": {"name": "koala", "params": params}},
        "run": {"seed": 2},
    }


def problems(data) -> dict[str, str]:
    with pytest.raises(ScenarioError) as info:
        load_scenario(data)
    return {e.path: e.message for e in info.value.errors}


def test_defaults_are_the_models_decisions():
    s = load_scenario(_koala_scenario())
    p = s.grid.deadline_policy.params
    assert (p["L"], p["l_step"], p["l_floor"], p["min_gap"], p["threshold"], p["scan_interval"]) == \
        (0.75, 0.25, 0.0, 1.0, 1.0, 60.0)
    assert p["promote_after"] is None and p["max_place_tries"] is None
    # the ICP's victims go back to their placement queue: the preemption registry's requeue, no overhead
    assert p["preemption"] == {"name": "requeue", "params": {"overhead": 0.0}}
    b = s.workload.streams[0].background
    assert (b.low, b.high) == (0.3, 0.4)


def test_bad_inputs_name_their_field():
    d = _koala_scenario()
    d["workload"]["streams"][0].update(request="fixed", clusters=["c0", "nowhere"])
    assert "nowhere" in problems(d)["workload.streams.0.clusters.1"]
    d = _koala_scenario()
    d["workload"]["streams"][0]["size"] = {"kind": "constant", "value": 20}
    assert "larger than every cluster" in problems(d)["workload.streams.0.size"]
    for L in (-0.1, 1.5):
        assert "grid.deadline_policy.params.L" in problems(_koala_scenario(L=L))
    for T in (-0.1, 1.5):
        assert "grid.deadline_policy.params.threshold" in problems(_koala_scenario(threshold=T))
    # T = 0 claims whatever can be claimed at each try (thesis §5.2)
    assert load_scenario(_koala_scenario(threshold=0)).grid.deadline_policy.params["threshold"] == 0
    assert "N_l" in problems(_koala_scenario(weights={"N_h": 1, "N_l": 2}))["grid.deadline_policy.params.weights.N_h"]
    bad = problems(_koala_scenario(preemption={"name": "suspend"}))
    assert "'none', 'kill' or 'requeue'" in bad["grid.deadline_policy.params.preemption.name"]
    assert "grid.deadline_policy.params.preemption.params.overhead" in problems(
        _koala_scenario(preemption={"name": "requeue", "params": {"overhead": -1}}))
    # scenarios written before the registry: true / false still mean requeue / none
    for old, new in ((True, "requeue"), (False, "none")):
        assert load_scenario(_koala_scenario(preemption=old)).grid.deadline_policy.params["preemption"]["name"] == new
    d = _koala_scenario()
    d["workload"]["streams"][0].update(request="fixed", clusters=["c0", None])
    assert "every component" in problems(d)["workload.streams.0.clusters.1"]
    d = _koala_scenario()
    d["platform"]["clusters"].append({"name": "c2", "processors": 8})
    assert "no bandwidth" in problems(d)["platform.bandwidth"]


def test_run_returns_a_result_with_components_sharing_their_job_id():
    r = simengine.run(load_scenario(_koala_scenario()))
    jobs, seg = r.jobs, r.segments
    k = jobs["stream"] == 0
    assert (jobs["status"][k] == 0).all()  # all 30 KOALA jobs completed
    assert len(np.unique(jobs["job_id"][k])) == 30 and k.sum() > 30
    kinds = set(np.unique(seg["kind"]).tolist())
    assert {0, 1, 6} <= kinds  # run, claimed, transfer
    for key in ("koala_load", "background_load", "pwt_utilisation", "pgt_utilisation", "mean_claiming_tries",
                "mean_placement_time", "mean_ftt", "mean_twt", "mean_job_spread", "coallocated_fraction",
                "mean_start_delay", "mean_placement_tries"):
        assert not math.isnan(r.metrics[key].mean), key
    m = r.metrics
    assert m["total_load"].mean == pytest.approx(m["koala_load"].mean + m["background_load"].mean
                                                 + m["pwt_utilisation"].mean)


def test_icp_re_places_a_component_elsewhere_when_its_file_arrives_in_time():
    # file at a far site (10 MB/s everywhere) and at a site located at c2; WF puts the two
    # components on c0 and c1 (ties: lowest index), FTT = 1000 / 10 = 100: JPT 60, JCT_0 135, JST 160.
    # A local job takes c0 at 100. At 135 (T = 0.5): c1 can start, F = 1/2; c0's component is
    # re-placed by WF on c2, where the file is: 135 + 0 < 160, so both are claimed at 135.
    bw = np.full((2, 3), 10.0)
    bw[1, 2] = np.inf  # 'near' to its own cluster: at once
    files = Files([-1, 2], bw, ["far", "near"])
    job = KoalaJob(5.0, 50.0, [4, 4], file_size=1000.0, file_sites=[0, 1])
    local = (np.array([100.0]), np.array([10000.0]), np.array([4]), np.array([0]))
    k = simulate_koala([4, 4, 4], [job], KoalaPolicy(T=0.5), files, local).jobs[0]
    assert [c[1] for c in k.comps] == [2, 1] and k.claim_tries == 1 and k.start == 160.0
    # all or nothing: tries at 135, 153.75, 158.4375 fail, back to placement; the scan at 180 finds
    # c1 and c2 free (WF: c1 first), FTT = max(100, 0): JPT 180, L = 0.5, JCT 230, JST 280
    k = simulate_koala([4, 4, 4], [job], KoalaPolicy(T=1.0), files, local).jobs[0]
    assert (k.claim_tries, k.L, k.jpt, k.jct, k.start) == (4, 0.5, 180.0, 230.0, 280.0)
    assert sorted(c[1] for c in k.comps) == [1, 2]


def test_promotion_after_p_tries_and_failure_after_max_place_tries():
    # a local job holds the only 4 processors from 1 to 500; a low job (submitted at 5) is tried
    # at the scans 60, 120, ...; with P = 2 it moves to high after 2 tries and to super-high after 4;
    # the scan at 540 places it (no file: it starts at once)
    local = (np.array([1.0]), np.array([499.0]), np.array([4]), np.array([0]))
    job = KoalaJob(5.0, 10.0, [4], priority=2)
    k = simulate_koala([4], [job], KoalaPolicy(promote_after=2), None, local).jobs[0]
    assert (k.prio, k.place_tries, k.start) == (0, 9, 540.0)
    k = simulate_koala([4], [job], KoalaPolicy(), None, local).jobs[0]
    assert k.prio == 2 and k.start == 540.0  # P = infinity: never promoted
    k = simulate_koala([4], [job], KoalaPolicy(max_place_tries=3), None, local).jobs[0]
    assert k.state == "failed" and k.place_tries == 3


@pytest.mark.parametrize("request_type, extra", [
    ("semi-fixed", {"clusters": ["c1", None]}),
    ("fixed", {"clusters": ["c0", "c1"]}),
    ("flexible", {"size": {"kind": "uniform", "low": 4, "high": 20, "integer": True}, "components": None}),
])
def test_request_types_run_and_keep_their_clusters(request_type, extra):
    d = _koala_scenario()
    d["workload"]["streams"][0].update(request=request_type, **extra)
    d["grid"]["placement"] = {"name": "flexible-cluster-minimization" if request_type == "flexible" else "worst-fit"}
    r = simengine.run(load_scenario(d))
    j = r.jobs
    k = j["stream"] == 0
    assert (j["status"][k] == 0).all()
    if request_type != "flexible":
        first = k & (j["component"] == 0)
        want = 1 if request_type == "semi-fixed" else 0  # c1 is index 1, c0 index 0
        assert (j["cluster"][first] == want).all()
    else:
        for jid in np.unique(j["job_id"][k]):
            rows = k & (j["job_id"] == jid)
            assert 4 <= j["processors"][rows].sum() <= 20


def test_validated_scenario_loads_again_with_the_same_hash():
    from simengine.scenario import scenario_hash

    d = _koala_scenario()
    d["workload"]["streams"][0].pop("size")
    d["workload"]["streams"][0].pop("runtime")
    d["workload"]["streams"][0]["shapes"] = [{"components": 2, "size": 4, "runtime": 50.0}]
    s = load_scenario(d)
    assert scenario_hash(load_scenario(s.model_dump(mode="json"))) == scenario_hash(s)


def test_a_job_its_placement_can_never_place_fails_at_arrival_and_the_run_ends():
    # 16 processors on clusters of 8: no placement can ever work. Queued, it was retried at every scan
    # for ever (a KOALA W30 run with an empty history table grew past 6 GB before it was stopped).
    never, fits = KoalaJob(0.0, 10.0, [16]), KoalaJob(5.0, 10.0, [8])
    o = simulate_koala([8, 8], [never, fits], KoalaPolicy())
    assert [k.state for k in o.jobs] == ["failed", "done"] and o.unplaceable == [0]
    assert o.jobs[1].end == pytest.approx(o.jobs[1].start + 10.0) and o.t_end < 1000.0
    # Close-to-Files with an empty history table: a 2 x 8 job whose file site holds 8 processors can
    # only go where the file is, so it never fits; with every pair in the history table it does
    files = Files([0, 1], np.full((2, 2), 50.0), ["a", "b"])
    job = KoalaJob(0.0, 10.0, [8, 8], file_size=100.0, file_sites=[0])
    empty = simulate_koala([8, 8], [job], KoalaPolicy(placement="close-to-files",
                                                      placement_params={"history": "empty"}), files)
    assert empty.unplaceable == [0]
    full = simulate_koala([8, 8], [job], KoalaPolicy(placement="close-to-files"), files)
    assert full.unplaceable == [] and full.jobs[0].state == "done"


def test_the_koala_run_says_which_jobs_failed_at_arrival():
    data = yaml.safe_load((ROOT / "examples" / "koala-w30.yaml").read_text())
    data["grid"]["placement"] = {"name": "close-to-files", "params": {"history": "empty"}}
    result = simengine.run(data)
    failed = result.metrics["koala_jobs_failed"].mean
    assert failed > 0 and any(f"{failed:.0f} KOALA jobs failed at their arrival" in n for n in result.notes)


def test_a_transfer_within_a_site_takes_the_intra_site_bandwidth():
    """MODELS.md §4 (revised): a file at the cluster that runs the component is not there at once:
    it moves at the platform's intra-site bandwidth (150 MB/s in the DAS presets), or at the
    matrix's own value for that site (vu -> vu); without either it is there at once."""
    from simengine.grid.koala_run import koala_files
    from simengine.scenario import load_scenario

    def files(platform):
        spec = {"name": "f", "platform": platform, "workload": {"streams": [
            {"kind": "synthetic", "name": "s", "target": platform.get("clusters", [{"name": "vu"}])[0]["name"],
             "count": 1, "arrival": {"rate": 1.0}, "size": {"kind": "constant", "value": 1},
             "runtime": {"kind": "constant", "value": 1}}]}}
        return koala_files(load_scenario(spec).platform)

    das = files({"preset": "das2-w30", "bandwidth": {"vu": {"leiden": 100.0}}})
    assert das.time(3000.0, 0, 0) == pytest.approx(20.0)  # 3 GB within vu at 150 MB/s
    assert das.time(3000.0, 0, 1) == pytest.approx(30.0)  # vu -> leiden at 100 MB/s
    own = files({"preset": "das2-w30", "bandwidth": {"vu": {"vu": 300.0}}})
    assert own.time(3000.0, 0, 0) == pytest.approx(10.0) and own.time(3000.0, 1, 1) == pytest.approx(20.0)
    given = files({"preset": "das2-w30", "clusters": [{"name": "vu", "processors": 8}]})
    assert given.time(3000.0, 0, 0) == pytest.approx(20.0)  # the preset's default stays with own clusters
    free = files({"clusters": [{"name": "a", "processors": 8}]})
    assert free.time(3000.0, 0, 0) == 0.0



def test_bad_transfer_and_deadline_settings_name_their_field():
    from simengine.errors import ScenarioError
    from simengine.presets import SCENARIOS
    from simengine.scenario import load_scenario

    spec = copy.deepcopy(SCENARIOS["multicluster-4x32"])
    spec["platform"]["intra_site_bandwidth"] = 0
    spec["grid"]["deadline_policy"]["params"] = {"lp_failure": "sometimes", "gp_cluster": "anywhere"}
    with pytest.raises(ScenarioError) as err:
        load_scenario(spec)
    text = str(err.value)
    for field in ("platform.intra_site_bandwidth", "lp_failure", "gp_cluster"):
        assert field in text, (field, text)
