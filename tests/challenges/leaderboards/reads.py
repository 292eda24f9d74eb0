"""How the board tests read a board: the API leaderboard, the page and its fragment, and
a clock moved forward."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from tests.urls import leaderboard_url, page_url


def api(client, challenge, **query):
    response = client.get(leaderboard_url(challenge.pk), query)
    assert response.status_code == 200
    return response


def page(client, challenge, name="detail") -> str:
    response = client.get(page_url(challenge.slug, name))
    assert response.status_code == 200
    return response.content.decode()


def settle(client, challenge) -> None:
    """Read the board until its reads are kept (the first read ranks new entries)."""
    for _ in range(2):
        api(client, challenge), page(client, challenge), page(client, challenge, "board")


def later(monkeypatch, delta: timedelta) -> None:
    """Move ``timezone.now`` forward by ``delta`` (from where it stands, moved or not)."""
    moment = timezone.now() + delta
    monkeypatch.setattr(timezone, "now", lambda: moment)
