"""Score partitions on PostgreSQL: a version's partition is made with it, written, kept
while the version is active or kept, and dropped whole once it is neither; no reader or
writer waits for the drop. SQLite keeps every version's scores, as before."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, connections, transaction

from challenges.leaderboards import partitions, sql
from challenges.models import AttemptScore, Challenge, LeaderboardEntry, RescoreJob, ScoringVersion
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from challenges.setup import versions as setup_versions
from tests.challenges.rescoring._reference import board_of, expected_best
from tests.factories import attempt_input, make_challenge, record

WEIGHTED = {"scoring_strategy": "custom", "scoring_plugin_id": "builtin.weighted_scorer"}


def _postgres_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("score partitions are PostgreSQL's: this run uses sqlite")


def _rows_in_partition(version_id: int) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {sql.score_partition(version_id)}")  # noqa: S608
        return cursor.fetchone()[0]


def _superseded(monkeypatch) -> tuple[Challenge, ScoringVersion, ScoringVersion]:
    """A challenge whose v2 was scored in part (attempts recorded during its rescore)
    and then cancelled: v1 stays active, v2 never switched."""
    monkeypatch.setattr(rescoring, "_send", lambda job: None)  # the job stays queued
    challenge = make_challenge(**WEIGHTED, scoring_config={"success_bonus": 100.0})
    record(challenge, attempt_input("a", tokens_total=5), attempt_input("b", tokens_total=7))
    update = setup_services.challenge_update(
        challenge=challenge, data={"scoring_config": {"success_bonus": 1.0}}
    )
    record(challenge, attempt_input("c", tokens_total=9))  # scored under v1 and v2
    rescoring.job_cancel(job=update.job)
    challenge = Challenge.objects.get(pk=challenge.pk)
    return challenge, challenge.active_version, update.job.version


@pytest.mark.django_db
def test_a_version_is_made_with_its_partition_and_written_there():
    _postgres_only()
    challenge = make_challenge()
    record(challenge, attempt_input("a"), attempt_input("b"))
    version = Challenge.objects.get(pk=challenge.pk).active_version
    assert sql.score_partition_state(version.pk) == "attached"
    assert _rows_in_partition(version.pk) == 2 == AttemptScore.objects.count()


@pytest.mark.django_db(transaction=True)
def test_a_superseded_version_is_dropped_whole_and_the_active_one_kept(monkeypatch):
    _postgres_only()
    _challenge, active, superseded = _superseded(monkeypatch)
    assert _rows_in_partition(superseded.pk) == 1
    assert superseded.pk not in partitions.versions_discardable(keep_s=3600)  # the grace
    assert superseded.pk in partitions.scores_discard(keep_s=0)
    assert sql.score_partition_state(superseded.pk) == "none"
    assert not AttemptScore.objects.filter(version=superseded).exists()
    assert ScoringVersion.objects.get(pk=superseded.pk).scored_at is None
    assert sql.score_partition_state(active.pk) == "attached"
    assert AttemptScore.objects.filter(version=active).count() == 3
    assert partitions.versions_discardable(keep_s=0) == []  # nothing left to drop


@pytest.mark.django_db(transaction=True)
def test_versions_the_board_or_its_history_may_read_are_kept():
    # CELERY_TASK_ALWAYS_EAGER: each rescore runs to its switch when its change commits.
    challenge = make_challenge(**WEIGHTED, scoring_config={"success_bonus": 100.0})
    record(challenge, attempt_input("a", tokens_total=5))
    for bonus in (1.0, 2.0):
        setup_services.challenge_update(
            challenge=challenge, data={"scoring_config": {"success_bonus": bonus}}
        )
        challenge = Challenge.objects.get(pk=challenge.pk)
    v1, v2, v3 = ScoringVersion.objects.filter(challenge=challenge).order_by("number")
    assert challenge.active_version_id == v3.pk
    # v1 and v2 were active once (the history and the version boards read them).
    mine = {v1.pk, v2.pk, v3.pk}
    assert mine.isdisjoint(partitions.versions_discardable(keep_s=0))
    assert mine.isdisjoint(partitions.scores_discard(keep_s=0))
    if connection.vendor == "postgresql":
        for version in (v1, v2, v3):
            assert sql.score_partition_state(version.pk) == "attached"
    assert AttemptScore.objects.filter(version__in=[v1, v2, v3]).count() == 3


@pytest.mark.django_db(transaction=True)
def test_a_version_being_rescored_is_kept(monkeypatch):
    _postgres_only()
    monkeypatch.setattr(rescoring, "_send", lambda job: None)
    challenge = make_challenge(**WEIGHTED)
    record(challenge, attempt_input("a", tokens_total=5))
    update = setup_services.challenge_update(
        challenge=challenge, data={"scoring_config": {"success_bonus": 1.0}}
    )
    assert update.job.status == RescoreJob.Status.QUEUED
    kept = {update.job.version_id, Challenge.objects.get(pk=challenge.pk).active_version_id}
    assert kept.isdisjoint(partitions.scores_discard(keep_s=0))
    assert sql.score_partition_state(update.job.version_id) == "attached"


@pytest.mark.django_db(transaction=True)
def test_a_dropped_version_made_active_again_is_rescored_into_a_new_partition(monkeypatch):
    _postgres_only()
    challenge, _active, superseded = _superseded(monkeypatch)
    partitions.scores_discard(keep_s=0)
    monkeypatch.undo()  # the rescore runs now (eager)
    activation = setup_versions.version_activate(version=superseded)
    assert activation.job is not None  # unscored: rescored first, not switched at once
    assert sql.score_partition_state(superseded.pk) == "attached"
    challenge = Challenge.objects.get(pk=challenge.pk)
    assert challenge.active_version_id == superseded.pk
    bonus = superseded.scoring_config["success_bonus"]
    expected = expected_best(
        challenge, lambda a: bonus - a.tokens_total * 0.01, higher_is_better=True
    )
    number, board = board_of(challenge)
    assert number == superseded.number
    assert board == pytest.approx(expected)
    assert LeaderboardEntry.objects.filter(version=superseded).count() == 3


@pytest.mark.django_db(transaction=True)
def test_a_rescore_after_a_drop_still_equals_its_brute_force(monkeypatch):
    _postgres_only()
    challenge, _, _ = _superseded(monkeypatch)
    partitions.scores_discard(keep_s=0)
    monkeypatch.undo()
    record(challenge, attempt_input("a", tokens_total=1), attempt_input("d", tokens_total=50))
    setup_services.challenge_update(
        challenge=challenge, data={"scoring_config": {"success_bonus": 7.0}}
    )
    challenge = Challenge.objects.get(pk=challenge.pk)
    expected = expected_best(
        challenge, lambda a: 7.0 - a.tokens_total * 0.01, higher_is_better=True
    )
    number, board = board_of(challenge)
    assert number == challenge.active_version.number == 3
    assert board == pytest.approx(expected)


@pytest.mark.django_db(transaction=True)
def test_readers_and_writers_never_wait_for_a_drop(monkeypatch):
    """A long reader holds the scores table while the drop runs: the drop waits for it
    (DETACH … CONCURRENTLY), nobody waits for the drop. Every other query here gives up
    after 50 ms of waiting for a lock, so a drop that locked the table fails the test."""
    _postgres_only()
    challenge, active, superseded = _superseded(monkeypatch)
    long_read_open, drop_done = threading.Event(), threading.Event()
    errors: list[BaseException] = []
    waits: list[float] = []

    def long_reader() -> None:
        try:
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute(
                        "SELECT count(*) FROM challenges_attemptscore WHERE version_id = %s",
                        [active.pk],
                    )
                long_read_open.set()
                time.sleep(1.0)
        finally:
            connections.close_all()

    def dropper() -> None:
        try:
            partitions.scores_discard(keep_s=0)
        except BaseException as exc:
            errors.append(exc)
        finally:
            drop_done.set()
            connections.close_all()

    reader = threading.Thread(target=long_reader)
    reader.start()
    assert long_read_open.wait(10)
    drop = threading.Thread(target=dropper)
    drop.start()
    try:
        for n in range(150):  # about 1.5 s, the long reader's second included
            started = time.perf_counter()
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute("SET LOCAL lock_timeout = '50ms'")
                    cursor.execute(
                        "SELECT count(*) FROM challenges_attemptscore WHERE version_id = %s",
                        [active.pk],
                    )
                    cursor.execute(
                        "UPDATE challenges_attemptscore SET qa_failed = qa_failed"
                        " WHERE version_id = %s",
                        [active.pk],
                    )
            waits.append(time.perf_counter() - started)
            if n % 30 == 0:
                record(challenge, attempt_input(f"w{n}", tokens_total=n))  # a writer too
            time.sleep(0.01)
    finally:
        reader.join()
        drop.join()
    assert errors == []
    assert drop_done.is_set()
    assert sql.score_partition_state(superseded.pk) == "none"
    assert len(waits) == 150


@pytest.mark.django_db(transaction=True)
def test_sqlite_keeps_every_versions_scores(monkeypatch):
    if connection.vendor != "sqlite":
        pytest.skip("the SQLite behaviour: this run uses PostgreSQL")
    _challenge, active, superseded = _superseded(monkeypatch)
    assert partitions.scores_discard(keep_s=0) == []
    assert partitions.versions_discardable(keep_s=0) == []
    assert AttemptScore.objects.filter(version=superseded).count() == 1
    assert AttemptScore.objects.filter(version=active).count() == 3


@pytest.mark.django_db(transaction=True)
def test_the_watchdog_drops_the_versions_no_longer_kept(monkeypatch, settings):
    _postgres_only()
    from challenges import tasks

    challenge, active, superseded = _superseded(monkeypatch)
    tasks.rescore_watchdog()  # within PODIUM_SCORES_KEEP_S: kept
    assert sql.score_partition_state(superseded.pk) == "attached"
    settings.PODIUM_SCORES_KEEP_S = 0
    tasks.rescore_watchdog()
    assert sql.score_partition_state(superseded.pk) == "none"
    assert sql.score_partition_state(active.pk) == "attached"
    assert Challenge.objects.get(pk=challenge.pk).active_version_id == active.pk


@pytest.mark.django_db
def test_inside_a_transaction_nothing_is_dropped(monkeypatch):
    _postgres_only()
    _, _, superseded = _superseded(monkeypatch)
    assert partitions.scores_discard(keep_s=0) == []  # DETACH CONCURRENTLY cannot run here
    assert sql.score_partition_state(superseded.pk) == "attached"
