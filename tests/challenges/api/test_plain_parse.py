"""The bulk parser's plain path (``serializers._plain_input``) gives exactly what the
serializer gives, and leaves to the serializer every item it would refuse (issue 16)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.utils import timezone
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework import serializers as drf

from challenges.api import serializers
from challenges.api.fields import MAX_EPOCH_MS
from challenges.models import MAX_METRIC

NOW = datetime(2026, 11, 25, 12, 0, 0, 123456, tzinfo=UTC)

texts = st.one_of(
    st.text(max_size=8),
    st.sampled_from(["", " ", "  p  ", "a" * 255, "a" * 256, " " + "b" * 255, "é" * 200]),
)
ints = st.one_of(
    st.integers(min_value=-2, max_value=12),
    st.sampled_from([MAX_METRIC, MAX_METRIC + 1, 0, MAX_EPOCH_MS, MAX_EPOCH_MS + 1, -1]),
)
anything = st.one_of(
    st.none(), st.booleans(), ints, st.floats(allow_nan=False), texts,
    st.just({}), st.just({"a": [1]}), st.just([]), st.just([{"x": 1}]),
    st.just("2026-11-21T10:00:00Z"), st.just(1.0), st.just(3.5),
)  # fmt: skip
FIELDS = [
    "player", "player_name", "succeeded", "tokens_total", "elapsed_ms", "rating",
    "created_at", "sample", "output", "messages",
]  # fmt: skip
items = st.dictionaries(
    st.one_of(st.sampled_from(FIELDS), st.sampled_from(["extra", "id"])), anything, max_size=11
)
typical = st.fixed_dictionaries(
    {"player": texts, "succeeded": st.booleans()},
    optional={
        "player_name": st.one_of(st.none(), texts),
        "tokens_total": st.one_of(st.none(), ints),
        "elapsed_ms": st.one_of(st.none(), ints),
        "rating": st.one_of(st.none(), ints),
        "created_at": st.one_of(st.none(), ints),
        "sample": st.one_of(st.none(), st.just({"q": "x"})),
        "output": st.one_of(texts, st.none()),
        "messages": st.one_of(st.none(), st.just([{"role": "user"}])),
    },
)


def _through_serializer(item):
    serializer = serializers.AttemptInSerializer()
    try:
        return serializer.to_input(serializer.run_validation(item))
    except drf.ValidationError:
        return None


def _check(item, monkeypatch):
    monkeypatch.setattr(timezone, "now", lambda: NOW)
    plain = serializers._plain_input(item)
    if plain is None:
        return  # the serializer decides, as before
    assert plain == _through_serializer(item), item


@settings(max_examples=400, deadline=None)
@given(item=st.one_of(items, typical))
def test_the_plain_path_agrees_with_the_serializer(item):
    with pytest.MonkeyPatch.context() as monkeypatch:
        _check(item, monkeypatch)


def test_the_plain_path_takes_the_usual_item():
    item = {
        "player": " p1 ",
        "player_name": "P One",
        "succeeded": True,
        "tokens_total": 12,
        "elapsed_ms": 3400,
        "rating": 7,
        "created_at": 1_790_000_000_123,
        "sample": {"q": "x"},
        "output": " kept as sent ",
        "messages": [],
    }
    plain = serializers._plain_input(item)
    assert plain is not None and plain == _through_serializer(item)
    assert plain.player == "p1" and plain.output == " kept as sent "
    assert plain.created_at.microsecond == 123_000


@pytest.mark.parametrize(
    "change",
    [
        {"player": ""},
        {"player": "x" * 256},
        {"player_name": "  "},
        {"succeeded": 1},
        {"rating": 11},
        {"tokens_total": 1.0},
        {"created_at": "2026-11-21T10:00:00Z"},
        {"output": None},
        {"extra": 1},
    ],
)
def test_anything_else_goes_to_the_serializer(change):
    item = {"player": "p", "succeeded": True, **change}
    assert serializers._plain_input(item) is None
