"""The plugin guide's example, registered through SCORING_PLUGINS and used through the
API, unchanged (issue 20)."""

from __future__ import annotations

import pytest

from tests.urls import attempts_url, challenges_url

GUIDE_PLUGINS = {"my_custom_scorer": "tests.guides.custom:MyCustomScorer"}


@pytest.fixture
def guide_challenge(settings, admin_api):
    settings.SCORING_PLUGINS = GUIDE_PLUGINS
    body = {
        "name": "Advanced Prompt Challenge",
        "scoring_strategy": "custom",
        "scoring_plugin_id": "my_custom_scorer",
        "scoring_config": {"multiplier": 2.0},
    }
    resp = admin_api.post(challenges_url(), body, format="json")
    assert resp.status_code == 201, resp.content
    return resp.json()["id"]


def test_the_guides_example_through_the_api(guide_challenge, integration_api):
    body = [
        {"player": "u1", "succeeded": True, "tokens_total": 10, "elapsed_ms": 100, "rating": 7},
        {"player": "u2", "succeeded": False, "tokens_total": 10, "elapsed_ms": 100, "rating": 7},
    ]

    resp = integration_api.post(attempts_url(guide_challenge), body, format="json")

    assert resp.status_code == 201, resp.content
    won, lost = resp.json()
    assert won["score"] == 14.0
    assert won["details"] == {"multiplier_used": 2.0}
    assert lost["score"] == 0.0


def test_an_unregistered_plugin_is_a_400_saying_how_to_register(settings, admin_api):
    settings.SCORING_PLUGINS = {}
    body = {
        "name": "X",
        "scoring_strategy": "custom",
        "scoring_plugin_id": "my_custom_scorer",
        "scoring_entrypoint": "services.scorers.custom:MyCustomScorer",
    }

    resp = admin_api.post(challenges_url(), body, format="json")

    assert resp.status_code == 400
    message = str(resp.json())
    assert "scoring_plugin_id" in resp.json()
    assert "SCORING_PLUGINS" in message and "podium.scorers" in message
