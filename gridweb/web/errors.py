"""The site's error pages (400, 403, 404, 500): the site's layout and a sentence on what went wrong,
never a setting or a trace (those are for DEBUG, which is off unless asked for). API paths get the
same sentence as JSON (``{"detail": ...}``, as the API's own errors)."""
from __future__ import annotations

import sys

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.template import loader

TITLES = {400: "Bad request", 403: "Not allowed", 404: "Not found", 500: "Server error"}


def _answer(request: HttpRequest, status: int, reason: str) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": reason}, status=status)
    return render(request, "error.html", {"status": status, "title": TITLES[status], "reason": reason}, status=status)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Requests Django refuses before any view sees them: the limits are named (docs/deploy.md)."""
    if isinstance(exception, RequestDataTooBig):
        reason = (f"The request's form data is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes "
                  "(DATA_UPLOAD_MAX_MEMORY_SIZE); upload files as files, or send less.")
    elif isinstance(exception, TooManyFieldsSent):
        reason = f"The request has more than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS:,} form fields."
    elif isinstance(exception, TooManyFilesSent):
        reason = f"The request has more than {settings.DATA_UPLOAD_MAX_NUMBER_FILES:,} files."
    else:
        reason = "The request could not be understood."
    return _answer(request, 400, reason)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _answer(request, 403, "You may not do this here (log in, or ask the owner to share it).")


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _answer(request, 404, "There is nothing here, or nothing you may see.")


def _waited_for_a_database_connection() -> bool:
    """Whether the failure being handled is the connection pool's wait running out (docs/deploy.md,
    GRIDWEB_DB_POOL_TIMEOUT): the server is busy, nothing is broken."""
    exc = sys.exc_info()[1]
    seen = 0
    while exc is not None and seen < 10:
        if type(exc).__name__ == "PoolTimeout":
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def server_error(request: HttpRequest) -> HttpResponse:
    """A page of its own, rendered without context processors: the failure may be the database's."""
    if _waited_for_a_database_connection():
        reason = "The server is busy: every database connection is in use. Try again in a few seconds."
        if request.path.startswith("/api/"):
            response = JsonResponse({"detail": reason}, status=503)
        else:
            response = HttpResponse(f"<!doctype html><title>Busy</title><h1>Server busy</h1><p>{reason}</p>",
                                    status=503)
        response["Retry-After"] = "5"
        return response
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "The server failed to answer; the failure is logged."}, status=500)
    return HttpResponse(loader.get_template("500.html").render(), status=500)
