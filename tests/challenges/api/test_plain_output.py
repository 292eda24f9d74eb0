"""The plain output writer is generated from its serializer: a field added to the
serializer is written with no other change, in the serializer's order, exactly as DRF
writes it; a field name the writer is told about that the serializer lacks is refused at
import."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest
from rest_framework import serializers

from challenges.api import plain_output
from challenges.api.serializers import ServedFloatField


class Base(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField(source="owner.name")
    ok = serializers.BooleanField()
    data = serializers.JSONField(allow_null=True)
    at = serializers.DateTimeField()
    score = ServedFloatField(allow_null=True)
    status = serializers.ChoiceField(choices=["a", "b"])


class Grown(Base):  # a field added later: nothing else changes
    extra = serializers.IntegerField(source="owner.size", allow_null=True)


ROW = SimpleNamespace(
    id=7,
    owner=SimpleNamespace(name="Zoë", size=None),
    ok=True,
    data={"x": [1, 2.5, None]},
    at=datetime(2026, 11, 28, 12, 0, 1, 5000, tzinfo=UTC),
    score=1 / 3,
    status="b",
)


@pytest.mark.parametrize("serializer", [Base, Grown])
def test_the_writer_writes_what_the_serializer_writes(serializer):
    expected = dict(serializer(ROW).data)
    written = plain_output.writer(serializer)(ROW)
    assert written == expected
    assert list(written) == list(expected)  # the same order


def test_fields_the_caller_fills_and_defaults():
    write = plain_output.writer(Base, filled_by_caller=("score",), defaults={"status": "a"})
    row = SimpleNamespace(**{k: v for k, v in vars(ROW).items() if k != "status"})
    written = write(row)
    assert written["score"] is None and written["status"] == "a"
    assert list(written) == list(Base().fields)


def test_a_name_the_serializer_lacks_is_refused():
    with pytest.raises(ValueError, match="no field"):
        plain_output.writer(Base, filled_by_caller=("missing",))
