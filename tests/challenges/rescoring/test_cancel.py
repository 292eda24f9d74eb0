"""Issue 13, finding 7: cancel means cancel. A chunk being scored stops writing at its
next batch, and the challenge's editable setup goes back to the active version's."""

from __future__ import annotations

import pytest

from challenges.models import AttemptScore, Challenge, RescoreChunk, RescoreJob
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from scoring import services as scoring
from tests.factories import attempt_input, make_challenge, record
from tests.urls import job_cancel_url

pytestmark = pytest.mark.django_db
Status = RescoreJob.Status
WEIGHTED = {"scoring_strategy": "custom", "scoring_plugin_id": "builtin.weighted_scorer"}


def test_after_a_cancel_the_setup_is_the_active_versions_again(monkeypatch, staff_api):
    monkeypatch.setattr(rescoring, "_send", lambda job: None)
    challenge = make_challenge(**WEIGHTED, scoring_config={"success_bonus": 100.0})
    record(challenge, attempt_input("a", tokens_total=5))
    live = Challenge.objects.get(pk=challenge.pk).setup_dict()
    update = setup_services.challenge_update(
        challenge=challenge, data={"scoring_config": {"success_bonus": 1.0}}
    )
    assert update.challenge.setup_dict() != live
    response = staff_api.post(job_cancel_url(update.job.pk))
    assert response.status_code == 200, response.content
    challenge = Challenge.objects.get(pk=challenge.pk)
    assert challenge.setup_dict() == live == challenge.active_version.setup_dict()
    # "Rescore now" rescores what is live, not the cancelled setup.
    job = setup_services.challenge_rescore(challenge=challenge)
    assert job.version.setup_dict() == live


def test_a_cancel_keeps_a_newer_setup(monkeypatch):
    monkeypatch.setattr(rescoring, "_send", lambda job: None)
    challenge = make_challenge(**WEIGHTED)
    first = setup_services.challenge_update(
        challenge=challenge, data={"scoring_config": {"success_bonus": 1.0}}
    )
    setup_services.challenge_update(
        challenge=challenge, data={"scoring_config": {"success_bonus": 2.0}}
    )
    with pytest.raises(rescoring.JobStateError):  # superseded already
        rescoring.job_cancel(job=first.job)
    assert Challenge.objects.get(pk=challenge.pk).scoring_config["success_bonus"] == 2.0


def test_a_chunk_being_scored_stops_writing_at_its_next_batch(monkeypatch, settings):
    settings.PODIUM_SCORING_CHUNK = 1000
    monkeypatch.setattr(rescoring, "_send", lambda job: None)
    challenge = make_challenge(**WEIGHTED)
    record(challenge, *[attempt_input(f"p{i}", tokens_total=i) for i in range(200)])
    job = setup_services.challenge_rescore(challenge=challenge)
    real_scorer = scoring.rows_scorer
    batches = []

    def cancelling_scorer(**kwargs):
        score = real_scorer(**kwargs)

        def run(rows):
            batches.append(len(rows))
            if len(batches) == 2:  # a staff member cancels while the 2nd batch scores
                rescoring.job_cancel(job=RescoreJob.objects.get(pk=job.pk))
            return score(rows)

        return run

    monkeypatch.setattr(scoring, "rows_scorer", cancelling_scorer)
    assert rescoring.chunk_run(chunk_id=RescoreChunk.objects.get(job=job).pk) is False
    assert len(batches) == 2
    assert AttemptScore.objects.filter(version=job.version).count() == batches[0]
    job.refresh_from_db()
    assert job.status == Status.CANCELLED and job.chunks_done == 0
