"""A 404 from the API reads as docs/errors.md says, `{"detail": "Not found."}`, whichever
route answered it: never Django's "No <Model> matches the given query." (issue 28,
finding 17), which names internal models."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import make_challenge
from tests.urls import detail_url, leaderboard_url, metrics_url

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "url",
    [
        lambda c: detail_url(999_999),
        lambda c: leaderboard_url(999_999),
        lambda c: metrics_url(999_999),
        lambda c: reverse("rescore-job-detail", args=[999_999]),
        lambda c: reverse("attempt-hide", args=[999_999]),
        lambda c: reverse("player-hide", args=[c.pk, "nobody"]),
        lambda c: reverse("player-hide", args=[999_999, "nobody"]),
    ],
    ids=["detail", "leaderboard", "metrics", "job", "attempt-hide", "player", "player-pk"],
)
def test_api_404_body_is_the_documented_one(admin_api, url):
    challenge = make_challenge()
    path = url(challenge)
    response = admin_api.post(path, {}, format="json") if "hide" in path else admin_api.get(path)
    assert response.status_code == 404, response.content
    assert response.json() == {"detail": "Not found."}
