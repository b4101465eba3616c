"""KOALA's claiming policies (simengine.grid.claiming, docs/policies/claiming.md): the built-in
``icp`` and the worked package's ``python-icp`` (the ICP written with the public API only) claim
exactly the same processors at the same times; ``claim-late`` against hand-worked expectations;
bad answers and a policy's own exceptions; the ways in (scenario, CLI, builder catalog, API schema)."""
from __future__ import annotations

import copy
import subprocess
import sys

import numpy as np
import pytest
import yaml

from simengine.errors import ScenarioError
from simengine.grid.claiming import ClaimingPolicy, Requeue, Retry
from simengine.grid.koala import Band, Files, KoalaJob, KoalaPolicy, simulate_koala
from simengine.grid.koala_run import simulate_koala_replication
from simengine.policy import PolicyError
from simengine.preemption import preemption_mode
from simengine.registry import CLAIMING, Entry, NoParams
from simengine.scenario import load_scenario, scenario_hash
from tests.conftest import ROOT

pytest.importorskip("gridweb_example_policies.claiming")  # the worked package (make venv installs it)


def w30(claiming: str | None = None, **params) -> dict:
    data = yaml.safe_load((ROOT / "examples" / "koala-w30.yaml").read_text())
    data["grid"]["deadline_policy"]["params"].update(params)
    if claiming is not None:
        data["grid"]["claiming"] = {"name": claiming}
    return data


def two_priorities(data: dict) -> dict:
    """W30 plus a stream of low-priority jobs: high-priority claims preempt them."""
    high = data["workload"]["streams"][0]
    low = {**high, "name": "low", "priority": "low", "arrival": {"target_load": 0.4}}
    low.pop("background")
    data["workload"]["streams"].append(low)
    return data


def what_happened(o) -> tuple:
    """Every KOALA job's claims (cluster, file site, claim time per component), tries, JCT, start
    and end, and every hold of processors in the order it began."""
    jobs = [(k.state, k.claim_tries, k.place_tries, k.placements, k.preempted, k.L, k.jpt, k.jct, k.jst, k.start,
             k.end, [tuple(c[:5]) for c in k.comps]) for k in o.jobs]
    return jobs, o.starts, o.hold_end, o.holdings, o.busy.tolist(), o.t_end


def assert_same(a, b) -> None:
    # NaN == NaN here: repr compares the floats bit for bit and NaNs as equal
    for part, x, y in zip(("jobs", "starts", "hold ends", "holdings", "busy", "end"), what_happened(a),
                          what_happened(b)):
        if part == "jobs":
            for j, (p, q) in enumerate(zip(x, y)):
                assert repr(p) == repr(q), f"KOALA job {j}: {p} != {q}"
        assert repr(x) == repr(y), part


# ---- python-icp is the built-in icp ----------------------------------------------------------------

def worst_fit(data: dict) -> dict:
    data["grid"]["placement"] = {"name": "worst-fit"}
    return data


W30_VARIANTS = {
    "w30": lambda: w30(),
    "two priorities, T 0.5, requeue": lambda: two_priorities(w30(threshold=0.5, preemption={"name": "requeue"})),
    "two priorities, T 0.5, kill": lambda: two_priorities(w30(threshold=0.5, preemption={"name": "kill"})),
    "two priorities, T 0.5, none": lambda: two_priorities(w30(threshold=0.5, preemption={"name": "none"})),
    "worst-fit, T 0.5, 3 tries, L 0.5": lambda: worst_fit(w30(threshold=0.5, max_claim_tries=3, L=0.5)),
}


@pytest.mark.parametrize("variant", sorted(W30_VARIANTS))
def test_python_icp_claims_exactly_what_the_built_in_icp_claims_on_w30(variant):
    data = W30_VARIANTS[variant]()
    built_in = simulate_koala_replication(load_scenario(data), 0).outcome
    data["grid"]["claiming"] = {"name": "python-icp"}
    python = simulate_koala_replication(load_scenario(data), 0).outcome
    assert_same(built_in, python)
    assert sum(k.claim_tries for k in built_in.jobs) >= len(built_in.jobs) >= 200


def test_the_w30_variants_exercise_retries_re_placement_and_preemption():
    # (else the identity above would prove little)
    o = simulate_koala_replication(load_scenario(W30_VARIANTS["two priorities, T 0.5, requeue"]()), 0).outcome
    assert sum(k.preempted for k in o.jobs) > 0 and any(k.claim_tries > 1 for k in o.jobs)
    o = simulate_koala_replication(load_scenario(W30_VARIANTS["two priorities, T 0.5, kill"]()), 0).outcome
    assert any(k.state == "killed" for k in o.jobs)
    o = simulate_koala_replication(load_scenario(W30_VARIANTS["worst-fit, T 0.5, 3 tries, L 0.5"]()), 0).outcome
    assert any(k.state == "failed" for k in o.jobs)


def random_case(seed: int, claiming: str = "icp", claiming_params: dict | None = None):
    """A random KOALA workload with ties (integer times and sizes), fixed, semi-fixed and flexible
    jobs, four priorities, files, local jobs and the background band; the KOALA parameters vary."""
    rng = np.random.default_rng(seed)
    P = [int(x) for x in rng.integers(4, 17, 3)]
    jobs = []
    for _ in range(int(rng.integers(1, 25))):
        nc = int(rng.integers(1, 4))
        fixed = [int(rng.integers(-1, 3)) for _ in range(nc)] if rng.random() < 0.3 else None
        flexible = fixed is None and nc == 1 and bool(rng.random() < 0.2)
        jobs.append(KoalaJob(float(rng.integers(0, 600)), float(rng.integers(1, 300)),
                             [int(rng.integers(1, min(P) + 1)) for _ in range(nc)], fixed,
                             priority=int(rng.integers(0, 4)), flexible=flexible,
                             file_size=float(rng.choice([0, 500, 2000])), file_sites=[int(rng.integers(0, 3))]))
    files = Files([0, 1, -1], np.round(rng.uniform(5, 50, (3, 3))), ["a", "b", "c"])
    n = int(rng.integers(0, 25))
    cl = rng.integers(0, 3, n)
    local = (np.sort(rng.integers(0, 900, n)).astype(float), rng.integers(1, 500, n).astype(float),
             np.array([int(rng.integers(1, P[c] + 1)) for c in cl], np.int64), cl)
    band = Band(0.2, 0.5, 60.0, size=lambda: int(rng.integers(1, 5)), runtime=lambda: float(rng.integers(10, 400)))
    preemption = [{"name": "requeue"}, {"name": "kill"}, {"name": "none"},
                  {"name": "requeue", "params": {"overhead": 30.0}}][seed // 16 % 4]
    policy = KoalaPolicy(placement=["worst-fit", "close-to-files", "cluster-minimization",
                                    "flexible-cluster-minimization"][seed % 4],
                         T=[0.5, 1.0, 1 / 3, 0.75][seed // 4 % 4], preemption=preemption_mode(preemption),
                         max_claim_tries=[None, 2, 5][seed % 3], L=[0.75, 0.5, 1.0, 0.0][seed % 4],
                         min_gap=[1.0, 5.0][seed % 2], claiming=claiming, claiming_params=claiming_params or {})
    return simulate_koala(P, jobs, policy, files, local, band, horizon=50_000.0)


def test_python_icp_claims_exactly_what_the_built_in_icp_claims_on_random_workloads():
    preempted = retried = 0
    for seed in range(120):
        built_in = random_case(seed)
        assert_same(built_in, random_case(seed, "python-icp"))
        preempted += sum(k.preempted for k in built_in.jobs)
        retried += sum(k.claim_tries > 1 for k in built_in.jobs)
    assert preempted > 0 and retried > 100


def test_the_comparison_notices_a_policy_that_differs_in_one_rule(monkeypatch):
    """python-icp claiming only when strictly more than T of the components can be claimed (not
    at least T): the comparison above fails, so it can fail."""
    import dataclasses

    from gridweb_example_policies.claiming import PythonICP

    class AboveT(PythonICP):
        def __init__(self, params, koala):
            super().__init__(params, dataclasses.replace(koala, T=koala.T + 1e-6))

    monkeypatch.setitem(CLAIMING._entries, "above-t", Entry("above-t", NoParams, AboveT, "test"))
    data = W30_VARIANTS["two priorities, T 0.5, requeue"]()
    built_in = simulate_koala_replication(load_scenario(data), 0).outcome
    data["grid"]["claiming"] = {"name": "above-t"}
    with pytest.raises(AssertionError, match="KOALA job"):
        assert_same(built_in, simulate_koala_replication(load_scenario(data), 0).outcome)


# ---- claim-late ---------------------------------------------------------------------------------------

def _far_file():
    # file at site 0 (cluster 0), 10 MB/s to cluster 1: 1000 MB take 100 s
    return Files([0, 1], np.array([[np.inf, 10.0], [10.0, np.inf]]), ["s0", "s1"])


def test_claim_late_claims_once_at_the_job_start_time():
    # submit 5, placed at the scan at 60; FTT = 100 s, so JST = 160: the one try is at 160 and succeeds
    job = KoalaJob(5.0, 50.0, [4], clusters=[1], file_size=1000.0, file_sites=[0])
    o = simulate_koala([4, 4], [job], KoalaPolicy(claiming="claim-late"), _far_file())
    k = o.jobs[0]
    assert (k.jpt, k.jct, k.jst, k.start, k.end, k.claim_tries) == (60.0, 160.0, 160.0, 160.0, 210.0, 1)
    assert k.comps[0][4] == 160.0 and o.busy[:, 2].sum() == 0.0  # nothing held idle before the start
    # with lead 40 the try is at 120: 40 s of 4 processors claimed and idle (PWT)
    o = simulate_koala([4, 4], [job], KoalaPolicy(claiming="claim-late", claiming_params={"lead": 40.0}), _far_file())
    assert o.jobs[0].comps[0][4] == 120.0 and o.busy[1, 2] == 4 * 40.0


def test_claim_late_sends_the_job_back_to_placement_when_its_try_fails():
    # a local job takes the 4 placed processors at 100 until 1100: the try at 160 fails and the job goes
    # back to placement at once (ICP would retry at 135, 153.75, 158.4375 first); scans at 180 .. 1080
    # fail, 1140 places it again: JST 1240, claimed there and started.
    job = KoalaJob(5.0, 50.0, [4], clusters=[1], file_size=1000.0, file_sites=[0])
    local = (np.array([100.0]), np.array([1000.0]), np.array([4]), np.array([1]))
    o = simulate_koala([4, 4], [job], KoalaPolicy(claiming="claim-late"), _far_file(), local)
    k = o.jobs[0]
    assert (k.jpt, k.jst, k.start, k.claim_tries, k.placements, k.L) == (1140.0, 1240.0, 1240.0, 2, 2, 0.75)
    assert k.place_tries == 1 + (1140 - 180) // 60 + 1
    assert k.placement_time == pytest.approx((60 - 5) + (1140 - 160))
    icp = simulate_koala([4, 4], [job], KoalaPolicy(), _far_file(), local).jobs[0]
    assert icp.claim_tries == 4 and icp.L == 0.5  # (test_koala's hand-worked case)


def test_claim_late_never_holds_processors_idle_and_never_preempts():
    for seed in range(60):
        o = random_case(seed, "claim-late")
        assert o.busy[:, 2].sum() == 0.0, seed
        assert not [h for h in o.holdings if h[5] == "claimed" and h[2] > h[1]], seed
        for k in o.jobs:
            assert k.preempted == 0
            if k.state == "done":  # one try per placement, at its JST, every component at once
                assert k.claim_tries == k.placements and all(c[4] == k.jst == k.start for c in k.comps)


# ---- bad answers and the policy's own exceptions --------------------------------------------------

def with_policy(monkeypatch, claim, first_try=None):
    attrs = {"name": "test-claiming", "claim": claim}
    if first_try is not None:
        attrs["first_try"] = first_try
    cls = type("TestClaiming", (ClaimingPolicy,), attrs)
    monkeypatch.setitem(CLAIMING._entries, cls.name, Entry(cls.name, NoParams, cls, "test"))
    job = KoalaJob(5.0, 50.0, [4, 2], clusters=[1, -1], file_size=1000.0, file_sites=[0])
    local = (np.array([100.0]), np.array([1000.0]), np.array([4]), np.array([1]))
    return lambda: simulate_koala([4, 4], [job], KoalaPolicy(claiming=cls.name), _far_file(), local)


@pytest.mark.parametrize("claim,message", [
    (lambda self, now, job, grid: 1 / 0,
     r"test-claiming: claim\(\) for KOALA job 0 at t=135 \(try 1\) raised ZeroDivisionError: division by zero "
     r"\(simengine/test_policy_claiming.py, line \d+, in <lambda>\)"),
    (lambda self, now, job, grid: None,
     r"test-claiming: KOALA job 0, claiming at t=135, is not fully claimed and claim\(\) returned None"),
    (lambda self, now, job, grid: Retry(now),
     r"test-claiming: KOALA job 0, claiming at t=135, was to try again at 135.0; a retry comes after now"),
    (lambda self, now, job, grid: Retry(job.start_time + 1),
     r"was to try again at 161.0; a retry comes after now and by the job start time 160"),
    (lambda self, now, job, grid: Requeue(L=2.0), r"went back to placement at t=135 with L = 2.0"),
    (lambda self, now, job, grid: [grid.claim(c) for c in job.components],
     r"test-claiming: at t=135, claiming KOALA job 0, it claimed component 0 of 4 processors on cluster 1, "
     r"which has 0 idle"),
    (lambda self, now, job, grid: grid.move(job.components[0], 0),
     r"it moved component 0, whose cluster the user fixed"),
    (lambda self, now, job, grid: grid.move(job.components[1], 1, site=1),
     r"it moved component 1 to read from file site 1, which does not hold the file"),
    (lambda self, now, job, grid: grid.preempt(0), r"it preempted KOALA job 0, but|it preempted 0, which is not"),
])
def test_a_bad_answer_or_an_exception_names_the_policy_the_job_and_the_moment(monkeypatch, claim, message):
    run = with_policy(monkeypatch, claim)
    with pytest.raises(PolicyError, match=message):
        run()


def test_a_first_try_outside_placement_to_start_is_refused(monkeypatch):
    run = with_policy(monkeypatch, lambda self, now, job, grid: None, first_try=lambda self, job: job.start_time + 5)
    with pytest.raises(PolicyError, match=r"the first claiming try of KOALA job 0, placed at t=60, was set at 165.0; "
                                          r"it must be between the placement and the job start time 160"):
        run()


# ---- the ways in ------------------------------------------------------------------------------------

def test_the_scenario_names_the_claiming_policy_and_its_params_are_checked():
    s = load_scenario(w30("claim-late"))
    assert (s.grid.claiming.name, s.grid.claiming.params) == ("claim-late", {"lead": 0.0})
    bad = w30()
    bad["grid"]["claiming"] = {"name": "claim-late", "params": {"lead": -1}}
    with pytest.raises(ScenarioError) as info:
        load_scenario(bad)
    assert "grid.claiming.params.lead" in {e.path for e in info.value.errors}
    bad["grid"]["claiming"] = {"name": "claim-all"}
    with pytest.raises(ScenarioError, match="unknown claiming policy 'claim-all'; known: .*icp"):
        load_scenario(bad)
    ballier = yaml.safe_load((ROOT / "examples" / "ballier-4x32.yaml").read_text())
    ballier["grid"]["claiming"] = {"name": "icp"}
    with pytest.raises(ScenarioError) as info:
        load_scenario(ballier)
    assert "grid.claiming" in {e.path for e in info.value.errors}


def test_koala_scenarios_keep_their_hash_and_the_default_is_the_icp():
    before = load_scenario(w30())
    assert before.grid.claiming is None and "claiming" not in before.model_dump(mode="json")["grid"]
    assert scenario_hash(load_scenario(w30("icp"))) == scenario_hash(before)
    assert scenario_hash(load_scenario(w30("claim-late"))) != scenario_hash(before)


def test_the_cli_lists_the_claiming_policies():
    out = subprocess.run([sys.executable, "-m", "simengine", "schedulers"], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    listed = out[out.index("claiming policies:"):]
    for name in ("icp", "python-icp", "claim-late"):
        assert f"\n  {name} " in listed


def test_the_builder_catalog_and_the_api_schema_offer_the_claiming_policies():
    from gridweb.scenarios import catalog

    field = next(g for g in catalog.grid_policies() if g["field"] == "claiming")
    assert field["registry"] == "claiming"
    names = {p["name"] for p in catalog.engine_catalog()["registries"]["claiming"]["policies"]}
    assert {"icp", "python-icp", "claim-late"} <= names
    enum = catalog.spec_schema()["properties"]["grid"]["properties"]["claiming"]["properties"]["name"]["enum"]
    assert {"icp", "python-icp", "claim-late"} <= set(enum)


def test_a_koala_run_with_a_python_claiming_policy_gives_a_result():
    import simengine

    data = w30("claim-late")
    data["run"]["replications"] = 1
    result = simengine.run(copy.deepcopy(data))
    done = (result.jobs["stream"] == 0) & ~np.isnan(result.jobs["end"])
    assert done.sum() > 0 and (result.jobs["claiming_tries"][done] >= 1).all()
    # claimed at JST: no processor held idle while files arrive
    assert (result.jobs["jct"][done] == result.jobs["jst"][done]).all() and result.metrics["pwt_utilisation"].mean == 0
