"""The API's list pages take ``limit`` and ``offset`` as whole numbers or answer 400 naming the
parameter (issue 34, item 7: ``?limit=1e20`` on /api/runs/ and /api/sweeps/ answered 500, a limit
of 10^30 reached the database as SQL's LIMIT); a limit above MAX_LIMIT is cut to MAX_LIMIT, an offset
past the end is an empty page. gridweb/api/pagination.py."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

from gridweb.api.pagination import MAX_LIMIT
from gridweb.runs.models import Run, Sweep
from gridweb.scenarios.models import Scenario

pytestmark = pytest.mark.django_db

LISTS = ["/api/scenarios/", "/api/traces/", "/api/runs/", "/api/sweeps/", "/api/reproductions/"]
SPEC = {"name": "ok", "platform": {"clusters": [{"name": "main", "processors": 8, "scheduler": {"name": "fcfs"}}]}}


@pytest.fixture
def api(django_user_model) -> Client:
    user = django_user_model.objects.create_user("dana", password="pw-dana-123")
    return Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")


@pytest.mark.parametrize("path", LISTS)
@pytest.mark.parametrize(("query", "parameter", "words"), [
    ("limit=1e20", "limit", "'1e20' is not a whole number"),
    ("limit=abc", "limit", "'abc' is not a whole number"),
    ("limit=-1", "limit", "must be at least 1"),
    ("limit=0", "limit", "must be at least 1"),
    ("offset=-5", "offset", "must be at least 0"),
    ("offset=1.5", "offset", "'1.5' is not a whole number"),
    ("limit=" + "9" * 5000 + "x", "limit", "is not a whole number"),
    ("limit=%205", "limit", "' 5' is not a whole number"),
])
def test_limits_and_offsets_that_are_not_whole_numbers_answer_400_naming_them(api, path, query, parameter, words):
    response = api.get(f"{path}?{query}")
    assert response.status_code == 400, (path, query, response.content[:300])
    errors = response.json()["errors"]
    assert list(errors) == [parameter], errors
    assert words in errors[parameter][0], errors


@pytest.mark.parametrize("path", LISTS)
@pytest.mark.parametrize("query", ["limit=" + "1" + "0" * 30, "offset=" + "1" + "0" * 30,
                                   "limit=99999999999999999999&offset=99999999999999999999",
                                   "limit=" + "9" * 5000, "offset=" + "9" * 5000])
def test_huge_limits_are_cut_to_the_maximum_and_huge_offsets_are_past_the_end(api, django_user_model, path, query):
    owner = django_user_model.objects.get(username="dana")  # (an empty list never reaches the database's LIMIT)
    Scenario.objects.create(owner=owner, name="s", spec=SPEC)
    Run.objects.create(owner=owner, name="r", spec=SPEC)
    Sweep.objects.create(owner=owner, name="w", spec=SPEC, parameters={"run.seed": [1, 2]})
    response = api.get(f"{path}?{query}")
    assert response.status_code == 200, (path, query, response.content[:300])
    page = response.json()
    expected = 0 if "offset" in query or path not in ("/api/scenarios/", "/api/runs/", "/api/sweeps/") else 1
    assert len(page["results"]) == expected, page


def test_a_limit_above_the_maximum_gives_the_maximum(api, django_user_model):
    owner = django_user_model.objects.get(username="dana")
    Scenario.objects.bulk_create([Scenario(owner=owner, name=f"s{i}", spec=SPEC) for i in range(MAX_LIMIT + 5)])
    page = api.get("/api/scenarios/?limit=10000000000000000000000").json()
    assert (page["count"], len(page["results"])) == (MAX_LIMIT + 5, MAX_LIMIT)
    assert f"limit={MAX_LIMIT}" in page["next"]
    assert len(api.get("/api/scenarios/?limit=3&offset=2").json()["results"]) == 3
    assert api.get("/api/scenarios/").json()["results"].__len__() == 50  # the default page is unchanged


@pytest.mark.parametrize(("query", "status", "parameter", "words"), [
    ("after=" + "9" * 5000, 200, None, None),  # past every chunk: an empty page, not a 500
    ("after=" + "9" * 5000 + "x", 400, "after", "is not a whole number"),
    ("after=-2", 400, "after", "must be at least -1"),
    ("limit=%205", 400, "limit", "' 5' is not a whole number"),
    ("limit=" + "9" * 30, 400, "limit", "at most 1000"),
], ids=["after-5000-digits", "after-5000-digits-not-a-number", "after-below", "limit-space", "limit-huge"])
def test_a_runs_chunk_pages_read_after_and_limit_as_the_lists_do(api, query, status, parameter, words):
    user = Token.objects.get().user
    run = Run.objects.create(owner=user, name="r", spec=SPEC)

    response = api.get(f"/api/runs/{run.pk}/chunks/?{query}")

    assert response.status_code == status, response.content
    if parameter is None:
        assert response.json()["chunks"] == []
    else:
        (message,) = response.json()["errors"][parameter]
        assert words in message and len(message) < 200  # the value is not echoed whole
