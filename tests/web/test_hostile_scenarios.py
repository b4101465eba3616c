"""Scenario documents whose numbers or shape would choose the server's work (issue 34, group 1):
every place a document is validated -- the API's validate and runs, the builder's validate,
preview and save -- answers naming the field, in well under the 2 s the issue allows, and nothing
is created. (The same bodies against a running daphne under prlimit: tests/web/test_hostile_battery.py.)
"""
from __future__ import annotations

import copy
import json
import time
import tracemalloc

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

from gridweb.runs.models import Run
from gridweb.scenarios.models import Scenario
from gridweb.scenarios.preview import preview
from gridweb.scenarios.validation import SpecInvalid, validate_spec

pytestmark = pytest.mark.django_db

BASE = {
    "name": "hostile",
    "platform": {"clusters": [{"name": "main", "processors": 64}]},
    "workload": {"streams": [{"kind": "synthetic", "name": "u", "target": "main", "arrival": {"target_load": 0.7},
                              "size": {"kind": "uniform", "low": 1, "high": 8},
                              "runtime": {"kind": "exponential", "mean": 60}, "count": 400}]},
}

#: The probe's sizes (each grew daphne by gigabytes, uniform high 1e9 to 21.5 GB) and their kin.
SIZES = {
    "uniform": {"kind": "uniform", "low": 1, "high": 1_000_000_000},
    "uniform-integer": {"kind": "uniform", "low": 1, "high": 1_000_000_000, "integer": True},
    "exponential": {"kind": "exponential", "mean": 1e9},
    "bounded_pareto": {"kind": "bounded_pareto", "alpha": 1.5, "low": 1, "high": 2e9},
    "rsd": {"kind": "rsd", "low": 1, "high": 1_000_000_000, "q": 0.9},
    "lognormal": {"kind": "lognormal", "mean": 1e9, "sigma": 2.0},
    "weibull": {"kind": "weibull", "scale": 1e9, "shape": 0.5},
}
SIZE_FIELD = "workload.streams.0.size"


def with_size(size: dict) -> dict:
    spec = copy.deepcopy(BASE)
    spec["workload"]["streams"][0]["size"] = size
    return spec


def hostile_bodies() -> dict[str, tuple[dict, str]]:
    """name -> (document, the field its error names)."""
    out = {f"size-{k}": (with_size(v), SIZE_FIELD) for k, v in SIZES.items()}
    huge = copy.deepcopy(BASE)
    huge["workload"]["streams"][0]["count"] = 10**400
    out["count-10^400"] = (huge, "workload.streams.0.count")
    huge = copy.deepcopy(BASE)
    huge["platform"]["clusters"][0]["processors"] = 10**400
    out["processors-10^400"] = (huge, "platform.clusters.0.processors")
    many = copy.deepcopy(BASE)  # as the 5 MB bodies (100,000 streams: 13.7 s in the builder's preview)
    stream = many["workload"]["streams"][0]
    many["workload"]["streams"] = [{**stream, "name": f"s{i}"} for i in range(20_000)]
    out["20,000 streams"] = (many, "workload.streams")
    wide = copy.deepcopy(BASE)
    wide["workload"]["streams"][0]["size"] = {"kind": "empirical", "values": [1] * 1_000_000}
    out["a million values"] = (wide, "workload.streams.0.size.values")
    return out


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user("hana", password="pw-hana-123")


@pytest.fixture
def api(user) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")


@pytest.fixture
def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def post(client: Client, path: str, body: dict) -> tuple[int, dict, float]:
    text = json.dumps(body)
    t = time.perf_counter()
    response = client.post(path, text, content_type="application/json")
    return response.status_code, response.json(), time.perf_counter() - t


@pytest.mark.parametrize("name", sorted(hostile_bodies()))
def test_the_api_answers_400_naming_the_field_at_once(api, browser, name):
    spec, field = hostile_bodies()[name]
    post(api, "/api/scenarios/validate/", {"spec": BASE})  # (warm: the first request loads the engine)
    for path in ("/api/scenarios/validate/", "/api/runs/", "/api/scenarios/"):
        status, answer, seconds = post(api, path, {"name": "h", "spec": spec})
        assert status == 400 and f"spec.{field}" in answer["errors"], (path, answer)
        assert seconds < 2.0, (path, seconds)
    # the builder: validate answers 200 with valid false (an invalid document is a normal answer
    # there), save answers 400, preview names it among its errors
    status, answer, seconds = post(browser, "/scenarios/validate/", {"spec": spec})
    assert status == 200 and answer["valid"] is False and field in answer["errors"], answer
    assert seconds < 2.0
    status, answer, seconds = post(browser, "/scenarios/new/", {"name": "h", "spec": spec})
    assert status == 400 and field in answer["errors"], answer
    assert seconds < 2.0
    status, answer, seconds = post(browser, "/scenarios/preview/", {"spec": spec})
    assert status == 200 and field in answer["errors"] and not answer["streams"], answer
    assert seconds < 2.0
    assert not Run.objects.exists() and not Scenario.objects.exists()


def test_the_limits_name_the_setting_that_raises_them(api, settings):
    spec, _ = hostile_bodies()["20,000 streams"]
    status, answer, _ = post(api, "/api/scenarios/validate/", {"spec": spec})
    assert answer["errors"]["spec.workload.streams"] == ["20,000 streams; this server allows at most 64 per scenario"]
    settings.GRIDWEB_LIMITS = {**settings.GRIDWEB_LIMITS, "streams": 100_000}
    spec = copy.deepcopy(BASE)
    spec["workload"]["streams"] = [{**BASE["workload"]["streams"][0], "name": f"s{i}"} for i in range(65)]
    assert post(api, "/api/scenarios/validate/", {"spec": spec})[0] == 200


def worst_legal() -> dict:
    """About the largest document the default limits let through, as slow as we know to make it:
    1,000 clusters, 1,000 file sites, 10,000 reservations and 64 streams (the limits), each
    stream sent to the grid with a target load and a size up to 10,000 processors."""
    clusters = [{"name": f"cluster-{i:04d}", "processors": 10_000} for i in range(1000)]
    streams = [{"kind": "synthetic", "name": f"s{i}", "target": "grid", "arrival": {"target_load": 0.01},
                "size": [{"kind": "uniform", "low": 1, "high": 10_000},
                         {"kind": "rsd", "low": 1, "high": 10_000, "q": 0.9999},
                         {"kind": "bounded_pareto", "alpha": 1.1, "low": 1, "high": 10_000},
                         {"kind": "empirical", "values": [float(v % 97 + 1) for v in range(40_000)]}][i % 4],
                "runtime": {"kind": "exponential", "mean": 60}, "count": 1000} for i in range(64)]
    return {"name": "worst", "platform": {"clusters": clusters,
                                          "file_sites": [{"name": f"f{i}", "cluster": f"cluster-{i:04d}"}
                                                         for i in range(1000)]},
            "workload": {"streams": streams},
            "reservations": [{"name": f"r{i}", "cluster": f"cluster-{i % 1000:04d}", "processors": 10,
                              "start": i, "end": i + 10} for i in range(10_000)]}


def test_the_worst_legal_document_validates_and_previews_in_bounded_time_and_memory(user):
    spec = worst_legal()
    assert 4_000_000 < len(json.dumps(spec)) < 5_242_880  # (about the 5 MB a body may have)
    validate_spec(copy.deepcopy(BASE), user)
    preview(copy.deepcopy(BASE), user)  # (warm)
    t = time.perf_counter()
    validate_spec(spec, user)
    answer = preview(spec, user)
    seconds = time.perf_counter() - t
    assert not answer["errors"] and len(answer["streams"]) == 64, answer["errors"]
    # measured 0.5-0.7 s on the 2-core test machine (2026-12-06); 2 s leaves room for a busy one
    assert seconds < 2.0, seconds
    tracemalloc.start()
    try:
        validate_spec(spec, user)
        preview(spec, user)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100 * 2**20, peak  # (numpy's arrays are traced too)


def test_a_refused_shape_is_refused_before_the_schema_reads_it(user):
    spec, _ = hostile_bodies()["20,000 streams"]
    t = time.perf_counter()
    with pytest.raises(SpecInvalid) as caught:
        validate_spec(spec, user)
    assert time.perf_counter() - t < 2.0  # (microseconds; validating 20,000 streams took seconds)
    assert list(caught.value.errors) == ["workload.streams"]


@pytest.mark.parametrize("kind, runtime", [
    ("synthetic", {"kind": "bounded_pareto", "alpha": 0.5, "low": 5e-324, "high": 0.5}),  # no log bins
    ("koala", {"kind": "lognormal", "mean": 5e-324, "sigma": 1e300}),  # sigma^2 overflows
    ("synthetic", {"kind": "weibull", "scale": 1e300, "shape": 1e-300}),  # Γ(1 + 1/k) overflows
    ("koala", {"kind": "bounded_pareto", "alpha": 1e12, "low": 1e300, "high": 1.7e308}),
])
def test_the_preview_of_draws_at_the_ends_of_the_floats_is_an_answer(browser, kind, runtime):
    # (a ValueError from the histogram's bins, an OverflowError or ZeroDivisionError from the draws: 500s)
    spec = copy.deepcopy(BASE)
    stream = spec["workload"]["streams"][0]
    stream.update(kind=kind, runtime=runtime, count=5)  # (five draws: the smallest is a denormal)
    if kind == "koala":
        stream.update(target="grid", arrival={"rate": 0.1})
        spec["run"] = {"stop": {"horizon": 100}}
    status, answer, _ = post(browser, "/scenarios/preview/", {"spec": spec})
    assert status == 200, answer
    assert answer["streams"] or "workload.streams.0" in answer["errors"], answer
