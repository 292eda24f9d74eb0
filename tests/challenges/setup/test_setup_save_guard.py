"""A scoring setup changes only through the path that versions it (issue 20, finding 4):
the guide's `challenge.scoring_... = ...; challenge.save()` raises an error naming the
service; a challenge made without the service gets its version at the first attempt;
an attempt is never recorded null without a reason."""

from __future__ import annotations

import pytest

from challenges.models import AttemptScore, Challenge, ScoringSetupUnversioned
from challenges.setup import services as setup_services
from scoring.project_registry import registry
from tests.factories import counts, make_challenge
from tests.urls import attempts_url


def test_setting_scoring_fields_and_saving_raises_naming_the_service(db):
    challenge = make_challenge(scoring_strategy="first")
    challenge.scoring_strategy = "custom"  # the guide's "2. Register in Challenge"
    challenge.scoring_plugin_id = "builtin.weighted_scorer"
    challenge.scoring_config = {"success_bonus": 1.0}

    with pytest.raises(
        ScoringSetupUnversioned, match=r"challenges\.setup\.services\.challenge_update"
    ):
        challenge.save()

    assert Challenge.objects.get(pk=challenge.pk).scoring_strategy == "first"


def test_the_service_path_versions_the_change(db):
    challenge = make_challenge(scoring_strategy="first")
    change = {"scoring_strategy": "custom", "scoring_plugin_id": "builtin.weighted_scorer"}

    result = setup_services.challenge_update(challenge=challenge, data=change)

    assert result.new_version is not None and result.new_version.number == 2
    challenge.refresh_from_db()
    assert challenge.scoring_strategy == "custom"  # the new version's rescore is queued
    challenge.name = "Renamed"
    challenge.save()  # a save that keeps the versioned setup is fine


def test_non_setup_fields_save_freely(db):
    challenge = make_challenge(scoring_strategy="first")
    challenge.name = "New name"
    challenge.save(update_fields=["name"])
    challenge.description = "x"
    challenge.save()
    assert Challenge.objects.get(pk=challenge.pk).name == "New name"


def test_a_challenge_made_with_the_orm_gets_its_first_version_at_the_first_attempt(
    db, integration_api
):
    challenge = Challenge.objects.create(
        name="Shell made",
        slug="shell-made",
        scoring_strategy="custom",
        scoring_plugin_id="builtin.weighted_scorer",
        scoring_entrypoint="services.scorers.weighted:WeightedScorer",
        scoring_config={"rating_weight": 2.0},
    )

    resp = integration_api.post(
        attempts_url(challenge.pk), {"player": "p", "succeeded": True, "rating": 5}, format="json"
    )

    assert resp.status_code == 201, resp.content
    assert resp.json()["score"] == 110.0  # defaults filled in, normalised entrypoint
    assert resp.json()["version"] == 1
    challenge.refresh_from_db()
    assert challenge.scoring_entrypoint == "scoring.scorers.weighted:WeightedScorer"


def test_an_unusable_setup_made_with_the_orm_is_a_400_and_writes_nothing(db, integration_api):
    challenge = Challenge.objects.create(
        name="Broken", slug="broken", scoring_strategy="custom", scoring_plugin_id="nope"
    )
    before = counts()

    resp = integration_api.post(
        attempts_url(challenge.pk), {"player": "p", "succeeded": True}, format="json"
    )

    assert resp.status_code == 400
    assert "scoring_plugin_id" in resp.json()
    assert counts() == before


def test_no_attempt_is_recorded_null_without_a_reason(db, integration_api):
    with registry().temporarily("t.tokens", "tests.plugins:TokensScorer"):
        challenge = make_challenge(scoring_strategy="custom", scoring_plugin_id="t.tokens")
        body = [{"player": f"p{t}", "succeeded": True, "tokens_total": t} for t in (13, 2)]
        resp = integration_api.post(attempts_url(challenge.pk), body, format="json")
    assert resp.status_code == 201
    for row in AttemptScore.objects.filter(attempt__challenge=challenge):
        assert row.version_id is not None
        assert row.score is not None or row.error
