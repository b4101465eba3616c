"""Request bodies and parameters that cannot crash a view: JSON parsed with a bounded nesting depth
(checked in one pass, in time linear in the body and memory bounded whatever it holds), strings
without NUL characters or unpaired surrogates (which PostgreSQL text and UTF-8 cannot hold), and
numbers Python and the database can hold (integers Python converts, finite floats), each refusal
naming where and why.

Used by every JSON body GridWeb reads (the API's parser, the builder's views) and, for query and
form parameters, by :class:`RejectNulMiddleware`.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any
from urllib.parse import unquote_to_bytes

import numpy as np
from django.http import HttpRequest, HttpResponse, JsonResponse

#: a scenario document nests about ten levels; deeper than this is refused before parsing
MAX_DEPTH = 64
#: keys of one object: a scenario's objects have a dozen; 100k unknown keys took seconds to list as errors
MAX_KEYS = 1000
_BAD_CHARACTER = re.compile("[\x00\ud800-\udfff]")
#: bytes the depth check reads at a time: its temporaries are a few times this, whatever the body
DEPTH_CHUNK = 1 << 16
_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_STEP = np.zeros(256, np.int8)  # what each byte does to the nesting level outside strings
_STEP[[ord("["), ord("{")]], _STEP[[ord("]"), ord("}")]] = 1, -1


class BadJson(ValueError):
    """A body that is not acceptable JSON: ``path`` (dotted, "" for the whole body) and ``reason``."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path or 'body'}: {reason}")
        self.path, self.reason = path, reason


def depth(text: str | bytes, chunk: int = DEPTH_CHUNK) -> int:
    """The deepest nesting of arrays and objects in JSON ``text`` (brackets inside strings do not count).

    One pass over the text, ``chunk`` bytes at a time, carrying between chunks whether a string is
    open, whether the next character is escaped, and the level: time linear in the text and
    memory bounded by the chunk. A backslash escapes the next character wherever it stands (outside
    a string it is not JSON: the parser refuses it there, and this count agrees with the parser's
    nesting up to that point).
    """
    inside = escape_next = False
    level = deepest = 0
    view = memoryview(text) if isinstance(text, bytes | bytearray) else None
    for start in range(0, len(text), chunk):
        if view is not None:
            codes = np.frombuffer(view[start:start + chunk], np.uint8)
        else:  # (surrogates are refused later, naming their path)
            codes = np.frombuffer(text[start:start + chunk].encode("utf-8", "surrogatepass"), np.uint8)
        backslash = codes == _BACKSLASH
        escaped = np.zeros(len(codes), bool)
        escaped[0] = escape_next
        if backslash.any():  # (most bodies have none or few: skip the run lengths)
            index = np.arange(len(codes), dtype=np.int32)
            # the last character before each position that is not a backslash (-1: the run began earlier)
            before = np.maximum.accumulate(np.where(backslash, np.int32(-1), index))
            run = index - before + (before < 0) * np.int32(escape_next)
            escaper = backslash & (run % 2 == 1)  # a backslash that escapes the next character
            escaped[1:] = escaper[:-1]
            escape_next = bool(escaper[-1])
        else:
            escape_next = False
        quotes = (codes == _QUOTE) & ~escaped
        in_string = (np.cumsum(quotes, dtype=np.int32) + int(inside)) % 2 == 1  # (after each character)
        inside = bool(in_string[-1])
        step = _STEP[codes] * ~(in_string | escaped)
        levels = np.cumsum(step, dtype=np.int64) + level
        deepest = max(deepest, int(levels.max()))
        level = int(levels[-1])
    return deepest


class _LongInteger:
    """An integer the parser was not let convert (more digits than Python's limit): refused by path."""

    def __init__(self, digits: int):
        self.digits = digits


def parse_integer(text: str) -> int | _LongInteger:
    """json.loads's parse_int that leaves an integer too long to convert for check_values to refuse by path."""
    digits = len(text) - text.startswith("-")
    limit = sys.get_int_max_str_digits()
    return _LongInteger(digits) if limit and digits > limit else int(text)


def loads(data: bytes | str) -> Any:
    """Parse a JSON body; BadJson when it is not UTF-8 JSON, nests deeper than MAX_DEPTH, holds an
    object of more than MAX_KEYS keys, a string with a NUL character or an unpaired surrogate, an
    integer of more digits than Python converts or a number that is not finite (1e400, NaN,
    Infinity) -- named by its dotted path."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes | bytearray | memoryview) else data
    except UnicodeDecodeError as exc:
        raise BadJson("", f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    if depth(data if isinstance(data, bytes | bytearray) else text) > MAX_DEPTH:
        raise BadJson("", f"nested more than {MAX_DEPTH} levels deep")
    try:
        value = json.loads(text or "null")
    except json.JSONDecodeError as exc:
        raise BadJson("", f"not JSON: {exc}") from None
    except ValueError:  # an integer past sys.get_int_max_str_digits(): parsed again to find which
        value = json.loads(text, parse_int=parse_integer)
    # A NUL character or a surrogate can only come from a \u escape: json.loads refuses raw control
    # characters and strict UTF-8 decoding raw surrogates (a str body may hold them: searched). Without
    # one, the walk skips the strings -- a third of its time on a 4 MB body.
    strings = "\\u" in text or (isinstance(data, str) and _BAD_CHARACTER.search(text) is not None)
    check_values(value, strings=strings)
    return value


def check_values(value: Any, path: str = "", strings: bool = True) -> None:
    """BadJson for the first string (key or value) with a NUL character or an unpaired surrogate,
    object of more than MAX_KEYS keys, or number that is not finite or was too long to convert.
    ``strings`` False: the strings are known to be clean (not searched)."""
    try:
        _check(value, strings)
    except _Refused as refused:
        inner = ".".join(str(part) for part in reversed(refused.path))
        raise BadJson(f"{path}.{inner}" if path and inner else path or inner, refused.reason) from None


check_strings = check_values  # (its older name)


class _Refused(Exception):
    def __init__(self, reason: str):
        self.reason, self.path = reason, []


def _check(value: Any, strings: bool = True) -> None:
    # (the path is built only for a refusal, on the way out: most values are fine)
    if isinstance(value, str):
        if strings and (reason := text_error(value)) is not None:
            raise _Refused(reason)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise _Refused("is not a finite number (" + ("beyond ±1.8e308" if math.isinf(value) else "NaN") + ")")
    elif isinstance(value, dict):
        if len(value) > MAX_KEYS:
            raise _Refused(f"an object of {len(value):,} keys (more than {MAX_KEYS:,})")
        for key, item in value.items():
            if isinstance(item, int) and not strings:
                continue
            try:
                if strings and (reason := text_error(key)) is not None:
                    raise _Refused(reason)
                _check(item, strings)
            except _Refused as refused:
                refused.path.append(key)
                raise
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, int):
                continue
            try:
                _check(item, strings)
            except _Refused as refused:
                refused.path.append(index)
                raise
    elif isinstance(value, _LongInteger):
        limit = sys.get_int_max_str_digits()
        raise _Refused(f"an integer of {value.digits:,} digits (more than {limit:,})")


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


class RejectNulMiddleware:
    """Answer 400 ``{"errors": {"<parameter>": [reason]}}`` for a query or form parameter holding
    a NUL character or an unpaired surrogate (or bytes that are not UTF-8), before any view filters
    a query with it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        parameters = [request.GET]
        scope = getattr(request, "scope", None)  # ASGI: the query's bytes; WSGI: latin-1 text (PEP 3333)
        query = scope.get("query_string", b"") if scope is not None else request.META.get("QUERY_STRING", "")
        # (Django's own AsyncClient gives the ASGI query as text: taken as the latin-1 of its bytes)
        raw = [query if isinstance(query, bytes) else query.encode("latin-1", "replace")]
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
