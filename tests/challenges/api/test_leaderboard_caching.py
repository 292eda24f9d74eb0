"""What a shared cache may keep of a leaderboard answer (issue 28, finding 13): the
answer depends on who asks — staff read the live board during a freeze, and inactive
challenges — so it varies on the credentials, and a view the public may not see is
private."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from challenges.models import Challenge
from tests.factories import WEIGHTED_SEED, attempt_input, make_challenge, record
from tests.urls import leaderboard_url

pytestmark = pytest.mark.django_db


def vary(response):
    return {v.strip().lower() for v in response.get("Vary", "").split(",")}


@pytest.fixture
def frozen():
    challenge = make_challenge(**WEIGHTED_SEED)
    record(challenge, attempt_input("a"))
    Challenge.objects.filter(pk=challenge.pk).update(
        freeze_at=timezone.now() - timedelta(seconds=1)
    )
    return challenge


def test_staff_reading_the_live_board_in_a_freeze_is_private(frozen, staff_api):
    response = staff_api.get(leaderboard_url(frozen.pk))
    assert response.status_code == 200
    assert {"authorization", "cookie", "accept"} <= vary(response)
    assert "private" in response["Cache-Control"]


def test_the_public_answer_varies_on_credentials_and_is_not_private(frozen, anon_api):
    for _ in range(2):  # built, then kept
        response = anon_api.get(leaderboard_url(frozen.pk))
        assert response.status_code == 200
        assert {"authorization", "cookie"} <= vary(response)
        assert "private" not in response.get("Cache-Control", "")


def test_an_inactive_challenge_read_by_staff_is_private(staff_api):
    challenge = make_challenge(**WEIGHTED_SEED, is_active=False)
    response = staff_api.get(leaderboard_url(challenge.pk))
    assert response.status_code == 200
    assert "private" in response["Cache-Control"]
