"""Strict serializer fields: JSON types are taken as they are, never coerced.

DRF's defaults accept "12" for an integer and "yes" for a boolean; an integration that
sends the wrong type should hear about it instead of having it guessed.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from django.utils.dateparse import parse_datetime
from rest_framework import serializers

MIN_EPOCH_MS = 0
MAX_EPOCH_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            raise serializers.ValidationError("Must be true or false.")
        return data


class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            if isinstance(data, float) and math.isfinite(data) and data.is_integer():
                data = int(data)
            else:
                raise serializers.ValidationError("Must be an integer.")
        return super().to_internal_value(data)


class StrictFloatField(serializers.FloatField):
    """A JSON number (not a string, not a boolean), finite."""

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise serializers.ValidationError("Must be a number.")
        if not math.isfinite(data):
            raise serializers.ValidationError("Must be a finite number.")
        return super().to_internal_value(data)


class StrictCharField(serializers.CharField):
    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            raise serializers.ValidationError("Must be a string.")
        return super().to_internal_value(data)


class JSONObjectField(serializers.JSONField):
    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise serializers.ValidationError("Must be a JSON object.")
        return data


class JSONListField(serializers.JSONField):
    def to_internal_value(self, data: Any) -> list[Any]:
        if not isinstance(data, list):
            raise serializers.ValidationError("Must be a JSON list.")
        return data


def epoch_ms_datetime(value: int) -> datetime:
    """Epoch milliseconds (within MIN_EPOCH_MS and MAX_EPOCH_MS) as an aware UTC moment."""
    return datetime.fromtimestamp(value // 1000, tz=UTC).replace(microsecond=value % 1000 * 1000)


def _truncate_ms(value: datetime) -> datetime:
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


class EpochOrISODateTimeField(serializers.DateTimeField):
    """Epoch milliseconds (an integer) or an ISO 8601 string (UTC when no offset is
    given); kept to the millisecond, the precision of the scoring metrics."""

    def to_internal_value(self, data: Any) -> datetime:
        if isinstance(data, bool):
            raise serializers.ValidationError("Must be epoch milliseconds or an ISO 8601 string.")
        if isinstance(data, int):
            if not MIN_EPOCH_MS <= data <= MAX_EPOCH_MS:
                raise serializers.ValidationError(
                    f"Epoch milliseconds must be between {MIN_EPOCH_MS} and {MAX_EPOCH_MS}."
                )
            return epoch_ms_datetime(data)
        if isinstance(data, str):
            try:
                parsed = parse_datetime(data.strip())
            except ValueError:
                parsed = None
            if parsed is None:
                raise serializers.ValidationError(
                    "Not an ISO 8601 date-time (e.g. 2026-11-21T10:00:00Z)."
                )
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=UTC)
            try:
                value = parsed.astimezone(UTC)
            except OverflowError:
                value = None
            if value is None or value.year < 1970:
                raise serializers.ValidationError(
                    "Must be between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z."
                )
            return _truncate_ms(value)
        raise serializers.ValidationError("Must be epoch milliseconds or an ISO 8601 string.")
