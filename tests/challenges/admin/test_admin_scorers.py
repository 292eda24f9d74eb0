"""The admin edits a python challenge's list of scorers: add, remove, reorder, choose the
ranking score from a Try it run; a multi-scorer challenge saves unchanged."""

from __future__ import annotations

import json

import pytest

from challenges.models import Challenge, ScoringVersion
from tests.challenges.admin.admin_pages import field_errors, page_data
from tests.challenges.setup.test_scorers_list import BODY, FIRST, QA, SECOND
from tests.urls import admin_url, attempts_url, challenges_url, change_url

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


@pytest.fixture(autouse=True)
def _needs_the_sandbox():
    from tests.scoring.test_snippet import sandbox_or_skip

    sandbox_or_skip()


@pytest.fixture
def challenge(admin_api, integration_api) -> Challenge:
    response = admin_api.post(challenges_url(), BODY, format="json")
    assert response.status_code == 201, response.content
    challenge = Challenge.objects.get(pk=response.json()["id"])
    body = [
        {"player": f"p{i}", "succeeded": True, "sample": {"answer": a}, "created_at": 1000 + i}
        for i, a in enumerate(["Paris", "sk-1", "HELLO"])
    ]
    assert integration_api.post(attempts_url(challenge.pk), body, format="json").status_code == 201
    return challenge


def test_the_page_shows_each_scorer_and_saves_unchanged(admin_client, challenge):
    response = admin_client.get(change_url(challenge))
    page = response.content.decode()
    assert 'name="scorer.2.key"' in page and 'value="leaks"' in page
    assert 'name="scorer.3.key"' in page  # the empty row, to add one
    data = page_data(admin_client, change_url(challenge), name="Renamed")
    response = admin_client.post(change_url(challenge), data)
    assert response.status_code == 302, field_errors(response)
    challenge.refresh_from_db()
    assert challenge.name == "Renamed"
    assert ScoringVersion.objects.filter(challenge=challenge).count() == 1


def test_add_remove_and_reorder(admin_client, challenge, django_capture_on_commit_callbacks):
    data = page_data(
        admin_client,
        change_url(challenge),
        **{
            # Remove the QA scorer, put "second" first, add a third score scorer.
            "scorer.2.remove": "on",
            "scorer.1.order": "0",
            "scorer.3.key": "third",
            "scorer.3.order": "9",
            "scorer.3.code": "def compute_scores(sample):\n    return {'n': 1}\n",
            "scorer.3.metrics": json.dumps([{"type": "mean", "field": "n", "name": "N"}]),
        },
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(change_url(challenge), data)
    assert response.status_code == 302, field_errors(response)
    challenge.refresh_from_db()
    assert [s["key"] for s in challenge.scorers] == ["second", "first", "third"]
    assert challenge.scorers[2]["metrics"] == [{"type": "mean", "field": "n", "name": "N"}]
    assert challenge.rank_by == "second.length"
    assert challenge.active_version.number == 2  # a version and a rescore, as anywhere


def test_errors_land_on_the_row_input(admin_client, challenge):
    data = page_data(
        admin_client,
        change_url(challenge),
        **{
            "scorer.0.config": "{not json",
            "scorer.1.code": "def compute_scores(sample):\n    return {\n",
            "rank_by": "leaks.no_secret",
        },
    )
    errors = field_errors(admin_client.post(change_url(challenge), data))
    assert "Not JSON" in errors["scorer.0.config"][0]
    assert "Line" in errors["scorer.1.code"][0]
    assert "QA" in errors["rank_by"][0]
    assert Challenge.objects.get(pk=challenge.pk).scorers[1]["compute_scores_snippet"] == SECOND


def test_try_it_runs_every_scorer_and_offers_the_returned_scores(admin_client, challenge):
    data = page_data(admin_client, change_url(challenge))
    response = admin_client.post(admin_url("challenge", "try", challenge.pk), data)
    assert response.status_code == 200
    html = response.content.decode()
    assert '<datalist id="rank-by-options" hx-swap-oob="true">' in html
    for option in ("second.length", "second.shouty", "first.is_paris", "first.words"):
        assert f'<option value="{option}">' in html
    assert "leaks.no_secret" not in html.split("rank-by-options")[1]  # QA never ranks
    assert FIRST and QA  # the list under test
