"""``red_blue_scoring: "custom"``: a registered pairing scorer plugin scores each judged
pairing (docs/scorers.md, "Pairing scorers"). Its settings are checked on save (a 400
or a form error naming the field), it runs outside any transaction, and a plugin that
raises or returns garbage leaves the pairing judged without points, the reason kept for
admins, never a 500."""

from __future__ import annotations

import pytest
from django.db import connection

from challenges.models import Pairing
from challenges.redblue import points as red_blue_points
from challenges.setup import services as setup_services
from scoring.project_registry import registry
from tests.challenges.redblue.factories import SUITE, judge, make_red_blue, submit
from tests.urls import challenges_url, detail_url, judgement_url, standings_url

pytestmark = pytest.mark.django_db

WEIGHTS = ("t.pairing_weights", "tests.plugins:PairingWeights")
WEIRD = ("t.pairing_weird", "tests.plugins:PairingWeird")


@pytest.fixture
def weights():
    with registry().temporarily(*WEIGHTS):
        yield WEIGHTS[0]


@pytest.fixture
def weird():
    with registry().temporarily(*WEIRD):
        yield WEIRD[0]


def custom(plugin_id: str, **config):
    return {
        "red_blue_scoring": "custom",
        "red_blue_plugin_id": plugin_id,
        "red_blue_config": config,
    }


def body(**changes):
    return {"name": "Plugged", "format": "red_blue", "judge_suite": list(SUITE), **changes}


def one_pairing(c, attack="r", defence="b"):
    submit(c, attack, "red")
    return submit(c, defence, "blue").pairings[0]


# --- saving the settings ---------------------------------------------------------------------
def test_a_custom_rule_is_saved_normalised(admin_api, weights):
    response = admin_api.post(challenges_url(), body(**custom(weights, per_breach=3)), "json")
    assert response.status_code == 201, response.content
    made = response.json()
    assert made["red_blue_plugin_id"] == weights
    assert made["red_blue_entrypoint"] == WEIGHTS[1]  # filled in: the registered one
    assert made["red_blue_config"] == {"per_breach": 3, "per_hold": 1, "rating_weight": 0}


@pytest.mark.parametrize(
    "changes, field, words",
    [
        ({"red_blue_plugin_id": ""}, "red_blue_plugin_id", "Required"),
        ({"red_blue_plugin_id": "t.nobody"}, "red_blue_plugin_id", "Unknown scorer plugin"),
        ({"red_blue_entrypoint": "os:system"}, "red_blue_entrypoint", "not the one registered"),
        ({"red_blue_config": {"per_breach": "many"}}, "red_blue_config", "per_breach"),
        ({"red_blue_config": {"bonus": 1}}, "red_blue_config", "bonus: unknown key"),
        ({"red_blue_config": []}, "red_blue_config", ""),
    ],
)
def test_bad_plugin_settings_are_400s_naming_the_field(admin_api, weights, changes, field, words):
    sent = body(**{**custom(weights), **changes})
    response = admin_api.post(challenges_url(), sent, "json")
    assert response.status_code == 400, response.content
    assert field in response.json() and words in str(response.json()[field])


def test_an_attempt_scorer_is_no_pairing_scorer_and_back(admin_api, weights):
    with registry().temporarily("t.tokens", "tests.plugins:TokensScorer"):
        response = admin_api.post(challenges_url(), body(**custom("t.tokens")), "json")
        assert response.status_code == 400
        assert "score_pairing" in response.json()["red_blue_plugin_id"][0]
        # and a pairing scorer is refused as a single challenge's scorer plugin
        single = {"name": "S", "scoring_strategy": "custom", "scoring_plugin_id": weights}
        response = admin_api.post(challenges_url(), single, "json")
        assert response.status_code == 400
        assert "red/blue pairings" in response.json()["scoring_plugin_id"][0]


def test_the_plugin_fields_are_for_staff_only(admin_api, anon_api, weights):
    made = admin_api.post(challenges_url(), body(**custom(weights, per_breach=3)), "json").json()
    public = anon_api.get(detail_url(made["id"])).json()
    assert public["red_blue_scoring"] == "custom"
    for name in ("red_blue_plugin_id", "red_blue_entrypoint", "red_blue_config"):
        assert name not in public


def test_back_to_the_ratio_empties_the_plugin_fields(admin_api, weights):
    c = make_red_blue(**custom(weights))
    response = admin_api.patch(detail_url(c.pk), {"red_blue_scoring": "red_blue_ratio"}, "json")
    assert response.status_code == 200, response.content
    c.refresh_from_db()
    assert (c.red_blue_plugin_id, c.red_blue_entrypoint, c.red_blue_config) == ("", "", {})


def test_the_admin_form_names_the_bad_plugin_field(admin_client, weights):
    from challenges.models import Challenge
    from tests.challenges.admin.test_admin import form
    from tests.urls import admin_url

    sent = form(
        format="red_blue",
        judge_suite='["SA", "V"]',
        red_blue_scoring="custom",
        red_blue_plugin_id=weights,
        red_blue_config='{"per_breach": "many"}',
    )
    bad = admin_client.post(admin_url("challenge", "add"), sent)
    assert bad.status_code == 200 and not Challenge.objects.exists()
    assert "per_breach" in bad.context["adminform"].form.errors["red_blue_config"][0]
    sent["red_blue_config"] = '{"per_breach": 4}'
    good = admin_client.post(admin_url("challenge", "add"), sent)
    assert good.status_code == 302, good.content.decode()[:2000]
    made = Challenge.objects.get()
    assert made.red_blue_config == {"per_breach": 4, "per_hold": 1, "rating_weight": 0}


# --- judging under a plugin --------------------------------------------------------------------
def test_a_judgement_is_scored_by_the_plugin(integration_api, anon_api, weights):
    c = make_red_blue(**custom(weights, per_breach=3, rating_weight=0.5))
    pairing = one_pairing(c)
    verdict = {"categories": {code: code in ("SA", "V") for code in SUITE}, "rating": 4}
    response = integration_api.post(judgement_url(pairing.pk), verdict, "json")
    assert response.status_code == 200, response.content
    judged = response.json()
    assert (judged["red_points"], judged["blue_points"]) == (2 * 3 + 4 * 0.5, 4.0)
    assert judged["points_error"] == ""
    standings = anon_api.get(standings_url(c.pk)).json()
    assert standings["red"]["points"] == 8.0 and standings["blue"]["points"] == 4.0


@pytest.mark.parametrize(
    "rating, error",
    [
        (0, "ValueError: no verdict for me"),
        (1, "not NoneType"),
        (2, "'red' must be a number, not str"),
        (3, "'red' must be a finite number"),
        (4, "'blue' must be a number, not NoneType"),
        (5, "'red' must be a number, not bool"),
        (7, "not list"),
        (8, "'red' must be a finite number"),
    ],
)
def test_a_failing_plugin_leaves_the_pairing_without_points(
    integration_api, anon_api, weird, rating, error
):
    c = make_red_blue(**custom(weird))
    failed = one_pairing(c)
    verdict = {"categories": dict.fromkeys(SUITE, True), "rating": rating, "feedback": "f"}
    response = integration_api.post(judgement_url(failed.pk), verdict, "json")
    assert response.status_code == 200, response.content
    judged = response.json()
    assert judged["status"] == "judged" and judged["categories"] == verdict["categories"]
    assert (judged["red_points"], judged["blue_points"]) == (None, None)  # never one of two
    assert error in judged["points_error"]
    stored = Pairing.objects.get(pk=failed.pk)
    assert (stored.red_points, stored.blue_points) == (None, None) and error in stored.points_error
    # it counts for no one; another pairing still does
    judge(submit(c, "r2", "red").pairings[0], breached=["SA"], rating=10)
    standings = anon_api.get(standings_url(c.pk)).json()
    assert (standings["red"]["points"], standings["blue"]["points"]) == (5.0, 1.0)
    assert [p["player"] for p in standings["red_players"]] == ["r2"]
    assert error not in anon_api.get(standings_url(c.pk)).content.decode()


def test_a_negative_result_counts_zero(weird):
    c = make_red_blue(**custom(weird))
    judged = judge(one_pairing(c), breached=["SA"], rating=6)
    assert (judged.red_points, judged.blue_points, judged.points_error) == (0.0, 2.0, "")


def test_a_plugin_past_the_timeout_is_a_recorded_failure(weird):
    c = make_red_blue(**custom(weird), timeout_ms=300)
    judged = judge(one_pairing(c), breached=["SA"], rating=9)
    assert judged.red_points is None and "timed out after 300 ms" in judged.points_error


def test_a_plugin_gone_from_the_registry_is_a_recorded_failure(weights):
    c = make_red_blue(**custom(weights))
    pairing = one_pairing(c)
    registry().unregister(weights)
    judged = judge(pairing, breached=["SA"])
    assert judged.red_points is None and "cannot be used" in judged.points_error


@pytest.mark.django_db(transaction=True)
def test_the_plugin_never_runs_inside_a_transaction(monkeypatch, weights):
    from scoring.engine import isolated

    seen: list[bool] = []
    real = isolated.IsolatedScorer.run_pairings

    def watched(self, judgements, config, timeout_ms):
        seen.append(connection.in_atomic_block)
        return real(self, judgements, config, timeout_ms)

    monkeypatch.setattr(isolated.IsolatedScorer, "run_pairings", watched)
    c = make_red_blue()
    pairing = one_pairing(c)
    judge(pairing, breached=["SA"], rating=3)
    setup_services.challenge_update(challenge=c, data=custom(weights))  # recomputes
    judge(one_pairing(c, "r2", "b2"), breached=["V"], rating=3)
    assert seen == [False, False]
    assert Pairing.objects.get(pk=pairing.pk).red_points == 2.0  # per_breach 2


def test_a_judgement_retries_when_the_rule_changed_meanwhile(monkeypatch, weights):
    c = make_red_blue()
    pairing = one_pairing(c)
    real = red_blue_points.points_compute
    calls = []

    def racing(*, challenge, judgements):
        if not judgements:  # the rule change's own plan: nothing judged yet
            return real(challenge=challenge, judgements=judgements)
        calls.append(challenge.red_blue_scoring)
        if len(calls) == 1:  # an admin switches to the plugin while we compute
            setup_services.challenge_update(challenge=c, data=custom(weights))
        return real(challenge=challenge, judgements=judgements)

    monkeypatch.setattr(red_blue_points, "points_compute", racing)
    judged = judge(pairing, breached=["SA"], rating=9)
    assert calls == ["red_blue_ratio", "custom"]
    assert (judged.red_points, judged.blue_points) == (2.0, 5.0)  # the plugin's, not 1 + 3


def test_a_plugin_gone_from_the_registry_leaves_the_challenge_editable(admin_api, weights):
    c = make_red_blue(**custom(weights))
    judge(one_pairing(c), breached=["SA"])
    registry().unregister(weights)
    for change in ({"closes_at": None, "instructions": "x"}, {"severity_divisor": 2}):
        response = admin_api.patch(detail_url(c.pk), change, "json")
        assert response.status_code == 200, response.content
    judged = Pairing.objects.get(challenge=c)
    assert judged.red_points is None and "cannot be used" in judged.points_error
    response = admin_api.patch(detail_url(c.pk), {"red_blue_config": {"per_breach": 1}}, "json")
    assert response.status_code == 400 and "red_blue_plugin_id" in response.json()
