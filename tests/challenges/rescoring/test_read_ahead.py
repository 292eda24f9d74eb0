"""A rescore reads its next batch while it scores the last (issue 27): on PostgreSQL a
thread on its own connection reads ahead; its items come in order, its errors reach the
loop, and a loop that stops early leaves no thread behind. The players' external ids
are read by id, a batch's new ones at once."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from challenges.leaderboards import bulk, sql
from challenges.models import Attempt, AttemptScore
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from tests.factories import attempt_input, make_challenge, record

pytestmark = pytest.mark.django_db(transaction=True)


def _threads() -> set[str]:
    return {t.name for t in threading.enumerate()}


def _counter(stop_at: int, fail_at: int | None = None):
    seen = []

    def read():
        if fail_at is not None and len(seen) == fail_at:
            raise RuntimeError("the database went away")
        seen.append(len(seen))
        return None if len(seen) > stop_at else [len(seen)]

    return read, seen


def test_items_come_in_order_and_the_reader_reads_ahead():
    if connection.vendor != "postgresql":
        pytest.skip("reading ahead needs connections of its own: PostgreSQL")
    read, seen = _counter(stop_at=5)
    got = []
    with bulk.read_ahead(read) as take:
        while (item := take()) is not None:
            got.append(item[0])
    assert got == [1, 2, 3, 4, 5]
    assert len(seen) == 6  # the five items and the None that ends them


def test_an_error_of_the_reader_is_raised_in_the_loop():
    read, _ = _counter(stop_at=10, fail_at=2)
    got = []
    with pytest.raises(RuntimeError, match="went away"), bulk.read_ahead(read) as take:
        while (item := take()) is not None:
            got.append(item[0])
    assert got == [1, 2]


def test_a_loop_that_stops_early_leaves_no_thread_behind():
    before = _threads()
    read, seen = _counter(stop_at=10**9)
    with bulk.read_ahead(read) as take:
        assert take() == [1]
    assert _threads() == before
    assert len(seen) < 10  # it read a few ahead, not on and on


def test_each_batch_reads_the_names_of_the_players_it_has_not_seen(monkeypatch):
    """The rows are read without the player join; a batch reads the external ids of the
    players the chunk has not met yet, once each, and every attempt is scored with its
    own player's."""
    challenge = make_challenge(
        scoring_strategy="custom", scoring_plugin_id="builtin.weighted_scorer"
    )
    record(challenge, *[attempt_input(f"p{i % 20}", rating=i % 10) for i in range(40)])
    monkeypatch.setattr(rescoring, "_send", lambda job: None)
    monkeypatch.setattr(rescoring, "FIRST_BATCH", 7)
    monkeypatch.setattr(rescoring, "STREAM_BATCH", 7)
    real = sql.player_names
    asked: list[int] = []

    def spy(ids):
        asked.extend(ids)
        return real(ids)

    monkeypatch.setattr(sql, "player_names", spy)
    contexts = []
    from scoring.scorers.weighted import WeightedScorer

    score_many = WeightedScorer.score_many

    def scored(self, items, config):
        contexts.extend(ctx.end_user_id for _, ctx in items)
        return score_many(self, items, config)

    monkeypatch.setattr(WeightedScorer, "score_many", scored)
    job = setup_services.challenge_rescore(challenge=challenge)
    assert job.chunks_total == 1
    rescoring.chunk_run(chunk_id=job.chunks.get().pk, finalize=False)
    attempts = Attempt.objects.filter(challenge=challenge).order_by("pk")
    assert sorted(asked) == sorted(set(attempts.values_list("player_id", flat=True)))
    assert contexts == list(attempts.values_list("player__external_id", flat=True))
    scored_rows = AttemptScore.objects.filter(version=job.version).select_related("player")
    assert {s.attempt_id: s.player.external_id for s in scored_rows} == dict(
        attempts.values_list("pk", "player__external_id")
    )


def test_names_of_more_players_than_one_statement_takes(monkeypatch):
    """A read of rows that hold their names asks for them in parts (SQLite caps the
    parameters of one statement); every row gets its own."""
    monkeypatch.setattr(sql, "IDS_PER_STATEMENT", 3)
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, *[attempt_input(f"p{i}", elapsed_ms=i) for i in range(10)])
    attempts = Attempt.objects.filter(challenge=challenge)
    first, last = min(a.pk for a in attempts), max(a.pk for a in attempts)
    rows = bulk.attempt_rows(challenge_id=challenge.pk, first_id=first, last_id=last)
    assert [r[2] for r in rows] == [f"p{i}" for i in range(10)]
