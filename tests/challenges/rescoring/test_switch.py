"""The one switch (issue 11): a rescore's end and "make active again" move the active
version through ``rescoring.switch.version_switch``, and it keeps what both need."""

from __future__ import annotations

import pytest
from django.db import transaction

from challenges.leaderboards import scores
from challenges.models import Challenge, LeaderboardEntry, RescoreJob
from challenges.rescoring import jobs as rescoring
from challenges.rescoring import switch
from challenges.setup import services as setup_services
from challenges.setup import versions
from tests.factories import attempt_input, make_challenge, record

Status = RescoreJob.Status
pytestmark = pytest.mark.django_db


def _spy(monkeypatch, module) -> list[int]:
    calls: list[int] = []
    real = switch.version_switch

    def spy(**kwargs):
        calls.append(kwargs["version"].pk)
        return real(**kwargs)

    monkeypatch.setattr(module, "version_switch", spy)
    return calls


def test_a_rescore_and_make_active_again_switch_through_the_same_function(monkeypatch):
    challenge = make_challenge(scoring_strategy="fewest_tokens")
    record(challenge, *[attempt_input(f"p{i}", tokens_total=10 + i) for i in range(3)])
    first = Challenge.objects.get(pk=challenge.pk).active_version
    by_rescore = _spy(monkeypatch, rescoring)
    job = rescoring.job_run_inline(job=setup_services.challenge_rescore(challenge=challenge))
    assert job.status == Status.SUCCEEDED and by_rescore == [job.version_id]

    by_activation = _spy(monkeypatch, versions)
    done = versions.version_activate(version=first)
    assert done.job is None and by_activation == [first.pk]
    assert Challenge.objects.get(pk=challenge.pk).active_version_id == first.pk


def _pending_version(challenge: Challenge, monkeypatch) -> RescoreJob:
    """A rescore whose chunks are done but which has not switched."""
    monkeypatch.setattr(rescoring, "_send", lambda job: None)  # no eager run on commit
    job = setup_services.challenge_rescore(challenge=challenge)
    for chunk in job.chunks.all():
        rescoring.chunk_run(chunk_id=chunk.pk, finalize=False)
    return RescoreJob.objects.get(pk=job.pk)


def test_the_switch_scores_late_attempts_makes_their_entries_and_cancels_other_jobs(
    monkeypatch,
):
    challenge = make_challenge(scoring_strategy="fewest_tokens")
    record(challenge, *[attempt_input(f"p{i}", tokens_total=10 + i) for i in range(3)])
    job = _pending_version(challenge, monkeypatch)
    version = job.version
    planned_up_to = max(c.last_attempt_id for c in job.chunks.all())
    with transaction.atomic():
        scores.entries_rebuild(version=version)  # what a caller does before switching
    # Recorded during the job: scored under the pending version at ingestion (no entry
    # of it), and one whose score under it is lost (the safety net scores it).
    _late, lost = record(
        challenge, attempt_input("late", tokens_total=1), attempt_input("lost", tokens_total=2)
    )
    version.scores.filter(attempt_id=lost.attempt.pk).delete()
    assert not LeaderboardEntry.objects.filter(version=version, player__external_id="late")
    other = RescoreJob.objects.create(challenge=challenge, version=version, status=Status.QUEUED)

    with transaction.atomic():
        locked = Challenge.objects.select_for_update().get(pk=challenge.pk)
        done = switch.version_switch(
            challenge=locked,
            version=version,
            after_id=planned_up_to,
            keep_job_id=job.pk,
            cancel_reason="Superseded in a test.",
            reason="rescore",
        )

    assert (done.scored, done.failed, done.late, done.late_failed) == (1, 0, 2, 0)
    board = dict(
        LeaderboardEntry.objects.filter(version=version).values_list("player__external_id", "score")
    )
    assert board == {"p0": 10, "p1": 11, "p2": 12, "late": 1, "lost": 2}
    assert Challenge.objects.get(pk=challenge.pk).active_version_id == version.pk
    other.refresh_from_db()
    job.refresh_from_db()
    assert (other.status, other.error) == (Status.CANCELLED, "Superseded in a test.")
    assert job.status == Status.RUNNING  # the switching job is its caller's to end
    assert scores.scores_count(version_id=version.pk, first_id=0, last_id=10**9) == (5, 0)
