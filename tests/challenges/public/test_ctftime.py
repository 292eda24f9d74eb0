"""``/challenges/<slug>/ctftime.json``: CTFtime's scoreboard feed from the public board
(ties share a position, hidden players left out, the frozen board during a freeze,
whoever asks)."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from django.utils import timezone

from challenges.ingestion import moderation
from challenges.models import Player
from challenges.setup import services as setup_services
from tests.factories import attempt_input, make_challenge, record

pytestmark = pytest.mark.django_db


def feed(client, challenge) -> dict:
    response = client.get(reverse("challenges:ctftime", args=[challenge.slug]))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    return json.loads(b"".join(response.streaming_content))


def test_the_standings_in_ctftime_format(client):
    challenge = make_challenge(scoring_strategy="fastest")
    record(
        challenge,
        attempt_input("a", player_name="Ada", elapsed_ms=100, created_at=1),
        attempt_input("b", player_name="Bob", elapsed_ms=200, created_at=2),
        attempt_input("c", player_name="Cyd", elapsed_ms=200, created_at=2),  # tie with Bob
        attempt_input("d", player_name="Dee", elapsed_ms=300, created_at=3),
    )
    body = feed(client, challenge)
    assert body == {
        "standings": [
            {"pos": 1, "team": "Ada", "score": 100.0},
            {"pos": 2, "team": "Bob", "score": 200.0},
            {"pos": 2, "team": "Cyd", "score": 200.0},
            {"pos": 4, "team": "Dee", "score": 300.0},
        ]
    }


def test_an_empty_board_and_unknown_challenges(client):
    challenge = make_challenge()
    assert feed(client, challenge) == {"standings": []}
    assert client.get("/challenges/nope/ctftime.json").status_code == 404
    hidden = make_challenge(is_active=False)
    assert client.get(reverse("challenges:ctftime", args=[hidden.slug])).status_code == 404


def test_hidden_players_leave_and_the_freeze_holds_for_everyone(client, admin_client):
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, attempt_input("a", elapsed_ms=100), attempt_input("b", elapsed_ms=200))
    moderation.player_hide(
        player=Player.objects.get(external_id="a"), challenge=challenge, reason="bot"
    )
    assert [s["team"] for s in feed(client, challenge)["standings"]] == ["b"]
    setup_services.challenge_update(challenge=challenge, data={"freeze_at": timezone.now()})
    record(challenge, attempt_input("late", elapsed_ms=1))
    assert [s["team"] for s in feed(client, challenge)["standings"]] == ["b"]
    # Staff see the live board on the page, but the feed is the public's.
    assert [s["team"] for s in feed(admin_client, challenge)["standings"]] == ["b"]
