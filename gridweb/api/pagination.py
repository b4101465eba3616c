"""The API's list pages: ``limit`` and ``offset`` are whole numbers or a 400 naming the parameter.

DRF's LimitOffsetPagination took ``?limit=abc`` or ``?limit=-1`` as the default page without a word,
and passed ``?limit=10^30`` to the database as SQL's LIMIT (bigint out of range: a 500 on
PostgreSQL). Here a limit above MAX_LIMIT is cut to MAX_LIMIT (the ``next`` link says so) and an
offset past the end is an empty page.
"""

from __future__ import annotations

import re

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination

#: the most items one page holds, whatever ``limit`` asks for
MAX_LIMIT = 1000
#: any number of more digits is past every table's end (and int() of 4,300 digits raises)
_DIGITS = re.compile(r"[0-9]{1,18}")
_HUGE = 10**18


def whole_number(request, name: str, default: int, minimum: int) -> int:
    """Query parameter ``name`` as an int >= ``minimum`` (``default`` when absent or empty)."""
    text = request.query_params.get(name, "")
    if text == "":
        return default
    if text.isascii() and text.isdigit():  # (not int(): it takes " 5", "5_000" and other scripts' digits)
        value = int(text) if _DIGITS.fullmatch(text) else _HUGE
    elif text.startswith("-") and text[1:].isascii() and text[1:].isdigit():
        value = -int(text[1:]) if _DIGITS.fullmatch(text[1:]) else -_HUGE
    else:
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise ValidationError({name: [f"{shown!r} is not a whole number"]})
    if value < minimum:
        raise ValidationError({name: [f"must be at least {minimum} (got {text[:40]})"]})
    return value


class LimitOffsetPages(LimitOffsetPagination):
    max_limit = MAX_LIMIT
    limit_query_description = f"Number of results to return per page (at most {MAX_LIMIT}; more is cut to {MAX_LIMIT})."
    offset_query_description = "The index of the first result to return (past the end: an empty page)."

    def get_limit(self, request) -> int:
        return min(whole_number(request, self.limit_query_param, self.default_limit, 1), self.max_limit)

    def get_offset(self, request) -> int:
        return whole_number(request, self.offset_query_param, 0, 0)
