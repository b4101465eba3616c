"""Uploads are refused by their declared length before any of the body is read.

Django's ASGI handler reads a request's whole body (into memory, then a temporary file) before a
view runs, so a view can only refuse an oversize upload after the server has taken it all in,
and a chunked body (no Content-Length) cannot be judged by its length at all. This ASGI
middleware, in front of Django, answers the upload endpoints at once: 411 without a
Content-Length, 413 above the trace size limit (``GRIDWEB_MAX_TRACE_BYTES`` plus room for the
form's other fields), as ``{"errors": {"file": [...]}}`` like every other refusal of an upload.

Under daphne that is not enough: its HTTP layer (Twisted) takes a body in before the application
is called -- into a temporary file, then parsed as a form in memory when it is multipart (several
times its size: +2 GB for a 200 MB upload), then queued whole for the application.
:func:`install_in_daphne` makes daphne's requests skip Twisted's form parsing (Django parses the
body itself) and drop the body of a request refused by its headers as it arrives, so the
middleware answers it with nothing of it kept.
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


def refusal(method: str, path: str, declared: bytes | None) -> tuple[int, str] | None:
    """(status, message) for a request refused by its method, path and Content-Length header
    (None: not refused)."""
    if method != "POST" or path not in UPLOAD_PATHS:
        return None
    if declared is None:
        return 411, ("send the file with a Content-Length header: an upload of unknown length (a chunked body) "
                     "cannot be checked before it is read")
    try:
        length = int(declared)
    except ValueError:
        return 400, "the Content-Length header is not a number"
    if length > upload_limit():
        return 413, (f"the upload is {length:,} bytes, larger than the limit of "
                     f"{int(settings.GRIDWEB_MAX_TRACE_BYTES):,} bytes for a trace")
    return None


class UploadGuard:
    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            declared = dict(scope.get("headers") or []).get(b"content-length")
            refused = refusal(scope.get("method", ""), scope.get("path", ""), declared)
            if refused is not None:
                return await _refuse(send, *refused)
        return await self.application(scope, receive, send)


class _Dropped:
    """The body of a request refused by its headers: read off the connection and dropped
    (daphne hands the application an empty body; the middleware answers by the headers)."""

    closed = False

    def write(self, data: bytes) -> None:
        pass

    def read(self, size: int = -1) -> bytes:
        return b""

    def seek(self, offset: int, whence: int = 0) -> int:
        return 0

    def tell(self) -> int:
        return 0

    def close(self) -> None:
        self.closed = True


def install_in_daphne() -> None:
    """Daphne's requests (see the module docstring): called once, by gridweb.asgi."""
    try:
        from daphne.http_protocol import WebRequest  # (here: the app may run under another ASGI server)
    except ImportError:  # another ASGI server: the middleware alone
        return
    if getattr(WebRequest, "gridweb_guarded", False):
        return
    took_length = WebRequest.gotLength

    def gotLength(self, length):  # noqa: N802 - Twisted's name (called once the headers are in)
        self._parsePOSTFormSubmission = False  # Django parses the form; Twisted would hold it all in memory
        line = getattr(self.channel, "_path", b"") or b""
        method = (getattr(self.channel, "_command", b"") or b"").decode("latin-1")
        path = line.split(b"?", 1)[0].decode("latin-1")
        declared = self.requestHeaders.getRawHeaders(b"content-length", [None])[0]
        if refusal(method, path, declared) is not None:
            self.content = _Dropped()
        else:
            took_length(self, length)

    WebRequest.gotLength = gotLength
    WebRequest.gridweb_guarded = True


async def _refuse(send, status: int, message: str) -> None:
    body = json.dumps({"errors": {"file": [message]}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
