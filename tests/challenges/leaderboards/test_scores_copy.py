"""The COPY text the rescore writes on PostgreSQL: exact JSON and escaping."""

from __future__ import annotations

import json
import random

import pytest

from challenges.leaderboards.bulk import _details_json, copy_text


def test_flat_float_details_round_trip_exactly():
    rng = random.Random(5)
    for _ in range(5000):
        details = {
            "success_bonus": rng.choice([0.0, 100.0]),
            "rating_bonus": rng.random() * 150,
            "time_penalty": -rng.random() * 1e6,
            "token_penalty": -rng.choice([0.0, 1e-300, 1e16, 123.456, 0.1 + 0.2]),
        }
        assert json.loads(_details_json(details)) == details


@pytest.mark.parametrize(
    "details",
    [
        {'quote"key': 1.0},
        {"back\\slash": 1.0},
        {"x": 1},
        {"x": True},
        {"x": None},
        {"x": "tab\there, newline\n, backslash \\"},
        {"nested": {"n": 1.0}},
        {"ünïcode": 2.5},
        {},
    ],
)
def test_other_details_go_through_json(details):
    assert json.loads(_details_json(details)) == details


def test_copy_text_escapes_what_copy_would_misread():
    assert copy_text("a\tb\nc\rd\\e") == "a\\tb\\nc\\rd\\\\e"
    assert copy_text(None) == "\\N"
