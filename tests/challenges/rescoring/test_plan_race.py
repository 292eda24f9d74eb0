"""Finding 1 of issue 13: a rescore's plan must not miss an attempt that a transaction
still open at the start commits later, whatever its id (PostgreSQL: concurrent
sessions)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from challenges.models import Attempt, AttemptScore, LeaderboardEntry, RescoreJob
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from tests.factories import attempt_input, make_challenge, record

from ._threads import Session, wait_until_someone_waits

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
TRIALS = 8


def _race_once(existing: int) -> None:
    challenge = make_challenge(scoring_strategy="fewest_tokens")
    if existing:
        record(challenge, *[attempt_input(f"old{i}", tokens_total=50 + i) for i in range(existing)])
    bulk_in = threading.Event()
    commit = threading.Event()

    def bulk() -> None:
        # A bulk POST still in its transaction: its ids are lower than the single's.
        with transaction.atomic():
            record(challenge, *[attempt_input(f"b{i}", tokens_total=100 + i) for i in range(40)])
            bulk_in.set()
            assert commit.wait(20)

    writer = Session(bulk)
    writer.start()
    assert bulk_in.wait(20)
    record(challenge, attempt_input("single", tokens_total=7))  # commits first, higher id
    starter = Session(lambda: setup_services.challenge_rescore(challenge=challenge))
    starter.start()  # plans, then waits for the bulk's share lock on the challenge
    wait_until_someone_waits()
    commit.set()
    writer.outcome()
    job = starter.outcome()
    job = rescoring.job_run_inline(job=job)
    assert job.status == RescoreJob.Status.SUCCEEDED, job.error
    attempts = set(Attempt.objects.filter(challenge=challenge).values_list("pk", flat=True))
    assert len(attempts) == existing + 41
    scored = list(
        AttemptScore.objects.filter(version=job.version).values_list("attempt_id", flat=True)
    )
    assert sorted(scored) == sorted(attempts), f"{len(attempts - set(scored))} left unscored"
    assert LeaderboardEntry.objects.filter(version=job.version).count() == existing + 41
    assert job.processed == job.total == existing + 41


def test_a_bulk_transaction_open_at_the_plan_is_in_the_job_every_time():
    if connection.vendor != "postgresql":
        pytest.skip("concurrent sessions: PostgreSQL")
    for trial in range(TRIALS):
        _race_once(existing=0 if trial % 2 == 0 else 3)
