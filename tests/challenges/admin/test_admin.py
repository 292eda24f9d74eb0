"""The Django admin goes through the same services as the API."""

from __future__ import annotations

import pytest
from django.urls import reverse

from challenges.models import Challenge, ScoringVersion
from tests.challenges.admin.admin_pages import WEIGHTS
from tests.factories import attempt_input, counts, make_challenge, record
from tests.urls import admin_url, change_url

pytestmark = pytest.mark.django_db


def form(**changes):
    """The add page as a browser posts it: the weighted scorer with rating_weight 20."""
    data = {
        "name": "Admin Made",
        "slug": "admin-made",
        "description": "",
        "is_active": "on",
        "tenant_id": "",
        "app_id": "",
        "workflow_id": "",
        "scoring_strategy": "custom",
        "scoring_plugin_id": "builtin.weighted_scorer",
        "scoring_entrypoint": "",
        f"{WEIGHTS}success_bonus": "100",
        f"{WEIGHTS}rating_weight": "20",
        f"{WEIGHTS}time_penalty": "1",
        f"{WEIGHTS}token_penalty": "0.01",
        "scoring_config": "{}",
        "scoring_code": "",
        "score_key": "",
        "metrics": "[]",
        "timeout_ms": "5000",
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


def test_admin_pages_render(admin_client):
    challenge = make_challenge()
    record(challenge, attempt_input("a"))
    for url in (
        reverse("admin:index"),
        admin_url("challenge"),
        admin_url("challenge", "add"),
        change_url(challenge),
        admin_url("attempt"),
        admin_url("player"),
        admin_url("scoringversion"),
        admin_url("attemptscore"),
    ):
        assert admin_client.get(url).status_code == 200, url


def test_admin_creates_a_challenge_with_version_one(admin_client, admin):
    response = admin_client.post(admin_url("challenge", "add"), form())
    assert response.status_code == 302, response.content.decode()[:2000]
    challenge = Challenge.objects.get(slug="admin-made")
    assert challenge.scoring_entrypoint == "scoring.scorers.weighted:WeightedScorer"
    assert challenge.scoring_config["rating_weight"] == 20
    assert challenge.scoring_config["success_bonus"] == 100.0  # schema default filled in
    assert challenge.active_version.number == 1
    assert challenge.active_version.created_by == admin


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"scoring_plugin_id": "nope"}, "scoring_plugin_id", "Unknown scorer plugin"),
        ({"scoring_entrypoint": "os:system"}, "scoring_entrypoint", "not the one registered"),
        ({f"{WEIGHTS}rating_weight": "high"}, f"{WEIGHTS}rating_weight", "Enter a number"),
        ({f"{WEIGHTS}rating_weight": "-1"}, f"{WEIGHTS}rating_weight", "greater than or equal"),
        (
            {"config_as_json": "on", "scoring_config": '{"rating_weight": "high"}'},
            "scoring_config",
            "rating_weight",
        ),
        ({"config_as_json": "on", "scoring_config": '{"bogus": 1}'}, "scoring_config", "bogus"),
        (
            {"scoring_strategy": "python", "scoring_plugin_id": ""},
            "scoring_code",
            "compute_scores",
        ),
        (
            {
                "scoring_strategy": "python",
                "scoring_plugin_id": "",
                "scoring_code": "def compute_scores(sample):\n    return {'s': 1\n",
            },
            "scoring_code",
            "Line 2",
        ),
        ({"timeout_ms": "0"}, "timeout_ms", ""),
    ],
)
def test_admin_form_errors_save_nothing(admin_client, changes, field, message):
    before = counts()
    response = admin_client.post(admin_url("challenge", "add"), form(**changes))
    assert response.status_code == 200  # the form again, with errors
    errors = response.context["adminform"].form.errors
    assert field in errors, errors
    assert message in " ".join(errors[field])
    assert counts() == before


def test_admin_change_makes_a_new_version_and_rescores(
    admin_client, django_capture_on_commit_callbacks
):
    challenge = make_challenge(name="Admin Made", slug="admin-made", scoring_strategy="fastest")
    record(challenge, attempt_input("a", elapsed_ms=10, rating=7))
    url = change_url(challenge)
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            url,
            form(
                scoring_strategy="highest_rating",
                scoring_plugin_id="",
                scoring_config="{}",
            ),
        )
    assert response.status_code == 302, response.content.decode()[:2000]
    challenge.refresh_from_db()
    assert ScoringVersion.objects.filter(challenge=challenge).count() == 2
    assert challenge.active_version.number == 2  # rescored (eager Celery) and switched
    assert challenge.active_version.scoring_strategy == "highest_rating"


def test_admin_rename_makes_no_version(admin_client):
    challenge = make_challenge(name="Admin Made", slug="admin-made", scoring_strategy="fastest")
    url = change_url(challenge)
    response = admin_client.post(
        url,
        form(
            name="Renamed",
            scoring_strategy="fastest",
            scoring_plugin_id="",
            scoring_config="{}",
        ),
    )
    assert response.status_code == 302
    challenge.refresh_from_db()
    assert challenge.name == "Renamed"
    assert challenge.versions.count() == 1
