"""Issue 27: one missing-score catch-up (``scores.scores_catch_up``), and exactly when a
scorer runs under the switch's lock (docs/rescoring.md): only for an attempt the
catch-up before the lock could not see, so that the new board switches with every
attempt scored."""

from __future__ import annotations

import pytest
from django.db import connection

from challenges.leaderboards import evaluation
from challenges.models import Challenge, LeaderboardEntry
from challenges.rescoring import jobs as rescoring
from scoring import services as scoring
from tests.factories import attempt_input, make_challenge, record

from ._jobs import job_with_chunks_done

pytestmark = pytest.mark.django_db


def _spied(inside: list[bool], depth: int):
    """A scorer that notes whether a transaction beyond the test's (``depth``) is open
    each time it runs."""
    real = scoring.scores_compute

    def spy(**kwargs):
        inside.append(len(connection.atomic_blocks) > depth)
        return real(**kwargs)

    return spy


def _scorer_spy(monkeypatch) -> list[bool]:
    inside: list[bool] = []
    monkeypatch.setattr(scoring, "scores_compute", _spied(inside, len(connection.atomic_blocks)))
    return inside


def _board(challenge: Challenge) -> dict[str, float]:
    version_id = Challenge.objects.get(pk=challenge.pk).active_version_id
    entries = LeaderboardEntry.objects.filter(version_id=version_id)
    return dict(entries.values_list("player__external_id", "score"))


def test_an_attempt_recorded_after_the_last_chunk_is_scored_outside_any_lock(monkeypatch):
    challenge = make_challenge(scoring_strategy="fewest_tokens")
    record(challenge, *[attempt_input(f"p{i}", tokens_total=10 + i) for i in range(3)])
    job = job_with_chunks_done(challenge, monkeypatch)
    # Recorded between the job's last chunk and its switch, its score under the job's
    # version missing (a budget that ran out, a lost write).
    (late,) = record(challenge, attempt_input("late", tokens_total=1))
    job.version.scores.filter(attempt_id=late.attempt.pk).delete()
    inside = _scorer_spy(monkeypatch)

    assert rescoring.job_finalize(job_id=job.pk)

    assert inside == [False]  # the catch-up before the lock, never under it
    assert _board(challenge) == {"p0": 10, "p1": 11, "p2": 12, "late": 1}


def test_only_an_attempt_the_catch_up_missed_is_scored_under_the_lock(monkeypatch):
    challenge = make_challenge(scoring_strategy="fewest_tokens")
    record(challenge, attempt_input("p0", tokens_total=10))
    job = job_with_chunks_done(challenge, monkeypatch)
    inside: list[bool] = []
    # Recorded after the catch-up, before the lock (while the intervals are computed),
    # its score under the job's version missing: the switch's safety net scores it, under
    # the lock, so that the board switches with every attempt scored.
    real_compute = evaluation.evaluation_compute
    depth = len(connection.atomic_blocks)

    def record_meanwhile(**kwargs):
        (lost,) = record(challenge, attempt_input("lost", tokens_total=2))
        job.version.scores.filter(attempt_id=lost.attempt.pk).delete()
        monkeypatch.setattr(scoring, "scores_compute", _spied(inside, depth))  # from here on
        return real_compute(**kwargs)

    monkeypatch.setattr(evaluation, "evaluation_compute", record_meanwhile)

    assert rescoring.job_finalize(job_id=job.pk)

    assert inside == [True]  # the catch-up found nothing; the switch scored "lost"
    assert _board(challenge) == {"p0": 10, "lost": 2}
