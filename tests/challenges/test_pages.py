"""The first public pages: the challenge list and a plain leaderboard page."""

from __future__ import annotations

import pytest

from tests.factories import attempt_input, make_challenge, record

pytestmark = pytest.mark.django_db


def test_home_lists_active_challenges_only(client):
    make_challenge(name="Visible One", scoring_strategy="fastest")
    make_challenge(name="Hidden One", is_active=False)
    for url in ("/", "/challenges/"):
        html = client.get(url).content.decode()
        assert "Visible One" in html and "Fastest success" in html
        assert "Hidden One" not in html


def test_home_empty_state(client):
    response = client.get("/")
    assert response.status_code == 200
    assert "No challenges yet" in response.content.decode()


def test_leaderboard_page_shows_ranked_rows(client):
    challenge = make_challenge(name="Speed", scoring_strategy="fastest")
    record(
        challenge,
        attempt_input("slow", player_name="Slow Sam", elapsed_ms=9000),
        attempt_input("fast", player_name="Fast Fay", elapsed_ms=1500),
        attempt_input("fail", player_name="Failing Fred", succeeded=False, elapsed_ms=1),
    )
    html = client.get(f"/challenges/{challenge.slug}/").content.decode()
    assert html.index("Fast Fay") < html.index("Slow Sam")
    assert "1.500 s" in html and "9.000 s" in html
    assert "Failing Fred" not in html
    assert "<table" in html and "<caption>" in html
    assert "<title>Speed · Podium</title>" in html


def test_inactive_or_unknown_challenge_is_404(client):
    hidden = make_challenge(is_active=False)
    assert client.get(f"/challenges/{hidden.slug}/").status_code == 404
    assert client.get("/challenges/no-such-thing/").status_code == 404


def test_description_markdown_is_sanitised(client):
    challenge = make_challenge(
        description=(
            "**bold** <script>alert(1)</script> <img src=x onerror=alert(2)> "
            "[bad](javascript:alert(3)) [good](https://example.com)"
        )
    )
    html = client.get(f"/challenges/{challenge.slug}/").content.decode()
    assert "<strong>bold</strong>" in html
    assert "<script>alert" not in html
    assert "onerror" not in html
    assert "javascript:" not in html
    assert 'href="https://example.com" rel="noopener noreferrer"' in html


def test_leaderboard_pages(client):
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, *[attempt_input(f"p{i:03d}", elapsed_ms=i + 1) for i in range(60)])
    first = client.get(f"/challenges/{challenge.slug}/").content.decode()
    second = client.get(f"/challenges/{challenge.slug}/?page=2").content.decode()
    assert "Page 1 of 2" in first and "p000" in first and "p059" not in first
    assert "Page 2 of 2" in second and "p059" in second and "p000" not in second
    # A bad page number is not an error.
    assert client.get(f"/challenges/{challenge.slug}/?page=abc").status_code == 200


def test_leaderboard_page_query_count(client, django_assert_max_num_queries):
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, *[attempt_input(f"p{i}", elapsed_ms=i) for i in range(40)])
    with django_assert_max_num_queries(4):
        assert client.get(f"/challenges/{challenge.slug}/").status_code == 200
