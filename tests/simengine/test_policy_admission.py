"""Reservation admission in Cao's system as a policy (simengine.cao.admission,
docs/policies/reservation-admission.md): the compiled RARS-HEFT admission against its plain-Python
versions through the public API (identical results on the Cao example and on random systems,
whole and in slices), a new policy (rigid-frame) against what it promises, hand-computed
grants, the errors a policy's bad answer gives, and the scenario, schema and CLI that name them.
"""
from __future__ import annotations

import copy
import io
import math
from contextlib import redirect_stdout

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings

import simengine
from simengine.cao.admission import ClusterOffer, EarliestLft, RarsKnobs, ReservationAdmission
from simengine.cao.engine import CaoParams
from simengine.cao.scheduler import RarsHeftParams
from simengine.cao.simulate import CaoSim, simulate
from simengine.errors import ScenarioError
from simengine.policy import Grant, PolicyError, register
from simengine.registry import REGISTRIES, RESERVATION_ADMISSION
from simengine.reproductions.cao import _workload
from tests.conftest import ROOT
from tests.simengine.test_cao_core import cao_case

gridweb_example_policies = pytest.importorskip("gridweb_example_policies.admission")
EarliestLftPython, RigidFrame = gridweb_example_policies.EarliestLftPython, gridweb_example_policies.RigidFrame


def policy(cls, p: CaoParams, **params):
    return cls(cls.Params(**params), RarsKnobs.of(p), p.clusters, p.processors)


def assert_identical(a, b):
    for k in a.jobs:
        assert np.array_equal(a.jobs[k], b.jobs[k], equal_nan=a.jobs[k].dtype.kind == "f"), f"jobs.{k}"
    for k in a.workflows:
        assert np.array_equal(a.workflows[k], b.workflows[k], equal_nan=True), f"workflows.{k}"
    assert a.pieces == b.pieces and a.procs == b.procs
    assert a.events == b.events and a.short_slices == b.short_slices
    for k, v in a.segments().items():
        assert np.array_equal(v, b.segments()[k]), f"segments.{k}"
    assert a.metrics.keys() == b.metrics.keys()
    for k in a.metrics:
        assert a.metrics[k] == b.metrics[k] or (math.isnan(a.metrics[k]) and math.isnan(b.metrics[k])), k


def cao_example(count: int = 150, **admission) -> dict:
    data = yaml.safe_load((ROOT / "examples" / "cao-scojo-rars.yaml").read_text())
    for s in data["workload"]["streams"]:
        s["count"] = count
    data["run"]["replications"] = 1
    if admission:
        data["grid"]["workflow_scheduling"]["params"]["admission"] = admission
    return data


# ---- the compiled admission and its Python versions give the same runs ---------------------------

def test_the_python_admission_gives_the_compiled_results_on_the_cao_example():
    compiled = simengine.run(cao_example())
    python = simengine.run(cao_example(name="earliest-lft-python"))
    assert (compiled.jobs["workflow"] >= 0).sum() >= 20  # workflows were admitted
    for k, v in compiled.jobs.items():
        assert np.array_equal(v, python.jobs[k], equal_nan=v.dtype.kind == "f"), k
    for k, v in compiled.segments.items():
        assert np.array_equal(v, python.segments[k]), k
    assert compiled.metrics.keys() == python.metrics.keys()
    for k, v in compiled.metrics.items():
        assert v == python.metrics[k] or (v != v and python.metrics[k] != python.metrics[k]), k


@pytest.mark.parametrize("propagation", [False, True])
def test_the_builtin_asked_through_python_gives_the_compiled_schedule(propagation):
    # the registered built-in's own admit(), and the example's, each through the Python path
    local, wfs = _workload(71, 0.4, 300)
    p = CaoParams(propagation=propagation)
    compiled = simulate(local, wfs, p)
    assert len(wfs) >= 5
    for cls in (EarliestLft, EarliestLftPython):
        assert_identical(simulate(local, wfs, p, admission=policy(cls, p)), compiled)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(cao_case())
def test_on_random_systems_the_python_admission_gives_the_compiled_schedule(case):
    jobs, wfs, p = case
    assert_identical(simulate(jobs, wfs, p, admission=policy(EarliestLftPython, p)), simulate(jobs, wfs, p))


def test_in_slices_the_python_admission_gives_the_whole_run():
    local, wfs = _workload(3, 0.8, 400)
    p = CaoParams(propagation=True)
    sim = CaoSim(local, wfs, p, policy(EarliestLftPython, p))
    T = 0.0
    while not sim.run(until=T):
        T += 5000.0
    assert_identical(sim.result(), simulate(local, wfs, p))


# ---- a new policy: rigid frames ------------------------------------------------------------------

def test_rigid_frames_open_at_the_predicted_start_and_differ_from_relaxed_ones():
    local, wfs = _workload(71, 0.4, 300)
    p = CaoParams(propagation=False)  # (propagation moves a frame's EST when predecessors finish)
    rigid = simulate(local, wfs, p, admission=policy(RigidFrame, p))
    relaxed = simulate(local, wfs, p)
    tasks = rigid.jobs["kind"] == 1
    assert tasks.sum() >= 25
    # EST = ST (the predicted start on the cluster granted), where Cao's opens earlier (SLPA 1)
    np.testing.assert_array_equal(rigid.jobs["est"][tasks], rigid.jobs["st"][tasks])
    assert (relaxed.jobs["est"][tasks] <= relaxed.jobs["st"][tasks]).all()  # (equal when clamped to now)
    assert (relaxed.jobs["est"][tasks] < relaxed.jobs["st"][tasks]).mean() > 0.5
    # with behind = 0 and SLPB = 0 both grant LFT = PRT on the same offers: the first task admitted
    # (the first workflow's entry task) gets the same cluster and LFT either way
    first = np.flatnonzero(tasks)[0]
    assert rigid.jobs["lft"][first] == relaxed.jobs["lft"][first]
    assert rigid.jobs["cluster"][first] == relaxed.jobs["cluster"][first]
    assert rigid.metrics["makespan"] != relaxed.metrics["makespan"]


def test_rigid_frame_behind_adds_slack_after_the_predicted_finish():
    local, wfs = _workload(71, 0.4, 150)
    p = CaoParams()
    a = simulate(local, wfs, p, admission=policy(RigidFrame, p))
    b = simulate(local, wfs, p, admission=policy(RigidFrame, p, behind=500.0))
    first = np.flatnonzero(a.jobs["kind"] == 1)[0]  # admitted first: the same offers in both runs
    assert b.jobs["lft"][first] == a.jobs["lft"][first] + 500.0


# ---- grants on hand numbers ---------------------------------------------------------------------

class Req:
    estimate, nbp, processors, task, job_id = 3000.0, 0.025, 8, 0, 7


def test_earliest_lft_by_hand():
    p = CaoParams(slpa=1.0, slpb=0.5, maf=4.0)
    offers = [ClusterOffer(0, 5000.0, 9000.0, None, 0, 1), ClusterOffer(1, 4000.0, 8000.0, None, 0, 1),
              ClusterOffer(2, 4000.0, 8000.0 + 1e-7, None, 0, 1)]
    for cls in (EarliestLft, EarliestLftPython):
        got = policy(cls, p).admit(1000.0, Req, offers)
        # cluster 1: LFT = 8000 + 3000 * 0.5; EST = 4000 - 3000 * 1 - 4 * 0.025 * (4000 - 1000) = 700 -> now
        assert got == Grant(1, 1000.0, 9500.0)
    far = [ClusterOffer(0, 20000.0, 23000.0, None, 0, 1)]
    assert policy(EarliestLftPython, p).admit(1000.0, Req, far) == Grant(0, 20000.0 - 3000.0 - 0.1 * 19000.0,
                                                                         24500.0)
    assert policy(RigidFrame, p, behind=60.0).admit(1000.0, Req, offers) == Grant(1, 4000.0, 8060.0)


# ---- bad answers and failures --------------------------------------------------------------------

def run_with(answer):
    class Bad(ReservationAdmission):
        name = "bad"

        def admit(self, now, request, offers):
            return answer(now, request, offers)

    local, wfs = _workload(71, 0.4, 150)
    p = CaoParams()
    return simulate(local, wfs, p, admission=policy(Bad, p))


@pytest.mark.parametrize("answer, message", [
    (lambda now, r, o: None, r"bad: refused task \d of workflow \d+ at t=\d+.*never refused"),
    (lambda now, r, o: Grant(4, now, now + 1), r"bad: task \d of workflow \d+ at t=\d+ was granted cluster 4, "
                                               r"not a cluster index 0\.\.3"),
    (lambda now, r, o: Grant(0, now - 1, now + 1), r"a frame must have now \(\d+\) <= est <= lft"),
    (lambda now, r, o: Grant(0, now + 2, now + 1), r"a frame must have now"),
    (lambda now, r, o: Grant(0, now, math.inf), r"both finite"),
    (lambda now, r, o: "x", r"answered 'x' for task \d of workflow \d+ at t=\d+, not a Grant"),
])
def test_a_bad_grant_is_refused_naming_the_policy_the_task_and_the_time(answer, message):
    with pytest.raises(PolicyError, match=message):
        run_with(answer)


def test_a_policy_that_raises_is_named_with_the_task_and_the_line():
    def boom(now, request, offers):
        raise ZeroDivisionError("no room")

    with pytest.raises(PolicyError, match=r"bad: admit\(\) for task \d of workflow \d+ at t=\d+ raised "
                                          r"ZeroDivisionError: no room \(simengine/test_policy_admission.py") as e:
        run_with(boom)
    assert isinstance(e.value.__cause__, ZeroDivisionError)


def test_what_the_policy_sees_matches_the_engine():
    seen = []

    def look(now, request, offers):
        o = offers[0]
        times, free = o.availability()
        jobs = o.jobs()
        seen.append((now, request, o, times, free, jobs, o.fit(request.earliest), o.fit(request.earliest + 1e5)))
        return EarliestLftPython.admit(policy(EarliestLftPython, CaoParams()), now, request, offers)

    res = run_with(look)
    assert seen
    for now, request, o, times, free, jobs, again, later in seen:
        assert request.earliest >= now and o.start >= request.earliest - 1e-6 and o.finish >= o.start
        assert again == (o.start, o.finish) and later[0] >= request.earliest + 1e5 - 1e-6
        assert times[0] == now and (np.diff(times) >= 0).all() and ((free >= 0) & (free <= 128)).all()
        assert set(jobs) == {"job", "task", "processors", "start", "end", "started"}
        for q in request.predecessors:  # reserved before it (HEFT order), its successors not yet
            assert 0 <= q.cluster < 4 and q.lft >= now
        if request.predecessors:
            assert request.earliest == max(q.lft + q.comm for q in request.predecessors)
    assert len(seen) == int((res.jobs["kind"] == 1).sum())


# ---- the scenario, the schema and the CLI name them ----------------------------------------------

def test_the_scenario_names_the_admission_and_the_default_keeps_the_hash():
    plain = simengine.load_scenario(cao_example())
    named = simengine.load_scenario(cao_example(name="earliest-lft"))
    assert simengine.scenario_hash(plain) == simengine.scenario_hash(named)
    assert "admission" not in plain.grid.workflow_scheduling.params
    other = simengine.load_scenario(cao_example(name="rigid-frame"))
    assert other.grid.workflow_scheduling.params["admission"] == {"name": "rigid-frame", "params": {"behind": 0.0}}
    with pytest.raises(ScenarioError, match=r"unknown reservation admission policy 'nope'; known: earliest-lft"):
        simengine.load_scenario(cao_example(name="nope"))
    with pytest.raises(ScenarioError, match=r"admission.*behind"):
        simengine.load_scenario(cao_example(name="rigid-frame", params={"behind": -1}))


def test_the_schema_and_the_cli_list_the_admission_policies():
    names = RESERVATION_ADMISSION.names()
    assert {"earliest-lft", "earliest-lft-python", "rigid-frame"} <= set(names)
    assert RESERVATION_ADMISSION in REGISTRIES
    schema = RarsHeftParams.model_json_schema()
    ref = schema["$defs"]["AdmissionRef"]["properties"]["name"]
    assert ref["enum"] == names and ref["default"] == "earliest-lft"
    from simengine.cli import main
    out = io.StringIO()
    with redirect_stdout(out):
        main(["schedulers"])
    listing = out.getvalue()
    assert "reservation admission policies:" in listing
    for name in names:
        assert f"  {name} " in listing


def test_registering_an_admission_without_admit_is_refused():
    class Nothing(ReservationAdmission):
        name = "nothing"

    with pytest.raises(TypeError, match="does not define admit"):
        register(Nothing)
    assert "nothing" not in RESERVATION_ADMISSION
    assert copy.copy(RESERVATION_ADMISSION.get("earliest-lft").capabilities) == frozenset({"compiled"})


@pytest.mark.parametrize("name", RESERVATION_ADMISSION.names())
def test_an_admission_is_compiled_iff_the_core_admits_by_itself(name):
    # the core knows one admission of its own (earliest-lft); every other one is asked in Python
    from simengine.cao.admission import DEFAULT_ADMISSION, admission_policy

    entry = RESERVATION_ADMISSION.get(name)
    p = CaoParams()
    made = admission_policy({"name": name, "params": entry.params().model_dump(mode="json")}, p)
    assert ("compiled" in entry.capabilities) == (made is None) == (name == DEFAULT_ADMISSION)
    if made is not None:
        assert isinstance(made, ReservationAdmission) and made.knobs == RarsKnobs.of(p)


def test_the_builders_catalog_lists_them_with_their_forms():
    # (the builder's catalog.json: engine only, no Django needed to build it)
    from gridweb.scenarios import catalog

    got = catalog.engine_catalog()
    listed = got["registries"]["reservation_admission"]["policies"]
    assert [p["name"] for p in listed] == RESERVATION_ADMISSION.names()
    rigid = next(p for p in listed if p["name"] == "rigid-frame")
    assert rigid["params_schema"]["properties"]["behind"]["default"] == 0.0
    rars = next(p for p in got["registries"]["workflow_scheduling"]["policies"] if p["name"] == "rars-heft")
    assert rars["params_schema"]["$defs"]["AdmissionRef"]["properties"]["name"]["enum"] == RESERVATION_ADMISSION.names()
