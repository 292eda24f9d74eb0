"""Management commands: demo data and integration tokens."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from challenges.leaderboards import selectors
from challenges.models import Attempt, Challenge, Player
from tests.urls import attempts_url, detail_url

pytestmark = pytest.mark.django_db


def test_seed_demo_creates_three_scored_challenges():
    call_command("seed_demo", stdout=StringIO())
    challenges = list(Challenge.objects.order_by("slug"))
    assert len(challenges) == 3
    assert {c.scoring_strategy for c in challenges} >= {"custom", "fastest"}
    assert Attempt.objects.count() >= 300
    assert 24 <= Player.objects.count() <= 60
    for challenge in challenges:
        page = selectors.leaderboard_page(challenge=challenge, limit=5, offset=0)
        assert page.count >= 10
        assert page.rows[0].rank == 1


def test_seed_demo_runs_once():
    call_command("seed_demo", stdout=StringIO())
    out = StringIO()
    call_command("seed_demo", stdout=out)
    assert "exist already" in out.getvalue()
    assert Challenge.objects.count() == 3


def test_seed_demo_if_empty_skips_a_database_with_challenges():
    from tests.factories import make_challenge

    make_challenge(name="Mine")
    call_command("seed_demo", "--if-empty", stdout=StringIO())
    assert list(Challenge.objects.values_list("name", flat=True)) == ["Mine"]


def test_integration_token_records_attempts_and_nothing_else():
    from rest_framework.test import APIClient

    from tests.factories import make_challenge

    challenge = make_challenge(scoring_strategy="fastest")
    out = StringIO()
    call_command("create_integration_token", "grader", stdout=out)
    key = out.getvalue().strip()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    response = client.post(
        attempts_url(challenge.pk),
        {"player": "u1", "succeeded": True, "elapsed_ms": 10},
        format="json",
    )
    assert response.status_code == 201, response.content
    assert response.json()["score"] == 10.0
    assert client.patch(detail_url(challenge.pk), {"name": "x"}, format="json").status_code == 403
    # Running it again reuses the same token.
    again = StringIO()
    call_command("create_integration_token", "grader", stdout=again)
    assert again.getvalue().strip() == key
