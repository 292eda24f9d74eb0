"""``GET /api/scorers/`` and a broken plugin that never takes the site down (issue 20)."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.urls import reverse

from challenges.api.scorers_api import HIDDEN_ERROR
from challenges.models import Challenge, ScoringVersion
from tests.factories import make_challenge
from tests.urls import admin_url, attempts_url, challenges_url

BROKEN = {
    "acme.raises": "tests.guides.raises_on_import:Scorer",
    "acme.const": "tests.plugins:Constant",
    "acme.malformed": "not an entrypoint",
}


def test_catalogue_needs_authentication(anon_api):
    assert anon_api.get(reverse("scorer-catalogue")).status_code in (401, 403)


def test_catalogue_lists_strategies_and_plugins(integration_api, settings):
    settings.SCORING_PLUGINS = {"acme.const": "tests.plugins:Constant"}

    resp = integration_api.get(reverse("scorer-catalogue"))

    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert [s["id"] for s in body["strategies"]] == [
        "first",
        "fastest",
        "fewest_tokens",
        "highest_rating",
        "custom",
        "python",
    ]
    plugins = {p["id"]: p for p in body["plugins"]}
    weighted = plugins["builtin.weighted_scorer"]
    assert weighted["entrypoint"] == "scoring.scorers.weighted:WeightedScorer"
    assert weighted["aliases"] == ["services.scorers.weighted:WeightedScorer"]
    assert weighted["config_defaults"] == {
        "success_bonus": 100.0,
        "rating_weight": 10.0,
        "time_penalty": 1.0,
        "token_penalty": 0.01,
    }
    assert weighted["config_schema"]["properties"]["success_bonus"]["default"] == 100.0
    assert weighted["isolated"] is False and weighted["status"] == "ok"
    const = plugins["acme.const"]
    assert const["isolated"] is True and const["name"] == "Constant"
    assert const["config_defaults"] == {"value": 1.0}
    assert const["status"] == "ok" and const["error"] == ""


def test_catalogue_is_in_the_openapi_schema(admin_api):
    schema = admin_api.get(reverse("schema"), {"format": "json"}).json()
    assert "/api/scorers/" in schema["paths"]
    assert "Plugin" in schema["components"]["schemas"]


@pytest.fixture
def broken(settings):
    settings.SCORING_PLUGINS = BROKEN


def test_a_broken_plugin_is_a_warning_and_the_site_starts(broken, db, client, capsys):
    call_command("check")  # no SystemCheckError
    call_command("migrate", verbosity=0)  # runs the checks too, and goes on
    err = capsys.readouterr().err
    assert "acme.raises" in err and "boom at import" in err and "acme.malformed" in err
    assert client.get(reverse("challenges:home")).status_code == 200


@pytest.mark.parametrize("client_name", ["admin_api", "staff_api"])
def test_the_catalogue_shows_staff_broken_plugins_with_their_error(request, broken, client_name):
    api = request.getfixturevalue(client_name)
    plugins = {p["id"]: p for p in api.get(reverse("scorer-catalogue")).json()["plugins"]}

    assert plugins["acme.raises"]["status"] == "broken"
    assert "boom at import" in plugins["acme.raises"]["error"]
    assert plugins["acme.malformed"]["status"] == "broken"
    assert plugins["acme.const"]["status"] == "ok"


def test_an_integration_token_reads_that_a_plugin_is_broken_not_why(broken, integration_api):
    """Issue 28, finding 12: an import's error can name the server's paths."""
    plugins = {
        p["id"]: p for p in integration_api.get(reverse("scorer-catalogue")).json()["plugins"]
    }
    assert plugins["acme.raises"]["status"] == "broken"
    assert plugins["acme.raises"]["error"] == HIDDEN_ERROR
    assert "boom" not in str(plugins) and "/" not in plugins["acme.malformed"]["error"]
    assert plugins["acme.const"]["error"] == ""


def test_the_admin_shows_a_broken_plugin_with_its_error(broken, admin_client):
    page = admin_client.get(admin_url("challenge", "add"))
    assert page.status_code == 200
    assert "boom at import" in page.content.decode()


def test_choosing_a_broken_plugin_is_a_400(broken, admin_api):
    body = {"name": "X", "scoring_strategy": "custom", "scoring_plugin_id": "acme.raises"}
    resp = admin_api.post(challenges_url(), body, format="json")
    assert resp.status_code == 400
    assert "boom at import" in str(resp.json()["scoring_plugin_id"])


def test_a_challenge_using_a_broken_plugin_records_null_with_the_reason_others_score(
    broken, integration_api, admin_api
):
    uses_it = make_challenge(scoring_strategy="custom", scoring_plugin_id="acme.const")
    # Its plugin breaks after the challenge was set up (a deployment without its module).
    entrypoint = BROKEN["acme.raises"]
    changes = {"scoring_plugin_id": "acme.raises", "scoring_entrypoint": entrypoint}
    Challenge.objects.filter(pk=uses_it.pk).update(**changes)
    ScoringVersion.objects.filter(challenge=uses_it).update(**changes)
    other = make_challenge(scoring_strategy="custom", scoring_plugin_id="acme.const")
    attempt = {"player": "p", "succeeded": True}

    failed = admin_api.post(attempts_url(uses_it.pk), attempt, format="json")
    fine = integration_api.post(attempts_url(other.pk), attempt, format="json")

    assert failed.status_code == 201, failed.content
    assert failed.json()["score"] is None
    assert "boom at import" in failed.json()["details"]["error"]
    assert fine.status_code == 201 and fine.json()["score"] == 1.0
