"""The score rows a rescore and an ingestion write on PostgreSQL through binary COPY:
the details' JSON holds the values json.dumps writes (PostgreSQL stores the same jsonb
from both), and every kind
of outcome (counted, not counted, failed, with QA, with text no column may hold) is
stored exactly as the ORM stores it (``bulk.score_row``); COPY text for attempts escapes
what COPY would misread."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime

import pytest
from django.db import connection

from challenges.leaderboards import bulk, sql
from challenges.leaderboards.bulk import _json, copy_text, pg_timestamp
from challenges.models import AttemptScore
from scoring.engine.outcome import Outcome
from tests.factories import attempt_input, make_challenge, record


@pytest.mark.django_db
def test_flat_float_details_hold_the_values_json_dumps_writes():
    """msgspec writes the common details (a flat dict of floats): the same floats to the
    last bit as json.dumps, and on PostgreSQL the same stored jsonb."""
    rng = random.Random(5)
    pairs = []
    for _ in range(5000):
        details = {
            "base": rng.choice([0.0, 100.0]),
            "rating_contribution": rng.random() * 150,
            "time_penalty": rng.random() * 1e6,
            "token_penalty": rng.choice([0.0, 1e-300, 1e16, 123.456, 0.1 + 0.2, -0.0]),
            "exponent": rng.random() * 10 ** rng.randint(-20, 20),
        }
        ours = _json(details)
        fast = bytearray()
        assert bulk._plain_json_into(details, fast) and bytes(fast) == ours  # the fast path
        back = json.loads(ours)
        assert list(back) == list(details)
        assert [repr(v) for v in back.values()] == [repr(v) for v in details.values()]
        pairs.append((ours.decode(), json.dumps(details)))
    if connection.vendor == "postgresql":
        ours_texts, dumps_texts = zip(*pairs, strict=True)
        differing = sql.fetch_one(
            "SELECT count(*) FILTER (WHERE a::jsonb IS DISTINCT FROM b::jsonb)"
            " FROM unnest(%s::text[], %s::text[]) AS t(a, b)",
            [list(ours_texts), list(dumps_texts)],
        )[0]
        assert differing == 0


@pytest.mark.parametrize(
    "details",
    [
        {"x": float("nan")},
        {"x": float("inf")},
        {"x": None},
        {"qa": {"passed": True}},
        {"nul\x00key": 1.0},
        {"x": "a NUL \x00"},
        {"x": "a lone \ud800"},
        {"x": object()},
    ],
)
def test_details_the_fast_path_cannot_write_go_the_general_way(details):
    buffer = bytearray(b"kept")
    assert not bulk._plain_json_into(details, buffer) and buffer == b"kept"


@pytest.mark.parametrize(
    "details",
    [
        {'quote"key': 1.0},
        {"back\\slash": 1.0},
        {"x": 1, "big": 2**70},
        {"x": True, "y": None},
        {"x": "tab\there, newline\n, backslash \\"},
        {"nested": {"n": [1.0, {"m": "ü"}]}},
        {"ünïcode": 2.5},
        {1: "an int key"},  # json makes it "1"
        {},
    ],
)
def test_other_details_read_back_as_json_would(details):
    assert json.loads(_json(details)) == json.loads(json.dumps(details))


def test_copy_text_escapes_what_copy_would_misread():
    assert copy_text("a\tb\nc\rd\\e") == "a\\tb\\nc\\rd\\\\e"
    assert copy_text(None) == "\\N"


def test_pg_timestamp_counts_microseconds_from_2000():
    assert pg_timestamp(datetime(2000, 1, 1, tzinfo=UTC)) == 0
    moment = datetime(2026, 11, 29, 12, 30, 5, 123456, tzinfo=UTC)
    # The same instant counted another way: whole seconds from 1970, less 2000's.
    assert pg_timestamp(moment) == (int(moment.timestamp()) - 946_684_800) * 10**6 + 123456
    assert pg_timestamp(datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)) == -1


OUTCOMES = [
    Outcome(12.5, {"base": 10.0, "rating_contribution": 2.5}, sort_key=-12.5),  # common
    Outcome(3.0, None, sort_key=3.0),  # a built-in strategy's
    Outcome(None),  # not counted
    Outcome.failed("ValueError: bad\x00input"),  # NUL: no text column holds it
    Outcome(1.0, {"note": "lone \ud800 surrogate", "n": 2**70}, sort_key=-1.0),
    Outcome(2.0, {"qa": {"check": {"failed": ["a", "b"]}}, "base": 2.0}, sort_key=-2.0),
    Outcome(
        0.0, {"ünïcode": "tab\tand \\u0000 as text", "nested": [1, {"x": None}]}, sort_key=-0.0
    ),
]


@pytest.mark.django_db(transaction=True)
def test_every_kind_of_outcome_is_stored_as_the_orm_stores_it():
    if connection.vendor != "postgresql":
        pytest.skip("binary COPY is PostgreSQL's: this run uses sqlite (the ORM writes)")
    challenge = make_challenge(
        scoring_strategy="custom", scoring_plugin_id="builtin.weighted_scorer"
    )
    version = challenge.active_version
    recorded = record(
        challenge,
        *[
            attempt_input(f"p{i}", created_at=datetime(2026, 1, 1, 0, 0, i, 123457, tzinfo=UTC))
            for i in range(len(OUTCOMES))
        ],
    )
    attempts = sorted((r.attempt for r in recorded), key=lambda a: a.pk)
    expected = [
        bulk.score_row(version, a.pk, a.player_id, a.created_at, o)
        for a, o in zip(attempts, OUTCOMES, strict=True)
    ]
    ids = [a.pk for a in attempts]
    AttemptScore.objects.filter(version=version, attempt_id__in=ids).delete()
    # The rescore's way: rows as read for it, made binary COPY, written.
    rows = sql.attempt_rows(challenge.pk, ids[0], ids[-1], len(ids))
    assert [r[8] for r in rows] == [pg_timestamp(a.created_at) for a in attempts]
    batch = bulk.scores_prepare(version=version, attempts=rows, outcomes=OUTCOMES)
    bulk.scores_insert([batch])
    _assert_stored(version, ids, expected)
    # The ingestion's way: from the attempts themselves.
    AttemptScore.objects.filter(version=version, attempt_id__in=ids).delete()
    bulk.scores_insert_new(version=version, attempts=attempts, outcomes=OUTCOMES)
    _assert_stored(version, ids, expected)


FIELDS = ["player_id", "created_at", "score", "sort_key", "details", "error", "qa", "qa_failed"]


def _assert_stored(version, ids, expected):
    stored = {
        s.attempt_id: s for s in AttemptScore.objects.filter(version=version, attempt_id__in=ids)
    }
    assert sorted(stored) == ids
    for want in expected:
        got = stored[want.attempt_id]
        for field in FIELDS:
            assert getattr(got, field) == _stored_json(getattr(want, field)), (
                want.attempt_id,
                field,
            )


def _stored_json(value):
    """What a JSON column gives back of a value (int keys come back as text)."""
    if isinstance(value, dict | list):
        return json.loads(json.dumps(value))
    return value
