"""The API's only body parser: JSON, with hostile nesting turned into a 400, and text that
cannot be stored everywhere (a lone surrogate, NUL) refused naming the field."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework import serializers
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser
from rest_framework.utils import json

from challenges.text import BAD_ESCAPE, text_error, text_problem


class SafeJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        parser_context = parser_context or {}
        encoding = parser_context.get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = stream.read().decode(encoding)
        except (UnicodeDecodeError, LookupError):
            raise ParseError(f"JSON parse error - the body is not valid {encoding}.") from None
        try:
            data = json.loads(text, parse_constant=json.strict_constant)
        except RecursionError:
            raise ParseError("JSON parse error - the body is nested too deeply.") from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        # Decoded UTF-8 holds no surrogate, and JSON strings no raw NUL: only escapes can
        # bring them, so most bodies skip the walk.
        if BAD_ESCAPE.search(text):
            problem = text_problem(data)
            if problem is not None:
                raise serializers.ValidationError(text_error(*problem))
        return data
