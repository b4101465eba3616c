"""This server's limits (settings.GRIDWEB_LIMITS, GRIDWEB_MAX_ACTIVE_RUNS, GRIDWEB_RUN_WALL_SECONDS):
runs past them are refused at submit with a 400 naming the field, from the API and the builder,
and nothing is created; a run that takes longer than its wall-clock budget ends failed with the
reason, its streamed Gantt kept (issue 14, "Runs have no limits")."""

from __future__ import annotations

import copy
import json

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

from simengine import driver

from gridweb.runs import execution
from gridweb.runs.models import Run, RunChunk, Status
from gridweb.runs.services import create_run
from gridweb.scenarios.models import Scenario

pytestmark = pytest.mark.django_db

SPEC = {
    "name": "limits",
    "platform": {"clusters": [{"name": "main", "processors": 16, "scheduler": {"name": "easy"}}]},
    "workload": {"streams": [{"kind": "synthetic", "name": "u", "target": "main", "arrival": {"target_load": 0.7},
                              "size": {"kind": "uniform", "low": 1, "high": 8},
                              "runtime": {"kind": "exponential", "mean": 60}, "count": 400}]},
    "run": {"seed": 5, "replications": 1},
}


def spec(**run) -> dict:
    out = copy.deepcopy(SPEC)
    out["run"].update(run)
    return out


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user("lena", password="pw-lena-123")


@pytest.fixture
def api(user) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")


def post(client: Client, path: str, body: dict) -> tuple[int, dict]:
    response = client.post(path, json.dumps(body), content_type="application/json")
    return response.status_code, response.json()


def test_the_probes_runs_are_refused_by_field_and_nothing_is_created(api, user):
    huge_count = copy.deepcopy(SPEC)
    huge_count["workload"]["streams"][0]["count"] = 10**9
    huge_cluster = copy.deepcopy(SPEC)
    huge_cluster["platform"]["clusters"][0]["processors"] = 10**15  # (10^30: too large for the schema, below)
    tiny_rate = copy.deepcopy(SPEC)
    tiny_rate["workload"]["streams"][0]["runtime"]["mean"] = 1e308
    for body, field in ((huge_count, "spec.workload.streams.0.count"), (spec(replications=10**6), "spec.run.replications"),
                        (huge_cluster, "spec.platform.clusters.0.processors"),
                        (tiny_rate, "spec.workload.streams.0.arrival")):
        status, answer = post(api, "/api/runs/", {"spec": body})
        assert status == 400 and field in answer["errors"], answer
        assert "this server" in json.dumps(answer) or field.endswith("arrival"), answer
    assert not Run.objects.exists()
    # the stored rows of every kept replication (count 200,000 x 40 replications: the probe's 1 GiB result)
    big = spec(replications=40)
    big["workload"]["streams"][0]["count"] = 200_000
    status, answer = post(api, "/api/runs/", {"spec": big})
    assert status == 201, answer  # 8 million rows fit the default limit ...
    with pytest.MonkeyPatch.context() as mp:
        from django.conf import settings

        mp.setitem(settings.GRIDWEB_LIMITS, "stored_rows", 1_000_000)
        status, answer = post(api, "/api/runs/", {"spec": big})
        assert status == 400 and list(answer["errors"]) == ["spec.run.keep_jobs"], answer  # ... not a smaller one
        big["run"]["keep_jobs"] = "first"
        assert post(api, "/api/runs/", {"spec": big})[0] == 201


def test_the_builder_shows_a_limit_where_the_field_is(user, settings):
    settings.GRIDWEB_LIMITS = {**settings.GRIDWEB_LIMITS, "replications": 5}
    client = Client()
    client.force_login(user)
    status, answer = post(client, "/scenarios/validate/", {"spec": spec(replications=6)})
    assert status == 200 and answer["valid"] is False
    assert answer["errors"] == {"run.replications": ["6 replications; this server runs at most 5 per run"]}
    assert post(client, "/scenarios/validate/", {"spec": spec(replications=5)})[1]["valid"] is True
    assert not Scenario.objects.exists()


def test_one_user_may_have_so_many_runs_queued_or_running(api, user, django_user_model, settings):
    settings.GRIDWEB_MAX_ACTIVE_RUNS = 2
    for _ in range(2):
        create_run(user, spec(), dispatch_now=False)
    status, answer = post(api, "/api/runs/", {"spec": spec()})
    assert status == 400 and "2 at once" in answer["errors"][""][0], answer
    # a sweep of 2 points does not fit either, and nothing of it is created
    status, answer = post(api, "/api/sweeps/", {"spec": spec(), "parameters": {"run.seed": [1, 2]}})
    assert status == 400 and "2 runs more cannot start" in json.dumps(answer), answer
    assert Run.objects.count() == 2
    # another user is not held back; an ended run frees its place
    other = django_user_model.objects.create_user("otto", password="pw-otto-123")
    create_run(other, spec(), dispatch_now=False)
    Run.objects.filter(owner=user).update(status=Status.DONE)
    assert post(api, "/api/runs/", {"spec": spec()})[0] == 201


def test_a_run_past_its_wall_clock_budget_fails_with_the_reason_and_keeps_its_gantt(user, settings):
    long_run = spec(replications=40)  # some 3 s of simulation, warm
    long_run["workload"]["streams"][0]["count"] = 150_000
    run = create_run(user, long_run, dispatch_now=False)
    settings.GRIDWEB_RUN_WALL_SECONDS = 0.5
    assert execution.execute_run(run.pk) == Status.FAILED
    run.refresh_from_db()
    assert run.status == Status.FAILED and "wall-clock" in run.error and "limit per run" in run.error, run.error
    chunks = RunChunk.objects.filter(run=run)
    assert chunks.filter(kind="segments").exists()  # replication 0's Gantt went out before the budget ran out
    assert run.segments_count == sum(chunks.values_list("rows", flat=True)) > 0
    assert run.last_seq == max(chunks.values_list("seq", flat=True))


def test_the_budget_stops_a_later_replication_while_it_runs(user, settings, monkeypatch):
    # As in a Celery child: replications one after another in the worker's process. Once
    # replication 0's Gantt is out the budget is used up; the run must stop inside replication 1
    # (the driver asks the callback's check() while it runs), not when it ends: the callback
    # never sees replication 1's end.
    slow = spec(replications=3)
    slow["platform"]["clusters"][0]["preemption"] = {"name": "kill"}  # the event-driven model
    slow["workload"]["streams"][0]["count"] = 60_000
    run = create_run(user, slow, dispatch_now=False)
    monkeypatch.setattr(execution, "engine_processes", lambda: 1)
    monkeypatch.setattr(driver, "STEP_REPORT_SECONDS", 0.01)  # asked often: a small run shows it
    seen: list[dict] = []
    store = execution._Progress.__call__

    def watched(self, chunk):
        seen.append(dict(chunk))
        store(self, chunk)
        if chunk.get("final"):
            settings.GRIDWEB_RUN_WALL_SECONDS = 0

    monkeypatch.setattr(execution._Progress, "__call__", watched)
    assert execution.execute_run(run.pk) == Status.FAILED
    run.refresh_from_db()
    assert "wall-clock" in run.error, run.error
    final = next(i for i, c in enumerate(seen) if c.get("final"))
    assert not [c for c in seen[final + 1:] if c["kind"] == "progress"]
    assert run.segments_count == sum(RunChunk.objects.filter(run=run).values_list("rows", flat=True)) > 0
