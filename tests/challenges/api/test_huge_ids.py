"""Ids too large for any integer column are unknown ids: 404, never 500 (issue 12,
finding 8), in the admin, on the public pages and in the API."""

from __future__ import annotations

import pytest

from tests.factories import attempt_input, make_challenge, record
from tests.urls import leaderboard_url, page_url

pytestmark = pytest.mark.django_db

HUGE = ["9" * 30, str(2**63), str(2**64), "-" + "9" * 30, "\u00b2", "\uff11"]

ADMIN_PAGES = [
    "/admin/challenges/challenge/{id}/change/",
    "/admin/challenges/challenge/{id}/delete/",
    "/admin/challenges/challenge/{id}/history/",
    "/admin/challenges/challenge/{id}/versions/",
    "/admin/challenges/challenge/{id}/scoring/try/",
    "/admin/challenges/challenge/{id}/scoring/preview/",
    "/admin/challenges/challenge/1/versions/{id}/activate/",
    "/admin/challenges/attempt/{id}/change/",
    "/admin/challenges/player/{id}/change/",
    "/admin/challenges/scoringversion/{id}/change/",
    "/admin/challenges/attemptscore/{id}/change/",
    "/admin/challenges/rescorejob/{id}/change/",
    "/admin/challenges/rescorejob/{id}/progress/",
    "/admin/auth/user/{id}/change/",
]
API_GETS = [
    "/api/challenges/{id}/",
    "/api/challenges/{id}/leaderboard/",
    "/api/challenges/{id}/metrics/",
    "/api/rescore-jobs/{id}/",
]
API_POSTS = [
    "/api/challenges/{id}/attempts/",
    "/api/challenges/{id}/rescore/",
    "/api/rescore-jobs/{id}/cancel/",
]


@pytest.fixture
def seeded():
    challenge = make_challenge(slug="known", scoring_strategy="fastest")
    record(challenge, attempt_input("p", elapsed_ms=5))
    return challenge


def _not_500(response, url):
    assert response.status_code != 500, url
    return response.status_code


@pytest.mark.parametrize("page", ADMIN_PAGES)
@pytest.mark.parametrize("huge", HUGE)
def test_admin_pages(admin_client, seeded, page, huge):
    url = page.format(id=huge)
    for method in (admin_client.get, admin_client.post):
        response = method(url)
        # An unknown object: the admin's own answer (a redirect with a message, or 404);
        # 403 for a POST to a read-only page; the progress poll's "no longer exists".
        assert _not_500(response, url) in (200, 302, 403, 404, 405), (url, response.status_code)


@pytest.mark.parametrize("huge", HUGE)
def test_public_pages(client, seeded, huge):
    for url in (
        page_url("known") + f"?page={huge}",
        page_url("known", "board") + f"?page={huge}",
        page_url("known") + f"?player={huge}",
        f"/challenges/{huge}/",
        f"/challenges/{huge}/leaderboard.csv",
    ):
        assert _not_500(client.get(url), url) in (200, 404), url


@pytest.mark.parametrize("huge", HUGE)
def test_api_routes(admin_api, seeded, huge):
    for route in API_GETS:
        url = route.format(id=huge)
        assert _not_500(admin_api.get(url), url) == 404, url
    for route in API_POSTS:
        url = route.format(id=huge)
        assert _not_500(admin_api.post(url, {}, format="json"), url) == 404, url
    url = f"/api/challenges/{huge}/"
    assert admin_api.patch(url, {"name": "x"}, format="json").status_code == 404
    assert admin_api.delete(url).status_code == 404
    leaderboard = leaderboard_url(seeded.pk)
    for query in (f"?offset={huge}", f"?limit={huge}", f"?player={huge}"):
        assert _not_500(admin_api.get(leaderboard + query), query) in (200, 400)
