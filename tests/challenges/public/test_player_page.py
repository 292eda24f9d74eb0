"""Player pages (docs/pages.md): rank, best attempt, paginated attempt
history with breakdowns; every leaderboard row links to one; unknown players are 404."""

from __future__ import annotations

import re

import pytest

from challenges.leaderboards.player import HISTORY_PAGE
from tests.factories import WEIGHTED_SEED, attempt_input, make_challenge, record
from tests.urls import page_url, player_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def speed():
    challenge = make_challenge(name="Speed", scoring_strategy="fastest")
    record(
        challenge,
        attempt_input("ada", player_name="Ada", elapsed_ms=1500, created_at=10),
        attempt_input("ada", player_name="Ada", elapsed_ms=900, created_at=20),
        attempt_input("ada", player_name="Ada", succeeded=False, elapsed_ms=100, created_at=30),
        attempt_input("bob", player_name="Bob", elapsed_ms=1000, created_at=5),
    )
    return challenge


def test_player_page_shows_rank_best_and_history(client, speed):
    response = client.get(player_url(speed.slug, "ada"))
    assert response.status_code == 200
    html = response.content.decode()
    assert '<h1 class="player-name">Ada</h1>' in html
    rank = re.search(r'<dd class="player-rank">(.*?)</dd>', html, re.S).group(1)
    assert re.sub(r"<[^>]+>", "", rank).split()[0] == "1"
    assert "of 2 ranked players" in rank
    assert '<dd class="player-best">0.900 s</dd>' in html
    rows = re.findall(r'<tr id="attempt-(\d+)"( class="highlight")?>', html)
    assert len(rows) == 3  # newest first, the counted one highlighted
    assert [bool(h) for _, h in rows] == [False, True, False]
    assert "does not count" in html  # the failed attempt
    assert html.count(">counts</strong>") == 1


def test_leaderboard_rows_link_to_player_pages(client, speed):
    html = client.get(page_url(speed.slug)).content.decode()
    assert f'href="{player_url(speed.slug, "ada")}"' in html
    assert f'href="{player_url(speed.slug, "bob")}"' in html


def test_external_ids_with_odd_characters_are_linked_and_found(client):
    challenge = make_challenge(name="Odd", scoring_strategy="fastest")
    record(challenge, attempt_input("team/a b?#1", player_name="Odd one", elapsed_ms=5))
    html = client.get(page_url(challenge.slug)).content.decode()
    link = re.search(r'<a href="(/challenges/odd/players/[^"]+)">Odd one</a>', html).group(1)
    assert "?" not in link and "#" not in link
    assert client.get(link).status_code == 200


def test_unknown_player_and_player_of_another_challenge_are_404(client, speed):
    assert client.get(player_url(speed.slug, "nobody")).status_code == 404
    other = make_challenge(name="Other", scoring_strategy="fastest")
    record(other, attempt_input("carol", elapsed_ms=5))
    response = client.get(player_url(speed.slug, "carol"))
    assert response.status_code == 404
    assert "No player with the id" in response.content.decode()


def test_unranked_player_has_a_page_saying_so(client, speed):
    record(speed, attempt_input("dan", player_name="Dan", succeeded=False))
    html = client.get(player_url(speed.slug, "dan")).content.decode()
    assert "Not ranked" in html


def test_history_is_paginated_with_breakdowns(client):
    challenge = make_challenge(**WEIGHTED_SEED)
    record(
        challenge,
        *[
            attempt_input("eve", player_name="Eve", rating=i % 11, created_at=i)
            for i in range(HISTORY_PAGE + 5)
        ],
    )
    first = client.get(player_url(challenge.slug, "eve")).content.decode()
    assert len(re.findall(r'<tr id="attempt-', first)) == HISTORY_PAGE
    assert "page 1 of 2" in first and 'rel="next"' in first
    assert "Rating bonus" in first  # the scorer's details, as on the leaderboard
    second = client.get(player_url(challenge.slug, "eve"), {"page": 2}).content.decode()
    assert len(re.findall(r'<tr id="attempt-', second)) == 5
    assert client.get(player_url(challenge.slug, "eve"), {"page": "x"}).status_code == 200


def test_player_query_parameter_keeps_working(client, speed):
    html = client.get(page_url(speed.slug), {"player": "bob"}).content.decode()
    assert 'class="highlight" aria-current="true"' in html


def test_inactive_challenge_player_page_is_404(client, speed):
    speed.is_active = False
    speed.save()
    assert client.get(player_url(speed.slug, "ada")).status_code == 404


def test_a_hidden_player_has_no_public_page(client, speed):
    from challenges.ingestion.moderation import player_hide, player_unhide
    from challenges.models import Player

    ada = Player.objects.get(external_id="ada")
    player_hide(player=ada, challenge=speed, reason="cheating")
    assert client.get(player_url(speed.slug, "ada")).status_code == 404
    player_unhide(player=ada, challenge=speed, reason="appeal upheld")
    assert client.get(player_url(speed.slug, "ada")).status_code == 200


def test_a_frozen_board_hides_later_attempts_and_ranks_as_frozen(client, admin_client, speed):
    import time

    from django.utils import timezone

    from challenges.models import Attempt
    from challenges.setup import services as setup_services

    setup_services.challenge_update(challenge=speed, data={"freeze_at": timezone.now()})
    time.sleep(0.01)  # the next attempt is recorded after the freeze
    record(speed, attempt_input("bob", player_name="Bob", elapsed_ms=10, created_at=40))
    late = Attempt.objects.filter(player__external_id="bob").latest("recorded_at")
    public = client.get(player_url(speed.slug, "bob")).content.decode()
    assert f'id="attempt-{late.pk}"' not in public  # recorded after the freeze
    rank = re.search(r'<dd class="player-rank">(.*?)</dd>', public, re.S).group(1)
    assert re.sub(r"<[^>]+>", "", rank).split()[0] == "2"  # the frozen standings
    live = admin_client.get(player_url(speed.slug, "bob")).content.decode()
    assert f'id="attempt-{late.pk}"' in live  # staff see the live board
    rank = re.search(r'<dd class="player-rank">(.*?)</dd>', live, re.S).group(1)
    assert re.sub(r"<[^>]+>", "", rank).split()[0] == "1"
