"""``GET /api/runs/<id>/jobs/``: the run page's jobs table through the API (docs/api.md).

The API and the page's ``runs/<pk>/jobs.json`` share one implementation
(gridweb/runs/jobs_table.py), so their rows are compared for the same queries; one query is
also compared with the engine's own Result of the same scenario.
"""

from __future__ import annotations

import io
import json

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token

from gridweb.runs import jobs_table
from gridweb.runs import views as run_views
from gridweb.runs.models import Run
from gridweb.sharing import Visibility
from simengine.workload import STATUS_NAMES
from tests.web.conftest import client_for
from tests.web.test_run_jobs_table import engine_result, expected_rows
from tests.web.test_run_pages import finished_run, queued_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def plain_run(alice) -> Run:
    return finished_run(alice)  # two clusters, grid stream, 3 replications; private


def token_client(user=None, key: str | None = None) -> Client:
    """A client that authenticates with the user's API token only (no session)."""
    if user is not None:
        key = Token.objects.get_or_create(user=user)[0].key
    return Client(HTTP_AUTHORIZATION=f"Token {key}") if key else Client()


def api_jobs(client: Client, run: Run, **params):
    return client.get(reverse("api:run-jobs", kwargs={"pk": run.pk}), params)


def page_jobs(client: Client, run: Run, **params):
    return client.get(reverse("runs:jobs", args=[run.pk]), params)


def test_one_implementation_for_the_page_and_the_api():
    assert run_views.jobs_page is jobs_table.jobs_page


def test_api_url_is_the_documented_one(plain_run):
    assert reverse("api:run-jobs", kwargs={"pk": plain_run.pk}) == f"/api/runs/{plain_run.pk}/jobs/"


@pytest.mark.parametrize("params", [
    {}, {"limit": "1000"}, {"offset": "100", "limit": "30"}, {"status": "completed", "sort": "-wait"},
    {"replication": "1", "sort": "cluster", "limit": "1000"}, {"stream": "0", "sort": "-bounded_slowdown"},
    {"offset": "100000"},
])
def test_the_api_answers_exactly_what_the_page_endpoint_answers(alice, plain_run, params):
    api = api_jobs(token_client(alice), plain_run, **params)
    page = page_jobs(client_for(alice), plain_run, **params)
    assert api.status_code == page.status_code == 200, api.content[:300]
    assert api.json() == page.json()
    assert api["Content-Type"] == "application/json"


def test_rows_equal_the_engine_result(alice, plain_run):
    result = engine_result(plain_run)
    columns, rows = expected_rows(result)
    body = api_jobs(token_client(alice), plain_run, limit=1000).json()
    assert body["columns"] == columns and body["rows"] == rows and body["total"] == len(rows) > 100
    assert body["replications"] == [0, 1, 2] and body["statuses"] == list(STATUS_NAMES)
    assert body["replication"] == 0 and body["model_columns"] == []


def test_filters_sort_and_paging(alice, plain_run):
    client = token_client(alice)
    columns, rows = expected_rows(engine_result(plain_run))
    status, wait, stream = columns.index("status"), columns.index("wait"), columns.index("stream")
    # paging: the default page is the first 100 rows; the total counts every page
    first = api_jobs(client, plain_run).json()
    assert (first["offset"], first["limit"], first["total"]) == (0, 100, len(rows))
    assert first["rows"] == rows[:100]
    assert api_jobs(client, plain_run, offset=100, limit=30).json()["rows"] == rows[100:130]
    # status filter: exactly the rows of that status, in submit order
    completed = api_jobs(client, plain_run, status="completed", limit=1000).json()
    assert completed["rows"] == [r for r in rows if r[status] == "completed"]
    assert completed["total"] == len(completed["rows"]) > 0
    # stream filter
    streams = {r[stream] for r in rows}
    for s in streams:
        body = api_jobs(client, plain_run, stream=s, limit=1000).json()
        assert body["rows"] == [r for r in rows if r[stream] == s] and body["total"] > 0
    # sort descending: numbers in decreasing order, never-started (null) last
    down = api_jobs(client, plain_run, sort="-wait", limit=1000).json()["rows"]
    finite = sorted((r[wait] for r in rows if r[wait] is not None), reverse=True)
    assert [r[wait] for r in down] == finite + [None] * (len(rows) - len(finite))


@pytest.mark.parametrize("params, parameter", [
    ({"offset": "-1"}, "offset"), ({"offset": "x"}, "offset"), ({"limit": "0"}, "limit"),
    ({"limit": "1001"}, "limit"), ({"status": "done"}, "status"), ({"stream": "7"}, "stream"),
    ({"replication": "3"}, "replication"), ({"sort": "colour"}, "sort"), ({"sort": "--wait"}, "sort"),
])
def test_bad_parameters_are_400_naming_the_parameter(alice, plain_run, params, parameter):
    response = api_jobs(token_client(alice), plain_run, **params)
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert list(errors) == [parameter]
    # the same reason as the page endpoint gives (one implementation)
    assert errors[parameter] == [page_jobs(client_for(alice), plain_run, **params).json()["reason"]]


def test_409_before_the_run_has_a_result(alice):
    run = queued_run(alice)
    response = api_jobs(token_client(alice), run)
    assert response.status_code == 409
    assert "when the run finishes" in response.json()["detail"]


def test_token_authentication_and_visibility(alice, bob, carol, plain_run):
    # private: the owner's token reads it; a group member, an outsider and anonymous get 404
    assert api_jobs(token_client(alice), plain_run).status_code == 200
    assert api_jobs(token_client(carol), plain_run).status_code == 404
    assert api_jobs(token_client(bob), plain_run).status_code == 404
    assert api_jobs(Client(), plain_run).status_code == 404
    assert api_jobs(token_client(key="0" * 40), plain_run).status_code == 401  # a token that is no one's
    group_run = finished_run(alice, visibility=Visibility.GROUP)
    assert api_jobs(token_client(carol), group_run).status_code == 200
    assert api_jobs(token_client(bob), group_run).status_code == 404
    public = finished_run(alice, visibility=Visibility.PUBLIC)
    assert api_jobs(Client(), public).json()["total"] > 0  # anonymous reads public runs, as other endpoints
    assert token_client(alice).get(reverse("api:run-jobs", kwargs={"pk": 999_999})).status_code == 404


def test_the_endpoint_and_its_parameters_are_in_the_openapi_schema():
    schema = json.load(io.BytesIO(Client().get(reverse("api:schema"), HTTP_ACCEPT="application/json").content))
    operation = schema["paths"]["/api/runs/{id}/jobs/"]["get"]
    parameters = {p["name"]: p for p in operation["parameters"] if p["in"] == "query"}
    assert set(parameters) == {"offset", "limit", "status", "stream", "replication", "sort"}
    assert all(p.get("description") for p in parameters.values())
    assert set(parameters["status"]["schema"]["enum"]) == set(STATUS_NAMES)
    assert parameters["limit"]["schema"]["type"] == "integer"
    assert {"200", "400", "404", "409"} <= set(operation["responses"])
