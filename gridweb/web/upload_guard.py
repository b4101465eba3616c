"""Uploads are refused by their declared length before any of the body is read.

Django's ASGI handler reads a request's whole body (into memory, then a temporary file) before a
view runs, so a view can only refuse an oversize upload after the server has taken it all in,
and a chunked body (no Content-Length) cannot be judged by its length at all. This ASGI
middleware, in front of Django, answers the upload endpoints at once: 411 without a
Content-Length, 413 above the trace size limit (``GRIDWEB_MAX_TRACE_BYTES`` plus room for the
form's other fields), as ``{"errors": {"file": [...]}}`` like every other refusal of an upload.
"""

from __future__ import annotations

import json

from django.conf import settings

#: room for the multipart form's other fields and boundaries beside the file
UPLOAD_FORM_SLACK = 64 * 1024
#: the paths that take uploads (the API's and the builder's)
UPLOAD_PATHS = ("/api/traces/", "/scenarios/traces/upload/")


def upload_limit() -> int:
    return int(settings.GRIDWEB_MAX_TRACE_BYTES) + UPLOAD_FORM_SLACK


class UploadGuard:
    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope.get("method") == "POST" and scope.get("path") in UPLOAD_PATHS:
            headers = dict(scope.get("headers") or [])
            declared = headers.get(b"content-length")
            if declared is None:
                return await _refuse(send, 411, "send the file with a Content-Length header: an upload of unknown "
                                                "length (a chunked body) cannot be checked before it is read")
            try:
                length = int(declared)
            except ValueError:
                return await _refuse(send, 400, "the Content-Length header is not a number")
            if length > upload_limit():
                limit = int(settings.GRIDWEB_MAX_TRACE_BYTES)
                return await _refuse(send, 413, f"the upload is {length:,} bytes, larger than the limit of "
                                                f"{limit:,} bytes for a trace")
        return await self.application(scope, receive, send)


async def _refuse(send, status: int, message: str) -> None:
    body = json.dumps({"errors": {"file": [message]}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
