"""Fixtures of the leaderboard tests."""

from __future__ import annotations

import pytest

from challenges.boards import shapes as views
from challenges.models import Challenge
from tests.factories import attempt_input, make_challenge, record


@pytest.fixture
def board():
    """A board of two players, Ann (10 tokens) ahead of Bob (20), fewest tokens wins."""
    return two_player_board()


def two_player_board() -> Challenge:
    """``board``, made when called (at whatever time the test's clock says)."""
    challenge = make_challenge(scoring_strategy="fewest_tokens")
    record(
        challenge,
        attempt_input("ann", tokens_total=10, player_name="Ann"),
        attempt_input("bob", tokens_total=20, player_name="Bob"),
    )
    return Challenge.objects.get(pk=challenge.pk)


@pytest.fixture
def builds(monkeypatch):
    """The boards rendered (page or fragment), by template."""
    done: list[str] = []
    render = views.render_to_string

    def counting(template, *args, **kwargs):
        done.append(template)
        return render(template, *args, **kwargs)

    monkeypatch.setattr(views, "render_to_string", counting)
    return done
