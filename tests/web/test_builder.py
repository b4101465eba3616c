"""The scenario pages and the builder's endpoints, through Django's test client (embedded mode).

Covers who may do what (anonymous visitors, owners, group members, outsiders), CSRF on every
POST, validation errors keyed by dotted field paths, the live preview's numbers, import/export,
forks, duplicates and the Run button.
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from django.contrib.auth.models import Group
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from gridweb.runs.models import Run, Status
from gridweb.scenarios.models import Scenario, TraceFile
from gridweb.sharing import MAX_TAG_LENGTH, Visibility
from simengine.registry import LOCAL_SCHEDULERS, Entry
from tests.web.conftest import client_for

pytestmark = pytest.mark.django_db


def small_spec(**changes) -> dict:
    """A valid two-cluster scenario: one local stream at 50% load and one grid stream."""
    spec = {
        "name": "Two clusters",
        "description": "for the builder tests",
        "platform": {"clusters": [
            {"name": "c1", "processors": 16, "scheduler": {"name": "easy"}},
            {"name": "c2", "processors": 48, "speed": 2.0},
        ]},
        "workload": {"streams": [
            {"kind": "synthetic", "name": "local", "target": "c1", "arrival": {"target_load": 0.5},
             "size": {"kind": "uniform", "low": 1, "high": 8, "integer": True},
             "runtime": {"kind": "exponential", "mean": 300}, "count": 200},
        ]},
        "run": {"seed": 3, "stop": {"completions": 150}},
    }
    spec.update(changes)
    return spec


def make_scenario(owner, visibility=Visibility.PRIVATE, group=None, **changes) -> Scenario:
    spec = small_spec(**changes)
    return Scenario.objects.create(owner=owner, visibility=visibility, group=group, name=spec["name"], spec=spec,
                                   tags=["test"])


def post_json(client: Client, url: str, body, **extra):
    return client.post(url, data=json.dumps(body), content_type="application/json", **extra)


def builder_config(response) -> dict:
    """The JSON the builder page hands to builder.js."""
    html = response.content.decode()
    start = html.index('<script id="builder-config" type="application/json">') + len(
        '<script id="builder-config" type="application/json">')
    return json.loads(html[start:html.index("</script>", start)])


def save_body(spec, **meta) -> dict:
    return {"spec": spec, "meta": {"tags": ["a", "b"], "visibility": "private", "group": None, **meta}}


# --- anonymous visitors ----------------------------------------------------------------------------


def _urls_needing_login(scenario: Scenario) -> list[tuple[str, str]]:
    pk = scenario.pk
    return [
        ("get", reverse("scenarios:new")),
        ("get", reverse("scenarios:new") + "?preset=das2"),
        ("get", reverse("scenarios:import")),
        ("get", reverse("scenarios:edit", args=[pk])),
        ("post", reverse("scenarios:new")),
        ("post", reverse("scenarios:edit", args=[pk])),
        ("post", reverse("scenarios:validate")),
        ("post", reverse("scenarios:preview")),
        ("post", reverse("scenarios:import")),
        ("post", reverse("scenarios:trace_upload")),
        ("post", reverse("scenarios:duplicate", args=[pk])),
        ("post", reverse("scenarios:delete", args=[pk])),
        ("post", reverse("scenarios:run", args=[pk])),
        # A private scenario's own pages send a visitor to log in too.
        ("get", reverse("scenarios:detail", args=[pk])),
        ("get", reverse("scenarios:export", args=[pk])),
    ]


def test_anonymous_visitors_are_sent_to_log_in(client, alice):
    scenario = make_scenario(alice)
    for method, url in _urls_needing_login(scenario):
        response = getattr(client, method)(url)
        assert response.status_code == 302, (method, url, response.status_code)
        assert response.url.startswith("/accounts/login/?next="), (method, url, response.url)
    assert Scenario.objects.count() == 1
    assert Run.objects.count() == 0


def test_anonymous_visitors_see_public_scenarios_only(client, alice, lab):
    public = make_scenario(alice, Visibility.PUBLIC, name="Open scenario")
    make_scenario(alice, Visibility.PRIVATE, name="Secret scenario")
    make_scenario(alice, Visibility.GROUP, group=lab, name="Lab scenario")

    listing = client.get(reverse("scenarios:list")).content.decode()
    assert "Open scenario" in listing
    assert "Secret scenario" not in listing and "Lab scenario" not in listing

    detail = client.get(reverse("scenarios:detail", args=[public.pk]))
    assert detail.status_code == 200
    assert "Open scenario" in detail.content.decode()
    assert 'id="link-edit"' not in detail.content.decode()
    exported = client.get(reverse("scenarios:export", args=[public.pk]))
    assert exported.status_code == 200
    assert json.loads(exported.content) == public.spec


# --- outsiders, group members, owners --------------------------------------------------------------


def test_outsider_gets_404_for_a_private_scenario_and_changes_nothing(alice, bob):
    scenario = make_scenario(alice)
    before = copy.deepcopy(scenario.spec)
    client = client_for(bob)
    pk = scenario.pk

    for url in ("detail", "edit", "export"):
        assert client.get(reverse(f"scenarios:{url}", args=[pk])).status_code == 404, url
    assert post_json(client, reverse("scenarios:edit", args=[pk]), save_body(small_spec(name="Hijacked"))).status_code == 404
    for url in ("duplicate", "delete", "run"):
        assert client.post(reverse(f"scenarios:{url}", args=[pk])).status_code == 404, url
    assert client.get(reverse("scenarios:new") + f"?from={pk}").status_code == 404

    scenario.refresh_from_db()
    assert scenario.spec == before and scenario.name == "Two clusters"
    assert Scenario.objects.count() == 1 and Run.objects.count() == 0


def test_group_member_views_but_cannot_save_duplicate_or_delete(alice, carol, lab):
    scenario = make_scenario(alice, Visibility.GROUP, group=lab)
    client = client_for(carol)
    pk = scenario.pk

    detail = client.get(reverse("scenarios:detail", args=[pk]))
    assert detail.status_code == 200
    body = detail.content.decode()
    assert 'id="link-fork"' in body and 'id="link-edit"' not in body and 'id="btn-delete"' not in body
    # The builder is the owner's: a viewer is sent to the read-only page.
    edit = client.get(reverse("scenarios:edit", args=[pk]))
    assert edit.status_code == 302 and edit.url == reverse("scenarios:detail", args=[pk])

    assert post_json(client, reverse("scenarios:edit", args=[pk]), save_body(small_spec(name="Mine now"))).status_code == 403
    assert client.post(reverse("scenarios:delete", args=[pk])).status_code == 403
    assert client.post(reverse("scenarios:duplicate", args=[pk])).status_code == 403

    scenario.refresh_from_db()
    assert scenario.name == "Two clusters" and scenario.owner == alice
    assert Scenario.objects.count() == 1


def test_list_shows_what_the_user_may_view_and_searches(alice, bob, carol, lab):
    make_scenario(alice, Visibility.PRIVATE, name="Alice private")
    make_scenario(alice, Visibility.GROUP, group=lab, name="Lab EASY study")
    make_scenario(alice, Visibility.PUBLIC, name="Public FCFS")
    make_scenario(bob, Visibility.PRIVATE, name="Bob private")

    def names(client, **params):
        response = client.get(reverse("scenarios:list"), params)
        assert response.status_code == 200
        return {s.name for s in response.context["page"].object_list}

    assert names(client_for(bob)) == {"Public FCFS", "Bob private"}
    assert names(client_for(carol)) == {"Lab EASY study", "Public FCFS"}
    assert names(client_for(alice)) == {"Alice private", "Lab EASY study", "Public FCFS"}
    assert names(client_for(carol), q="easy") == {"Lab EASY study"}
    assert names(client_for(alice), q="test") == {"Alice private", "Lab EASY study", "Public FCFS"}  # a tag
    assert names(client_for(alice), q="bob") == set()  # bob's only scenario is private
    assert names(client_for(bob), mine="1") == {"Bob private"}


# --- CSRF ------------------------------------------------------------------------------------------


def test_csrf_is_enforced_on_every_post(alice):
    scenario = make_scenario(alice)
    client = client_for(alice, csrf=True)
    pk = scenario.pk
    posts = [
        (reverse("scenarios:new"), save_body(small_spec(name="New one"))),
        (reverse("scenarios:edit", args=[pk]), save_body(small_spec(name="Renamed"))),
        (reverse("scenarios:validate"), {"spec": small_spec()}),
        (reverse("scenarios:preview"), {"spec": small_spec()}),
    ]
    for url, body in posts:
        assert post_json(client, url, body).status_code == 403, url
    for name in ("duplicate", "run", "delete"):
        assert client.post(reverse(f"scenarios:{name}", args=[pk])).status_code == 403, name
    assert client.post(reverse("scenarios:trace_upload"),
                       {"file": SimpleUploadedFile("t.swf", b"1 0 0 10 1")}).status_code == 403
    assert Scenario.objects.count() == 1 and Run.objects.count() == 0 and TraceFile.objects.count() == 0
    scenario.refresh_from_db()
    assert scenario.name == "Two clusters"

    # With the token the builder page hands out, the same request goes through.
    page = client.get(reverse("scenarios:edit", args=[pk]))
    token = page.cookies["csrftoken"].value
    saved = post_json(client, reverse("scenarios:edit", args=[pk]), save_body(small_spec(name="Renamed")),
                      HTTP_X_CSRFTOKEN=token)
    assert saved.status_code == 200, saved.content
    scenario.refresh_from_db()
    assert scenario.name == "Renamed"


# --- validation --------------------------------------------------------------------------------------


def test_validate_returns_every_error_by_dotted_path(alice):
    spec = small_spec()
    spec["platform"]["clusters"][1]["processors"] = 0
    spec["platform"]["clusters"][0]["scheduler"] = {"name": "easy", "params": {"overrun_step": -5}}
    spec["workload"]["streams"][0]["arrival"] = {}
    spec["run"]["replications"] = "many"
    response = post_json(client_for(alice), reverse("scenarios:validate"), {"spec": spec})

    assert response.status_code == 200
    found = response.json()
    assert found["valid"] is False
    assert set(found["errors"]) >= {
        "platform.clusters.1.processors",
        "platform.clusters.0.scheduler.params.overrun_step",
        "workload.streams.0.arrival",
        "run.replications",
    }
    assert any("greater than 0" in m for m in found["errors"]["platform.clusters.1.processors"])


def test_validate_accepts_a_good_document_and_checks_the_name(alice):
    client = client_for(alice)
    assert post_json(client, reverse("scenarios:validate"), {"spec": small_spec()}).json() == {"valid": True, "errors": {}}
    nameless = post_json(client, reverse("scenarios:validate"), {"spec": small_spec(name="  ")}).json()
    assert nameless["valid"] is False and list(nameless["errors"]) == ["name"]
    not_json = client.post(reverse("scenarios:validate"), data="{nope", content_type="application/json")
    assert not_json.status_code == 400 and "not JSON" in not_json.json()["errors"][""][0]


def test_the_builder_and_the_api_take_the_same_tags(alice):
    """One limit for both (gridweb.sharing): a tag of MAX_TAG_LENGTH characters is saved by
    either, one character more is refused by either, naming the tags."""
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(alice)
    longest, longer = "x" * MAX_TAG_LENGTH, "y" * (MAX_TAG_LENGTH + 1)
    saved = post_json(client_for(alice), reverse("scenarios:new"), save_body(small_spec(), tags=[longest]))
    assert saved.status_code in (200, 201), saved.content
    assert api.post("/api/scenarios/", {"spec": small_spec(), "tags": [longest]}, format="json").status_code == 201
    refused = post_json(client_for(alice), reverse("scenarios:new"), save_body(small_spec(), tags=[longer]))
    assert refused.status_code == 400 and "meta.tags" in refused.json()["errors"]
    answer = api.post("/api/scenarios/", {"spec": small_spec(), "tags": [longer]}, format="json")
    assert answer.status_code == 400 and "tags.0" in answer.json()["errors"]
    assert sorted(t for s in Scenario.objects.all() for t in s.tags) == [longest, longest]


def test_saving_a_bad_document_creates_nothing_and_names_the_fields(alice, bob):
    client = client_for(alice)
    bad = small_spec()
    bad["platform"]["clusters"][0]["processors"] = 0
    bad["workload"]["streams"][0]["target"] = "nowhere"

    response = post_json(client, reverse("scenarios:new"), save_body(bad, visibility="group", group=None, tags="x" * (MAX_TAG_LENGTH + 1)))

    assert response.status_code == 400
    errors = response.json()["errors"]
    assert "platform.clusters.0.processors" in errors
    assert "meta.group" in errors and "meta.tags" in errors
    assert Scenario.objects.count() == 0

    # Someone else's group is refused too.
    other = Group.objects.create(name="other")
    bob.groups.add(other)
    response = post_json(client, reverse("scenarios:new"), save_body(small_spec(), visibility="group", group=other.pk))
    assert response.status_code == 400 and "meta.group" in response.json()["errors"]
    assert Scenario.objects.count() == 0

    # And a bad update leaves the saved scenario as it was.
    scenario = make_scenario(alice)
    response = post_json(client, reverse("scenarios:edit", args=[scenario.pk]), save_body(bad))
    assert response.status_code == 400
    scenario.refresh_from_db()
    assert scenario.spec == small_spec()


def test_saving_creates_then_updates_the_owners_scenario(alice, lab):
    client = client_for(alice)
    response = post_json(client, reverse("scenarios:new"), save_body(small_spec(), visibility="group", group=lab.pk))

    assert response.status_code == 201, response.content
    created = Scenario.objects.get(pk=response.json()["id"])
    assert created.owner == alice and created.group == lab and created.visibility == "group"
    assert created.spec == small_spec() and created.name == "Two clusters" and created.tags == ["a", "b"]
    assert response.json()["urls"]["edit"] == reverse("scenarios:edit", args=[created.pk])

    changed = small_spec(name="Two clusters, EASY everywhere")
    changed["platform"]["clusters"][1]["scheduler"] = {"name": "easy", "params": {"overrun_step": 30}}
    response = post_json(client, reverse("scenarios:edit", args=[created.pk]), save_body(changed))
    assert response.status_code == 200
    created.refresh_from_db()
    assert created.name == "Two clusters, EASY everywhere" and created.visibility == "private"
    assert created.spec["platform"]["clusters"][1]["scheduler"]["params"] == {"overrun_step": 30}
    assert Scenario.objects.count() == 1


# --- the builder page ------------------------------------------------------------------------------


def test_builder_starts_blank_from_a_preset_a_scenario_or_a_run(alice, carol, lab):
    client = client_for(carol)
    blank = builder_config(client.get(reverse("scenarios:new")))
    assert blank["mode"] == "new" and blank["document"]["platform"]["clusters"] == []
    assert blank["meta"]["group"] == lab.pk  # the group offered first is the user's own

    preset = builder_config(client.get(reverse("scenarios:new") + "?preset=grid-4site-zikos"))
    clusters = preset["document"]["platform"]["clusters"]
    assert [c["processors"] for c in clusters] == [8, 16, 24, 32]  # the preset written out, editable
    assert "preset" not in preset["document"]["platform"]
    assert client.get(reverse("scenarios:new") + "?preset=nope").status_code == 404

    scenario = make_scenario(alice, Visibility.GROUP, group=lab)
    fork = builder_config(client.get(reverse("scenarios:new") + f"?from={scenario.pk}"))
    assert fork["forked_from"]["id"] == scenario.pk
    assert fork["document"]["platform"] == scenario.spec["platform"]

    run = Run.objects.create(owner=alice, group=lab, visibility=Visibility.GROUP, name="a run",
                             spec=small_spec(name="From a run"), scenario=scenario)
    from_run = builder_config(client.get(reverse("scenarios:new") + f"?from_run={run.pk}"))
    assert from_run["document"]["name"] == "From a run" and from_run["forked_from"]["id"] == scenario.pk
    run.visibility = Visibility.PRIVATE
    run.save()
    assert client.get(reverse("scenarios:new") + f"?from_run={run.pk}").status_code == 404


def test_a_newly_registered_policy_appears_in_the_builder_with_its_parameter_form(alice, monkeypatch):
    from pydantic import BaseModel, ConfigDict, Field

    class ShortestFirstParams(BaseModel):
        model_config = ConfigDict(extra="forbid")
        window: int = Field(10, ge=1, description="jobs looked at")

    entry = Entry("shortest_first", ShortestFirstParams, object(), "Shortest job first (test policy)")
    monkeypatch.setitem(LOCAL_SCHEDULERS._entries, "shortest_first", entry)

    config = builder_config(client_for(alice).get(reverse("scenarios:new")))
    registry = config["catalog"]["registries"][config["catalog"]["cluster_scheduler"]["registry"]]
    policy = next(p for p in registry["policies"] if p["name"] == "shortest_first")
    assert policy["summary"] == "Shortest job first (test policy)"
    assert policy["params_schema"]["properties"]["window"]["minimum"] == 1

    # The engine checks its parameters like any other policy's, at the builder's path.
    spec = small_spec()
    spec["platform"]["clusters"][0]["scheduler"] = {"name": "shortest_first", "params": {"window": 0}}
    errors = post_json(client_for(alice), reverse("scenarios:validate"), {"spec": spec}).json()["errors"]
    assert "platform.clusters.0.scheduler.params.window" in errors


def test_catalog_lists_distributions_grid_policies_and_presets(client):
    catalog = client.get(reverse("scenarios:catalog")).json()
    kinds = {d["kind"]: d for d in catalog["distributions"]}
    assert {"bounded_pareto", "rsd", "exponential"} <= set(kinds)
    assert set(kinds["bounded_pareto"]["schema"]["properties"]) >= {"alpha", "high", "low", "mean"}
    # Every policy field of the engine's Grid model, in its order: new kinds appear by themselves.
    assert [g["field"] for g in catalog["grid_policies"]] == ["site_allocation", "placement", "deadline_policy",
                                                           "claiming", "workflow_scheduling"]
    assert {p["name"] for p in catalog["registries"]["grid_placement"]["policies"]} >= {"worst-fit"}
    assert {p["name"] for p in catalog["registries"]["deadline_policy"]["policies"]} >= {"rpp"}
    assert {p["name"] for p in catalog["registries"]["site_allocation"]["policies"]} >= {"random", "deferred"}
    assert "das2" in {p["name"] for p in catalog["presets"]}
    assert catalog["features"] == {"file_sites": True, "bandwidth": True, "grid": True, "run": True,
                                   "reservations": True}


# --- preview -----------------------------------------------------------------------------------------


def test_preview_histograms_count_every_sampled_job_and_the_load_matches_the_target(alice):
    spec = small_spec(run={"seed": 11})  # no stop rule yet: the preview still works while editing
    spec["workload"]["streams"][0].pop("count")
    spec["workload"]["streams"].append(
        {"kind": "synthetic", "name": "heavy", "target": "c2", "arrival": {"target_load": 0.8},
         "size": {"kind": "rsd", "low": 1, "high": 32, "q": 0.9},
         "runtime": {"kind": "bounded_pareto", "alpha": 1.5, "high": 10000, "mean": 100}})

    response = post_json(client_for(alice), reverse("scenarios:preview"), {"spec": spec})

    assert response.status_code == 200
    data = response.json()
    assert data["errors"] == {}
    assert [s["name"] for s in data["streams"]] == ["local", "heavy"]
    for stream in data["streams"]:
        assert stream["jobs"] == data["jobs_per_stream"] >= 1000
        for kind in ("sizes", "runtimes"):
            hist = stream[kind]
            assert sum(hist["counts"]) == hist["total"] == stream["jobs"]
            assert len(hist["edges"]) == len(hist["counts"]) + 1
            assert hist["edges"] == sorted(hist["edges"])
            assert hist["edges"][0] <= hist["min"] and hist["max"] <= hist["edges"][-1]
    local, heavy = data["streams"]
    # Uniform whole numbers 1..8: one bar per size, each about 1/8 of the jobs.
    assert len(local["sizes"]["counts"]) == 8
    assert all(abs(c / local["jobs"] - 1 / 8) < 0.03 for c in local["sizes"]["counts"])
    assert heavy["runtimes"]["scale"] == "log"  # the bounded Pareto's tail spans decades
    loads = {c["name"]: c["offered_load"] for c in data["clusters"]}
    assert loads["c1"] == pytest.approx(0.5, rel=0.1)
    assert loads["c2"] == pytest.approx(0.8, rel=0.25)  # heavy tail: a noisier estimate
    assert local["offered_load"] == pytest.approx(loads["c1"])


def test_preview_spreads_grid_jobs_with_the_site_allocation_policy(alice):
    spec = small_spec()
    spec["workload"]["streams"] = [
        {"kind": "synthetic", "name": "grid-jobs", "target": "grid", "arrival": {"target_load": 0.6},
         "size": {"kind": "constant", "value": 1}, "runtime": {"kind": "exponential", "mean": 50}}]
    spec["grid"] = {"site_allocation": {"name": "random", "params": {"weights": "equal"}}}

    data = post_json(client_for(alice), reverse("scenarios:preview"), {"spec": spec}).json()

    (stream,) = data["streams"]
    assert stream["routing"] == "policy" and stream["sizes"]["counts"] == [stream["jobs"]]
    assert stream["offered_load"] == pytest.approx(0.6, rel=0.1)
    loads = {c["name"]: c["offered_load"] for c in data["clusters"]}
    # Half the work to each cluster: c1 has 16 of the 112 units of capacity, c2 96.
    assert loads["c1"] == pytest.approx(0.6 * 112 / 2 / 16, rel=0.1)
    assert loads["c2"] == pytest.approx(0.6 * 112 / 2 / 96, rel=0.1)


def test_preview_counts_every_component_of_co_allocated_jobs(alice):
    """Ballier et al.'s global jobs have N_c components of S processors each: the offered load
    is U_g = lambda E[N_c] E[S] E[runtime] / (N C), not a third of it as single-component jobs
    would give."""
    from simengine import presets

    spec = presets.scenario("multicluster-4x32")  # local load 30% per cluster, global load 20%
    rate = 0.0041  # global jobs per second, as in the reproduction's Figure 4 axis
    spec["workload"]["streams"][-1].update(
        arrival={"rate": rate}, size={"kind": "constant", "value": 8},
        components={"kind": "uniform", "low": 2, "high": 4, "integer": True})
    # Computed here from the model, not by the preview: E[N_c] = 3, E[S] = 8, E[runtime] = 200 s, 4 x 32.
    global_load = rate * 3 * 8 * 200 / (4 * 32)

    data = post_json(client_for(alice), reverse("scenarios:preview"), {"spec": spec}).json()

    assert data["errors"] == {}
    glob = data["streams"][-1]
    assert glob["kind"] == "coallocated" and glob["routing"] == "placement" and glob["placement"] == "worst-fit"
    assert glob["expected_load"] == pytest.approx(global_load, rel=1e-9)
    assert glob["offered_load"] == pytest.approx(global_load, rel=0.2)
    # the components per job: one bar for each of 2, 3 and 4, about a third of the jobs each
    components = glob["components"]
    assert components["total"] == glob["jobs"] and len(components["counts"]) == 3
    assert [round((lo + hi) / 2) for lo, hi in zip(components["edges"], components["edges"][1:])] == [2, 3, 4]
    assert all(abs(c / glob["jobs"] - 1 / 3) < 0.05 for c in components["counts"])
    # each cluster: its own 30% of local work plus an equal share of the components' work
    for cluster in data["clusters"]:
        assert cluster["offered_load"] == pytest.approx(0.3 + global_load, rel=0.2)


def test_preview_of_the_ballier_preset_offers_its_stated_global_load(alice):
    from simengine import presets

    spec = presets.scenario("multicluster-4x32")
    stated = spec["workload"]["streams"][-1]["arrival"]["target_load"]  # U_g = 20%

    data = post_json(client_for(alice), reverse("scenarios:preview"), {"spec": spec}).json()

    glob = data["streams"][-1]
    assert glob["offered_load"] == pytest.approx(stated, rel=0.2)
    total = sum(c["offered_load"] * c["processors"] for c in data["clusters"]) / sum(
        c["processors"] for c in data["clusters"])
    assert total == pytest.approx(0.3 + stated, rel=0.2)


def test_preview_reports_a_broken_stream_and_still_shows_the_others(alice):
    spec = small_spec()
    broken = copy.deepcopy(spec["workload"]["streams"][0])
    broken.update(name="broken", size={"kind": "rsd", "low": 1, "high": 8})  # q missing
    spec["workload"]["streams"].insert(0, broken)

    data = post_json(client_for(alice), reverse("scenarios:preview"), {"spec": spec}).json()

    assert [s["index"] for s in data["streams"]] == [1]
    assert "workload.streams.0.size.q" in data["errors"]


# --- import / export ---------------------------------------------------------------------------------


def test_export_then_import_round_trip(alice):
    client = client_for(alice)
    scenario = make_scenario(alice)

    exported = client.get(reverse("scenarios:export", args=[scenario.pk]))
    assert exported.status_code == 200
    assert exported["Content-Disposition"] == 'attachment; filename="Two-clusters.json"'
    document = json.loads(exported.content)
    assert document == scenario.spec

    upload = SimpleUploadedFile("Two-clusters.json", exported.content, content_type="application/json")
    imported = client.post(reverse("scenarios:import"), {"file": upload})
    assert imported.status_code == 200
    config = builder_config(imported)
    assert config["mode"] == "new" and config["document"] == document and config["errors"] == {}

    # Saved from the builder, it is the same scenario again.
    saved = post_json(client, reverse("scenarios:new"), save_body(config["document"]))
    assert saved.status_code == 201
    assert Scenario.objects.get(pk=saved.json()["id"]).spec == scenario.spec


def test_import_shows_the_documents_errors_and_refuses_what_is_not_a_scenario(alice):
    client = client_for(alice)
    bad = small_spec()
    bad["platform"]["clusters"][0]["processors"] = -1
    response = client.post(reverse("scenarios:import"),
                           {"file": SimpleUploadedFile("bad.json", json.dumps({"spec": bad, "tags": ["x"]}).encode())})
    assert response.status_code == 200
    config = builder_config(response)
    assert "platform.clusters.0.processors" in config["errors"] and config["meta"]["tags"] == ["x"]

    broken = client.post(reverse("scenarios:import"), {"file": SimpleUploadedFile("b.json", b'{"name": "x",\n oops}')})
    assert broken.status_code == 400
    assert "invalid JSON at line 2" in broken.content.decode()
    listed = client.post(reverse("scenarios:import"), {"file": SimpleUploadedFile("l.json", b"[1, 2]")})
    assert listed.status_code == 400 and "must be a JSON object" in listed.content.decode()
    assert Scenario.objects.count() == 0


def test_imported_koala_example_validates_and_previews_every_component(alice):
    """examples/koala-w30.yaml (a ``kind: koala`` stream with job shapes, files and a background
    band) imported as JSON: the builder takes it without errors, and the preview draws its jobs
    as KOALA does — 1, 2 or 4 components of 8 or 16 processors — at the stream's 30% load, with
    the band's 30% floor on every cluster."""
    from pathlib import Path

    import yaml

    example = yaml.safe_load((Path(__file__).resolve().parents[2] / "examples" / "koala-w30.yaml").read_text())
    client = client_for(alice)
    upload = SimpleUploadedFile("koala-w30.json", json.dumps(example).encode(), content_type="application/json")
    imported = client.post(reverse("scenarios:import"), {"file": upload})
    assert imported.status_code == 200
    config = builder_config(imported)
    assert config["errors"] == {} and config["document"] == example
    assert post_json(client, reverse("scenarios:validate"), {"spec": config["document"]}).json()["valid"] is True

    response = post_json(client, reverse("scenarios:preview"), {"spec": config["document"]})
    assert response.status_code == 200
    data = response.json()
    assert data["errors"] == {}
    (koala,) = data["streams"]
    assert koala["kind"] == "koala" and koala["jobs"] > 0
    centres = lambda hist: [round((lo + hi) / 2) for lo, hi, n in zip(hist["edges"], hist["edges"][1:],  # noqa: E731
                                                                        hist["counts"]) if n]
    assert centres(koala["components"]) == [1, 2, 4] and koala["components"]["total"] == koala["jobs"]
    # every component has a size: as many sizes as components, mean components per job 7/3
    assert koala["sizes"]["total"] == pytest.approx(koala["jobs"] * 7 / 3, rel=0.05)
    assert centres(koala["sizes"]) == [8, 16]
    assert (koala["runtimes"]["min"], koala["runtimes"]["max"]) == (90, 192)  # the shapes' two runtimes
    stated = example["workload"]["streams"][0]["arrival"]["target_load"]
    band_low = example["workload"]["streams"][0]["background"]["low"]
    assert koala["expected_load"] == pytest.approx(stated, rel=1e-9)
    assert koala["offered_load"] == pytest.approx(stated, rel=0.1)
    for cluster in data["clusters"]:
        assert cluster["offered_load"] == pytest.approx(band_low + stated, rel=0.1)
    assert any("KOALA" in note for note in data["notes"])  # the preview says how it approximates
    assert Scenario.objects.count() == 0  # importing and previewing save nothing


# --- fork, duplicate, delete, run --------------------------------------------------------------------


def test_fork_records_where_it_came_from(alice, carol, bob, lab):
    original = make_scenario(alice, Visibility.GROUP, group=lab)
    client = client_for(carol)
    config = builder_config(client.get(reverse("scenarios:new") + f"?from={original.pk}"))

    body = {"spec": config["document"], "meta": config["meta"], "forked_from": config["forked_from"]["id"]}
    response = post_json(client, reverse("scenarios:new"), body)

    assert response.status_code == 201, response.content
    fork = Scenario.objects.get(pk=response.json()["id"])
    assert fork.owner == carol and fork.forked_from == original
    assert fork.name == "Two clusters (fork)"
    # Nobody forks what they cannot see.
    body["forked_from"] = original.pk
    refused = post_json(client_for(bob), reverse("scenarios:new"), body)
    assert refused.status_code == 400 and "forked_from" in refused.json()["errors"]
    assert Scenario.objects.count() == 2


def test_duplicate_and_delete_by_the_owner(alice):
    client = client_for(alice)
    original = make_scenario(alice)

    response = client.post(reverse("scenarios:duplicate", args=[original.pk]))
    duplicate = Scenario.objects.exclude(pk=original.pk).get()
    assert response.status_code == 302 and response.url == reverse("scenarios:edit", args=[duplicate.pk])
    assert duplicate.owner == alice and duplicate.forked_from == original
    assert duplicate.name == "Copy of Two clusters" and duplicate.spec["workload"] == original.spec["workload"]

    assert client.get(reverse("scenarios:delete", args=[original.pk])).status_code == 405
    response = client.post(reverse("scenarios:delete", args=[original.pk]))
    assert response.status_code == 302 and response.url == reverse("scenarios:list")
    assert list(Scenario.objects.values_list("pk", flat=True)) == [duplicate.pk]
    duplicate.refresh_from_db()
    assert duplicate.forked_from is None  # the original is gone; the copy stays


def test_run_button_creates_a_queued_run_and_opens_its_page(alice, carol, lab):
    scenario = make_scenario(alice, Visibility.GROUP, group=lab)

    response = client_for(alice).post(reverse("scenarios:run", args=[scenario.pk]))

    run = Run.objects.get()
    assert response.status_code == 302 and response.url == f"/runs/{run.pk}/"
    assert run.status == Status.QUEUED and run.owner == alice and run.scenario == scenario
    assert run.spec == scenario.spec and run.visibility == "group" and run.group == lab
    assert run.seed == 3 and len(run.scenario_hash) == 64

    # A viewer may run it too: the run is theirs, and private.
    client_for(carol).post(reverse("scenarios:run", args=[scenario.pk]))
    theirs = Run.objects.exclude(pk=run.pk).get()
    assert theirs.owner == carol and theirs.visibility == "private"

    # The scenario's page lists the runs each user may see.
    def listed(user):
        return list(client_for(user).get(reverse("scenarios:detail", args=[scenario.pk])).context["runs"])

    assert listed(alice) == [run]
    assert set(listed(carol)) == {run, theirs}


def test_run_of_a_scenario_that_no_longer_validates_creates_nothing(alice):
    scenario = make_scenario(alice)
    scenario.spec["platform"]["clusters"][0]["processors"] = 0  # e.g. saved by an older version
    scenario.save()

    response = client_for(alice).post(reverse("scenarios:run", args=[scenario.pk]), follow=True)

    assert Run.objects.count() == 0
    assert "platform.clusters.0.processors" in response.content.decode()


# --- traces ------------------------------------------------------------------------------------------

SWF_LINES = [
    "; Version: 2.2",
    "; MaxProcs: 16",
    "1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1",
    "2 10 0 50 2 -1 -1 2 100 -1 1 1 1 -1 1 -1 -1 -1",
    "3 20 0 80 8 -1 -1 8 100 -1 1 1 1 -1 1 -1 -1 -1",
]


def test_trace_upload_reports_the_bad_line_and_stores_nothing(alice):
    lines = SWF_LINES[:3] + ["2 10 0 fifty 2 -1 -1 2 100 -1 1 1 1 -1 1 -1 -1 -1"] + SWF_LINES[4:]
    upload = SimpleUploadedFile("corrupt.swf", "\n".join(lines).encode())

    response = client_for(alice).post(reverse("scenarios:trace_upload"), {"file": upload})

    assert response.status_code == 400
    messages = response.json()["errors"]["file"]
    assert any("line 4" in m for m in messages), messages
    assert TraceFile.objects.count() == 0


def test_uploaded_trace_is_usable_by_its_owner_only(alice, bob):
    upload = SimpleUploadedFile("tiny.swf", "\n".join(SWF_LINES).encode())
    response = client_for(alice).post(reverse("scenarios:trace_upload"), {"file": upload, "name": "Tiny"})

    assert response.status_code == 201, response.content
    trace = response.json()["trace"]
    assert trace["jobs"] == 3 and trace["name"] == "Tiny" and trace["format"] == "swf"
    stored = TraceFile.objects.get(stored_name=trace["stored_name"])
    assert stored.owner == alice

    spec = small_spec()
    spec["workload"]["streams"] = [{"kind": "trace", "name": "replay", "path": trace["stored_name"], "target": "c1"}]
    mine = post_json(client_for(alice), reverse("scenarios:validate"), {"spec": spec}).json()
    assert mine == {"valid": True, "errors": {}}
    preview = post_json(client_for(alice), reverse("scenarios:preview"), {"spec": spec}).json()
    (stream,) = preview["streams"]
    assert stream["jobs"] == 3 and stream["sizes"]["total"] == 3
    # work 400 + 100 + 640 processor-seconds over 20 s on 16 processors
    assert stream["offered_load"] == pytest.approx((4 * 100 + 2 * 50 + 8 * 80) / (20 * 16))

    theirs = post_json(client_for(bob), reverse("scenarios:validate"), {"spec": spec}).json()
    assert theirs["valid"] is False and "workload.streams.0.path" in theirs["errors"]
    # Bob's builder does not offer alice's private trace.
    names = [t["stored_name"] for t in builder_config(client_for(bob).get(reverse("scenarios:new")))["traces"]]
    assert trace["stored_name"] not in names


def test_preview_says_when_the_stop_cuts_a_finite_workload_short(alice):
    """A replay of DAS2 with run.stop.completions 10,000 simulates 10,000 of its 39,356 jobs: the
    preview says so; a stop past the workload, or an endless synthetic stream, says nothing."""
    from gridweb.scenarios.preview import preview
    from tests.conftest import ROOT

    das2 = (ROOT / "gridweb" / "demo" / "DAS2-fs1-2003-1.swf.gz").read_bytes()
    upload = SimpleUploadedFile("DAS2-fs1-2003-1.swf.gz", das2)
    uploaded = client_for(alice).post(reverse("scenarios:trace_upload"), {"file": upload})
    assert uploaded.status_code == 201, uploaded.content
    trace = uploaded.json()["trace"]["stored_name"]
    spec = {"platform": {"clusters": [{"name": "c", "processors": 128}]},
            "workload": {"streams": [{"kind": "trace", "name": "das2", "path": trace, "target": "c"}]},
            "run": {"stop": {"completions": 10000}}}
    found = preview(spec, alice)
    assert found["stop"] == {"completions": 10000, "workload": 39356, "message": found["stop"]["message"]}
    assert "at 10,000 of the workload's 39,356 jobs" in found["notes"][0]
    spec["run"]["stop"]["completions"] = 50000
    assert "stop" not in preview(spec, alice)
    spec["run"]["stop"] = {"completions": 100, "horizon": 86400.0}
    cut = preview(spec, alice)
    assert any("jobs arrive before run.stop.horizon" in n for n in cut["notes"])
    synthetic = {"kind": "synthetic", "name": "s", "target": "c", "arrival": {"rate": 0.01},
                 "size": {"kind": "constant", "value": 1}, "runtime": {"kind": "constant", "value": 10}}
    spec["workload"]["streams"] = [synthetic]
    spec["run"]["stop"] = {"completions": 100}
    assert "stop" not in preview(spec, alice)
    spec["workload"]["streams"] = [{**synthetic, "count": 5000}]
    assert preview(spec, alice)["stop"]["workload"] == 5000


def test_preview_warns_of_the_trace_jobs_their_cluster_is_too_small_for_and_the_run_rejects_them(alice):
    """DAS-2 on 32 processors: the builder said "No problems found" and the run rejected 1,335 jobs.
    The preview counts them as the run will (its rejected jobs), per stream."""
    import simengine
    from gridweb.scenarios.preview import preview
    from gridweb.scenarios.validation import validate_spec
    from simengine.traces import read_trace
    from simengine.workload import STATUS_REJECTED
    from tests.conftest import ROOT

    path = ROOT / "gridweb" / "demo" / "DAS2-fs1-2003-1.swf.gz"
    uploaded = client_for(alice).post(reverse("scenarios:trace_upload"),
                                      {"file": SimpleUploadedFile("DAS2-fs1-2003-1.swf.gz", path.read_bytes())})
    trace = uploaded.json()["trace"]["stored_name"]
    spec = {"platform": {"clusters": [{"name": "c", "processors": 16}, {"name": "d", "processors": 32}]},
            "workload": {"streams": [{"kind": "trace", "name": "das2", "path": trace, "target": "c", "limit": 3000}]}}
    sizes = read_trace(path, limit=3000).jobs.processors
    found = preview(spec, alice)["streams"][0]["too_large"]
    assert found["jobs"] == int((sizes > 16).sum()) > 0 and found["largest"] == int(sizes.max())
    assert "need more than c's 16 processors" in found["message"] and "rejects them" in found["message"]
    result = simengine.run(validate_spec(spec, alice))
    assert int((result.jobs["status"][result.jobs["replication"] == 0] == STATUS_REJECTED).sum()) == found["jobs"]
    # on the grid: only jobs larger than every cluster are rejected
    spec["workload"]["streams"][0]["target"] = "grid"
    grid = preview(spec, alice)["streams"][0]["too_large"]
    assert grid["jobs"] == int((sizes > 32).sum()) > 0 and "the largest cluster's 32 processors" in grid["message"]
    spec["platform"]["clusters"][1]["processors"] = int(sizes.max())
    assert preview(spec, alice)["streams"][0]["too_large"] is None


def test_preview_histogram_of_a_sample_matches_numpy_on_the_same_values():
    """The binning helper counts every value, in the bin numpy puts it in."""
    from gridweb.scenarios.preview import histogram

    rng = np.random.default_rng(5)
    values = rng.pareto(1.2, 5000) + 0.01
    hist = histogram(values)
    assert hist["scale"] == "log"
    expected, _ = np.histogram(values, bins=np.asarray(hist["edges"]))
    assert hist["counts"] == expected.tolist() and hist["total"] == 5000


def test_a_real_traces_run_times_with_zeros_get_log_bins_and_a_bar_of_zeros():
    """DAS2's run times (0 s to days) were one bar on a linear axis: a zero kept the log scale off."""
    from gridweb.scenarios.preview import HISTOGRAM_BINS, histogram
    from simengine.traces import read_trace
    from tests.conftest import ROOT

    runtime = read_trace(ROOT / "gridweb" / "demo" / "DAS2-fs1-2003-1.swf.gz").jobs.runtime
    zeros = int((runtime == 0).sum())
    assert zeros > 0
    hist = histogram(runtime)
    assert hist["scale"] == "log" and len(hist["counts"]) == HISTOGRAM_BINS + 1
    assert hist["edges"][0] == 0 and hist["counts"][0] == zeros and hist["total"] == len(runtime)
    assert sum(c > 0 for c in hist["counts"]) > 10  # spread over many bars, not one
    sizes = histogram(np.array([1, 1, 2, 4, 4, 4]), discrete=True)
    assert sizes["counts"] == [2, 1, 0, 3] and sizes["edges"] == [0.5, 1.5, 2.5, 3.5, 4.5]
