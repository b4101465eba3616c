"""One error shape for bad input: ``{"errors": {"dotted.field.path": ["message", ...]}}`` (status 400).

DRF's nested validation details (dicts of fields, lists of items) are flattened into
dotted paths, the same paths the engine reports for scenario documents. The key ``""``
is the request as a whole (DRF's ``non_field_errors``, a body that is not JSON, ...).
Other errors (401, 403, 404, 405, 409) keep DRF's ``{"detail": "..."}``.
"""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler as drf_exception_handler

from gridweb.scenarios.traces import TraceInvalid
from gridweb.scenarios.validation import SpecInvalid


def _join(prefix: str, key: Any) -> str:
    key = "" if key == api_settings.NON_FIELD_ERRORS_KEY else str(key)
    if prefix and key:
        return f"{prefix}.{key}"
    return prefix or key


def flatten_errors(detail: Any, prefix: str = "", into: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
    """``{"spec": {"platform": ["x"]}, "tags": {0: ["y"]}}`` -> ``{"spec.platform": ["x"], "tags.0": ["y"]}``."""
    found: dict[str, list[str]] = {} if into is None else into
    if isinstance(detail, dict):
        for key, value in detail.items():
            # keys may already be dotted paths (the engine's), which join the same way
            flatten_errors(value, _join(prefix, key), found)
    elif isinstance(detail, list | tuple):
        for index, item in enumerate(detail):
            if isinstance(item, dict | list | tuple):
                if item:  # a list of per-item errors: empty dicts are the items without errors
                    flatten_errors(item, _join(prefix, index), found)
            else:
                found.setdefault(prefix, []).append(str(item))
    else:
        found.setdefault(prefix, []).append(str(detail))
    return found


def bad_input(errors: dict[str, list[str]]) -> Response:
    return Response({"errors": errors}, status=status.HTTP_400_BAD_REQUEST)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, with bad input (validation, unparsable bodies, the engine's and the
    trace reader's errors) answered as ``{"errors": {path: [messages]}}``."""
    if isinstance(exc, SpecInvalid | TraceInvalid):
        exc = exceptions.ValidationError(exc.errors)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        response.data = {"errors": flatten_errors(exc.detail)}
    elif isinstance(exc, exceptions.ParseError | exceptions.UnsupportedMediaType):
        response.data = {"errors": {"": [str(exc.detail)]}}
        response.status_code = status.HTTP_400_BAD_REQUEST
    return response
