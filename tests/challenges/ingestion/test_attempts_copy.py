"""Attempts and their scores written by COPY on PostgreSQL (issue 16): every column the
model has, every value exactly as the ORM stores it, ids in the request's order, and a
refused row writes nothing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import IntegrityError, connection, transaction

from challenges.ingestion import services
from challenges.leaderboards import sql
from challenges.models import Attempt, AttemptScore
from tests.factories import attempt_input, make_challenge, record

TRICKY = 'tab\there, newline\n, return\r, backslash \\ and \\N, quote " ünï ☃ 𝄞'


def test_the_copy_columns_are_every_column_of_the_model():
    # A field added to Attempt must be added to the COPY too, or it would silently get
    # its database default (or fail) on PostgreSQL only.
    columns = {f.column for f in Attempt._meta.concrete_fields}
    assert {c.strip() for c in sql.ATTEMPT_COLUMNS.split(",")} == columns


def _stored(attempt_ids):
    fields = [f.attname for f in Attempt._meta.concrete_fields if f.attname != "recorded_at"]
    return list(Attempt.objects.filter(pk__in=attempt_ids).order_by("pk").values_list(*fields))


@pytest.mark.parametrize("path", ["copy", "bulk_create"])
def test_every_value_reads_back_as_sent(db, path, monkeypatch):
    if path == "copy" and connection.vendor != "postgresql":
        pytest.skip("COPY is PostgreSQL's: this run uses sqlite")
    if path == "bulk_create":
        monkeypatch.setattr(sql, "postgres", lambda: False)
    challenge = make_challenge(
        scoring_strategy="custom", scoring_plugin_id="builtin.weighted_scorer"
    )
    created = datetime(2026, 3, 4, 5, 6, 7, 891000, tzinfo=UTC)
    inputs = [
        attempt_input(
            "p-b",
            player_name=TRICKY,
            succeeded=True,
            tokens_total=2**53 - 1,
            elapsed_ms=0,
            rating=10,
            created_at=created,
            sample={"k": TRICKY, "n": [1, 2.5, None, True], "deep": {"x": {}}},
            output=TRICKY,
            messages=[{"role": "user", "content": TRICKY}],
        ),
        attempt_input("p-a", succeeded=False, sample=None, output="", messages=None),
        attempt_input("p-b", created_at=3),
    ]
    recorded = record(challenge, *inputs)
    ids = [r.attempt.pk for r in recorded]
    assert ids == sorted(ids) and len(set(ids)) == 3  # the request's order
    rows = _stored(ids)
    first = Attempt.objects.get(pk=ids[0])
    assert first.output == TRICKY and first.sample["k"] == TRICKY
    assert first.messages == [{"role": "user", "content": TRICKY}]
    assert first.created_at == created and first.tokens_total == 2**53 - 1
    assert first.recorded_at is not None and first.practice is False and first.hidden is False
    second = Attempt.objects.get(pk=ids[1])
    assert second.sample is None and second.messages is None and second.rating is None
    # the returned objects are the stored rows: saved, with their ids
    assert [r.attempt._state.adding for r in recorded] == [False] * 3
    assert rows == _stored(ids)
    # and their scores were written too, one per attempt
    assert AttemptScore.objects.filter(attempt_id__in=ids).count() == 3
    stored = AttemptScore.objects.get(attempt_id=ids[0], version=challenge.active_version_id)
    assert stored.score == recorded[0].score.score
    assert stored.details == recorded[0].score.details


def test_a_refused_row_writes_nothing(db):
    challenge = make_challenge()
    bad = Attempt(challenge=challenge, succeeded=True, created_at=datetime.now(UTC), rating=11)
    bad.player = services._players_upsert([attempt_input("p")])["p"]
    bad.practice = False
    before = Attempt.objects.count()
    with pytest.raises(IntegrityError), transaction.atomic():
        services.attempts_insert([bad])
    assert Attempt.objects.count() == before


def test_array_text_reads_back_exactly(db):
    if connection.vendor != "postgresql":
        pytest.skip("array literals are PostgreSQL's: this run uses sqlite")
    stamps = [datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC), None]
    floats = [0.1 + 0.2, -1e-300, 1e16, None]
    ints = [2**53 - 1, None, 0]
    back = sql.fetch(
        "SELECT %s::timestamptz[], %s::float8[], %s::bigint[]",
        [sql.array_text(stamps), sql.array_text(floats), sql.array_text(ints)],
    )[0]
    assert back == (stamps, floats, ints)
