"""Cao's system in the web app (Django test client, embedded mode): the builder's catalog offers
the scojo-pect scheduler and the rars-heft workflow policy with Cao's defaults, a Cao scenario
checks through the builder's validate endpoint (and a mixed one is refused at its path), and
the curated demo runs and serves its run, suspended and reservation segments (docs/cao.md)."""

from __future__ import annotations

import copy
import json

import pytest
import yaml
from django.urls import reverse

from gridweb.runs.demo import CAO_DEMO, CAO_EXAMPLE, SHOWCASES, cao_demo_spec
from gridweb.runs.execution import execute_run
from gridweb.runs.models import Status
from gridweb.runs.services import create_run
from gridweb.sharing import Visibility
from tests.web.conftest import client_for

pytestmark = pytest.mark.django_db


def post_json(client, url: str, body):
    return client.post(url, data=json.dumps(body), content_type="application/json")


def _policy(catalog: dict, registry: str, name: str) -> dict:
    return next(p for p in catalog["registries"][registry]["policies"] if p["name"] == name)


def test_catalog_offers_scojo_pect_and_rars_heft(client):
    catalog = client.get(reverse("scenarios:catalog")).json()
    scojo = _policy(catalog, "local_schedulers", "scojo-pect")["params_schema"]["properties"]
    assert {k: scojo[k]["default"] for k in ("interval", "short_slice_max", "medium_share", "overhead",
                                             "short_limit", "medium_limit")} == {
        "interval": 3600.0, "short_slice_max": 600.0, "medium_share": 0.3, "overhead": 60.0,
        "short_limit": 600.0, "medium_limit": 10800.0}
    # grid.workflow_scheduling is found by the catalog like every grid policy field
    assert {"field": "workflow_scheduling", "title": "Workflow scheduling", "registry": "workflow_scheduling",
            "default": "none"} in catalog["grid_policies"]
    assert sorted(p["name"] for p in catalog["registries"]["workflow_scheduling"]["policies"]) == \
        ["none", "rars-heft"]
    rars = _policy(catalog, "workflow_scheduling", "rars-heft")["params_schema"]["properties"]
    assert (rars["fraction"]["default"], rars["comm"]["default"], rars["maf"]["default"]) == (0.4, [20.0, 600.0], 4.0)


def test_a_cao_scenario_validates_and_a_mixed_one_names_its_field(alice):
    client = client_for(alice)
    spec = cao_demo_spec()
    assert post_json(client, reverse("scenarios:validate"), {"spec": spec}).json() == {"valid": True, "errors": {}}
    mixed = copy.deepcopy(spec)
    mixed["platform"]["clusters"][2]["scheduler"] = {"name": "easy"}
    checked = post_json(client, reverse("scenarios:validate"), {"spec": mixed}).json()
    assert not checked["valid"]
    assert set(checked["errors"]) == {"platform.clusters.2.scheduler.name", "grid.workflow_scheduling.name"}
    assert any("scojo-pect" in m for m in checked["errors"]["platform.clusters.2.scheduler.name"])


def test_the_cao_demo_is_the_example_and_runs_in_embedded_mode(alice):
    assert cao_demo_spec in [build for build, _ in SHOWCASES]
    spec = cao_demo_spec()
    strip = lambda doc: {k: v for k, v in doc.items() if k not in ("name", "description")}  # noqa: E731
    assert strip(spec) == strip(yaml.safe_load(CAO_EXAMPLE.read_text())) and spec["name"] == CAO_DEMO
    run = create_run(alice, spec, name=CAO_DEMO, visibility=Visibility.PRIVATE, dispatch_now=False)
    assert execute_run(run.pk) == Status.DONE, run.error
    run.refresh_from_db()
    assert run.summary["engine_seconds"] < 10  # a modest run
    metrics = run.summary["metrics"]
    assert metrics["workflows"]["mean"] > 0 and metrics["preemptions"]["mean"] > 0
    assert "rr_long_task" in metrics and "grid_makespan" in metrics
    segments = client_for(alice).get(reverse("runs:segments", args=[run.pk])).json()
    kinds = segments["kinds"]
    col = segments["columns"]["kind"]
    seen = {kinds[k] for k in (col if isinstance(col, list) else [col["repeat"]])}
    assert {"run", "suspended", "reservation"} <= seen


def test_the_run_page_and_the_preview_take_a_cao_scenario(alice):
    client = client_for(alice)
    spec = cao_demo_spec()
    preview = post_json(client, reverse("scenarios:preview"), {"spec": spec})
    assert preview.status_code == 200, preview.content
    run = create_run(alice, spec, name=CAO_DEMO, visibility=Visibility.PRIVATE, dispatch_now=False)
    assert execute_run(run.pk) == Status.DONE, run.error
    page = client.get(reverse("runs:run", args=[run.pk]))
    assert page.status_code == 200 and "rr_long_task" in page.content.decode()
