"""Request bodies are bounded on every path: refused by their declared length before any of the
body is read, and counted while read when they have none (chunked).

Django's ASGI handler reads a request's whole body (into memory, then a temporary file) before a
view runs, so a view can only refuse an oversize body after the server has taken it all in, and
DATA_UPLOAD_MAX_MEMORY_SIZE is checked against the Content-Length header only: a chunked form
(no Content-Length) was read whole into memory (a 300 MB one to /accounts/login/: +900 MB).
:class:`BodyLimit`, an ASGI middleware in front of Django, answers at once 413 for a declared
length above the path's limit -- ``GRIDWEB_MAX_TRACE_BYTES`` plus room for the form's other fields
on the upload paths, DATA_UPLOAD_MAX_MEMORY_SIZE plus the same room elsewhere -- and 411 for an
upload without a Content-Length; any other body is read, counted, and refused with 413 once past
the limit before Django sees it. Uploads answer ``{"errors": {"file": [...]}}`` like every other
refusal of an upload, other bodies ``{"errors": {"": [...]}}`` (the request as a whole).

Under daphne that is not enough: its HTTP layer (Twisted) takes a body in before the application
is called -- into a temporary file, then parsed as a form in memory when it is multipart (several
times its size: +2 GB for a 200 MB upload), then queued whole for the application.
:func:`install_in_daphne` makes daphne's requests skip Twisted's form parsing (Django parses the
body itself), drop the body of a request refused by its headers as it arrives, and keep no more
than the limit and one byte of a chunked body (the rest is read and dropped), so the middleware
answers with at most the limit kept.
"""

from __future__ import annotations

import json
from collections import deque
from urllib.parse import unquote

from django.conf import settings

#: room for the multipart form's other fields and boundaries beside the file (or the form's data)
UPLOAD_FORM_SLACK = 64 * 1024
#: the paths that take uploads (the API's and the builder's)
UPLOAD_PATHS = ("/api/traces/", "/scenarios/traces/upload/")


def upload_limit() -> int:
    return int(settings.GRIDWEB_MAX_TRACE_BYTES) + UPLOAD_FORM_SLACK


def body_limit(method: str, path: str) -> tuple[int, int] | None:
    """(bytes a body may have, the limit named to the client) on ``path``; None: no limit."""
    if method == "POST" and path in UPLOAD_PATHS:
        return upload_limit(), int(settings.GRIDWEB_MAX_TRACE_BYTES)
    if settings.DATA_UPLOAD_MAX_MEMORY_SIZE is None:
        return None
    # (forms with a file, e.g. the builder's import of a scenario, are well within it)
    return int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE) + UPLOAD_FORM_SLACK, int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)


def too_large(method: str, path: str, length: int, counted: bool = False) -> tuple[int, str] | None:
    """413 for a body of ``length`` bytes above the path's limit (``counted``: read so far, not declared)."""
    limit = body_limit(method, path)
    if limit is None or length <= limit[0]:
        return None
    upload = method == "POST" and path in UPLOAD_PATHS
    size = " is" if counted else f" is {length:,} bytes,"
    return 413, (f"{'the upload' if upload else 'the request body'}{size} larger than the limit of {limit[1]:,} bytes"
                 + (" for a trace" if upload else ""))


def refusal(method: str, path: str, declared: bytes | None) -> tuple[int, str] | None:
    """(status, message) for a request refused by its method, path and Content-Length header
    (None: not refused by its headers)."""
    if declared is None:
        if method == "POST" and path in UPLOAD_PATHS:
            return 411, ("send the file with a Content-Length header: an upload of unknown length (a chunked body) "
                         "cannot be checked before it is read")
        return None  # (counted as it is read)
    try:
        length = int(declared)
    except ValueError:
        return 400, "the Content-Length header is not a number"
    return too_large(method, path, length)


class BodyLimit:
    """The ASGI middleware (see the module docstring)."""

    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.application(scope, receive, send)
        method, path = scope.get("method", ""), scope.get("path", "")
        declared = dict(scope.get("headers") or []).get(b"content-length")
        refused = refusal(method, path, declared)
        if refused is not None:
            return await _refuse(send, path, *refused)
        limit = body_limit(method, path)
        # The body, read and counted before Django reads it (daphne has queued it all already).
        read: deque[dict] = deque()
        size = 0
        while True:
            message = await receive()
            read.append(message)
            if message["type"] != "http.request":
                break  # (a disconnect: Django sees it)
            size += len(message.get("body", b""))
            if limit is not None and size > limit[0]:
                return await _refuse(send, path, *too_large(method, path, size, counted=True))
            if not message.get("more_body", False):
                break

        async def replay():
            return read.popleft() if read else await receive()

        return await self.application(scope, replay, send)


UploadGuard = BodyLimit  # (its older name)


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


class _Capped:
    """A chunked body as daphne's request keeps it: its first ``keep`` bytes (the middleware refuses
    a body that long), the rest read off the connection and dropped."""

    def __init__(self, content, keep: int):
        self._content, self._left = content, keep

    def write(self, data: bytes) -> None:
        if self._left > 0:
            self._content.write(data[:self._left])
            self._left -= min(len(data), self._left)

    def __getattr__(self, name):  # read, seek, tell, close, closed: the file's own
        return getattr(self._content, name)


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
        path = unquote(line.split(b"?", 1)[0].decode("latin-1"))
        declared = self.requestHeaders.getRawHeaders(b"content-length", [None])[0]
        if refusal(method, path, declared) is not None:
            self.content = _Dropped()
            return
        took_length(self, length)
        limit = body_limit(method, path)
        if length is None and limit is not None:  # chunked: the limit and one byte kept, the rest dropped
            self.content = _Capped(self.content, limit[0] + 1)

    WebRequest.gotLength = gotLength
    WebRequest.gridweb_guarded = True


async def _refuse(send, path: str, status: int, message: str) -> None:
    field = "file" if path in UPLOAD_PATHS else ""
    body = json.dumps({"errors": {field: [message]}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
