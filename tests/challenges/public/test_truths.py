"""Issue 15 "Wrong today": what the public pages state must be true."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from challenges.leaderboards import selectors
from tests.factories import attempt_input, make_challenge, record

pytestmark = pytest.mark.django_db


def test_last_activity_is_the_newest_created_at_not_the_last_inserted():
    """A backdated bulk import after a recent attempt must not make the challenge look
    idle: "Last activity" is the newest attempt's ``created_at``."""
    challenge = make_challenge(name="Imported", scoring_strategy="fastest")
    now = timezone.now()
    hour_ago = now - timedelta(hours=1)
    record(challenge, attempt_input("fresh", elapsed_ms=5, created_at=hour_ago))
    record(
        challenge,
        *[
            attempt_input(f"old{i}", elapsed_ms=10 + i, created_at=now - timedelta(days=12))
            for i in range(3)
        ],
    )
    [card] = selectors.challenge_cards()
    assert card.last_activity == hour_ago


def test_home_page_words_the_last_activity_from_created_at(client):
    challenge = make_challenge(name="Imported", scoring_strategy="fastest")
    now = timezone.now()
    record(challenge, attempt_input("fresh", elapsed_ms=5, created_at=now - timedelta(hours=1)))
    record(challenge, attempt_input("old", elapsed_ms=9, created_at=now - timedelta(days=12)))
    html = client.get(reverse("challenges:home")).content.decode()
    assert "1 hour ago" in html
    assert "12 days ago" not in html


def test_players_are_labelled_for_what_they_count(client, admin_client):
    """A player whose only attempt does not count is not ranked: the public card counts
    ranked players, the admin dashboard players with attempts, and each says so."""
    challenge = make_challenge(name="Speed", scoring_strategy="fastest")
    record(
        challenge,
        attempt_input("ranked", elapsed_ms=5),
        attempt_input("failed", succeeded=False, elapsed_ms=3),
    )
    card = client.get(reverse("challenges:home")).content.decode()
    assert "<dt>Ranked players</dt><dd>1</dd>" in card
    dashboard = admin_client.get(reverse("admin:index")).content.decode()
    assert ">Players with attempts</th>" in dashboard
    row = dashboard[dashboard.index('data-challenge="speed"') :]
    assert '<td class="num" data-label="Players with attempts">2</td>' in row[: row.index("</tr>")]


def test_the_weighted_sentence_states_the_scorers_own_defaults(monkeypatch):
    """The page words the weights the scorer uses: its own defaults where the config is
    silent (issue 11: one source for plugin defaults), never a copy of them."""
    from types import SimpleNamespace

    from challenges.boards import display
    from scoring.scorers.weighted import DEFAULTS

    setup = SimpleNamespace(
        scoring_strategy="custom",
        scoring_plugin_id="builtin.weighted_scorer",
        scoring_config={"rating_weight": 3},
    )
    sentence = display.scoring_sentence(setup)
    assert "scores 100 points for success, plus 3 per rating point, minus 1 per second" in sentence
    monkeypatch.setitem(DEFAULTS, "success_bonus", 42.0)
    assert "scores 42 points for success" in display.scoring_sentence(setup)
