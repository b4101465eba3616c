"""Every kind of policy where the scenario has a field for it -- in the builder's catalog, the API's
OpenAPI schema, the gallery's policy filter, the sweep form's choices and the builder's preview --
found from the schemas and the registries, nested policy fields too (a policy named in another
policy's params: rars-heft's admission, KOALA's preemption). Issue 35: "the builder, API schema and
CLI list and run them".

The references are the engine's own models and checks: the pydantic fields that hold a policy
(``name`` and ``params``) and the registry the engine's validation names when such a field names an
unknown policy.
"""
from __future__ import annotations

import copy
import typing

import pytest
import yaml
from django.test import Client
from pydantic import BaseModel

import simengine
from gridweb.runs.services import describe_policy
from gridweb.runs.sweep_form import sweepable_parameters
from simengine import policy_fields
from simengine.errors import ScenarioError
from simengine.scenario import Cluster, Grid
from tests.conftest import ROOT
from tests.web.conftest import client_for

BASE = {
    "platform": {"clusters": [{"name": "c1", "processors": 16}]},
    "workload": {"streams": [{"kind": "synthetic", "name": "s", "target": "c1", "arrival": {"rate": 0.01},
                              "size": {"kind": "constant", "value": 1}, "runtime": {"kind": "constant", "value": 10}}]},
    "run": {"stop": {"completions": 10}},
}
UNKNOWN = "no-such-policy"


def holds_a_policy(model: type[BaseModel]) -> list[str]:
    """Reference: the fields of ``model`` whose type is a model of a policy's ``name`` and ``params``."""
    out = []
    for field, info in model.model_fields.items():
        for t in (info.annotation, *typing.get_args(info.annotation)):
            if isinstance(t, type) and issubclass(t, BaseModel) and {"name", "params"} <= set(t.model_fields):
                out.append(field)
    return out


def allowed(model: type[BaseModel], field: str, registry) -> list[str]:
    """Reference: the names a nested policy field takes: its ``Literal`` names, else its registry's."""
    annotation = model.model_fields[field].annotation
    ref = next(t for t in (annotation, *typing.get_args(annotation)) if isinstance(t, type) and issubclass(t, BaseModel))
    names = typing.get_args(ref.model_fields["name"].annotation)
    return sorted(names) if names else registry.names()


def scenario_fields() -> dict[tuple[str, ...], str]:
    return {path: key for path, key, _ in policy_fields.policy_fields(policy_fields.scenario_schema())}


def nested_fields() -> list[tuple[str, str, str, str]]:
    """(parent registry, parent policy, field of its params, the field's registry), from the params models."""
    found = policy_fields.registries()
    out = []
    for key, registry in found.items():
        for name in registry.names():
            marked = {path: nested for path, nested, _ in
                      policy_fields.policy_fields(policy_fields.params_schema(registry, name, found))}
            for field in holds_a_policy(registry.get(name).params):
                out.append((key, name, field, marked.get((field,))))
    return out


def messages(doc: dict) -> list[str]:
    try:
        simengine.load_scenario(doc)
    except ScenarioError as exc:
        return [str(e) for e in exc.errors]
    return []


def put(doc: dict, path: tuple[str, ...], value) -> dict:
    node = doc
    for part in path[:-1]:
        node = node[0] if part == "*" else node.setdefault(part, {})
    node[path[-1]] = value
    return doc


def test_every_field_naming_a_policy_is_found_with_the_registry_the_engine_checks_it_against():
    found = policy_fields.registries()
    fields = scenario_fields()
    expected = {("platform", "clusters", "*", f) for f in holds_a_policy(Cluster)} | \
               {("grid", f) for f in holds_a_policy(Grid)}
    assert expected <= set(fields)
    for path, key in fields.items():
        said = messages(put(copy.deepcopy(BASE), path, {"name": UNKNOWN}))
        where = ".".join("0" if p == "*" else p for p in path)
        assert any(m.startswith(where) and f"unknown {found[key].kind} '{UNKNOWN}'" in m for m in said), (path, said)


def test_every_policy_field_of_a_policys_params_is_found_with_the_names_the_engine_accepts():
    found = policy_fields.registries()
    nested = nested_fields()
    assert {("workflow_scheduling", "rars-heft", "admission"), ("deadline_policy", "koala", "preemption")} <= \
           {n[:3] for n in nested}
    where = {key: path for path, key in scenario_fields().items()}
    for parent, name, field, key in nested:
        assert key is not None, f"{parent} {name}: params.{field} names a policy of no registry found"
        names = allowed(found[parent].get(name).params, field, found[key])
        said = " ".join(messages(put(copy.deepcopy(BASE), where[parent],
                                     {"name": name, "params": {field: {"name": UNKNOWN}}})))
        assert f"unknown {found[key].kind} '{UNKNOWN}'" in said or all(f"'{n}'" in said for n in names), said


def test_the_builder_catalog_marks_every_policy_field_with_its_registry(client):
    data = client.get("/scenarios/catalog.json").json()
    defs = data["scenario_schema"]["$defs"]
    for model, entries in ((Cluster, data["cluster_policies"]), (Grid, data["grid_policies"])):
        assert [e["field"] for e in entries] == holds_a_policy(model)
        for entry in entries:
            assert defs[model.__name__]["properties"][entry["field"]]["x-registry"] == entry["registry"]
            assert entry["registry"] in data["registries"]
    for parent, name, field, key in nested_fields():
        policy = next(p for p in data["registries"][parent]["policies"] if p["name"] == name)
        assert policy["params_schema"]["properties"][field]["x-registry"] == key
    # every registry the engine has is offered, with every policy
    assert {k: [p["name"] for p in r["policies"]] for k, r in data["registries"].items()} == \
           {k: r.names() for k, r in policy_fields.registries().items()}


def test_the_api_schema_lists_the_names_of_every_policy_field_nested_ones_too():
    spec = Client().get("/api/schema/", HTTP_ACCEPT="application/json").json()
    spec = spec["components"]["schemas"]["ScenarioRequest"]["properties"]["spec"]
    found = policy_fields.registries()

    def at(node: dict, path) -> dict:
        for part in path:
            node = node["items"] if part == "*" else node["properties"][part]
        return node

    def real(names) -> list[str]:
        # other tests register scratch policies (test-*) as they go; the schema is built once a process
        return [n for n in names if not n.startswith("test-")]

    fields = scenario_fields()
    for path, key in fields.items():
        node = at(spec, path)
        assert real(node["properties"]["name"]["enum"]) == real(found[key].names()), path
        assert real(a["title"] for a in node["anyOf"]) == real(found[key].names())
    where = {key: path for path, key in fields.items()}
    for parent, name, field, key in nested_fields():
        alternative = next(a for a in at(spec, where[parent])["anyOf"] if a["title"] == name)
        assert alternative["description"] == found[parent].get(name).summary
        node = at(alternative["properties"]["params"], [field])
        assert node["properties"]["name"]["enum"] == allowed(found[parent].get(name).params, field, found[key])


def example(name: str) -> dict:
    return yaml.safe_load((ROOT / "examples" / name).read_text())


def cao(admission: dict) -> dict:
    data = example("cao-scojo-rars.yaml")
    data["grid"]["workflow_scheduling"]["params"]["admission"] = admission
    return data


def koala(claiming: str) -> dict:
    data = example("koala-w30.yaml")
    data["grid"]["claiming"] = {"name": claiming}
    data["grid"]["deadline_policy"]["params"]["preemption"] = {"name": "kill"}
    return data


def test_the_gallery_policy_names_every_policy_the_scenario_names():
    """Written by hand from each document: what it names, nested policies included."""
    cases = {
        "cao": (cao({"name": "rigid-frame", "params": {"behind": 60}}), {"scojo-pect", "rars-heft", "rigid-frame"}),
        "koala": (koala("claim-late"), {"fcfs", "close-to-files", "koala", "kill", "claim-late"}),
        "preemption": (example("reservations-preemption.yaml"), {"easy", "conservative", "suspend", "random"}),
        "zikos": (example("zikos-random.yaml") | {"grid": {"site_allocation": {"name": "python-deferred"}}},
                  {"lwr", "python-deferred"}),
    }
    for case, (doc, names) in cases.items():
        doc["run"] = {**doc.get("run", {}), "replications": 1}
        assert set(describe_policy(simengine.load_scenario(doc)).split(",")) == names, case
    # the grid's site allocation only when a stream goes through it
    doc = cao({"name": "earliest-lft"})
    assert simengine.load_scenario(doc).grid.site_allocation.name == "random"
    assert "random" not in describe_policy(simengine.load_scenario(doc))


def test_the_sweep_form_offers_each_policy_field_the_names_it_takes():
    params = {p["path"]: p["choices"] for p in sweepable_parameters(simengine.load_scenario(
        cao({"name": "rigid-frame"})))}
    found = policy_fields.registries()
    assert params["grid.workflow_scheduling.params.admission.name"] == found["reservation_admission"].names()
    assert params["grid.workflow_scheduling.name"] == found["workflow_scheduling"].names()
    params = {p["path"]: p["choices"] for p in sweepable_parameters(simengine.load_scenario(koala("python-icp")))}
    assert params["grid.claiming.name"] == found["claiming"].names()
    assert params["grid.deadline_policy.params.preemption.name"] == ["kill", "none", "requeue"]  # (no suspend)
    params = {p["path"]: p["choices"] for p in sweepable_parameters(simengine.load_scenario(
        example("reservations-preemption.yaml")))}
    assert params["platform.clusters.1.preemption.name"] == found["preemption"].names()


@pytest.mark.parametrize("placement", [None, "best-fit", "python-worst-fit"])
def test_the_preview_names_the_placement_policy_of_co_allocated_jobs(alice, placement):
    """The preview spread co-allocated components 'as Worst-Fit places them' whatever the grid's
    placement was: it names the policy the run will use (the engine's default when none is set)."""
    from simengine import presets

    spec = presets.scenario("multicluster-4x32")
    spec["grid"].pop("placement", None)
    if placement:
        spec["grid"]["placement"] = {"name": placement}
    used = simengine.load_scenario(spec).grid.placement.name  # what the engine runs
    data = client_for(alice).post("/scenarios/preview/", {"spec": spec}, content_type="application/json").json()
    (stream,) = [s for s in data["streams"] if s["kind"] == "coallocated"]
    assert stream["routing"] == "placement" and stream["placement"] == used == (placement or used)
