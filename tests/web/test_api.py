"""The REST API used as a script would use it: a token, a scenario, a run in the embedded
worker, and its exports checked against each other (and against the engine's own reader)."""

from __future__ import annotations

import csv
import io
import json
import math
import time
import urllib.error
import urllib.request
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
import simengine
from django.contrib.auth.models import Group, User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone
from rest_framework.authtoken.models import Token

from gridweb.api.errors import flatten_errors
from tests.web.conftest import downloaded
from gridweb.runs import execution
from gridweb.runs.models import Run, Sweep
from gridweb.scenarios.models import Scenario, TraceFile
from simengine.traces import read_trace

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FINISHED = {"done", "failed", "cancelled"}


def two_cluster_spec(seed: int = 11, replications: int = 3, count: int = 300) -> dict[str, Any]:
    return {
        "name": "two clusters",
        "platform": {"clusters": [
            {"name": "big", "processors": 32, "scheduler": {"name": "easy"}},
            {"name": "small", "processors": 16, "scheduler": {"name": "fcfs"}},
        ]},
        "workload": {"streams": [
            {"kind": "synthetic", "name": "big-users", "target": "big", "arrival": {"target_load": 0.8},
             "size": {"kind": "uniform", "low": 1, "high": 16}, "runtime": {"kind": "exponential", "mean": 300},
             "count": count},
            {"kind": "synthetic", "name": "small-users", "target": "small", "arrival": {"target_load": 0.6},
             "size": {"kind": "uniform", "low": 1, "high": 8}, "runtime": {"kind": "exponential", "mean": 200},
             "count": count // 2},
        ]},
        "run": {"seed": seed, "replications": replications, "warmup": {"completions": 20}},
    }


@pytest.fixture(autouse=True)
def idle_worker():
    """The embedded worker outlives tests (one per process): start and end each test with it idle."""
    assert execution.embedded_worker().wait_idle(120)
    yield
    assert execution.embedded_worker().wait_idle(120), "the embedded worker did not finish its queue"


@pytest.fixture
def alice() -> User:
    user = User.objects.create_user("alice", password="pw-alice-123")
    user.groups.add(Group.objects.create(name="pds"))
    return user


# --- A tiny HTTP client, as a script outside the site would have ----------------------------------


class Api:
    def __init__(self, base_url: str, token: str | None = None):
        self.base_url, self.token = base_url.rstrip("/"), token

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, bytes, str]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", f"Token {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, response.read(), response.headers.get("Content-Type", "")
        except urllib.error.HTTPError as error:
            return error.code, error.read(), error.headers.get("Content-Type", "")

    def json(self, method: str, path: str, body: Any = None, expect: int = 200) -> Any:
        status, content, _ = self.call(method, path, body)
        assert status == expect, (method, path, status, content[:500])
        return json.loads(content)

    def wait_finished(self, run_id: int, timeout: float = 180) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            run = self.json("GET", f"/api/runs/{run_id}/")
            if run["status"] in FINISHED:
                return run
            time.sleep(0.2)
        raise AssertionError(f"run {run_id} did not finish within {timeout} s: {run}")


def read_csv(content: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(content.decode())))


# --- The scripted flow ------------------------------------------------------------------------------


def test_scripted_flow_token_scenario_run_and_consistent_exports(live_server, alice):
    anonymous = Api(live_server.url)
    token = anonymous.json("POST", "/api/token/", {"username": "alice", "password": "pw-alice-123"})["token"]
    api = Api(live_server.url, token)
    assert api.json("GET", "/api/me/")["groups"] == ["pds"]

    # Validation reports every bad field by its path, and saves nothing.
    bad = two_cluster_spec()
    bad["platform"]["clusters"][1]["processors"] = -4
    bad["workload"]["streams"][0]["runtime"]["mean"] = "long"
    errors = api.json("POST", "/api/scenarios/validate/", {"spec": bad}, expect=400)["errors"]
    assert "spec.platform.clusters.1.processors" in errors
    assert any(path.startswith("spec.workload.streams.0.runtime") for path in errors)
    assert api.json("POST", "/api/scenarios/", {"spec": bad}, expect=400)["errors"].keys() == errors.keys()
    assert Scenario.objects.count() == 0

    spec = two_cluster_spec()
    checked = api.json("POST", "/api/scenarios/validate/", {"spec": spec})
    scenario = api.json("POST", "/api/scenarios/", {"spec": spec, "tags": ["api-test"], "visibility": "group"},
                        expect=201)
    assert (scenario["name"], scenario["group"], scenario["owner"]) == ("two clusters", "pds", "alice")

    created = api.json("POST", "/api/runs/", {"scenario": scenario["id"], "tags": ["api-test"]}, expect=201)
    assert created["status"] in ("queued", "running") and created["scenario"] == scenario["id"]
    run = api.wait_finished(created["id"])
    assert run["status"] == "done", run["error"]
    assert run["scenario_hash"] == checked["scenario_hash"]
    summary = run["summary"]
    replications = summary["replications"]
    assert replications == 3 and run["metrics"] == summary["metrics"]

    # jobs.csv: one row per job and replication.
    status, content, content_type = api.call("GET", f"/api/runs/{run['id']}/jobs.csv")
    assert status == 200 and content_type.startswith("text/csv")
    jobs = read_csv(content)
    assert len(jobs) == summary["jobs"] == replications * 450
    per_replication = Counter(int(row["replication"]) for row in jobs)
    assert per_replication == {r: 450 for r in range(replications)}
    assert {row["cluster"] for row in jobs} == {"big", "small"}

    # metrics.json: its per-replication means are those of the jobs in jobs.csv.
    metrics = api.json("GET", f"/api/runs/{run['id']}/metrics.json")
    assert metrics["scenario_hash"] == run["scenario_hash"] and metrics["seed"] == 11
    assert metrics["engine_version"] == run["engine_version"]
    for r in range(replications):
        measured = [row for row in jobs if int(row["replication"]) == r and row["warmup"] == "0"
                    and row["status"] in ("completed", "killed")]
        waits = [float(row["wait"]) for row in measured]
        assert metrics["metrics"]["jobs_measured"]["values"][r] == len(measured)
        assert math.isclose(metrics["metrics"]["mean_wait"]["values"][r], sum(waits) / len(waits), rel_tol=1e-9)
    wait = metrics["metrics"]["mean_wait"]
    assert wait["ci_low"] <= wait["mean"] <= wait["ci_high"]

    # schedule.swf: the engine's own reader reads back replication 0's jobs.
    status, swf, _ = api.call("GET", f"/api/runs/{run['id']}/schedule.swf")
    assert status == 200
    swf_path = live_server_tmp(swf, "schedule.swf")
    trace = read_trace(swf_path)
    first = [row for row in jobs if row["replication"] == "0"]
    assert len(trace.jobs) == len(first)
    # (in integer seconds, as SWF readers expect: docs/output.md)
    assert sorted(trace.jobs.submit.tolist()) == sorted(float(round(float(row["submit"]))) for row in first)

    # scenario.json: the validated scenario, which hashes to the run's scenario_hash.
    scenario_doc = api.json("GET", f"/api/runs/{run['id']}/scenario.json")
    assert simengine.scenario_hash(simengine.load_scenario(scenario_doc)) == run["scenario_hash"]

    # segments/: replication 0's Gantt covers exactly the processor time of its jobs.
    segments = api.json("GET", f"/api/runs/{run['id']}/segments/")
    columns = segments["columns"]
    assert segments["rows"] == summary["segments"] == len(columns["t0"])
    area = sum(p * (t1 - t0) for p, t0, t1 in zip(columns["processors"], columns["t0"], columns["t1"]))
    busy = sum(int(row["processors"]) * (float(row["end"]) - float(row["start"])) for row in first)
    assert math.isclose(area, busy, rel_tol=1e-9)
    assert set(columns["job_id"]) <= {int(row["job_id"]) for row in first}
    assert set(columns["cluster_name"]) == {"big", "small"}

    # chunks/: the stream as stored, numbered without gaps, carrying the same segments.
    chunks, after = [], -1
    while True:
        page = api.json("GET", f"/api/runs/{run['id']}/chunks/?after={after}&limit=2")
        chunks += page["chunks"]
        if not page["more"]:
            break
        after = page["chunks"][-1]["seq"]
    assert [c["seq"] for c in chunks] == list(range(run["last_seq"] + 1))
    streamed = sorted(t0 for c in chunks if c["kind"] == "segments" for t0 in c["segments"]["t0"])
    assert streamed == pytest.approx(sorted(columns["t0"]))

    # Comments, and the run among the user's runs found by tag and policy.
    api.json("POST", f"/api/runs/{run['id']}/comments/", {"text": "EASY keeps big busy"}, expect=201)
    assert [c["text"] for c in api.json("GET", f"/api/runs/{run['id']}/comments/")] == ["EASY keeps big busy"]
    found = api.json("GET", "/api/runs/?tag=api-test&policy=fcfs&status=done")["results"]
    assert [r["id"] for r in found] == [run["id"]]

    # The exported scenario imports again as a new scenario.
    status, exported, _ = api.call("GET", f"/api/scenarios/{scenario['id']}/export/")
    assert status == 200
    again = api.json("POST", "/api/scenarios/", {"spec": json.loads(exported), "name": "imported"}, expect=201)
    assert again["spec"] == spec


def live_server_tmp(content: bytes, name: str):
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.mkdtemp(prefix="gridweb-test-api-"))
    (folder / name).write_bytes(content)
    return folder / name


# --- Other flows (test client, token header) -------------------------------------------------------


def token_client(user: User) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")


def wait_finished(client: Client, run_id: int, timeout: float = 180) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = client.get(f"/api/runs/{run_id}/").json()
        if run["status"] in FINISHED:
            return run
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} did not finish: {run}")


def test_bad_run_requests_give_field_paths_and_create_nothing(alice):
    client = token_client(alice)
    bad = two_cluster_spec()
    bad["workload"]["streams"][1]["target"] = "nowhere"
    soft = two_cluster_spec()  # soft errors are KOALA's (docs/grid.md), and a probability below 1
    soft["platform"]["clusters"][0]["soft_errors"] = 0.1
    certain = two_cluster_spec()
    certain["platform"]["clusters"][1]["soft_errors"] = 1.5

    cases = [
        ({"spec": bad}, "spec.workload.streams.1.target"),
        ({"spec": soft}, "spec.platform.clusters.0.soft_errors"),
        ({"spec": certain}, "spec.platform.clusters.1.soft_errors"),
        ({"spec": two_cluster_spec(), "scenario": 1}, "spec"),
        ({}, "spec"),
        ({"scenario": 424242}, "scenario"),
        ({"spec": two_cluster_spec(), "visibility": "everyone"}, "visibility"),
        ({"spec": two_cluster_spec(), "tags": "not-a-list"}, "tags"),
        ({"spec": "not an object"}, "spec"),
    ]
    for body, path in cases:
        response = client.post("/api/runs/", body, content_type="application/json")
        assert response.status_code == 400, body
        assert path in response.json()["errors"], (body, response.json())
    not_json = client.post("/api/runs/", "{", content_type="application/json")
    assert not_json.status_code == 400 and "" in not_json.json()["errors"]
    assert Run.objects.count() == 0


def test_run_list_filters(alice):
    bob = User.objects.create_user("bob")
    client = token_client(alice)
    spec = two_cluster_spec(count=40, replications=1)
    conservative = two_cluster_spec(count=40, replications=1)
    conservative["platform"]["clusters"][0]["scheduler"]["name"] = "conservative"
    first = client.post("/api/runs/", {"spec": spec, "name": "alpha easy", "tags": ["paper"]},
                        content_type="application/json").json()
    second = client.post("/api/runs/", {"spec": conservative, "name": "beta", "description": "backfill study",
                                        "visibility": "public"}, content_type="application/json").json()
    wait_finished(client, first["id"])
    wait_finished(client, second["id"])
    today = timezone.localdate()  # the site's day (UTC), which dates are compared in

    def ids(query: str) -> list[int]:
        response = client.get(f"/api/runs/?{query}")
        assert response.status_code == 200, response.content
        return sorted(r["id"] for r in response.json()["results"])

    assert ids("") == sorted([first["id"], second["id"]])
    assert ids("tag=paper") == [first["id"]]
    assert ids("tag=pape") == []
    assert ids("policy=conservative") == [second["id"]]
    assert ids("policy=easy") == [first["id"]]
    assert ids("q=backfill") == [second["id"]] and ids("q=ALPHA") == [first["id"]]
    assert ids("author=alice") == sorted([first["id"], second["id"]]) and ids("author=bob") == []
    assert ids("status=done") == sorted([first["id"], second["id"]]) and ids("status=failed") == []
    assert ids("platform=2 clusters") == sorted([first["id"], second["id"]])
    assert ids(f"since={today.isoformat()}") == sorted([first["id"], second["id"]])
    assert ids(f"since={(today + timedelta(days=1)).isoformat()}") == []
    assert ids(f"until={(today - timedelta(days=1)).isoformat()}") == []
    assert ids(f"until={today.isoformat()}") == sorted([first["id"], second["id"]])  # the whole day
    assert ids(f"since={today.isoformat()}T00:00:00Z&until={today.isoformat()}T23:59:59.999999Z") == \
        sorted([first["id"], second["id"]])
    # Bob sees only the public one.
    assert [r["id"] for r in token_client(bob).get("/api/runs/").json()["results"]] == [second["id"]]
    for query, field in (("since=yesterday", "since"), ("until=2025-02-30", "until"), ("status=finished", "status"),
                         ("sweep=x", "sweep")):
        response = client.get(f"/api/runs/?{query}")
        assert response.status_code == 400 and field in response.json()["errors"]


def test_trace_upload_then_run_it(alice):
    client = token_client(alice)
    lines = ["; MaxProcs: 16"] + [f"{i} {i * 40} 0 {30 + i % 50} {1 + i % 8} -1 -1 {1 + i % 8} {100 + i} -1 1 1 1 1 1 1 -1 -1"
                                   for i in range(1, 121)]
    upload = client.post("/api/traces/", {"file": SimpleUploadedFile("site.swf", ("\n".join(lines) + "\n").encode()),
                                          "visibility": "group"})
    assert upload.status_code == 201, upload.content
    trace = upload.json()
    assert (trace["jobs"], trace["max_processors"], trace["group"]) == (120, 16, "pds")
    spec = {"name": "replay", "platform": {"clusters": [{"name": "c", "processors": 16,
                                                          "scheduler": {"name": "easy"}}]},
            "workload": {"streams": [{"kind": "trace", "name": "t", "path": trace["stored_name"], "target": "c"}]}}

    run = wait_finished(client, client.post("/api/runs/", {"spec": spec}, content_type="application/json").json()["id"])

    assert run["status"] == "done", run["error"]
    jobs = read_csv(downloaded(client.get(f"/api/runs/{run['id']}/jobs.csv")))
    assert len(jobs) == 120
    assert sorted(int(row["job_id"]) for row in jobs) == list(range(1, 121))
    again = client.post("/api/traces/", {"file": SimpleUploadedFile("copy.swf", ("\n".join(lines) + "\n").encode())})
    assert again.status_code == 200 and again.json()["id"] == trace["id"] and TraceFile.objects.count() == 1
    download = client.get(f"/api/traces/{trace['id']}/download/")
    assert b"".join(download.streaming_content if download.streaming else [download.content]) == \
        ("\n".join(lines) + "\n").encode()


def test_cancel_a_queued_or_running_run_and_not_a_done_one(alice):
    client = token_client(alice)
    long_spec = two_cluster_spec(count=20000, replications=2)
    ahead = client.post("/api/runs/", {"spec": long_spec}, content_type="application/json").json()
    behind = client.post("/api/runs/", {"spec": long_spec}, content_type="application/json").json()

    cancelled = client.post(f"/api/runs/{behind['id']}/cancel/")

    assert cancelled.status_code == 200
    assert wait_finished(client, behind["id"])["status"] == "cancelled"
    done = wait_finished(client, ahead["id"])
    assert done["status"] == "done"
    refused = client.post(f"/api/runs/{ahead['id']}/cancel/")
    assert refused.status_code == 409 and "already ended" in refused.json()["detail"]
    assert client.get(f"/api/runs/{behind['id']}/jobs.csv").status_code == 409  # no result to export


def test_sweep_runs_every_point_and_aggregates(alice):
    client = token_client(alice)
    spec = two_cluster_spec(count=60, replications=2)

    bad = client.post("/api/sweeps/", {"spec": spec, "parameters": {"platform.clusters.0.processors": [0, 8]}},
                      content_type="application/json")
    assert bad.status_code == 400 and "parameters.platform.clusters.0.processors" in bad.json()["errors"]
    empty = client.post("/api/sweeps/", {"spec": spec, "parameters": {"run.seed": []}},
                        content_type="application/json")
    assert empty.status_code == 400 and any(k.startswith("parameters") for k in empty.json()["errors"])
    assert Sweep.objects.count() == 0 and Run.objects.count() == 0

    created = client.post("/api/sweeps/", {"spec": spec, "parameters": {"run.seed": [1, 2, 3]}, "name": "seeds"},
                          content_type="application/json")
    assert created.status_code == 201, created.content
    sweep = created.json()
    assert len(sweep["runs"]) == 3
    assert sorted(r["sweep_point"]["run.seed"] for r in sweep["runs"]) == [1, 2, 3]
    for run in sweep["runs"]:
        assert wait_finished(client, run["id"])["status"] == "done"
    deadline = time.monotonic() + 60
    while (detail := client.get(f"/api/sweeps/{sweep['id']}/").json())["status"] not in FINISHED:
        assert time.monotonic() < deadline, detail
        time.sleep(0.2)
    assert detail["status"] == "done" and len(detail["aggregate"]) == 3
    assert [s["id"] for s in client.get("/api/sweeps/").json()["results"]] == [sweep["id"]]
    assert sorted(r["id"] for r in client.get(f"/api/runs/?sweep={sweep['id']}").json()["results"]) == \
        sorted(r["id"] for r in sweep["runs"])


def test_fork_update_and_delete_a_scenario(alice):
    bob = User.objects.create_user("bob")
    bob.groups.add(Group.objects.get(name="pds"))
    mine = token_client(alice).post("/api/scenarios/", {"spec": two_cluster_spec(), "visibility": "group"},
                                    content_type="application/json").json()
    theirs = token_client(bob)

    fork = theirs.post(f"/api/scenarios/{mine['id']}/fork/", {}, content_type="application/json")
    assert fork.status_code == 201
    assert (fork.json()["owner"], fork.json()["forked_from"], fork.json()["name"]) == \
        ("bob", mine["id"], "two clusters (fork)")
    changed = two_cluster_spec(seed=99)
    assert theirs.put(f"/api/scenarios/{fork.json()['id']}/", {"name": "bob's", "spec": changed},
                      content_type="application/json").json()["spec"]["run"]["seed"] == 99
    invalid = two_cluster_spec()
    invalid["run"]["replications"] = 0
    refused = theirs.patch(f"/api/scenarios/{fork.json()['id']}/", {"spec": invalid}, content_type="application/json")
    assert refused.status_code == 400 and "spec.run.replications" in refused.json()["errors"]
    assert Scenario.objects.get(pk=fork.json()["id"]).spec["run"]["seed"] == 99  # unchanged by the refusal
    assert theirs.delete(f"/api/scenarios/{mine['id']}/").status_code == 403
    assert token_client(alice).delete(f"/api/scenarios/{mine['id']}/").status_code == 204
    assert Scenario.objects.filter(pk=mine["id"]).count() == 0


def test_docs_work_offline():
    client = Client()
    body = client.get("/api/docs/").content.decode()

    assert "swagger-ui" in body
    assert "cdn" not in body.lower() and "http://" not in body.replace("http://testserver", "")
    from django.contrib.staticfiles import finders

    assert finders.find("drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js")
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert schema["info"]["title"] == "GridWeb API"
    assert "tokenAuth" in schema["components"]["securitySchemes"]


def test_error_paths_are_flattened():
    detail = {"spec": {"platform.clusters.0.processors": ["must be greater than 0"], "": ["bad document"]},
              "tags": {1: ["too long"]}, "non_field_errors": ["either spec or scenario"],
              "items": [{}, {"name": ["required"]}]}

    assert flatten_errors(detail) == {
        "spec.platform.clusters.0.processors": ["must be greater than 0"], "spec": ["bad document"],
        "tags.1": ["too long"], "": ["either spec or scenario"], "items.1.name": ["required"],
    }


def test_the_api_schema_names_the_policies_this_server_offers():
    """An installed package's scheduler (examples/policies) is named in the OpenAPI schema of a
    scenario document, beside the built-in ones."""
    schema = Client().get("/api/schema/", HTTP_ACCEPT="application/json").json()
    spec = schema["components"]["schemas"]["ScenarioRequest"]["properties"]["spec"]
    cluster = spec["properties"]["platform"]["properties"]["clusters"]["items"]["properties"]
    names = cluster["scheduler"]["properties"]["name"]["enum"]
    assert {"fcfs", "easy", "conservative", "sjf-backfill"} <= set(names)
    grid = spec["properties"]["grid"]["properties"]
    assert {"worst-fit", "best-fit"} <= set(grid["placement"]["properties"]["name"]["enum"])
    assert {"random", "round-robin"} <= set(grid["site_allocation"]["properties"]["name"]["enum"])
