"""Input that used to crash a view (a 500, or a database error on PostgreSQL) answers 400 naming
the field and the reason: NUL characters and unpaired surrogates, JSON nested thousands deep,
seeds beyond 64 bits, names longer than the database holds, over-long upload file names
(issue 14, item 4). gridweb/safe_json.py and the scenario schema's bounds."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.authtoken.models import Token

from gridweb import safe_json
from gridweb.runs.models import Run
from gridweb.scenarios.models import Scenario, TraceFile

pytestmark = pytest.mark.django_db

SPEC = {
    "name": "ok",
    "platform": {"clusters": [{"name": "main", "processors": 8, "scheduler": {"name": "fcfs"}}]},
    "workload": {"streams": [{"kind": "synthetic", "name": "u", "target": "main", "arrival": {"target_load": 0.5},
                              "size": {"kind": "uniform", "low": 1, "high": 4},
                              "runtime": {"kind": "exponential", "mean": 60}, "count": 50}]},
}
DEEP = "[" * 5000 + "]" * 5000


@pytest.fixture
def api(django_user_model) -> Client:
    user = django_user_model.objects.create_user("dana", password="pw-dana-123")
    return Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")


@pytest.fixture
def browser_user(django_user_model) -> Client:
    client = Client()
    client.force_login(django_user_model.objects.create_user("erin", password="pw-erin-123"))
    return client


def post_json(client: Client, path: str, body: str | dict) -> tuple[int, dict]:
    text = body if isinstance(body, str) else json.dumps(body)
    response = client.post(path, text, content_type="application/json")
    return response.status_code, response.json()


def test_json_nested_thousands_deep_is_refused_before_parsing(api, browser_user):
    for client, path in ((api, "/api/scenarios/"), (api, "/api/runs/"), (Client(), "/api/token/"),
                         (browser_user, "/scenarios/validate/")):
        status, body = post_json(client, path, DEEP)
        assert status == 400, (path, body)
        assert "nested more than 64 levels" in json.dumps(body), (path, body)
    assert not Scenario.objects.exists() and not Run.objects.exists()


def test_the_builders_import_preview_and_save_refuse_json_nested_thousands_deep(browser_user):
    imported = browser_user.post("/scenarios/import/", {"file": SimpleUploadedFile("deep.json", DEEP.encode())})
    assert imported.status_code == 400
    assert "deep.json: nested more than 64 levels deep" in imported.content.decode()
    for path in ("/scenarios/preview/", "/scenarios/new/"):
        status, body = post_json(browser_user, path, DEEP)
        assert status == 400 and "nested more than 64 levels deep" in json.dumps(body), (path, body)
    owned = Scenario.objects.create(owner=User.objects.get(username="erin"), name="ok", spec=SPEC)
    status, body = post_json(browser_user, f"/scenarios/{owned.pk}/edit/", DEEP)
    assert status == 400 and "nested more than 64 levels deep" in json.dumps(body), body
    assert Scenario.objects.get().spec == SPEC


def test_the_builders_import_refuses_unpaired_surrogates_naming_the_path(browser_user):
    text = json.dumps({**SPEC, "name": "PLACEHOLDER"}).replace("PLACEHOLDER", "\\ud800")
    imported = browser_user.post("/scenarios/import/", {"file": SimpleUploadedFile("odd.json", text.encode())})
    assert imported.status_code == 400
    assert "odd.json: name: contains an unpaired surrogate (not valid Unicode)" in imported.content.decode()


def test_a_json_body_past_the_upload_limit_is_refused_naming_the_limit(api, browser_user, settings):
    """DATA_UPLOAD_MAX_MEMORY_SIZE (5 MB): the API's parser reads past Django's own check of it."""
    body = json.dumps({"spec": {**SPEC, "description": "x" * settings.DATA_UPLOAD_MAX_MEMORY_SIZE}})
    for client, path in ((api, "/api/scenarios/"), (api, "/api/runs/"), (browser_user, "/scenarios/new/"),
                         (browser_user, "/scenarios/preview/")):
        status, answer = post_json(client, path, body)
        assert status == 400, (path, answer)
        assert "the request body is larger than 5,242,880 bytes" in json.dumps(answer), (path, answer)
    assert not Scenario.objects.exists() and not Run.objects.exists()


def test_a_document_of_ordinary_depth_with_brackets_in_its_strings_is_taken():
    text = json.dumps({"a": [[{"b": "[[[[{{{{" * 100}]], "c": "\\\"]"})
    assert safe_json.depth(text) == 4
    assert safe_json.loads(text)["a"][0][0]["b"].startswith("[[[[")


def test_nul_characters_and_unpaired_surrogates_are_refused_by_path(api):
    status, body = post_json(api, "/api/scenarios/", {"spec": {**SPEC, "name": "a\u0000b"}})
    assert status == 400 and body["errors"] == {"spec.name": ["contains a NUL character"]}

    # a lone surrogate, as JSON escapes it (json.dumps cannot write one)
    text = json.dumps({"spec": {**SPEC, "name": "PLACEHOLDER"}}).replace("PLACEHOLDER", "\\ud800")
    status, body = post_json(api, "/api/scenarios/", text)
    assert status == 400 and body["errors"] == {"spec.name": ["contains an unpaired surrogate (not valid Unicode)"]}

    status, body = post_json(api, "/api/scenarios/", {"spec": {**SPEC, "platform": {"clusters": [
        {**SPEC["platform"]["clusters"][0], "name": "m\u0000"}]}}})
    assert status == 400 and list(body["errors"]) == ["spec.platform.clusters.0.name"]
    assert not Scenario.objects.exists()


@pytest.mark.parametrize("path", ["/api/runs/?q=a%00b", "/api/scenarios/?tag=x%00", "/api/traces/?author=%00",
                                  "/api/runs/?policy=easy%00", "/api/runs/?platform=%00", "/gallery/?q=a%00b"])
def test_list_filters_with_a_nul_character_answer_400_naming_the_parameter(api, path):
    response = api.get(path)
    assert response.status_code == 400
    parameter = path.split("?")[1].split("=")[0]
    assert response.json() == {"errors": {parameter: ["contains a NUL character"]}}


@pytest.mark.parametrize("path", ["/api/runs/?q=%ED%A0%80", "/api/scenarios/?tag=a%ED%B0%80",
                                  "/api/traces/?author=%ED%A0%80", "/api/runs/?policy=easy%ED%A0%80",
                                  "/api/runs/?platform=%ED%BF%BF", "/gallery/?q=%ED%A0%80", "/scenarios/?q=%ED%A0%80"])
def test_list_filters_with_an_encoded_lone_surrogate_answer_400_naming_the_parameter(api, path):
    """UTF-8 has no surrogates: Django would have searched for three U+FFFD characters instead."""
    response = api.get(path)
    assert response.status_code == 400
    parameter = path.split("?")[1].split("=")[0]
    assert response.json() == {"errors": {parameter: ["contains an unpaired surrogate (not valid Unicode)"]}}


def test_parameters_that_are_not_utf8_answer_400_naming_them(api, browser_user):
    response = api.get("/api/runs/?q=ok&author=%FF")
    assert response.status_code == 400 and response.json() == {"errors": {"author": ["contains bytes that are not UTF-8"]}}
    # unescaped bytes, as a WSGI server hands them over (latin-1 text, PEP 3333)
    response = api.get("/api/runs/", QUERY_STRING="q=\xed\xa0\x80")
    assert response.status_code == 400 and list(response.json()["errors"]) == ["q"]
    response = browser_user.post("/scenarios/validate/", "tag=%ED%A0%80", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 400 and list(response.json()["errors"]) == ["tag"]
    assert api.get("/api/runs/?q=%C3%A9t%C3%A9+%F0%9F%99%82").status_code == 200  # (UTF-8 is taken)


def test_an_ordinary_filter_still_filters(api):
    assert api.get("/api/runs/?q=easy").status_code == 200


def test_seeds_beyond_64_bits_and_names_beyond_200_characters_are_refused_by_field(api):
    spec = {**SPEC, "run": {"seed": 2**70}}
    status, body = post_json(api, "/api/runs/", {"spec": spec})
    assert status == 400 and list(body["errors"]) == ["spec.run.seed"], body
    status, body = post_json(api, "/api/runs/", {"spec": {**SPEC, "run": {"seed": 2**63 - 1}}})
    assert status == 201, body  # the largest seed the database holds is taken

    status, body = post_json(api, "/api/scenarios/", {"spec": {**SPEC, "name": "x" * 10**6}})
    assert status == 400 and list(body["errors"]) == ["spec.name"], body
    assert "200" in body["errors"]["spec.name"][0]
    assert Run.objects.count() == 1 and not Scenario.objects.exists()


def test_an_upload_with_a_300_character_file_name_is_stored_within_what_the_database_holds(api):
    from gridweb.scenarios.traces import TraceInvalid, store_trace

    lines = [f"{i} {i * 10} 0 50 2 -1 -1 2 60 -1 1 1 1 -1 1 -1 -1 -1" for i in range(1, 6)]
    content = ("\n".join(lines) + "\n").encode()
    # over HTTP: Django keeps at most 255 characters of an upload's name (its suffix included)
    response = api.post("/api/traces/", {"file": SimpleUploadedFile("x" * 296 + ".swf", content)})
    assert response.status_code == 201, response.json()
    trace = TraceFile.objects.get()
    assert len(trace.original_name) <= 255 and len(trace.stored_name) <= 255
    assert trace.original_name.endswith(".swf") and trace.stored_name.endswith(".swf")
    # a caller that does not go through Django's upload handling (which cuts names) is refused
    class LongNamed:
        name, size = "y" * 296 + ".swf", len(content)

        def chunks(self):
            yield content

    with pytest.raises(TraceInvalid) as refused:
        store_trace(trace.owner, LongNamed())
    assert list(refused.value.errors) == ["file"] and "255" in refused.value.errors["file"][0]


def test_an_upload_with_a_nul_character_in_its_name_field_is_refused_naming_it(api):
    lines = [f"{i} {i * 10} 0 50 2 -1 -1 2 60 -1 1 1 1 -1 1 -1 -1 -1" for i in range(1, 6)]
    upload = SimpleUploadedFile("site.swf", ("\n".join(lines) + "\n").encode())
    response = api.post("/api/traces/", {"file": upload, "name": "a\x00b"})
    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["name"]  # (the serializer's words or ours)
    assert not TraceFile.objects.exists()


def test_the_trace_store_refuses_text_fields_with_nul_characters_whoever_calls_it(api):
    from django.contrib.auth.models import User

    from gridweb.scenarios.traces import TraceInvalid, store_trace

    content = b"1 10 0 50 2 -1 -1 2 60 -1 1 1 1 -1 1 -1 -1 -1\n"
    with pytest.raises(TraceInvalid) as refused:
        store_trace(User.objects.get(), SimpleUploadedFile("site.swf", content), description="a\x00",
                    tags=["ok", "b\ud800"])
    assert refused.value.errors == {"description": ["contains a NUL character"],
                                    "tags": ["contains an unpaired surrogate (not valid Unicode)"]}
    assert not TraceFile.objects.exists()


BIG_SWF = ("; MaxProcs: 8\n1 0 -1 10 2 -1 -1 2 10 -1 1 1 1 -1 1 -1 -1 -1\n"
           "2 5 -1 10 4 -1 -1 1000000000000000000 10 -1 1 1 1 -1 1 -1 -1 -1\n")
BIG_BATSIM = json.dumps({"nb_res": 8, "jobs": [{"id": 1, "subtime": 0, "res": 10**18, "profile": "p"}],
                         "profiles": {"p": {"type": "delay", "delay": 5}}})


@pytest.mark.parametrize("name,content,message", [
    ("big.swf", BIG_SWF, "big.swf, line 3, field 8 (requested processors): 1,000,000,000,000,000,000 processors, "
                         "more than the 2,147,483,647 a job may have"),
    ("big.swf", "; MaxProcs: 1000000000000000000\n" + BIG_SWF.splitlines(keepends=True)[1],
     "big.swf, field MaxProcs (header): 1,000,000,000,000,000,000 processors, more than the 2,147,483,647 a trace "
     "may name"),
    ("big.json", BIG_BATSIM, "big.json, field jobs[0].res: must be a whole number of processors from 1 to "
                             "2,147,483,647; got 1e+18"),
])
def test_a_trace_of_a_quintillion_processors_is_refused_naming_the_line_and_field(api, browser_user, name, content,
                                                                                 message):
    """TraceFile.max_processors is a PostgreSQL integer: the reader refuses the count, not the database."""
    for client, path in ((api, "/api/traces/"), (browser_user, "/scenarios/traces/upload/")):
        response = client.post(path, {"file": SimpleUploadedFile(name, content.encode())})
        assert response.status_code == 400, (path, response.content)
        assert response.json()["errors"] == {"file": [message]}, path
    assert not TraceFile.objects.exists()


def test_booleans_and_strings_are_not_numbers(api):
    spec = json.loads(json.dumps(SPEC))
    spec["platform"]["clusters"][0]["processors"] = True
    spec["workload"]["streams"][0]["count"] = "10"
    status, body = post_json(api, "/api/runs/", {"spec": spec})
    assert status == 400, body
    assert set(body["errors"]) == {"spec.platform.clusters.0.processors", "spec.workload.streams.0.count"}, body
    assert not Run.objects.exists()


def test_a_down_interval_file_on_the_server_is_refused_naming_the_field(api):
    # the site reads no file of its server (a path such as /etc/passwd would be read): a cluster's
    # down intervals go in failures.down
    cluster = {**SPEC["platform"]["clusters"][0], "failures": {"down_file": "/etc/passwd"}}
    spec = {**SPEC, "platform": {"clusters": [cluster]}}
    status, body = post_json(api, "/api/runs/", {"spec": spec})
    assert status == 400 and list(body["errors"]) == ["spec.platform.clusters.0.failures.down_file"], body
    assert "passwd" not in json.dumps(body) and not Run.objects.exists()
    cluster["failures"] = {"down": [{"start": 10.0, "end": 20.0}]}
    assert post_json(api, "/api/runs/", {"spec": spec})[0] == 201
