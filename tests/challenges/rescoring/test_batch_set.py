"""What a batch scorer's "whole set" is, and frozen boards immune to what follows the
freeze (issue 28, findings 1 and 2; the rule is in docs/writing-scorers.md, batch scorers).

- The set a batch scorer ranks relative to is the *ranked* attempts: never practice
  attempts, hidden attempts or hidden players' attempts, and while a freeze holds, only
  the attempts recorded before it. The others are scored against that set (in a second
  call), so they have scores for staff, but change nobody else's.
- A frozen board shows every attempt recorded before the freeze once it is scored, even
  when the scoring came after the board was first built (a batch run, pending scoring)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from challenges.ingestion import budget
from challenges.models import Attempt, Challenge
from challenges.rescoring import batch as batch_scoring
from tests.urls import attempts_url, challenges_url, leaderboard_url

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

# 0 for an answer given more than once in the set, else its length.
DUPLICATES = """\
from collections import Counter


def compute_batch_scores(samples):
    seen = Counter(s.get("answer", "") for s in samples)
    return [{"original": 0.0 if seen[s.get("answer", "")] > 1 else float(len(s.get("answer", "")))}
            for s in samples]
"""
BODY = {
    "name": "No copies",
    "scoring_strategy": "python",
    "scorers": [{"key": "dup", "type": "python_batch", "compute_scores_snippet": DUPLICATES}],
    "rank_by": "dup.original",
}


@pytest.fixture(autouse=True)
def _needs_the_sandbox():
    from tests.scoring.test_snippet import sandbox_or_skip

    sandbox_or_skip()


@pytest.fixture(autouse=True)
def _runs_by_hand(runs_queued):
    """Batch runs are queued, not run (conftest): each test runs them when it chooses."""
    return runs_queued


@pytest.fixture
def challenge(admin_api) -> Challenge:
    response = admin_api.post(challenges_url(), BODY, format="json")
    assert response.status_code == 201, response.content
    return Challenge.objects.get(pk=response.json()["id"])


def post(api, challenge, player, answer):
    body = {"player": player, "succeeded": True, "sample": {"answer": answer}}
    response = api.post(attempts_url(challenge.pk), body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def public(anon_api, challenge):
    rows = anon_api.get(leaderboard_url(challenge.pk) + "?limit=100").json()["results"]
    return {r["player"]: r["score"] for r in rows}


def run(challenge):
    batch_scoring.batch_run(challenge_id=challenge.pk)


def freeze_now(challenge):
    """As an admin's save sets it (updated_at moves with every save)."""
    now = timezone.now()
    Challenge.objects.filter(pk=challenge.pk).update(freeze_at=now, updated_at=now)


def test_a_frozen_board_shows_attempts_scored_after_it_was_built(
    challenge, integration_api, anon_api
):
    post(integration_api, challenge, "ada", "alpha")
    post(integration_api, challenge, "bob", "bravo!")
    freeze_now(challenge)
    assert public(anon_api, challenge) == {}  # built while both were pending
    run(challenge)
    assert public(anon_api, challenge) == {"ada": 5.0, "bob": 6.0}


def test_a_frozen_board_shows_pending_attempts_once_scored(
    admin_api, integration_api, anon_api, settings, monkeypatch
):
    """The same for a per-attempt scorer past the request's scoring budget."""
    settings.PODIUM_SCORING_BUDGET_MS = 0  # plugins and snippets: always by the workers
    monkeypatch.setattr(budget, "pending_enqueue", lambda **kw: None)  # not yet
    body = {
        "name": "Length",
        "scoring_strategy": "python",
        "scoring_code": 'def compute_scores(sample):\n    return {"n": len(sample["answer"])}\n',
    }
    response = admin_api.post(challenges_url(), body, format="json")
    challenge = Challenge.objects.get(pk=response.json()["id"])
    first = post(integration_api, challenge, "ada", "alpha")
    assert first["score_status"] == "pending"
    freeze_now(challenge)
    assert public(anon_api, challenge) == {}
    budget.attempts_score_pending(challenge_id=challenge.pk)
    assert public(anon_api, challenge) == {"ada": 5.0}


def test_a_late_practice_copy_changes_no_ranked_score(challenge, integration_api, anon_api):
    post(integration_api, challenge, "ada", "a unique answer")
    run(challenge)
    assert public(anon_api, challenge) == {"ada": 15.0}
    Challenge.objects.filter(pk=challenge.pk).update(
        closes_at=timezone.now() - timedelta(seconds=1),
        late_attempts="practice",
        updated_at=timezone.now(),
    )
    late = post(integration_api, challenge, "copycat", "a unique answer")
    run(challenge)
    assert public(anon_api, challenge) == {"ada": 15.0}
    # The practice attempt is scored against the ranked set: a copy, so 0.
    assert Attempt.objects.get(pk=late["id"]).practice
    from challenges.models import AttemptScore

    assert AttemptScore.objects.get(attempt_id=late["id"]).score == 0.0


def test_a_hidden_players_copy_keeps_nobody_at_zero(
    challenge, integration_api, admin_api, anon_api, runs_queued, django_capture_on_commit_callbacks
):
    post(integration_api, challenge, "honest", "my own work")
    post(integration_api, challenge, "cheater", "my own work")
    run(challenge)
    assert public(anon_api, challenge) == {"honest": 0.0, "cheater": 0.0}  # two copies
    hide = reverse("player-hide", args=[challenge.pk, "cheater"])
    queued = len(runs_queued)
    with django_capture_on_commit_callbacks(execute=True):
        assert admin_api.post(hide, {"reason": "copied"}, format="json").status_code == 200
    assert len(runs_queued) == queued + 1  # moderation changed the set: a new run
    run(challenge)
    assert public(anon_api, challenge) == {"honest": 11.0}


def test_a_frozen_board_is_immune_to_attempts_after_the_freeze(
    challenge, integration_api, admin_api, anon_api, runs_queued, django_capture_on_commit_callbacks
):
    post(integration_api, challenge, "ada", "first answer")
    post(integration_api, challenge, "bob", "second one")
    run(challenge)
    assert public(anon_api, challenge) == {"ada": 12.0, "bob": 10.0}
    freeze_now(challenge)
    post(integration_api, challenge, "eve", "first answer")  # a copy, after the freeze
    run(challenge)
    # Moderation rebuilds the frozen board: still as of the freeze.
    hide = reverse("player-hide", args=[challenge.pk, "bob"])
    assert admin_api.post(hide, {"reason": "test"}, format="json").status_code == 200
    run(challenge)
    assert public(anon_api, challenge) == {"ada": 12.0}
    # The reveal: the whole set, the copy included.
    queued = len(runs_queued)
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_api.post(reverse("challenge-reveal", args=[challenge.pk]))
    assert response.status_code == 200, response.content
    assert len(runs_queued) == queued + 1  # the reveal asks for a run over everything
    run(challenge)
    assert public(anon_api, challenge) == {"ada": 0.0, "eve": 0.0}


def test_a_post_freeze_batch_run_does_not_move_the_public_updated_at(
    challenge, integration_api, anon_api, staff_api
):
    """Finding 2: the public `updated_at` moved on every post-freeze batch run."""
    from tests.urls import detail_url

    post(integration_api, challenge, "ada", "first answer")
    run(challenge)
    freeze_now(challenge)
    before = anon_api.get(detail_url(challenge.pk)).json()["updated_at"]
    post(integration_api, challenge, "eve", "a new answer")
    run(challenge)
    assert anon_api.get(detail_url(challenge.pk)).json()["updated_at"] == before
    live = staff_api.get(leaderboard_url(challenge.pk)).json()["results"]
    assert {r["player"] for r in live} == {"ada", "eve"}  # staff see the live board
