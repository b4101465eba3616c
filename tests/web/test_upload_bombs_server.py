"""Upload bombs sent over HTTP to the running web server (issue 14, "Uploads exhaust the web
server's memory"): each is refused within 10 s, and the server process's peak memory (VmHWM)
grows by less than 200 MB over all of them. The full stack's ASGI server (daphne), not a test
client: what a user's upload reaches."""

from __future__ import annotations

import http.client
import json
import time
import uuid
from urllib.parse import urlsplit

import pytest

from tests.web.bombs import gzip_of, peak_mb

pytestmark = pytest.mark.slow

TOKEN = """
import json
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
user, _ = get_user_model().objects.get_or_create(username="bomber")
print(json.dumps(Token.objects.get_or_create(user=user)[0].key))
"""
JOB = b"1 0 0 100 4 -1 -1 4 100 -1 1 1 1 1 1 1 -1 -1\n"


def post_file(base_url: str, token: str, name: str, content: bytes, chunked: bool = False) -> tuple[int, dict, float]:
    """POST ``content`` as the ``file`` of /api/traces/; (status, JSON body, seconds)."""
    boundary = uuid.uuid4().hex
    body = (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n").encode() + content + f"\r\n--{boundary}--\r\n".encode()
    url = urlsplit(base_url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    headers = {"Authorization": f"Token {token}", "Content-Type": f"multipart/form-data; boundary={boundary}"}
    t0 = time.monotonic()
    if chunked:
        conn.request("POST", "/api/traces/", body=iter([body[i:i + 65536] for i in range(0, len(body), 65536)]),
                     headers=headers, encode_chunked=True)
    else:
        conn.request("POST", "/api/traces/", body=body, headers=headers)
    response = conn.getresponse()
    data = response.read()
    seconds = time.monotonic() - t0
    conn.close()
    try:
        answer = json.loads(data)
    except ValueError:
        answer = {"raw": data[:200].decode(errors="replace")}
    return response.status, answer, seconds


def test_upload_bombs_sent_to_the_server_are_refused_quickly_and_its_memory_stays_put(full_stack_site):
    site = full_stack_site
    token = site.python_json(TOKEN)
    server = site.processes["server"].pid
    # one ordinary upload first: the server's baseline includes what any upload costs
    status, answer, _ = post_file(site.base_url, token, "one.swf", JOB * 10)
    assert status == 201, answer
    baseline = peak_mb(server)
    bombs = [  # (file name, content, chunked, the answer's status, words of its message)
        ("comments.swf.gz", gzip_of(b";\n", 2 << 30), False, 400, "more than 10,000 comment lines"),
        ("line.swf.gz", gzip_of(b"1", 512 << 20), False, 400, "a line longer than"),
        ("jobs.swf.gz", gzip_of(JOB, 10_000_000 * len(JOB)), False, 400, "more than 1,000,000 jobs"),
        ("empty.json.gz", gzip_of(b"{},", 120 << 20, head=b'{"nb_res": 1, "jobs": ['), False, 400, "jobs[0]"),
        ("chunked.swf.gz", gzip_of(b";\n", 2 << 30), True, 411, "Content-Length"),  # no declared length
        ("plain.swf", JOB * (200 * 2**20 // len(JOB)), False, 413, "larger than the limit"),  # by its length
    ]
    peaks = {}
    for name, content, chunked, expected, words in bombs:
        status, answer, seconds = post_file(site.base_url, token, name, content, chunked)
        peaks[name] = round(peak_mb(server) - baseline)
        assert status == expected, (name, status, answer)
        assert words in json.dumps(answer), (name, answer)
        assert seconds < 10, (name, seconds)
    grown = peak_mb(server) - baseline
    assert grown < 200, f"the server's peak memory grew by {grown:.0f} MB (after each: {peaks})"
    # and it still serves: an ordinary upload goes through
    status, answer, _ = post_file(site.base_url, token, "two.swf", JOB * 11)
    assert status == 201, answer
