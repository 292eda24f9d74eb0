"""Scoring versions: a setup change makes a version, its rescore switches atomically,
history is never rewritten, and no attempt is left without a score."""

from __future__ import annotations

import pytest

from challenges import selectors, services
from challenges.models import AttemptScore, LeaderboardEntry, ScoringVersion
from scoring.registry import registry
from tests.factories import WEIGHTED_SEED, attempt_input, make_challenge, record

pytestmark = pytest.mark.django_db


def board(challenge):
    challenge.refresh_from_db()
    page = selectors.leaderboard_page(challenge=challenge, limit=100, offset=0)
    return page.version.number, [(r.player_external_id, r.score) for r in page.rows]


def test_create_makes_version_one_active():
    challenge = make_challenge(scoring_strategy="fastest")
    assert challenge.active_version.number == 1
    assert challenge.active_version.scored_at is not None
    assert challenge.active_version.scoring_strategy == "fastest"


def test_setup_change_switches_only_when_rescored():
    challenge = make_challenge(**{k: v for k, v in WEIGHTED_SEED.items() if k != "name"})
    record(challenge, attempt_input("a", tokens_total=1200, elapsed_ms=12000, rating=5))
    assert board(challenge) == (1, [("a", 145.0)])

    update = services.challenge_update(
        challenge=challenge, data={"scoring_config": {"success_bonus": 10.0}}
    )
    version = update.new_version
    assert version.number == 2 and version.scored_at is None
    # Not rescored yet: the public board still shows version 1.
    assert board(challenge) == (1, [("a", 145.0)])

    services.version_rescore(version_id=version.pk)
    # defaults: rating_weight 10, time_penalty 1, token_penalty 0.01
    assert board(challenge) == (2, [("a", 10.0 + 50.0 - 12.0 - 12.0)])
    # History kept: version 1's scores are untouched.
    v1_scores = AttemptScore.objects.filter(version__number=1, version__challenge=challenge)
    assert list(v1_scores.values_list("score", flat=True)) == [145.0]


def test_info_change_makes_no_version():
    challenge = make_challenge()
    update = services.challenge_update(challenge=challenge, data={"name": "Renamed"})
    assert update.new_version is None
    assert challenge.versions.count() == 1


def test_same_setup_makes_no_version():
    challenge = make_challenge(scoring_strategy="fastest")
    update = services.challenge_update(challenge=challenge, data={"scoring_strategy": "fastest"})
    assert update.new_version is None


def test_attempts_recorded_during_a_rescore_are_scored_under_the_new_version():
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, attempt_input("a", elapsed_ms=500))
    version = services.challenge_update(
        challenge=challenge, data={"scoring_strategy": "fewest_tokens"}
    ).new_version
    # Recorded while version 2 is pending: scored under both versions.
    [recorded] = record(challenge, attempt_input("b", elapsed_ms=900, tokens_total=7))
    assert recorded.score.score == 900.0  # the active version (fastest)
    assert AttemptScore.objects.get(version=version, attempt=recorded.attempt).score == 7.0
    services.version_rescore(version_id=version.pk)
    assert board(challenge) == (2, [("b", 7.0)])  # a has no tokens: not counted


def test_rescore_is_idempotent():
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, *[attempt_input(f"p{i}", elapsed_ms=100 * i) for i in range(5)])
    version = services.challenge_update(
        challenge=challenge, data={"scoring_strategy": "first"}
    ).new_version
    services.version_rescore(version_id=version.pk)
    services.version_rescore(version_id=version.pk)  # a retried task
    assert AttemptScore.objects.filter(version=version).count() == 5
    assert LeaderboardEntry.objects.filter(version=version).count() == 5
    assert board(challenge)[0] == 2


def test_superseded_version_never_becomes_active():
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, attempt_input("a", elapsed_ms=5, tokens_total=3, rating=4))
    v2 = services.challenge_update(
        challenge=challenge, data={"scoring_strategy": "fewest_tokens"}
    ).new_version
    v3 = services.challenge_update(
        challenge=challenge, data={"scoring_strategy": "highest_rating"}
    ).new_version
    assert services.version_rescore(version_id=v2.pk) is None
    assert board(challenge) == (1, [("a", 5.0)])
    services.version_rescore(version_id=v3.pk)
    assert board(challenge) == (3, [("a", 4.0)])
    assert services.version_rescore(version_id=v2.pk) is None  # late retry of the old one
    assert board(challenge)[0] == 3


def test_rescore_of_a_deleted_version_is_quiet():
    assert services.version_rescore(version_id=999_999) is None


def test_scorer_failures_are_recorded_not_raised():
    with registry().temporarily("t.tokens", "tests.plugins:TokensScorer"):
        challenge = make_challenge(scoring_strategy="custom", scoring_plugin_id="t.tokens")
        results = record(
            challenge,
            attempt_input("a", tokens_total=13),  # TokensScorer raises for 13
            attempt_input("b", tokens_total=20),
        )
    assert results[0].score.score is None
    assert "unlucky" in results[0].score.error
    assert results[0].score.details == {"error": results[0].score.error}
    assert results[1].score.score == 20.0
    assert board(challenge) == (1, [("b", 20.0)])


def test_unregistered_plugin_scores_none_with_reason():
    with registry().temporarily("t.const", "tests.plugins:Constant"):
        challenge = make_challenge(scoring_strategy="custom", scoring_plugin_id="t.const")
    # The plugin is gone (uninstalled): attempts are still recorded, with the reason.
    [result] = record(challenge, attempt_input("a"))
    assert result.score.score is None
    assert "t.const" in result.score.error
    assert result.attempt.pk is not None


def test_version_keeps_the_full_setup_and_author(admin):
    challenge = make_challenge(scoring_strategy="fastest")
    version = services.challenge_update(
        challenge=challenge,
        data={"scoring_strategy": "custom", "scoring_plugin_id": "builtin.weighted_scorer"},
        by=admin,
    ).new_version
    stored = ScoringVersion.objects.get(pk=version.pk)
    assert stored.created_by == admin
    assert stored.scoring_entrypoint == "scoring.scorers.weighted:WeightedScorer"
    assert stored.scoring_config == {
        "success_bonus": 100.0,
        "rating_weight": 10.0,
        "time_penalty": 1.0,
        "token_penalty": 0.01,
    }


def test_a_broker_outage_does_not_fail_the_change(
    monkeypatch, django_capture_on_commit_callbacks, caplog
):
    from challenges import tasks

    def broker_down(*args, **kwargs):
        raise ConnectionError("broker unreachable")

    monkeypatch.setattr(tasks.rescore_version, "delay", broker_down)
    challenge = make_challenge(scoring_strategy="fastest")
    with django_capture_on_commit_callbacks(execute=True):
        update = services.challenge_update(challenge=challenge, data={"scoring_strategy": "first"})
    assert update.new_version.number == 2  # saved
    challenge.refresh_from_db()
    assert challenge.active_version.number == 1  # still the old scores, shown consistently
    assert "Could not queue the rescore" in caplog.text
