"""Request bodies and parameters that cannot crash a view: JSON parsed with a bounded nesting depth,
and strings without NUL characters or unpaired surrogates (which PostgreSQL text and UTF-8 cannot
hold), each refusal naming where and why.

Used by every JSON body GridWeb reads (the API's parser, the builder's views) and, for query and
form parameters, by :class:`RejectNulMiddleware`.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import unquote_to_bytes

import numpy as np
from django.http import HttpRequest, HttpResponse, JsonResponse

#: a scenario document nests about ten levels; deeper than this is refused before parsing
MAX_DEPTH = 64
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BAD_CHARACTER = re.compile("[\x00\ud800-\udfff]")


class BadJson(ValueError):
    """A body that is not acceptable JSON: ``path`` (dotted, "" for the whole body) and ``reason``."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path or 'body'}: {reason}")
        self.path, self.reason = path, reason


def depth(text: str) -> int:
    """The deepest nesting of arrays and objects in JSON ``text`` (brackets inside strings do not count)."""
    skeleton = _STRINGS.sub("", text).encode("latin-1", "replace")
    codes = np.frombuffer(skeleton, np.uint8)
    step = (np.isin(codes, (ord("["), ord("{"))).astype(np.int32)
            - np.isin(codes, (ord("]"), ord("}"))).astype(np.int32))
    return int(np.cumsum(step).max(initial=0))


def loads(data: bytes | str) -> Any:
    """Parse a JSON body; BadJson when it is not UTF-8 JSON, nests deeper than MAX_DEPTH, or holds
    a string with a NUL character or an unpaired surrogate (named by its dotted path)."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes | bytearray | memoryview) else data
    except UnicodeDecodeError as exc:
        raise BadJson("", f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    if depth(text) > MAX_DEPTH:
        raise BadJson("", f"nested more than {MAX_DEPTH} levels deep")
    try:
        value = json.loads(text or "null")
    except json.JSONDecodeError as exc:
        raise BadJson("", f"not JSON: {exc}") from None
    check_strings(value)
    return value


def check_strings(value: Any, path: str = "") -> None:
    """BadJson for the first string (key or value) with a NUL character or an unpaired surrogate."""
    if isinstance(value, str):
        _check_text(value, path)
    elif isinstance(value, dict):
        for key, item in value.items():
            inner = f"{path}.{key}" if path else str(key)
            _check_text(key, inner)
            check_strings(item, inner)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            check_strings(item, f"{path}.{index}" if path else str(index))


def text_error(text: str) -> str | None:
    """Why ``text`` cannot be stored (a NUL character, an unpaired surrogate), or None."""
    found = _BAD_CHARACTER.search(text)
    if found is None:
        return None
    return "contains " + ("a NUL character" if found.group() == "\x00" else "an unpaired surrogate (not valid Unicode)")


def undecodable(raw: bytes) -> tuple[str, str] | None:
    """(parameter, reason) for the first parameter of a query string (or form body) whose bytes are not
    UTF-8, which Django silently turns into U+FFFD: ``%ED%A0%80`` (an encoded surrogate), ``%FF``."""
    for pair in raw.split(b"&"):
        name, _, value = (unquote_to_bytes(part.replace(b"+", b" ")) for part in pair.partition(b"="))
        for part in (name, value):
            try:
                part.decode("utf-8")
            except UnicodeDecodeError:
                try:
                    reason = text_error(part.decode("utf-8", "surrogatepass"))
                except UnicodeDecodeError:
                    reason = None
                return name.decode("utf-8", "replace"), reason or "contains bytes that are not UTF-8"
    return None


def _check_text(text: str, path: str) -> None:
    reason = text_error(text)
    if reason is not None:
        raise BadJson(path, reason)


class RejectNulMiddleware:
    """Answer 400 ``{"errors": {"<parameter>": [reason]}}`` for a query or form parameter holding
    a NUL character or an unpaired surrogate (or bytes that are not UTF-8), before any view filters
    a query with it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        parameters = [request.GET]
        scope = getattr(request, "scope", None)  # ASGI: the query's bytes; WSGI: latin-1 text (PEP 3333)
        raw = [scope.get("query_string", b"") if scope is not None
               else request.META.get("QUERY_STRING", "").encode("latin-1", "replace")]
        # (not multipart bodies: reading them here would fix their upload handlers before the view
        # runs; the trace upload checks its own text fields, gridweb.scenarios.traces)
        if request.method == "POST" and request.content_type == "application/x-www-form-urlencoded":
            parameters.append(request.POST)
            raw.append(request.body)
        for found in filter(None, map(undecodable, raw)):
            return JsonResponse({"errors": {found[0]: [found[1]]}}, status=400)
        for query in parameters:
            for name, values in query.lists():
                reason = next(filter(None, map(text_error, (name, *values))), None)
                if reason is not None:
                    return JsonResponse({"errors": {name: [reason]}}, status=400)
        return self.get_response(request)
