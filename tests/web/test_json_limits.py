"""JSON bodies are checked in linear time and bounded memory, and numbers JSON can write but Python
or the database cannot hold are refused by path (issue 34, items 4 and 7: the depth check's regular
expression took ~115 bytes per character of a string -- a 5 MB string grew the server by 600 MB --
and an integer of more than 4,300 digits raised ValueError, a 500). gridweb/safe_json.py.

What these tests check is deterministic: the memory a check takes (tracemalloc's peak) and that a
document too large is refused by its size before anything walks its keys. How long the hostile
bodies take is measured by benchmarks/hostile.py, not asserted here (a timed assertion fails on a
loaded machine without anything being wrong)."""

from __future__ import annotations

import json
import random
import tracemalloc

import pytest

from gridweb import safe_json
from gridweb.safe_json import BadJson


def reference_depth(text: str) -> int:
    """The deepest nesting, one character at a time (a backslash escapes the next character
    wherever it stands: outside a string it is not JSON, and the parser stops there)."""
    deepest = level = 0
    inside = escaped = False
    for char in text:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            inside = not inside
        elif inside:
            pass
        elif char in "[{":
            level += 1
            deepest = max(deepest, level)
        elif char in "]}":
            level -= 1
    return deepest


def peak_memory(body: bytes) -> int:
    """The peak bytes allocated by safe_json.loads(body)."""
    tracemalloc.start()
    try:
        safe_json.loads(body)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_5mb_string_is_checked_in_memory_of_the_order_of_its_size():
    body = json.dumps({"name": "x" * 5_000_000}).encode()
    # the text decoded and the parsed string (~2x); the regular expression took ~150x
    assert peak_memory(body) < 3 * len(body), f"{peak_memory(body) / len(body):.1f} x the body"


def test_a_5mb_string_of_escapes_and_a_body_of_1000_keys_are_checked_in_memory_of_their_size():
    escapes = json.dumps({"name": "\\\"[{" * 1_000_000}).encode()
    assert peak_memory(escapes) < 3 * len(escapes), peak_memory(escapes) / len(escapes)
    keys = json.dumps({f"key{i:06d}": "v" * 36 for i in range(1000)}).encode()
    assert len(safe_json.loads(keys)) == 1000
    assert peak_memory(keys) < 40 * len(keys)  # (1,000 small Python strings and a dict: ~22x; the regular expression took ~150x)


def test_an_object_of_more_than_1000_keys_is_refused_naming_its_path():
    """(issue 34 item 4: a scenario of 100k unknown keys took 6-11 s to list them as errors, one by one)"""
    keys = {f"k{i}": i for i in range(100_000)}
    for body, path in (({"spec": {"run": keys}}, "spec.run"), (keys, "")):
        with pytest.raises(BadJson) as refused:
            safe_json.loads(json.dumps(body))
        assert (refused.value.path, refused.value.reason) == (path, "an object of 100,000 keys (more than 1,000)")
    assert len(safe_json.loads(json.dumps({f"k{i}": i for i in range(1000)}))) == 1000


@pytest.mark.django_db
def test_a_document_of_100k_keys_is_refused_at_once_by_the_api_and_the_builder(django_user_model):
    from django.test import Client
    from rest_framework.authtoken.models import Token

    user = django_user_model.objects.create_user("dana", password="pw-dana-123")
    api = Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    browser = Client()
    browser.force_login(user)
    spec = {f"k{i}": i for i in range(100_000)}
    for client, path, body, field in ((api, "/api/runs/", {"spec": spec}, "spec"),
                                      (api, "/api/scenarios/", {"spec": spec}, "spec"),
                                      (browser, "/scenarios/validate/", spec, "body")):
        response = client.post(path, json.dumps(body), content_type="application/json")
        assert response.status_code == 400, (path, response.content[:300])
        assert "an object of 100,000 keys (more than 1,000)" in response.content.decode(), (path, response.content[:300])
        assert field in response.content.decode(), path


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64, 1 << 16])
def test_the_depth_of_texts_cut_anywhere_matches_a_character_by_character_reading(chunk):
    pieces = ["[", "]", "{", "}", '"', "\\", "\\\\", '\\"', "x", "é", "\ud83d\ude00", ":", ","]
    rng = random.Random(chunk)
    texts = ["", "[]", '"[["', '["\\\\"]', '["\\\\\\"[["]', '{"a": [[{"b": "]]]"}]]}', "\\\"[[", "[" * 70]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randrange(1, 60))) for _ in range(400)]
    for text in texts:
        expected = reference_depth(text)
        assert safe_json.depth(text, chunk=chunk) == expected, text
        assert safe_json.depth(text.encode("utf-8", "surrogatepass"), chunk=chunk) == expected, text


def test_the_depth_of_json_documents_is_their_nesting():
    rng = random.Random(5)
    tricky = ['[', '"]', "\\", '\\"', "{}", "é", "\ud83d\ude00", ""]

    def document(level: int):
        if level == 0 or rng.random() < 0.2:
            return rng.choice([*tricky, 1, 2.5, None, True])
        if rng.random() < 0.5:
            return [document(level - 1) for _ in range(rng.randrange(0, 4))]
        return {rng.choice(tricky) + str(i): document(level - 1) for i in range(rng.randrange(0, 4))}

    def nesting(value) -> int:
        if isinstance(value, list | dict):
            items = value.values() if isinstance(value, dict) else value
            return 1 + max(map(nesting, items), default=0)
        return 0

    for _ in range(300):
        value = document(rng.randrange(1, 12))
        text = json.dumps(value, ensure_ascii=rng.random() < 0.5)
        assert safe_json.depth(text, chunk=rng.choice([1, 5, 64])) == nesting(value), text


def test_integers_longer_than_python_converts_are_refused_naming_their_path():
    huge = "1" + "0" * 5000
    for text, path in ((f'{{"run": {{"seed": {huge}}}}}', "run.seed"), (f"[1, 2, -{huge}]", "2"), (huge, "")):
        with pytest.raises(BadJson) as refused:
            safe_json.loads(text)
        assert (refused.value.path, refused.value.reason) == (path, "an integer of 5,001 digits (more than 4,300)")
    assert safe_json.loads('{"seed": ' + "9" * 4300 + "}")["seed"] == int("9" * 4300)


@pytest.mark.parametrize("number", ["1e400", "-1e400", "NaN", "Infinity", "-Infinity"])
def test_numbers_beyond_floats_and_not_numbers_are_refused_naming_their_path(number):
    with pytest.raises(BadJson) as refused:
        safe_json.loads(f'{{"workload": {{"streams": [{{"count": 1}}, {{"mean": {number}}}]}}}}')
    assert refused.value.path == "workload.streams.1.mean"
    assert "not a finite number" in refused.value.reason
    assert safe_json.loads("[1e308, -2.5e-400]") == [1e308, -0.0]


def test_nul_characters_surrogates_depth_and_utf8_are_still_refused():
    with pytest.raises(BadJson, match="nested more than 64 levels deep"):
        safe_json.loads("[" * 65 + "]" * 65)
    assert safe_json.loads("[" * 64 + "]" * 64) is not None
    with pytest.raises(BadJson, match="a.0: contains a NUL character"):
        safe_json.loads('{"a": ["\\u0000"]}')
    with pytest.raises(BadJson, match="contains an unpaired surrogate"):
        safe_json.loads('{"\\udc00": 1}')
    with pytest.raises(BadJson, match="not UTF-8"):
        safe_json.loads(b'["\xff"]')


@pytest.mark.django_db
@pytest.mark.parametrize(("value", "words"), [("1" + "0" * 5000, "an integer of 5,001 digits (more than 4,300)"),
                                              ("1e400", "is not a finite number"), ("NaN", "is not a finite number")],
                         ids=["10^5000", "1e400", "NaN"])
def test_the_api_and_the_builder_refuse_such_numbers_by_path(django_user_model, value, words):
    from django.test import Client
    from rest_framework.authtoken.models import Token

    from gridweb.scenarios.models import Scenario

    user = django_user_model.objects.create_user("dana", password="pw-dana-123")
    api = Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    browser = Client()
    browser.force_login(user)
    spec = ('{"name": "n", "platform": {"clusters": [{"name": "main", "processors": 8, "scheduler": {"name": "fcfs"}}]},'
            ' "run": {"seed": VALUE}}').replace("VALUE", value)
    response = api.post("/api/scenarios/", '{"spec": ' + spec + "}", content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    errors = response.json()["errors"]
    assert list(errors) == ["spec.run.seed"] and words in errors["spec.run.seed"][0], errors
    for path in ("/scenarios/validate/", "/scenarios/new/"):
        response = browser.post(path, spec, content_type="application/json")
        assert response.status_code == 400, (path, response.content[:300])
        assert f"run.seed: {words}" in response.content.decode(), (path, response.content[:300])
    response = Client().post("/api/token/", '{"username": "dana", "password": ' + value + "}",
                             content_type="application/json")
    assert response.status_code == 400 and words in response.content.decode(), response.content[:300]
    assert not Scenario.objects.exists()


@pytest.mark.django_db
def test_the_builders_import_refuses_such_numbers_by_path(django_user_model):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test import Client

    browser = Client()
    browser.force_login(django_user_model.objects.create_user("erin", password="pw-erin-123"))
    for value, words in (("1" + "0" * 5000, "an integer of 5,001 digits"), ("-1e999", "is not a finite number")):
        text = '{"name": "n", "run": {"seed": VALUE}}'.replace("VALUE", value)
        imported = browser.post("/scenarios/import/", {"file": SimpleUploadedFile("big.json", text.encode())})
        assert imported.status_code == 400, imported.content[:300]
        assert f"big.json: run.seed: {words}" in imported.content.decode()
