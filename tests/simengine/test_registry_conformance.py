"""The conformance suite of the policy registries (simengine.registry), scikit-learn style: every
registered entry -- built in, or from an installed package -- is run through the same checks, so a
new entry is tested by being registered:

* its parameters: the defaults validate, survive a JSON round trip and have a JSON schema;
* a small scenario that uses it runs, twice, to the same Result (determinism under a seed), with
  every job starting after its submission and ending after its start, and no processor of the
  Gantt held twice at once (no over-commit);
* its capabilities (registry.CAPABILITIES) are true: ``event_driven`` entries are exactly the
  schedulers the event-driven cluster simulates, and give the kernel's schedule there;
  ``compiled`` ones run as numba generators; ``model`` ones select a model family of their own;
* a local scheduler of the kernel path returns a ClusterSchedule of float start times.

The last tests show the suite failing on an entry that lies about a capability or returns the
wrong type.
"""
from __future__ import annotations

import copy
import json
import types

import numpy as np
import pytest
import yaml

import simengine
from simengine.gantt import KIND_NAMES
from simengine.local.cluster import POLICIES as EVENT_DRIVEN_POLICIES, ClusterSim
from simengine.models import model_of
from simengine.registry import GRID_PLACEMENT, LOCAL_SCHEDULERS, PREEMPTION, REGISTRIES, SITE_ALLOCATION, Entry
from simengine.registry import CLAIMING, VICTIMS
from simengine.schedulers.base import ClusterSchedule
from tests.conftest import ROOT

#: local schedulers of one-processor jobs only (their "serial" capability: LWR and its twin)
SERIAL_ONLY = tuple(n for n in LOCAL_SCHEDULERS.names() if "serial" in LOCAL_SCHEDULERS.get(n).capabilities)

#: kinds of segment that hold their processors (a reservation window's job runs inside it; a
#: transfer or a suspended job holds none)
HOLDING = {KIND_NAMES.index(k) for k in ("run", "claimed", "killed", "stretched")}


def example(name: str, **run) -> dict:
    data = yaml.safe_load((ROOT / "examples" / name).read_text())
    data["run"] = {**data.get("run", {}), "replications": 2, **run}
    return data


def one_cluster(scheduler: str, params: dict) -> dict:
    return {"platform": {"clusters": [{"name": "c", "processors": 32,
                                       "scheduler": {"name": scheduler, "params": params}}]},
            "workload": {"streams": [{"kind": "synthetic", "name": "s", "target": "c", "count": 1500,
                                      "arrival": {"target_load": 0.85},
                                      "size": {"kind": "rsd", "low": 1, "high": 32, "q": 0.9},
                                      "runtime": {"kind": "exponential", "mean": 600},
                                      "estimate": {"kind": "factor",
                                                   "factor": {"kind": "uniform", "low": 1, "high": 3}}}]},
            "run": {"seed": 3, "replications": 2}}


def scenario_for(registry, entry: Entry) -> dict:
    """A small scenario that uses ``entry`` of ``registry`` with its default parameters."""
    params = entry.params().model_dump(mode="json")
    ref = {"name": entry.name, "params": params}
    kind = registry.kind
    if kind == "local scheduler":
        if entry.name == "evolving":
            return example("klein-evolving.yaml")
        if entry.name == "scojo-pect":
            data = example("cao-scojo-rars.yaml")
            for c in data["platform"]["clusters"]:
                c["scheduler"] = ref
            return data
        if entry.name in SERIAL_ONLY:
            data = example("zikos-random.yaml", stop={"completions": 4000}, warmup={"completions": 500})
            data["platform"] = {"clusters": [{"name": f"s{k}", "processors": p, "scheduler": ref}
                                             for k, p in enumerate((8, 16))]}
            return data
        return one_cluster(entry.name, params)
    if kind == "site allocation policy":
        data = example("zikos-random.yaml", stop={"completions": 4000}, warmup={"completions": 500})
        data["grid"]["site_allocation"] = ref
        return data
    if kind in ("placement policy", "deadline policy"):
        koala = entry.name == "koala" or (kind == "placement policy" and "compiled" not in entry.capabilities)
        data = example("koala-w30.yaml") if koala else example("ballier-4x32.yaml", stop={"horizon": 30000},
                                                                 warmup={"time": 1000})
        data["grid"]["placement" if kind == "placement policy" else "deadline_policy"] = ref
        return data
    if kind == "preemption policy":
        data = example("reservations-preemption.yaml")
        for c in data["platform"]["clusters"]:
            c["preemption"] = ref
        return data
    if kind == "workflow scheduling policy":
        data = example("cao-scojo-rars.yaml")
        data["grid"]["workflow_scheduling"] = ref
        return data
    if kind == "reservation admission policy":
        data = example("cao-scojo-rars.yaml")
        data["grid"]["workflow_scheduling"]["params"]["admission"] = ref
        return data
    if kind == "claiming policy":  # KOALA W30 with a second, low-priority stream its claims may preempt
        data = example("koala-w30.yaml")
        low = {**data["workload"]["streams"][0], "name": "low", "priority": "low"}
        low.pop("background")
        data["workload"]["streams"].append(low)
        data["grid"]["deadline_policy"]["params"]["threshold"] = 0.5
        data["grid"]["claiming"] = ref
        return data
    if kind == "victim choice":  # two preempting clusters; a Python choice needs fcfs or easy (their twins ask it)
        data = example("reservations-preemption.yaml")
        data["platform"]["clusters"][1]["scheduler"] = {"name": "fcfs"}
        for c in data["platform"]["clusters"]:
            c["victims"] = ref
        return data
    raise AssertionError(f"no conformance scenario for the {kind} registry: add one to scenario_for")


ENTRIES = [(registry, name) for registry in REGISTRIES for name in registry.names()]
IDS = [f"{registry.kind}:{name}" for registry, name in ENTRIES]


@pytest.mark.parametrize("registry,name", ENTRIES, ids=IDS)
def test_parameters_validate_round_trip_and_have_a_schema(registry, name):
    entry = registry.get(name)
    defaults = entry.params()
    again = entry.params.model_validate_json(defaults.model_dump_json())
    assert again == defaults
    json.dumps(entry.params.model_json_schema())
    assert entry.summary, f"{name} has no summary"


@pytest.mark.parametrize("registry,name", ENTRIES, ids=IDS)
def test_a_scenario_with_it_runs_deterministically_within_its_invariants(registry, name):
    data = scenario_for(registry, registry.get(name))
    first = simengine.run(copy.deepcopy(data))
    second = simengine.run(copy.deepcopy(data))
    check_result(first, [c.processors for c in simengine.load_scenario(data).platform.clusters])
    for column, values in first.jobs.items():
        assert np.array_equal(values, second.jobs[column], equal_nan=values.dtype.kind == "f"), column
    for column, values in first.segments.items():
        assert np.array_equal(values, second.segments[column]), column


def check_result(result, processors: list[int]) -> None:
    jobs = result.jobs
    started = ~np.isnan(jobs["start"])
    assert started.any(), "nothing ran"
    assert (jobs["start"][started] >= jobs["submit"][started]).all(), "a job started before its submission"
    ended = started & ~np.isnan(jobs["end"])
    assert (jobs["end"][ended] >= jobs["start"][ended]).all(), "a job ended before it started"
    seg = result.segments
    cluster, first, count = (np.asarray(seg[k], np.int64) for k in ("cluster", "first_processor", "processors"))
    P = np.asarray(processors, np.int64)[cluster]
    assert ((first >= 0) & (count >= 1) & (first + count <= P)).all(), "a segment outside its cluster"
    hold = np.isin(np.asarray(seg["kind"]), list(HOLDING)) & (np.asarray(seg["t1"]) > np.asarray(seg["t0"]))
    # one row per (processor, segment): no processor held by two segments at once
    rows = np.repeat(np.flatnonzero(hold), count[hold])
    offset = np.arange(len(rows)) - np.repeat(np.cumsum(count[hold]) - count[hold], count[hold])
    proc = first[rows] + offset
    t0, t1 = np.asarray(seg["t0"])[rows], np.asarray(seg["t1"])[rows]
    order = np.lexsort((t0, proc, cluster[rows]))
    same = (cluster[rows][order][1:] == cluster[rows][order][:-1]) & (proc[order][1:] == proc[order][:-1])
    overlap = same & (t0[order][1:] < t1[order][:-1] - 1e-9)
    assert not overlap.any(), f"{int(overlap.sum())} processors held twice at once"


# ---- capabilities ---------------------------------------------------------------------------------

def test_event_driven_is_exactly_what_the_event_driven_cluster_simulates():
    """The compiled passes of the event core, and every Python local scheduler (its Python pass)."""
    from simengine.policy import PythonScheduler
    python = {n for n in LOCAL_SCHEDULERS.names() if isinstance(LOCAL_SCHEDULERS.get(n).implementation, PythonScheduler)}
    assert python, "the example package registers Python local schedulers"
    assert set(LOCAL_SCHEDULERS.with_capability("event_driven")) == set(EVENT_DRIVEN_POLICIES) | python


def random_jobs(seed: int = 7, n: int = 400, P: int = 32):
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.integers(0, 20000, n)).astype(float)
    runtime = rng.integers(0, 900, n).astype(float)
    estimate = np.maximum(runtime * rng.uniform(0.7, 3, n), 1.0).round()
    size = rng.integers(1, P + 1, n)
    return submit, runtime, estimate, size, P


@pytest.mark.parametrize("name", LOCAL_SCHEDULERS.with_capability("event_driven"))
def test_an_event_driven_scheduler_gives_the_kernel_schedule_on_the_event_driven_path(name):
    submit, runtime, estimate, size, P = random_jobs()
    if name in SERIAL_ONLY:
        size = np.ones_like(size)
    entry = LOCAL_SCHEDULERS.get(name)
    kernel = entry.implementation(submit, runtime, estimate, size, P, entry.params()).start
    sim = ClusterSim(P, name, submit, runtime, estimate, size)
    sim.run()
    np.testing.assert_array_equal(np.asarray(sim.first_start, float), kernel)


KERNEL_PATH = [n for n in LOCAL_SCHEDULERS.names() if "model" not in LOCAL_SCHEDULERS.get(n).capabilities]


@pytest.mark.parametrize("name", KERNEL_PATH)
def test_a_kernel_path_scheduler_returns_start_times_and_is_compiled_iff_it_says_so(name):
    check_kernel_scheduler(LOCAL_SCHEDULERS.get(name))


def check_kernel_scheduler(entry: Entry) -> None:
    submit, runtime, estimate, size, P = random_jobs(n=200)
    if entry.name in SERIAL_ONLY:
        size = np.ones_like(size)
    out = entry.implementation(submit, runtime, estimate, size, P, entry.params())
    assert isinstance(out, ClusterSchedule), f"{entry.name} returned {type(out).__name__}, not a ClusterSchedule"
    assert isinstance(out.start, np.ndarray) and out.start.dtype == np.float64 and out.start.shape == submit.shape
    steps = entry.implementation.steps(submit, runtime, estimate, size, P, entry.params())
    python_generator = isinstance(steps.kernel, types.GeneratorType)
    assert ("compiled" in entry.capabilities) == (not python_generator), \
        f"{entry.name}: capability 'compiled' is {'compiled' in entry.capabilities}, its kernel " \
        f"{'is' if python_generator else 'is not'} a Python generator"


@pytest.mark.parametrize("name", LOCAL_SCHEDULERS.with_capability("model"))
def test_a_model_entry_selects_a_model_family_of_its_own(name):
    scenario = simengine.load_scenario(scenario_for(LOCAL_SCHEDULERS, LOCAL_SCHEDULERS.get(name)))
    assert model_of(scenario).name != "kernel"


# ---- the suite notices an entry that lies or returns the wrong type ------------------------------

def test_the_suite_fails_an_entry_without_its_capability(monkeypatch):
    easy = LOCAL_SCHEDULERS.get("easy")
    monkeypatch.setitem(LOCAL_SCHEDULERS._entries, "easy",
                        Entry("easy", easy.params, easy.implementation, easy.summary,
                              easy.capabilities - {"event_driven"}))
    with pytest.raises(AssertionError):
        test_event_driven_is_exactly_what_the_event_driven_cluster_simulates()
    with pytest.raises(AssertionError, match="capability 'compiled'"):
        check_kernel_scheduler(Entry("easy", easy.params, easy.implementation, easy.summary, frozenset()))


def test_the_suite_fails_an_entry_that_returns_the_wrong_type():
    fcfs = LOCAL_SCHEDULERS.get("fcfs")

    def returns_a_list(*args, **kwargs):
        return list(fcfs.implementation(*args, **kwargs).start)

    returns_a_list.steps = fcfs.implementation.steps
    with pytest.raises(AssertionError, match="returned list, not a ClusterSchedule"):
        check_kernel_scheduler(Entry("fcfs", fcfs.params, returns_a_list, fcfs.summary, fcfs.capabilities))


def test_registering_an_unknown_capability_is_refused():
    with pytest.raises(ValueError, match="unknown capabilities \\['reservatoins'\\]"):
        LOCAL_SCHEDULERS.register("test-typo", capabilities=("reservatoins",))


def test_the_suite_fails_a_gantt_that_holds_a_processor_twice():
    from types import SimpleNamespace

    seg = {"cluster": np.array([0, 0]), "first_processor": np.array([0, 3]), "processors": np.array([4, 2]),
           "t0": np.array([0.0, 5.0]), "t1": np.array([10.0, 12.0]), "kind": np.array([0, 0])}
    jobs = {"submit": np.zeros(2), "start": np.array([0.0, 5.0]), "end": np.array([10.0, 12.0])}
    with pytest.raises(AssertionError, match="1 processors held twice"):
        check_result(SimpleNamespace(jobs=jobs, segments=seg), [8])
    seg["first_processor"] = np.array([0, 4])
    check_result(SimpleNamespace(jobs=jobs, segments=seg), [8])


def test_a_local_scheduler_must_offer_the_protocol_to_register():
    """LOCAL_SCHEDULERS is typed (registry.LocalScheduler): an implementation that cannot be called
    for a schedule or has no ``steps`` for the live Gantt is refused when it registers; an entry
    that stands for a model family (capability ``model``) is not a scheduler of the kernel path."""
    from simengine.registry import LocalScheduler, Registry

    registry = Registry("local scheduler", LocalScheduler)

    def no_steps(submit, runtime, estimate, size, processors, params, horizon=None):
        return None

    with pytest.raises(TypeError, match="'bare': its implementation lacks .steps"):
        registry.register("bare")(no_steps)
    no_steps.steps = lambda *a, **k: None
    registry.register("with-steps")(no_steps)
    registry.register("family", capabilities=("model",))(object())
    assert registry.names() == ["family", "with-steps"]
    assert all(isinstance(LOCAL_SCHEDULERS.get(n).implementation, LocalScheduler)
               for n in LOCAL_SCHEDULERS.names() if "model" not in LOCAL_SCHEDULERS.get(n).capabilities)


# ---- every registry kind: its protocol and its capabilities ---------------------------------------

@pytest.mark.parametrize("registry,name", ENTRIES, ids=IDS)
def test_an_entry_follows_its_registrys_protocol_or_is_a_model(registry, name):
    entry = registry.get(name)
    if registry.protocol is None:
        assert "model" in entry.capabilities, f"{registry.kind} {name} is not a model part"
    elif "model" not in entry.capabilities:
        assert isinstance(entry.implementation, registry.protocol)


@pytest.mark.parametrize("name", GRID_PLACEMENT.names())
def test_a_placement_is_compiled_iff_the_coallocation_kernel_runs_it(name):
    check_placement(GRID_PLACEMENT.get(name))


@pytest.mark.parametrize("name", GRID_PLACEMENT.names())
def test_a_placement_places_coallocated_jobs_with_start_deadlines(name):
    """Every placement also runs Ballier's deadline path (compiled in, or called from Python)."""
    data = example("ballier-4x32.yaml", stop={"horizon": 30000}, warmup={"time": 1000})
    data["grid"]["placement"] = {"name": name, "params": GRID_PLACEMENT.get(name).params().model_dump(mode="json")}
    first, second = simengine.run(copy.deepcopy(data)), simengine.run(copy.deepcopy(data))
    check_result(first, [32] * 4)
    for column, values in first.jobs.items():
        assert np.array_equal(values, second.jobs[column], equal_nan=values.dtype.kind == "f"), column
    global_started = ~np.isnan(first.jobs["deadline"]) & ~np.isnan(first.jobs["start"])
    assert global_started.any(), f"{name} placed no co-allocated job"


def check_placement(entry: Entry) -> None:
    from simengine.grid.kernel import PLACE_WORST_FIT
    from simengine.grid.koala import KoalaJob
    from simengine.grid.placement import place
    from simengine.policy import Grid

    compiled = "compiled" in entry.capabilities
    code = getattr(entry.implementation, "code", None)
    assert compiled == (code in (PLACE_WORST_FIT,)), \
        f"{entry.name}: capability 'compiled' is {compiled}, its kernel code is {code!r}"
    idle = np.array([16, 40, 24])
    policy = entry.implementation(entry.params(), Grid(idle.copy()))
    got = place(KoalaJob(0.0, 1.0, [8, 16, 4]), idle, policy, None)
    assert got is not None and sum(s for s, *_ in got) == 28
    used = np.bincount([c for _, c, *_ in got], weights=[s for s, *_ in got], minlength=3)
    assert (used <= idle).all(), f"{entry.name} over-commits"
    assert place(KoalaJob(0.0, 1.0, [41]), idle, policy, None) is None, f"{entry.name} placed what cannot fit"


@pytest.mark.parametrize("name", SITE_ALLOCATION.names())
def test_a_site_allocation_is_stateful_iff_it_cannot_route_up_front(name):
    check_site_allocation(SITE_ALLOCATION.get(name))


def check_site_allocation(entry: Entry) -> None:
    from simengine.workload import JobTable

    n = 50
    jobs = JobTable(job_id=np.arange(1, n + 1), submit=np.arange(float(n)), runtime=np.ones(n), estimate=np.ones(n),
                    processors=np.tile([1, 12], n // 2), cluster=np.full(n, -1), stream=np.zeros(n))
    processors = np.array([8, 16, 24])
    if "stateful" in entry.capabilities:
        # compiled or Python (simengine.site_state), the stateful model drives its stepper
        assert hasattr(entry.implementation, "stepper"), f"{entry.name}: stateful without a stepper"
        with pytest.raises(TypeError):
            entry.implementation(jobs, processors, entry.params(), np.random.default_rng(0))
        return
    got = entry.implementation(jobs, processors, entry.params(), np.random.default_rng(0))
    assert isinstance(got, np.ndarray) and got.dtype.kind == "i" and got.shape == (n,), \
        f"{entry.name} returned {type(got).__name__}, not an integer array of a cluster per job"
    assert ((got >= 0) & (got < 3)).all() and (processors[got] >= jobs.processors).all()


@pytest.mark.parametrize("name", PREEMPTION.names())
def test_a_preemption_policy_gives_a_preemption_mode(name):
    from simengine.preemption import PreemptionMode

    entry = PREEMPTION.get(name)
    mode = entry.implementation(entry.params())
    assert isinstance(mode, PreemptionMode) and mode.name == name
    assert mode.preempts == (name != "none") and not (mode.restarts and mode.resumes)


def test_the_suite_fails_a_placement_or_site_allocation_that_lies_or_answers_wrong():
    best = GRID_PLACEMENT.get("worst-fit")
    with pytest.raises(AssertionError, match="capability 'compiled' is False"):
        check_placement(Entry("worst-fit", best.params, best.implementation, best.summary, frozenset()))
    random = SITE_ALLOCATION.get("random")

    def as_list(*args):
        return list(random.implementation(*args))

    with pytest.raises(AssertionError, match="returned list, not an integer array"):
        check_site_allocation(Entry("random", random.params, as_list, random.summary, frozenset()))
    deferred = SITE_ALLOCATION.get("deferred")
    with pytest.raises(TypeError, match="cannot route jobs up front"):  # stateful, flag removed
        check_site_allocation(Entry("deferred", deferred.params, deferred.implementation, deferred.summary,
                                    frozenset()))


def test_a_registry_without_a_protocol_takes_model_parts_only():
    from simengine.registry import Registry

    registry = Registry("deadline policy")
    with pytest.raises(TypeError, match="'mine': a deadline policy is part of a model family"):
        registry.register("mine")(object())
    registry.register("part", capabilities=("model",))(object())
    assert registry.names() == ["part"]


@pytest.mark.parametrize("name", CLAIMING.names())
def test_a_claiming_policy_has_every_component_claimed_by_the_job_start_time(name):
    from simengine.grid.koala_run import simulate_koala_replication

    entry = CLAIMING.get(name)
    scenario = simengine.load_scenario(scenario_for(CLAIMING, entry))
    outcome = simulate_koala_replication(scenario, 0).outcome
    started = [k for k in outcome.jobs if k.state in ("running", "done")]
    assert started, f"{name}: no KOALA job started"
    for k in started:
        claims = [c[4] for c in k.comps]
        assert k.start == k.jst and all(k.jpt <= t <= k.jst for t in claims), \
            f"{name}: a job started at {k.start} with claims at {claims} (placed {k.jpt}, JST {k.jst})"


@pytest.mark.parametrize("name", VICTIMS.names())
def test_a_victim_choice_orders_some_of_its_candidates_and_is_compiled_iff_it_is_the_core_order(name):
    from simengine.policy import Job
    from simengine.preemption import LowestPriorityNewest, victim_choice

    entry = VICTIMS.get(name)
    assert ("compiled" in entry.capabilities) == (victim_choice(name) is None), \
        f"{name}: capability 'compiled' is {'compiled' in entry.capabilities}, but the engine " \
        f"{'does not call' if victim_choice(name) is None else 'calls'} it from Python"
    rng = np.random.default_rng(1)
    candidates = [Job(i, 0.0, int(rng.integers(1, 9)), 100.0, int(rng.integers(0, 3))) for i in range(12)]
    for i, job in enumerate(candidates):
        job.start, job.status = float(i // 3), "running"
    preemptor = Job(99, 5.0, 8, 100.0, 3)
    got = list(entry.implementation(entry.params(), None).order(6.0, preemptor, list(candidates)))
    assert len({id(j) for j in got}) == len(got) and all(any(j is c for c in candidates) for j in got), \
        f"{name} answered with jobs that are not candidates, or named one twice"
    if "compiled" in entry.capabilities:
        assert got == LowestPriorityNewest(entry.params(), None).order(6.0, preemptor, list(candidates))


def test_serial_schedulers_are_lwr_and_its_twin_and_refuse_parallel_jobs_before_the_run():
    """The "serial" capability is what the scenario checks read (not a scheduler's name): a stream
    that can send a serial scheduler's cluster a two-processor job is refused, naming the field."""
    from simengine.scenario import load_scenario
    from simengine.errors import ScenarioError

    assert set(SERIAL_ONLY) == {"lwr", "events-lwr"}
    for name in SERIAL_ONLY:
        data = one_cluster(name, {})
        data["workload"]["streams"][0]["size"] = {"kind": "uniform", "low": 1, "high": 2}
        with pytest.raises(ScenarioError) as refused:
            load_scenario(data)
        assert (f"workload.streams.0.size: cluster 'c' uses the {name} scheduler, which runs one-processor jobs "
                f"only, but this stream's jobs can need up to 2 processors") in str(refused.value)
