"""Oversize request bodies sent to the running web server on any path (issue 34, item 4: a 300 MB
chunked form to /accounts/login/ grew the server by 900 MB -- only the upload paths were guarded).
Each is answered 413 within 2 s, by its declared length or, chunked, once past the limit, and the
server's peak memory (VmHWM) grows by less than 100 MB over all of them. The full stack's ASGI
server (daphne), as a client reaches it. gridweb/web/upload_guard.py."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from tests.web.bombs import peak_mb

pytestmark = pytest.mark.slow

MB = 1 << 20


def pieces(head: bytes, total: int) -> Iterator[bytes]:
    """``head`` and then ``a`` up to ``total`` bytes, 64 KB at a time (made as sent, never held whole)."""
    yield head
    piece = b"a" * 65536
    whole, rest = divmod(total - len(head), len(piece))
    for _ in range(whole):
        yield piece
    yield piece[:rest]


def send(base_url: str, path: str, content_type: str, body: Iterator[bytes], length: int | None) -> tuple[int, str, float]:
    """POST ``body`` (chunked when ``length`` is None); (status, answer, seconds)."""
    url = urlsplit(base_url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    headers = {"Content-Type": content_type}
    if length is not None:
        headers["Content-Length"] = str(length)
    t0 = time.monotonic()
    try:
        conn.request("POST", path, body=body, headers=headers, encode_chunked=length is None)
    except (BrokenPipeError, ConnectionResetError):
        pass  # (the server answered before the body's end and closed: its answer is read below)
    try:
        response = conn.getresponse()
        status, answer = response.status, response.read().decode(errors="replace")
    except (OSError, http.client.HTTPException) as exc:  # (before the fix: no answer within 60 s, or none)
        status, answer = 0, repr(exc)
    finally:
        conn.close()
    return status, answer, time.monotonic() - t0


def test_oversize_bodies_on_any_path_are_refused_quickly_and_the_servers_memory_stays_put(full_stack_site):
    site = full_stack_site
    server = site.processes["server"].pid
    form = "application/x-www-form-urlencoded"
    # an ordinary login page and form post first: the baseline includes what any request costs
    status, _, _ = send(site.base_url, "/accounts/login/", form, iter([b"username=a&password=b"]), 21)
    assert status in (200, 403)
    baseline = peak_mb(server)
    bombs = [  # (path, content type, body, declared length or None for chunked)
        ("/accounts/login/", form, pieces(b"username=", 300 * MB), None),
        ("/api/token/", "application/json", pieces(b'{"username": "', 100 * MB), None),
        ("/api/scenarios/", "application/json", pieces(b'{"spec": "', 300 * MB), 300 * MB),
        ("/scenarios/validate/", "application/json", pieces(b'{"name": "', 50 * MB), None),
    ]
    answers = {}  # (all sent before any is judged: a failure shows what each cost)
    for path, content_type, body, length in bombs:
        status, answer, seconds = send(site.base_url, path, content_type, body, length)
        answers[path] = (status, round(seconds, 2), round(peak_mb(server) - baseline), answer[:200])
    print(answers)
    for path, (status, seconds, grown, answer) in answers.items():
        assert status == 413, answers
        assert "larger than the limit of 5,242,880 bytes" in answer, answers
        assert seconds < 2, answers
    grown = peak_mb(server) - baseline
    assert grown < 100, f"the server's peak memory grew by {grown:.0f} MB (status, seconds, MB after each: {answers})"
    # and it still serves: a body within the limit reaches its view
    status, answer, _ = send(site.base_url, "/api/token/", "application/json",
                             iter([json.dumps({"username": "nobody", "password": "x" * 1000}).encode()]), None)
    assert status == 400 and "limit" not in answer, (status, answer[:300])
