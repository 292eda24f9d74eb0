"""Finding 2 of issue 13: a job always ends. Finalizing is retried until it succeeds,
only one caller rebuilds and switches, and ingestion never deadlocks with the rebuild."""

from __future__ import annotations

import threading

import pytest
from django.db import OperationalError, connection

from challenges.leaderboards import scores, sql
from challenges.models import LeaderboardEntry, RescoreChunk, RescoreJob
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from tests.factories import attempt_input, make_challenge, record

from ._jobs import job_with_chunks_done, postgres_only
from ._reference import assert_each_attempt_scored_once, board_of, expected_best
from ._threads import Session, someone_waits_for_a_lock

Status = RescoreJob.Status


@pytest.mark.django_db
def test_a_retried_last_chunk_finalizes_a_job_whose_finalize_failed(monkeypatch, settings):
    settings.PODIUM_SCORING_CHUNK = 2
    challenge = make_challenge(scoring_strategy="fewest_tokens")
    record(challenge, *[attempt_input(f"p{i}", tokens_total=10 + i) for i in range(5)])
    job = job_with_chunks_done(challenge, monkeypatch)
    last = job.chunks.order_by("-number").first()

    # The last chunk's finalize met an error (a deadlock, a lost connection): the chunk
    # is done, the job is not. The task retries the chunk.
    original = scores.entries_rebuild
    calls = []

    def failing_once(**kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise OperationalError("deadlock detected")
        return original(**kwargs)

    monkeypatch.setattr(scores, "entries_rebuild", failing_once)
    with pytest.raises(OperationalError):
        rescoring.job_finalize(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == Status.RUNNING
    assert LeaderboardEntry.objects.filter(version=job.version).count() == 0  # rolled back

    rescoring.chunk_run(chunk_id=last.pk)  # the retry: its chunk is done already
    job.refresh_from_db()
    assert job.status == Status.SUCCEEDED, job.error
    assert board_of(challenge) == (
        2,
        expected_best(challenge, lambda a: a.tokens_total, higher_is_better=False),
    )


@pytest.mark.django_db
def test_a_chunk_of_a_cancelled_job_does_not_finalize_it(monkeypatch):
    challenge = make_challenge(scoring_strategy="fewest_tokens")
    record(challenge, attempt_input("a", tokens_total=3))
    job = job_with_chunks_done(challenge, monkeypatch)
    rescoring.job_cancel(job=job)
    assert not rescoring.chunk_run(chunk_id=RescoreChunk.objects.get(job=job).pk)
    job.refresh_from_db()
    assert job.status == Status.CANCELLED
    assert (
        challenge.versions.get(number=1).pk
        == type(challenge).objects.get(pk=challenge.pk).active_version_id
    )


@pytest.mark.django_db(transaction=True)
def test_two_finalizers_at_once_rebuild_and_switch_once(monkeypatch):
    postgres_only()
    challenge = make_challenge(scoring_strategy="fewest_tokens")
    record(challenge, *[attempt_input(f"p{i}", tokens_total=10 + i) for i in range(5)])
    job = job_with_chunks_done(challenge, monkeypatch)
    original = scores.entries_rebuild
    rebuilding, go = threading.Event(), threading.Event()
    calls = []

    def slow_rebuild(**kwargs):
        calls.append(1)
        rebuilding.set()
        assert go.wait(20)
        return original(**kwargs)

    monkeypatch.setattr(scores, "entries_rebuild", slow_rebuild)
    first = Session(lambda: rescoring.job_finalize(job_id=job.pk))
    first.start()
    assert rebuilding.wait(20)
    second = Session(lambda: rescoring.job_finalize(job_id=job.pk))
    second.start()
    second.join(2)  # it either returns at once or waits for the first
    go.set()
    results = sorted([first.outcome(), second.outcome()])
    assert results == [False, True]
    assert len(calls) == 1, "the leaderboard was rebuilt twice"
    job.refresh_from_db()
    assert job.status == Status.SUCCEEDED


@pytest.mark.django_db(transaction=True)
def test_ingestion_during_the_rebuild_never_deadlocks(monkeypatch):
    """The rebuild has deleted the version's entries; an ingestion comes in (a player
    scored by a chunk, then one recorded during the job); then the rebuild inserts.
    Before: the ingestion inserted the first player's entry and waited for the deleted
    one, the rebuild waited for the first: a deadlock, one of them a 500 or a stuck job."""
    postgres_only()
    challenge = make_challenge(scoring_strategy="fewest_tokens")
    record(challenge, *[attempt_input(f"p{i}", tokens_total=10 + i) for i in range(5)])
    job = job_with_chunks_done(challenge, monkeypatch)
    record(challenge, attempt_input("late", tokens_total=5))  # during the job
    original = sql.entries_insert_best
    deleted, go = threading.Event(), threading.Event()

    def paused_insert(*args, **kwargs):
        deleted.set()
        assert go.wait(20)
        return original(*args, **kwargs)

    monkeypatch.setattr(sql, "entries_insert_best", paused_insert)
    finalizer = Session(lambda: rescoring.job_finalize(job_id=job.pk))
    finalizer.start()
    assert deleted.wait(20)
    writer = Session(
        lambda: record(
            challenge,
            attempt_input("p0", tokens_total=1),
            attempt_input("late", tokens_total=2),
        )
    )
    writer.start()
    writer.join(3)
    waited = writer.is_alive() and someone_waits_for_a_lock()
    go.set()
    assert finalizer.outcome() is True  # no deadlock victim on either side
    writer.outcome()
    assert not waited, "ingestion waited for the rebuild"
    version = job.version
    assert_each_attempt_scored_once(challenge, version)
    assert board_of(challenge) == (
        2,
        expected_best(challenge, lambda a: a.tokens_total, higher_is_better=False),
    )


@pytest.mark.django_db(transaction=True)
def test_the_switch_scores_no_attempt_inside_its_transaction(monkeypatch):
    """Attempts recorded after the plan and before the job existed get their scores
    before the switch's transaction, not while it holds the challenge lock."""
    from challenges.models import Attempt
    from scoring import services as scoring

    challenge = make_challenge(
        scoring_strategy="custom", scoring_plugin_id="builtin.weighted_scorer"
    )
    record(challenge, attempt_input("a", tokens_total=3))
    job = job_with_chunks_done(challenge, monkeypatch)
    first = Attempt.objects.filter(challenge=challenge).first()
    late = Attempt.objects.create(  # as if committed between the plan and the lock
        challenge=challenge,
        player=first.player,
        succeeded=True,
        tokens_total=9,
        created_at=first.created_at,
    )
    real = scoring.scores_compute
    inside: list[bool] = []

    def watched(**kwargs):
        inside.append(connection.in_atomic_block)
        return real(**kwargs)

    monkeypatch.setattr(scoring, "scores_compute", watched)
    assert rescoring.job_finalize(job_id=job.pk)
    assert inside == [False]
    assert_each_attempt_scored_once(challenge, job.version)
    assert late.pk in set(job.version.scores.values_list("attempt_id", flat=True))


@pytest.mark.django_db(transaction=True)
def test_making_an_earlier_version_active_scores_outside_any_transaction(monkeypatch):
    from challenges.setup import versions
    from scoring import services as scoring

    monkeypatch.setattr(rescoring, "_send", lambda job: None)
    challenge = make_challenge(
        scoring_strategy="custom", scoring_plugin_id="builtin.weighted_scorer"
    )
    record(challenge, attempt_input("a", tokens_total=3))
    update = setup_services.challenge_update(
        challenge=challenge, data={"scoring_strategy": "fastest"}
    )
    rescoring.job_run_inline(job=update.job)
    record(challenge, attempt_input("b", tokens_total=4, elapsed_ms=5))  # not under v1
    real = scoring.scores_compute
    inside: list[bool] = []

    def watched(**kwargs):
        inside.append(connection.in_atomic_block)
        return real(**kwargs)

    monkeypatch.setattr(scoring, "scores_compute", watched)
    done = versions.version_activate(version=challenge.versions.get(number=1))
    assert done.job is None and done.scored == 1
    assert inside == [False]
