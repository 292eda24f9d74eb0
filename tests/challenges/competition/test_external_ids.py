"""Which external ids are valid, and every route that takes one accepts exactly those
(issue 28, finding 7; docs/words-and-data.md): any text of 1–255 characters, trimmed, without
a lone surrogate or NUL — a newline, a slash, a percent sign or a space inside included.
An id with a newline could be recorded but not hidden, and its player page was a 404."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from django.urls import reverse

from challenges.models import Player
from tests.factories import WEIGHTED_SEED, make_challenge
from tests.urls import attempts_url, leaderboard_url, player_url

pytestmark = pytest.mark.django_db

IDS = ["a\nb", "tab\there", "a/b/c", "50%", "with space", "line\r\nbreak", "ünï", "x" * 255]


@pytest.mark.parametrize("external_id", IDS)
def test_every_route_taking_an_id_accepts_a_recorded_one(admin_api, client, external_id):
    challenge = make_challenge(**WEIGHTED_SEED)
    response = admin_api.post(
        attempts_url(challenge.pk), {"player": external_id, "succeeded": True}, format="json"
    )
    assert response.status_code == 201, response.content
    assert Player.objects.filter(external_id=external_id).exists()
    # The public page, by the URL the board links to (reverse) and by a quoted path.
    assert client.get(player_url(challenge.slug, external_id)).status_code == 200
    quoted = f"/challenges/{challenge.slug}/players/{quote(external_id, safe='/')}/"
    assert client.get(quoted).status_code == 200
    # The API's ?player= and moderation.
    board = admin_api.get(leaderboard_url(challenge.pk), {"player": external_id}).json()
    assert board["results"][0]["player"] == external_id
    hide = reverse("player-hide", args=[challenge.pk, external_id])
    assert admin_api.post(hide, {"reason": "test"}, format="json").status_code == 200
    assert admin_api.get(leaderboard_url(challenge.pk)).json()["count"] == 0
    unhide = reverse("player-unhide", args=[challenge.pk, external_id])
    assert admin_api.post(unhide, {"reason": "test"}, format="json").status_code == 200
    assert admin_api.get(leaderboard_url(challenge.pk)).json()["count"] == 1


@pytest.mark.parametrize(
    ("external_id", "why"),
    [("", "empty"), ("   ", "blank"), ("a\x00b", "NUL"), ("x" * 256, "too long")],
)
def test_invalid_ids_are_refused_at_ingestion(admin_api, external_id, why):
    challenge = make_challenge(**WEIGHTED_SEED)
    response = admin_api.post(
        attempts_url(challenge.pk), {"player": external_id, "succeeded": True}, format="json"
    )
    assert response.status_code == 400, why
    assert "player" in response.json()
