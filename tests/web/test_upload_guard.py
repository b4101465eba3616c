"""An upload is refused by its declared length before any of its body is read (issue 14: a 200 MB
upload was refused only after the server had read it all, +1.9 GB; sent chunked it was refused as
"No file was submitted"). gridweb/web/upload_guard.py, in front of Django in gridweb.asgi."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import async_to_sync


def post(path: str, headers: list[tuple[bytes, bytes]], body: list[bytes] = (b"x" * 1024,)) -> tuple[int, dict, int]:
    """POST ``body`` (its messages) through the site's ASGI application; (status, JSON body, body
    messages read)."""
    from gridweb.asgi import application

    read = []
    sent: list[dict] = []

    async def receive():
        read.append(1)
        if len(read) <= len(body):
            return {"type": "http.request", "body": body[len(read) - 1], "more_body": len(read) < len(body)}
        await asyncio.Future()  # the client stays connected until the answer is sent

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"host", b"localhost"), *headers], "client": ("127.0.0.1", 5000),
             "server": ("127.0.0.1", 8000)}
    async_to_sync(application)(scope, receive, send)
    status = sent[0]["status"]
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return status, json.loads(body) if body.startswith(b"{") else {}, len(read)


@pytest.mark.parametrize("path", ["/api/traces/", "/scenarios/traces/upload/"])
def test_chunked_and_oversize_uploads_are_refused_unread(path, settings):
    settings.GRIDWEB_MAX_TRACE_BYTES = 1_000_000
    status, body, read = post(path, [(b"transfer-encoding", b"chunked"),
                                     (b"content-type", b"multipart/form-data; boundary=x")])
    assert (status, read) == (411, 0), body
    assert "Content-Length" in body["errors"]["file"][0]
    status, body, read = post(path, [(b"content-length", b"200000000"),
                                     (b"content-type", b"multipart/form-data; boundary=x")])
    assert (status, read) == (413, 0)
    assert body["errors"]["file"] == ["the upload is 200,000,000 bytes, larger than the limit of 1,000,000 bytes "
                                      "for a trace"]


@pytest.mark.django_db
def test_an_upload_within_the_limit_goes_on_to_the_view():
    status, _, read = post("/api/traces/", [(b"content-length", b"1024"),
                                            (b"content-type", b"multipart/form-data; boundary=x")])
    assert read > 0 and status in (400, 401, 403)  # the view read it (and wants a login and a file)


@pytest.mark.parametrize("path", ["/accounts/login/", "/api/token/", "/api/scenarios/", "/scenarios/preview/"])
def test_any_other_body_past_the_json_limit_is_refused_by_its_length_unread(path, settings):
    """(issue 34: only the upload paths were guarded; DATA_UPLOAD_MAX_MEMORY_SIZE is Django's check
    of a Content-Length header after the server has read the body)"""
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100_000
    status, body, read = post(path, [(b"content-length", b"300000000"),
                                     (b"content-type", b"application/x-www-form-urlencoded")])
    assert (status, read) == (413, 0), body
    assert body["errors"] == {"": ["the request body is 300,000,000 bytes, larger than the limit of 100,000 bytes"]}


@pytest.mark.parametrize("path", ["/accounts/login/", "/api/token/"])
def test_a_chunked_body_is_refused_once_past_the_limit_before_django_reads_it(path, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100_000
    messages = [b"username=" + b"a" * 65536, *[b"a" * 65536] * 50]
    status, body, read = post(path, [(b"transfer-encoding", b"chunked"),
                                     (b"content-type", b"application/x-www-form-urlencoded")], messages)
    assert (status, read) == (413, 3), body  # (100,000 bytes and the room for a form's framing: 3 messages)
    assert body["errors"] == {"": ["the request body is larger than the limit of 100,000 bytes"]}


@pytest.mark.django_db
def test_a_chunked_body_within_the_limit_goes_on_to_django_whole():
    messages = [b"password=", b"x" * 60_000, b"&username=a%00b"]  # (its end read: a NUL character, refused)
    status, body, read = post("/accounts/login/", [(b"transfer-encoding", b"chunked"),
                                                   (b"content-type", b"application/x-www-form-urlencoded")], messages)
    assert read >= 3 and (status, body) == (400, {"errors": {"username": ["contains a NUL character"]}})
