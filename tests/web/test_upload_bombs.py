"""Uploads that would exhaust the server's memory are refused within seconds, the server's memory
barely moving (issue 14, "Uploads exhaust the web server's memory"): a 2 MB gzip of 2 GB of comment
lines, one 512 MB line, ten million identical jobs; and as Batsim JSON workloads, forty million
empty jobs (``json.loads`` would make gigabytes of objects of them), ten million jobs, ten million
profiles, one 512 MB value. The reader stops at the first cap it passes (settings.GRIDWEB_TRACE_CAPS,
simengine.traces.ReadCaps). Memory is measured in a fresh process (its peak, VmHWM), through the
same function the upload view calls."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

from tests.conftest import project_env, run_python_json

PROBE = """
import json, time
import django
django.setup()
from gridweb.scenarios.traces import TraceInvalid, inspect_trace
from tests.web.bombs import gzip_of, peak_mb


BOMBS
found = {"baseline_mb": peak_mb()}
for name, content in bombs.items():
    t0 = time.monotonic()
    try:
        inspect_trace(content, FORMAT, "bomb.SUFFIX.gz")
        message = None
    except TraceInvalid as exc:
        message = exc.errors["file"][0]
    found[name] = {"seconds": time.monotonic() - t0, "message": message, "gzip_mb": len(content) / 2**20}
found["peak_mb"] = peak_mb()
print(json.dumps(found))
"""
SWF_BOMBS = """
JOB = b"1 0 0 100 4 -1 -1 4 100 -1 1 1 1 1 1 1 -1 -1\\n"
bombs = {
    "2 GB of comment lines": gzip_of(b";\\n", 2 << 30),
    "one 512 MB line": gzip_of(b"1", 512 << 20),
    "ten million jobs": gzip_of(JOB, 10_000_000 * len(JOB)),
}
"""
BATSIM_BOMBS = """
JOB = b'{"id": 1, "subtime": 0, "walltime": 100, "res": 4, "profile": "p"},'
PROFILE = b'"p": {"type": "delay", "delay": 1}, '
bombs = {
    "forty million empty jobs": gzip_of(b"{},", 120 << 20, head=b'{"nb_res": 1, "jobs": ['),
    "ten million jobs": gzip_of(JOB, 10_000_000 * len(JOB), head=b'{"nb_res": 4, "jobs": ['),
    "ten million profiles": gzip_of(PROFILE, 10_000_000 * len(PROFILE), head=b'{"nb_res": 4, "profiles": {'),
    "one 512 MB value": gzip_of(b"x", 512 << 20, head=b'{"nb_res": 4, "note": "'),
}
"""


def probe(bombs: str, fmt: str, suffix: str, tmp_path) -> dict:
    code = PROBE.replace("BOMBS", bombs).replace("FORMAT", repr(fmt)).replace("SUFFIX", suffix)
    return run_python_json(code, env=project_env(GRIDWEB_DATA_DIR=str(tmp_path)), timeout=600)


@pytest.mark.slow
def test_upload_bombs_are_refused_within_seconds_with_bounded_memory(tmp_path):
    found = probe(SWF_BOMBS, "swf", "swf", tmp_path)
    expected = {"2 GB of comment lines": "more than 10,000 comment lines", "one 512 MB line": "a line longer than",
                "ten million jobs": "more than 1,000,000 jobs"}
    for name, words in expected.items():
        assert found[name]["message"] is not None and words in found[name]["message"], (name, found[name])
        assert found[name]["message"].startswith("bomb.swf.gz"), found[name]  # named by the upload's name
        assert found[name]["seconds"] < 10, (name, found[name])
    assert found["2 GB of comment lines"]["gzip_mb"] < 5
    assert found["peak_mb"] - found["baseline_mb"] < 200, found


@pytest.mark.slow
def test_batsim_bombs_are_refused_within_seconds_with_bounded_memory(tmp_path):
    """A Batsim workload is parsed a job (or profile) at a time, the caps applied as it goes."""
    found = probe(BATSIM_BOMBS, "batsim", "json", tmp_path)
    expected = {"forty million empty jobs": "field jobs[0].subtime: must be a finite number",
                "ten million jobs": "more than 1,000,000 jobs", "ten million profiles": "more than 1,000,000 profiles",
                "one 512 MB value": "field note: longer than 1,048,576 characters"}
    for name, words in expected.items():
        assert found[name]["message"] is not None and words in found[name]["message"], (name, found[name])
        assert found[name]["message"].startswith("bomb.json.gz"), found[name]
        assert found[name]["seconds"] < 10, (name, found[name])
    assert found["forty million empty jobs"]["gzip_mb"] < 1
    assert found["peak_mb"] - found["baseline_mb"] < 200, found


@pytest.mark.django_db
def test_the_api_answers_a_bomb_with_400_naming_the_file(django_user_model, settings):
    import gzip

    settings.GRIDWEB_TRACE_CAPS = {**settings.GRIDWEB_TRACE_CAPS, "comment_lines": 50}
    user = django_user_model.objects.create_user("uma", password="pw-uma-123")
    api = Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    from django.core.files.uploadedfile import SimpleUploadedFile

    bomb = SimpleUploadedFile("comments.swf.gz", gzip.compress(b";\n" * 1000))
    response = api.post("/api/traces/", {"file": bomb})
    assert response.status_code == 400, response.content
    assert response.json()["errors"]["file"] == ["comments.swf.gz: more than 50 comment lines"]
