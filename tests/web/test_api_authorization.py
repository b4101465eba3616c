"""Who may do what through the REST API, endpoint by endpoint.

Four people meet objects of three visibilities: the owner, a member of the owner's research
group, an outsider (another group) and an anonymous visitor. What someone may not view
answers 404 (its existence does not leak), changes by anyone but the owner answer 403 and
change nothing, writes need a login (401), session-authenticated writes need the CSRF token,
and trace uploads are refused above the size limit. ``test_every_api_route_has_an_authorization_case``
fails when a new route appears without a case here.
"""

from __future__ import annotations

import functools
import io
import json
import secrets
from dataclasses import dataclass, field
from typing import Any

import pytest
import simengine
from django.contrib.auth.models import Group, User
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import URLPattern, URLResolver, reverse
from rest_framework.authtoken.models import Token

from gridweb.api import urls as api_urls
from gridweb.reproductions.models import Reproduction
from gridweb.runs import result_store
from gridweb.runs.models import Comment, Run, RunChunk, RunResult, Status, Sweep
from gridweb.scenarios.models import Scenario, TraceFile
from gridweb.scenarios.traces import store_trace

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "outsider", "member", "owner")
VISIBILITIES = ("private", "group", "public")

SPEC: dict[str, Any] = {
    "name": "tiny",
    "platform": {"clusters": [{"name": "c", "processors": 8, "scheduler": {"name": "easy"}}]},
    "workload": {"streams": [{
        "kind": "synthetic", "name": "users", "target": "c", "arrival": {"target_load": 0.6},
        "size": {"kind": "uniform", "low": 1, "high": 4}, "runtime": {"kind": "exponential", "mean": 60},
        "count": 40}]},
    "run": {"seed": 5},
}

SWF = "; MaxProcs: 8\n" + "".join(
    f"{i} {i * 30} 0 {50 + i} 2 -1 -1 2 {100 + i} -1 1 1 1 1 1 1 -1 -1\n" for i in range(1, 21))


@functools.cache
def engine_result() -> tuple[Any, dict[str, Any]]:
    """One real engine result (and its summary) to store as the result of 'done' runs."""
    result = simengine.run(simengine.load_scenario(SPEC))
    return result, json.loads(json.dumps(result.summary()))


# --- People and their objects ---------------------------------------------------------------------


@pytest.fixture
def people() -> dict[str, Any]:
    pds, other = Group.objects.create(name="pds"), Group.objects.create(name="other")
    owner = User.objects.create_user("olivia", password="pw-olivia-1")
    member = User.objects.create_user("max", password="pw-max-1")
    outsider = User.objects.create_user("otto", password="pw-otto-1")
    owner.groups.add(pds)
    member.groups.add(pds)
    outsider.groups.add(other)
    return {"owner": owner, "member": member, "outsider": outsider, "anonymous": None, "group": pds}


def api_client(user: User | None, **kwargs) -> Client:
    """A client authenticated by the user's API token (no session, so no CSRF involved)."""
    if user is None:
        return Client(**kwargs)
    token, _ = Token.objects.get_or_create(user=user)
    return Client(HTTP_AUTHORIZATION=f"Token {token.key}", **kwargs)


def make(kind: str, visibility: str, people: dict[str, Any]):
    """An object of ``kind`` owned by the owner, shared with their group at ``visibility``."""
    owner, group = people["owner"], people["group"]
    common = {"owner": owner, "group": group, "visibility": visibility, "name": f"{kind}-{visibility}"}
    if kind == "scenario":
        return Scenario.objects.create(spec=SPEC, **common)
    if kind == "trace":
        content = f"; Note: shared {visibility}\n{SWF}".encode()  # distinct bytes: no reuse of another
        return store_trace(owner, SimpleUploadedFile(f"{visibility}.swf", content), visibility=visibility,
                           group=group, name=common["name"])
    if kind == "queued_run":
        return Run.objects.create(spec=SPEC, status=Status.QUEUED, **common)
    if kind == "run":
        result, summary = engine_result()
        run = Run.objects.create(spec=SPEC, status=Status.DONE, summary=summary, seed=summary["seed"],
                                 scenario_hash=summary["scenario_hash"], engine_version=summary["engine_version"],
                                 progress=1.0, last_seq=0, **common)
        location, size = result_store.save(run, result)
        RunResult.objects.create(run=run, location=location, size=size)
        RunChunk.objects.create(run=run, seq=0, kind="progress",
                                payload={"seq": 0, "kind": "progress", "fraction": 1.0, "sim_time": 10.0})
        return run
    if kind == "sweep":
        sweep = Sweep.objects.create(spec=SPEC, parameters={"run.seed": [1, 2]}, **common)
        Run.objects.create(spec=SPEC, sweep=sweep, sweep_point={"run.seed": 1}, **common)
        return sweep
    if kind == "reproduction":
        location = f"reproductions/test-{visibility}-{secrets.token_hex(4)}"
        result_store.results_storage().save(f"{location}/claims.csv", ContentFile(b"claim,paper\n"))
        return Reproduction.objects.create(recipe="klein", status=Status.DONE, location=location,
                                           files=["claims.csv"], **common)
    raise AssertionError(kind)


# --- The endpoints on one object ------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One request on one object. ``access``: ``read`` (viewers), ``viewer_write`` (viewers who are
    logged in: fork, comment) or ``edit`` (the owner only)."""

    url_name: str
    method: str
    kind: str
    access: str
    ok: int
    body: dict[str, Any] = field(default_factory=dict)
    query: str = ""
    kwargs: dict[str, Any] = field(default_factory=dict)  # URL arguments besides the object's id

    @property
    def id(self) -> str:
        return f"{self.method} {self.url_name}"


OBJECT_CASES = [
    Case("scenario-detail", "get", "scenario", "read", 200),
    Case("scenario-detail", "put", "scenario", "edit", 200, {"name": "renamed", "spec": SPEC}),
    Case("scenario-detail", "patch", "scenario", "edit", 200, {"name": "renamed"}),
    Case("scenario-detail", "delete", "scenario", "edit", 204),
    Case("scenario-export", "get", "scenario", "read", 200),
    Case("scenario-fork", "post", "scenario", "viewer_write", 201, {"name": "my fork"}),
    Case("trace-detail", "get", "trace", "read", 200),
    Case("trace-detail", "patch", "trace", "edit", 200, {"name": "renamed"}),
    Case("trace-detail", "delete", "trace", "edit", 204),
    Case("trace-download", "get", "trace", "read", 200),
    Case("run-detail", "get", "run", "read", 200),
    Case("run-detail", "patch", "run", "edit", 200, {"name": "renamed"}),
    Case("run-detail", "delete", "run", "edit", 204),
    Case("run-cancel", "post", "queued_run", "edit", 200),
    Case("run-chunks", "get", "run", "read", 200),
    Case("run-segments", "get", "run", "read", 200),
    Case("run-gantt-tile", "get", "run", "read", 200, query="?width=400&height=200"),
    Case("run-gantt-job", "get", "run", "read", 200, query="?stream=0&job_id=1"),
    Case("run-gantt-at", "get", "run", "read", 200, query="?cluster=0&processor=0&t=100"),
    Case("run-jobs", "get", "run", "read", 200),
    Case("run-comments", "get", "run", "read", 200),
    Case("run-comments", "post", "run", "viewer_write", 201, {"text": "nice utilisation"}),
    Case("run-jobs.csv", "get", "run", "read", 200),
    Case("run-schedule.swf", "get", "run", "read", 200),
    Case("run-batsim_jobs.csv", "get", "run", "read", 200),
    Case("run-scenario.json", "get", "run", "read", 200),
    Case("run-metrics.json", "get", "run", "read", 200),
    Case("sweep-detail", "get", "sweep", "read", 200),
    Case("reproduction-detail", "get", "reproduction", "read", 200),
    Case("reproduction-file", "get", "reproduction", "read", 200, kwargs={"name": "claims.csv"}),
]


def expected_status(case: Case, role: str, visibility: str) -> int:
    if role == "anonymous" and case.method != "get":
        return 401
    may_view = role == "owner" or visibility == "public" or (visibility == "group" and role == "member")
    if not may_view:
        return 404
    if case.access == "edit" and role != "owner":
        return 403
    return case.ok


def snapshot(obj) -> dict[str, Any]:
    """What a refused request must leave as it was."""
    model = type(obj)
    current = model.objects.filter(pk=obj.pk).first()
    return {
        "exists": current is not None,
        "name": getattr(current, "name", None),
        "status": getattr(current, "status", None),
        "scenarios": Scenario.objects.count(),
        "comments": Comment.objects.count(),
    }


def send(client: Client, case: Case, url: str):
    if case.method in ("get", "delete"):
        return getattr(client, case.method)(url)
    return getattr(client, case.method)(url, data=json.dumps(case.body), content_type="application/json")


@pytest.mark.parametrize("visibility", VISIBILITIES)
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("case", OBJECT_CASES, ids=lambda c: c.id)
def test_object_endpoint(case: Case, role: str, visibility: str, people):
    obj = make(case.kind, visibility, people)
    user = people[role]
    url = reverse(f"api:{case.url_name}", kwargs={"pk": obj.pk, **case.kwargs}) + case.query
    before = snapshot(obj)

    response = send(api_client(user), case, url)

    expected = expected_status(case, role, visibility)
    assert response.status_code == expected, (response.status_code, response.content[:300])
    if expected >= 400:
        assert snapshot(obj) == before  # refused: nothing changed, nothing created
        if expected == 404:
            assert obj.name.encode() not in response.content  # nothing about the object leaks
        return
    # Allowed: the request did what it says.
    after = snapshot(obj)
    if case.method == "delete":
        assert not after["exists"]
    elif case.method in ("put", "patch"):
        assert after["name"] == "renamed"
    elif case.url_name == "run-cancel":
        assert after["status"] == Status.CANCELLED
    elif case.url_name == "scenario-fork":
        fork = Scenario.objects.get(forked_from=obj)
        assert fork.owner == user and fork.name == "my fork" and fork.visibility == "private"
    elif case.url_name == "run-comments" and case.method == "post":
        assert Comment.objects.get(run=obj).author == user
    else:
        assert after == before  # reading changes nothing


# --- Lists: each sees exactly what they may view ------------------------------------------------


@pytest.mark.parametrize("kind", ["scenario", "trace", "run", "sweep", "reproduction"])
@pytest.mark.parametrize("role", ROLES)
def test_list_shows_only_what_one_may_view(kind: str, role: str, people):
    made = {visibility: make(kind, visibility, people) for visibility in VISIBILITIES}
    visible = {"anonymous": {"public"}, "outsider": {"public"}, "member": {"group", "public"},
               "owner": set(VISIBILITIES)}[role]

    response = api_client(people[role]).get(reverse(f"api:{kind}-list"))

    assert response.status_code == 200
    ids = {row["id"] for row in response.json()["results"]}
    assert ids == {made[v].pk for v in visible}


# --- Creating: logged-in users only, and only with what they may view -----------------------------


CREATE_CASES = {
    "scenario-list": lambda people: ({"spec": SPEC, "name": "mine"}, Scenario),
    "scenario-validate": lambda people: ({"spec": SPEC}, None),
    "run-list": lambda people: ({"spec": SPEC}, Run),
    "sweep-list": lambda people: ({"spec": SPEC, "parameters": {"run.seed": [1, 2]}}, Sweep),
}


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("url_name", sorted(CREATE_CASES))
def test_create_needs_a_login(url_name: str, role: str, people):
    body, model = CREATE_CASES[url_name](people)
    before = model.objects.count() if model else None

    response = api_client(people[role]).post(reverse(f"api:{url_name}"), body, content_type="application/json")

    if role == "anonymous":
        assert response.status_code == 401
        assert model is None or model.objects.count() == before
    else:
        assert response.status_code == (200 if model is None else 201), response.content[:300]
        if model is not None:
            assert model.objects.get(pk=response.json()["id"]).owner == people[role]


@pytest.mark.parametrize("role", ROLES)
def test_trace_upload_needs_a_login(role: str, people):
    upload = SimpleUploadedFile("week.swf", SWF.encode())

    response = api_client(people[role]).post(reverse("api:trace-list"), {"file": upload})

    if role == "anonymous":
        assert response.status_code == 401 and TraceFile.objects.count() == 0
    else:
        assert response.status_code == 201, response.content
        assert TraceFile.objects.get().owner == people[role]


@pytest.mark.parametrize("visibility", VISIBILITIES)
@pytest.mark.parametrize("role", ["outsider", "member"])
def test_running_a_saved_scenario_needs_view_access(role: str, visibility: str, people):
    scenario = make("scenario", visibility, people)
    may_view = visibility == "public" or (visibility == "group" and role == "member")

    response = api_client(people[role]).post(reverse("api:run-list"), {"scenario": scenario.pk},
                                             content_type="application/json")

    if may_view:
        assert response.status_code == 201
        assert Run.objects.get(pk=response.json()["id"]).owner == people[role]
    else:
        # The same answer as for an id that does not exist: nothing leaks.
        missing = api_client(people[role]).post(reverse("api:run-list"), {"scenario": 999999},
                                                content_type="application/json")
        assert response.status_code == missing.status_code == 400
        assert response.json()["errors"]["scenario"][0].replace(str(scenario.pk), "N") == \
            missing.json()["errors"]["scenario"][0].replace("999999", "N")
        assert Run.objects.count() == 0


@pytest.mark.parametrize("visibility", VISIBILITIES)
def test_a_scenario_may_only_replay_traces_one_may_view(visibility: str, people):
    trace = make("trace", visibility, people)
    spec = {**SPEC, "workload": {"streams": [{"kind": "trace", "name": "t", "path": trace.stored_name,
                                              "target": "c"}]}}

    response = api_client(people["outsider"]).post(reverse("api:scenario-list"), {"spec": spec},
                                                   content_type="application/json")

    if visibility == "public":
        assert response.status_code == 201
    else:
        assert response.status_code == 400
        assert "spec.workload.streams.0.path" in response.json()["errors"]
        assert Scenario.objects.count() == 0


def test_sharing_with_a_group_one_is_not_in_is_refused(people):
    body = {"spec": SPEC, "visibility": "group", "group": "other"}

    response = api_client(people["owner"]).post(reverse("api:scenario-list"), body, content_type="application/json")

    assert response.status_code == 400 and "group" in response.json()["errors"]
    assert Scenario.objects.count() == 0


# --- Token, me, schema and docs -------------------------------------------------------------------


def test_token_for_good_credentials_only(people):
    anonymous = Client(enforce_csrf_checks=True)  # no session: no CSRF needed to ask for a token

    good = anonymous.post(reverse("api:token"), {"username": "olivia", "password": "pw-olivia-1"},
                          content_type="application/json")
    bad = anonymous.post(reverse("api:token"), {"username": "olivia", "password": "nope"},
                         content_type="application/json")

    assert good.status_code == 200 and good.json()["token"] == Token.objects.get(user=people["owner"]).key
    assert bad.status_code == 400 and "token" not in bad.json() and bad.json()["errors"][""]


@pytest.mark.parametrize("role", ROLES)
def test_me_needs_a_login(role: str, people):
    response = api_client(people[role]).get(reverse("api:me"))

    if role == "anonymous":
        assert response.status_code == 401
    else:
        assert response.status_code == 200 and response.json()["username"] == people[role].username


def test_bad_token_is_refused(people):
    response = Client(HTTP_AUTHORIZATION="Token not-a-token").get(reverse("api:scenario-list"))

    assert response.status_code == 401


@pytest.mark.parametrize("url_name", ["schema", "docs"])
def test_schema_and_docs_are_public(url_name: str):
    assert Client().get(reverse(f"api:{url_name}")).status_code == 200


# --- CSRF for session-authenticated writes --------------------------------------------------------


def session_client(user: User) -> tuple[Client, str]:
    """A browser-like client logged in by session, with CSRF checks on; and its CSRF token."""
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    browser.get(reverse("accounts:profile"))  # a page with a form: sets the csrftoken cookie
    return browser, browser.cookies["csrftoken"].value


def test_session_writes_without_csrf_token_are_refused(people):
    owner = people["owner"]
    scenario = make("scenario", "private", people)
    run = make("queued_run", "private", people)
    browser, csrf = session_client(owner)

    refused = [
        browser.post(reverse("api:scenario-list"), {"spec": SPEC}, content_type="application/json"),
        browser.patch(reverse("api:scenario-detail", kwargs={"pk": scenario.pk}), {"name": "x"},
                      content_type="application/json"),
        browser.delete(reverse("api:scenario-detail", kwargs={"pk": scenario.pk})),
        browser.post(reverse("api:run-cancel", kwargs={"pk": run.pk})),
        browser.post(reverse("api:trace-list"), {"file": SimpleUploadedFile("a.swf", SWF.encode())}),
        browser.post(reverse("api:run-list"), {"spec": SPEC}, content_type="application/json"),
    ]

    assert [r.status_code for r in refused] == [403] * len(refused)
    assert all("CSRF" in r.json()["detail"] for r in refused)
    assert Scenario.objects.count() == 1 and Scenario.objects.get().name == "scenario-private"
    assert Run.objects.get().status == Status.QUEUED and TraceFile.objects.count() == 0
    # Reading needs no token, and the same writes pass with it.
    assert browser.get(reverse("api:scenario-list")).status_code == 200
    ok = browser.patch(reverse("api:scenario-detail", kwargs={"pk": scenario.pk}), {"name": "x"},
                       content_type="application/json", HTTP_X_CSRFTOKEN=csrf)
    assert ok.status_code == 200 and Scenario.objects.get().name == "x"
    upload = browser.post(reverse("api:trace-list"), {"file": SimpleUploadedFile("a.swf", SWF.encode())},
                          HTTP_X_CSRFTOKEN=csrf)
    assert upload.status_code == 201


def test_token_authenticated_writes_need_no_csrf_token(people):
    client = api_client(people["owner"], enforce_csrf_checks=True)

    response = client.post(reverse("api:scenario-list"), {"spec": SPEC}, content_type="application/json")

    assert response.status_code == 201


# --- Upload limit ---------------------------------------------------------------------------------


def test_upload_over_the_limit_is_refused_from_its_length(people, settings):
    settings.GRIDWEB_MAX_TRACE_BYTES = 2000
    big = (SWF * 1000).encode()  # far over the limit and its multipart allowance

    response = api_client(people["owner"]).post(reverse("api:trace-list"),
                                                {"file": SimpleUploadedFile("big.swf", big)})

    assert response.status_code == 400
    assert "limit" in response.json()["errors"]["file"][0]
    assert TraceFile.objects.count() == 0


def test_upload_just_over_the_limit_is_refused_by_its_size(people, settings):
    content = (SWF * 3).encode()
    settings.GRIDWEB_MAX_TRACE_BYTES = len(content) - 1

    refused = api_client(people["owner"]).post(reverse("api:trace-list"),
                                               {"file": SimpleUploadedFile("big.swf", content)})
    settings.GRIDWEB_MAX_TRACE_BYTES = len(content)
    accepted = api_client(people["owner"]).post(reverse("api:trace-list"),
                                                {"file": SimpleUploadedFile("big.swf", content)})

    assert refused.status_code == 400 and "limit" in refused.json()["errors"]["file"][0]
    assert accepted.status_code == 201 and accepted.json()["jobs"] == 60


def test_upload_errors_name_the_line_and_store_nothing(people):
    lines = SWF.splitlines()
    lines[4] = lines[4].replace(" 2 -1 -1 2 ", " two -1 -1 2 ", 1)
    response = api_client(people["owner"]).post(
        reverse("api:trace-list"), {"file": SimpleUploadedFile("bad.swf", ("\n".join(lines) + "\n").encode())})

    assert response.status_code == 400
    assert "line 5" in response.json()["errors"]["file"][0]
    assert TraceFile.objects.count() == 0


# --- Every route has a case -----------------------------------------------------------------------


def api_route_names(patterns=None) -> set[str]:
    names: set[str] = set()
    for pattern in api_urls.urlpatterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            names |= api_route_names(pattern.url_patterns)
        elif isinstance(pattern, URLPattern):
            names.add(pattern.name)
    return names


TESTED_ELSEWHERE_IN_THIS_FILE = {
    "scenario-list", "scenario-validate", "trace-list", "run-list", "sweep-list",  # lists and creates
    "reproduction-list",
    "token", "me", "schema", "docs",
}


def test_every_api_route_has_an_authorization_case():
    covered = {case.url_name for case in OBJECT_CASES} | TESTED_ELSEWHERE_IN_THIS_FILE

    assert api_route_names() - covered == set(), "add authorization cases for these API routes"
    assert covered - api_route_names() == set(), "cases for routes that no longer exist"


def test_every_api_route_is_in_the_openapi_schema():
    schema = Client().get(reverse("api:schema"), HTTP_ACCEPT="application/json")
    documented = set(json.load(io.BytesIO(schema.content))["paths"])

    for name in api_route_names() - {"schema", "docs"}:
        try:
            url = reverse(f"api:{name}", kwargs={"pk": 12345})
        except Exception:  # noqa: BLE001 - routes without an id, or with a file name too
            try:
                url = reverse(f"api:{name}", kwargs={"pk": 12345, "name": "FILE"}).replace("/FILE", "/{name}")
            except Exception:  # noqa: BLE001
                url = reverse(f"api:{name}")
        assert url.replace("/12345", "/{id}") in documented, name
