"""A rescore reads its next batch while it scores the last (issue 27): on PostgreSQL a
thread on its own connection reads ahead; its items come in order, its errors reach the
loop, and a loop that stops early leaves no thread behind. The players' external ids
come from one read per chunk, and an attempt whose player that read missed still gets
its own."""

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


def test_a_player_missing_from_the_chunks_names_is_read(monkeypatch):
    """The names are read once for the chunk; an attempt of a player they lack (one
    committed after that read) gets its player's external id all the same."""
    challenge = make_challenge(
        scoring_strategy="custom", scoring_plugin_id="builtin.weighted_scorer"
    )
    record(challenge, *[attempt_input(f"p{i}", rating=i % 10) for i in range(40)])
    monkeypatch.setattr(rescoring, "_send", lambda job: None)
    monkeypatch.setattr(rescoring, "FIRST_BATCH", 7)
    monkeypatch.setattr(rescoring, "STREAM_BATCH", 7)
    real = sql.player_names

    def forgetful(*span, ids=()):
        names = real(*span, ids=ids)
        if ids:
            return names  # the read of the missing ones
        return {pk: name for pk, name in names.items() if name not in {"p3", "p30"}}

    monkeypatch.setattr(sql, "player_names", forgetful)
    contexts = []
    from scoring.scorers.weighted import WeightedScorer

    score_many = WeightedScorer.score_many

    def spy(self, items, config):
        contexts.extend(ctx.end_user_id for _, ctx in items)
        return score_many(self, items, config)

    monkeypatch.setattr(WeightedScorer, "score_many", spy)
    job = setup_services.challenge_rescore(challenge=challenge)
    for chunk in job.chunks.all():
        rescoring.chunk_run(chunk_id=chunk.pk, finalize=False)
    expected = dict(
        Attempt.objects.filter(challenge=challenge).values_list("pk", "player__external_id")
    )
    assert sorted(contexts) == sorted(expected.values())
    scored = AttemptScore.objects.filter(version=job.version)
    assert scored.count() == 40
    assert {s.attempt_id: s.player.external_id for s in scored.select_related("player")} == expected
