"""A large leaderboard rebuild is split across connections (``scores.entries_rebuild``
with ``parts``): the same board as one statement, the same exclusions, and a part that
fails fails the rebuild (the job stays running and its retry switches)."""

from __future__ import annotations

import pytest
from django.db import OperationalError, transaction

from challenges.leaderboards import ranking, scores, sql
from challenges.models import (
    Attempt,
    LeaderboardEntry,
    LeaderboardRanking,
    Player,
    PlayerHide,
    RescoreJob,
)
from challenges.rescoring import jobs as rescoring
from tests.factories import attempt_input, make_challenge, record

from ._jobs import job_with_chunks_done, postgres_only
from ._reference import board_of

PARTS_NEED_POSTGRES = "a rebuild in parts runs on PostgreSQL only (its own connections)"

Status = RescoreJob.Status


def _challenge_with_exclusions():
    """Eleven players with three attempts each; one hidden player, one practice attempt
    (a best one: the next-best takes its place) and one hidden attempt."""
    challenge = make_challenge(scoring_strategy="fewest_tokens")
    record(
        challenge,
        *[
            attempt_input(f"p{i}", tokens_total=100 + 7 * i + 3 * k, created_at=k)
            for i in range(11)
            for k in range(3)
        ],
    )
    record(
        challenge,
        attempt_input("tie-a", tokens_total=100),
        attempt_input("tie-b", tokens_total=100),
    )
    attempts = Attempt.objects.filter(challenge=challenge)
    attempts.filter(player__external_id="p3", tokens_total=121).update(practice=True)
    attempts.filter(player__external_id="p4", tokens_total=128).update(hidden=True)
    PlayerHide.objects.create(
        player=Player.objects.get(external_id="p5"), challenge=challenge, reason="test"
    )
    with transaction.atomic():  # the live board with them left out, as moderation does
        scores.entries_rebuild(version=challenge.active_version)
    return challenge


def _entries(version) -> list[tuple]:
    return list(
        LeaderboardEntry.objects.filter(version=version)
        .order_by("player_id")
        .values_list("player_id", "attempt_id", "score", "sort_key", "created_at", "unranked")
    )


@pytest.mark.django_db(transaction=True)
def test_a_rebuild_in_parts_writes_the_board_one_statement_writes():
    postgres_only(PARTS_NEED_POSTGRES)
    challenge = _challenge_with_exclusions()
    version = challenge.active_version
    whole = _entries(version)
    assert len(whole) == 12  # 13 players, one hidden
    by_player = {
        Player.objects.get(pk=row[0]).external_id: Attempt.objects.get(pk=row[1]).tokens_total
        for row in whole
    }
    assert by_player["p3"] == 124 and by_player["p4"] == 131 and "p5" not in by_player
    assert not any(row[-1] for row in whole), "written as ranked"
    for parts in (2, 3, 5):
        LeaderboardEntry.objects.filter(version=version).update(score=-1.0)  # stale rows
        ranking.ranking_current(version_id=version.pk)  # checkpoints of the stale rows
        assert LeaderboardRanking.objects.filter(version=version).exists()
        scores.entries_rebuild(version=version, parts=parts)
        assert _entries(version) == whole, f"{parts} parts"
        assert not LeaderboardRanking.objects.filter(version=version).exists()


@pytest.mark.django_db(transaction=True)
def test_a_finalize_of_a_large_job_rebuilds_in_parts_and_switches(monkeypatch):
    postgres_only(PARTS_NEED_POSTGRES)
    challenge = _challenge_with_exclusions()
    before = board_of(challenge)[1]
    assert before["p3"] == 124 and "p5" not in before
    job = job_with_chunks_done(challenge, monkeypatch)
    monkeypatch.setattr(scores, "REBUILD_SPLIT_FROM", 10)
    asked = []
    original = scores.entries_rebuild

    def spy(**kwargs):
        asked.append(kwargs["parts"])
        return original(**kwargs)

    monkeypatch.setattr(scores, "entries_rebuild", spy)
    assert rescoring.job_finalize(job_id=job.pk)
    assert asked == [scores.REBUILD_PARTS]
    job.refresh_from_db()
    assert job.status == Status.SUCCEEDED
    assert board_of(challenge) == (2, before)  # the same scorer: the same board


@pytest.mark.django_db(transaction=True)
def test_a_part_that_fails_fails_the_finalize_and_its_retry_switches(monkeypatch):
    postgres_only(PARTS_NEED_POSTGRES)
    challenge = _challenge_with_exclusions()
    before = board_of(challenge)[1]
    job = job_with_chunks_done(challenge, monkeypatch)
    monkeypatch.setattr(scores, "REBUILD_SPLIT_FROM", 10)
    original = sql.entries_insert_best
    failures = []

    def second_part_fails_once(version_id, **kwargs):
        if kwargs.get("part", (0, 1))[0] == 1 and not failures:
            failures.append(1)
            raise OperationalError("server closed the connection unexpectedly")
        return original(version_id, **kwargs)

    monkeypatch.setattr(sql, "entries_insert_best", second_part_fails_once)
    with pytest.raises(OperationalError):
        rescoring.job_finalize(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == Status.RUNNING
    assert (
        challenge.versions.get(number=1).pk
        == type(challenge).objects.get(pk=challenge.pk).active_version_id
    ), "switched to a half-built board"

    assert rescoring.job_finalize(job_id=job.pk)  # the retry
    job.refresh_from_db()
    assert job.status == Status.SUCCEEDED
    assert board_of(challenge) == (2, before)


@pytest.mark.django_db
def test_a_rebuild_is_one_statement_inside_a_transaction_or_on_sqlite():
    # A test's transaction: the parts' own connections would not see its rows.
    assert scores.rebuild_parts(scores_count=10**7) == 1


@pytest.mark.django_db(transaction=True)
def test_a_rebuild_is_split_from_its_threshold_on_postgresql():
    postgres_only(PARTS_NEED_POSTGRES)
    assert scores.rebuild_parts(scores_count=scores.REBUILD_SPLIT_FROM - 1) == 1
    assert scores.rebuild_parts(scores_count=scores.REBUILD_SPLIT_FROM) == scores.REBUILD_PARTS
