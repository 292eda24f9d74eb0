"""The public page of a red/blue challenge: the instructions (sanitised), the teams'
totals and ratio, both boards, and the attacks only after the close when revealed;
never a defence, feedback or the judge's output."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from challenges.ingestion import moderation
from challenges.models import Player
from challenges.setup import services as setup_services
from tests.challenges.redblue.factories import judge, make_red_blue, submit
from tests.urls import page_url

pytestmark = pytest.mark.django_db


def _board(html: str, team: str) -> list[tuple[str, str, str]]:
    table = html.split(f'team-board" data-team="{team}">', 1)[1].split("</table>", 1)[0]
    return re.findall(
        r'<td class="col-rank">(?:<abbr[^>]*>)?([=\d]+)(?:</abbr>)?</td>'
        r'<th scope="row" class="col-name">([^<]*)</th><td class="col-value">([^<]*)</td>',
        table,
    )


@pytest.fixture
def played():
    c = make_red_blue(
        instructions="**Break** the bot <script>alert(1)</script>", judge_suite=["SA", "V"]
    )
    submit(c, "r1", "red", "SECRET-ATTACK-1")
    p1 = submit(c, "b1", "blue", "SECRET-DEFENCE-1").pairings[0]
    p2 = submit(c, "r2", "red", "SECRET-ATTACK-2").pairings[0]
    judge(p1, breached=["SA"], rating=9, feedback="SECRET-FEEDBACK", raw={"r": "SECRET-RAW"})
    judge(p2, breached=[], rating=2)
    return c


def test_the_page_shows_totals_ratio_and_both_boards(client, played):
    html = client.get(page_url(played.slug)).content.decode()
    assert "<strong>Break</strong>" in html and "<script>alert" not in html
    # p1: red 1 + round(9/3) = 4, blue 1; p2: red 0, blue 2 → red 4, blue 3.
    assert re.search(r'data-team="red">4 <span class="muted">\(57\.1 %\)', html)
    assert re.search(r'data-team="blue">3 <span class="muted">\(42\.9 %\)', html)
    assert _board(html, "red") == [("1", "r1", "4"), ("2", "r2", "0")]
    assert _board(html, "blue") == [("1", "b1", "3")]
    for secret in ("SECRET-ATTACK", "SECRET-DEFENCE", "SECRET-FEEDBACK", "SECRET-RAW"):
        assert secret not in html
    assert 'id="attacks-title"' not in html


def test_a_hidden_player_leaves_the_page(client, played):
    moderation.player_hide(
        player=Player.objects.get(external_id="r1"), challenge=played, reason="x"
    )
    html = client.get(page_url(played.slug)).content.decode()
    assert _board(html, "red") == [("1", "r2", "0")]
    assert _board(html, "blue") == [("1", "b1", "2")]


def test_attacks_are_public_only_after_the_close_when_revealed(client, played):
    closed = {"closes_at": timezone.now() - timedelta(seconds=1)}
    setup_services.challenge_update(challenge=played, data=closed)
    html = client.get(page_url(played.slug)).content.decode()
    assert "SECRET-ATTACK" not in html  # closed, but not revealed
    setup_services.challenge_update(challenge=played, data={"reveal_attacks_after_close": True})
    html = client.get(page_url(played.slug)).content.decode()
    assert "SECRET-ATTACK-1" in html and "SECRET-ATTACK-2" in html
    assert "SECRET-DEFENCE" not in html and "SECRET-FEEDBACK" not in html
    moderation.player_hide(player=Player.objects.get(external_id="r2"), challenge=None, reason="x")
    html = client.get(page_url(played.slug)).content.decode()
    assert "SECRET-ATTACK-2" not in html and "SECRET-ATTACK-1" in html


def test_open_and_revealing_later_shows_no_attack(client):
    c = make_red_blue(
        reveal_attacks_after_close=True, closes_at=timezone.now() + timedelta(hours=1)
    )
    submit(c, "r", "red", "SECRET-ATTACK")
    assert "SECRET-ATTACK" not in client.get(page_url(c.slug)).content.decode()


def test_boards_page_by_fifty(client):
    c = make_red_blue(judge_suite=["SA"])
    submit(c, "b", "blue")
    for i in range(51):
        pairing = submit(c, f"r{i:02d}", "red").pairings[0]
        judge(pairing, breached=["SA"] if i % 2 else [], rating=0)
    first = client.get(page_url(c.slug)).content.decode()
    assert len(_board(first, "red")) == 50 and "page 1 of 2" in first
    second = client.get(page_url(c.slug), {"red_page": 2}).content.decode()
    assert len(_board(second, "red")) == 1


def test_the_card_shows_the_teams_and_the_list_links_collections(client, played):
    from challenges.collections import services as collection_services
    from tests.factories import make_challenge

    season = collection_services.collection_create(
        name="Autumn season", challenge_ids=[make_challenge().pk]
    )
    html = client.get("/").content.decode()
    card = html.split(f'id="card-{played.pk}"', 1)[1].split("</article>", 1)[0]
    assert "Red 4 · Blue 3" in card and "(red 57.1 %)" in card
    assert "<dt>Ranked players</dt><dd>3</dd>" in card
    assert f'href="/collections/{season.slug}/">Autumn season</a>' in html
    assert "SECRET" not in html
