"""Recording attempts scores them outside the transaction, then reads again, under the
challenge's lock, which versions to write (challenges/ingestion/services.py). A rescore
that switched or started in between must be seen: the attempts go to the board that is
live when they commit, never to one that no longer is."""

from __future__ import annotations

import pytest

from challenges.ingestion import services
from challenges.models import AttemptScore, Challenge, LeaderboardEntry, RescoreJob, ScoringVersion
from tests.factories import make_challenge
from tests.urls import attempts_url

pytestmark = pytest.mark.django_db
ATTEMPT = {"player": "p1", "succeeded": True, "elapsed_ms": 5}


def _between_scoring_and_writing(monkeypatch, change) -> None:
    """Run ``change`` once, after the request scored its attempts and before it writes."""
    compute = services.ScoringBudget.compute
    done = []

    def compute_then_change(self, **kwargs):
        outcomes = compute(self, **kwargs)
        if not done:
            done.append(change())
        return outcomes

    monkeypatch.setattr(services.ScoringBudget, "compute", compute_then_change)


def test_a_switch_in_between_sends_the_attempts_to_the_new_board(
    monkeypatch, integration_api, django_capture_on_commit_callbacks
):
    challenge = make_challenge(scoring_strategy="fastest")
    old = challenge.active_version

    def switch() -> ScoringVersion:
        new = ScoringVersion.objects.create_next(challenge=challenge, by=None, reason="test")
        Challenge.objects.filter(pk=challenge.pk).update(active_version=new)
        return new

    _between_scoring_and_writing(monkeypatch, switch)
    with django_capture_on_commit_callbacks(execute=True):
        response = integration_api.post(attempts_url(challenge.pk), ATTEMPT, format="json")
    assert response.status_code == 201, response.content
    new = ScoringVersion.objects.get(challenge=challenge, number=old.number + 1)
    # Not scored under the new version inline (it did not exist when scoring ran): pending,
    # scored by the task queued on commit (eager in tests), and on the new board.
    assert response.json()["score_status"] == "pending"
    assert AttemptScore.objects.filter(version=new).count() == 1
    assert LeaderboardEntry.objects.filter(version=new).count() == 1
    assert not LeaderboardEntry.objects.filter(version=old).exists()


def test_a_rescore_started_in_between_is_left_to_its_switch(monkeypatch, integration_api):
    challenge = make_challenge(scoring_strategy="fastest")
    active = challenge.active_version

    def start() -> RescoreJob:
        new = ScoringVersion.objects.create_next(challenge=challenge, by=None, reason="test")
        return RescoreJob.objects.create(challenge=challenge, version=new)

    _between_scoring_and_writing(monkeypatch, start)
    response = integration_api.post(attempts_url(challenge.pk), ATTEMPT, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["score_status"] == "scored"  # under the active version
    assert LeaderboardEntry.objects.filter(version=active).count() == 1
    new = RescoreJob.objects.get(challenge=challenge).version
    # The new version had no outcomes computed: no score row written inside the
    # transaction; its switch scores what is missing.
    assert not AttemptScore.objects.filter(version=new).exists()
