"""Fixtures of the leaderboard tests."""

from __future__ import annotations

import pytest

from challenges.models import Challenge
from tests.factories import attempt_input, make_challenge, record


@pytest.fixture
def board():
    """A board of two players, Ann (10 tokens) ahead of Bob (20), fewest tokens wins."""
    challenge = make_challenge(scoring_strategy="fewest_tokens")
    record(
        challenge,
        attempt_input("ann", tokens_total=10, player_name="Ann"),
        attempt_input("bob", tokens_total=20, player_name="Bob"),
    )
    return Challenge.objects.get(pk=challenge.pk)
