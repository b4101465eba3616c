"""The API's JSON parser: gridweb.safe_json's limits (nesting depth, NUL characters, unpaired
surrogates), refused as a 400 naming where."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions
from rest_framework.parsers import JSONParser

from gridweb.safe_json import BadJson, loads


class SafeJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        try:
            return loads(stream.read() if stream is not None else b"")
        except BadJson as exc:
            if exc.path:
                raise exceptions.ValidationError({exc.path: [exc.reason]}) from None
            raise exceptions.ParseError(exc.reason) from None
