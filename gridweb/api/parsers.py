"""The API's JSON parser: gridweb.safe_json's limits (nesting depth, NUL characters, unpaired
surrogates) and the body's size (DATA_UPLOAD_MAX_MEMORY_SIZE), refused as a 400 naming where."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework import exceptions
from rest_framework.parsers import JSONParser

from gridweb.safe_json import BadJson, loads


class SafeJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        # DRF reads the stream itself, past Django's check of DATA_UPLOAD_MAX_MEMORY_SIZE (request.body)
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        data = b"" if stream is None else stream.read() if limit is None else stream.read(limit + 1)
        if limit is not None and len(data) > limit:
            raise exceptions.ParseError(f"the request body is larger than {limit:,} bytes")
        try:
            return loads(data)
        except BadJson as exc:
            if exc.path:
                raise exceptions.ValidationError({exc.path: [exc.reason]}) from None
            raise exceptions.ParseError(exc.reason) from None
