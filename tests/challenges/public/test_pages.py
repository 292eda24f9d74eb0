"""The public pages: the challenge list and the challenge page (DESIGN.md "Public pages")."""

from __future__ import annotations

import re

import pytest
from django.template.loader import render_to_string
from django.urls import reverse

from challenges.ingestion import services
from challenges.models import Attempt, RescoreJob
from tests.factories import WEIGHTED_SEED, attempt_input, make_challenge, record
from tests.urls import page_url

pytestmark = pytest.mark.django_db


def page(client, challenge, **params) -> str:
    response = client.get(page_url(challenge.slug), params)
    assert response.status_code == 200
    return response.content.decode()


def names_in_table(html: str) -> list[str]:
    # Each name links to the player's page.
    return re.findall(r'<th scope="row" class="col-name"><a href="[^"]*">([^<]*)</a></th>', html)


def ranks_in_table(html: str) -> list[str]:
    cells = re.findall(r'<td class="col-rank">(.*?)</td>', html)
    return [re.sub(r"<[^>]+>", "", c).strip() for c in cells]


@pytest.fixture
def speed():
    """60 players on "fastest": p000 (1 ms) first … p059 (60 ms) last."""
    challenge = make_challenge(name="Speed", scoring_strategy="fastest")
    record(
        challenge,
        *[
            attempt_input(f"p{i:03d}", player_name=f"Runner {i:03d}", elapsed_ms=i + 1)
            for i in range(60)
        ],
    )
    return challenge


# --- the list ----------------------------------------------------------------------------
def test_list_cards_show_strategy_players_leader_and_activity(client):
    c = make_challenge(
        name="Visible One",
        scoring_strategy="fastest",
        description="Be **quick**.\n\nThe rest of the rules.",
    )
    make_challenge(name="Hidden One", is_active=False)
    record(
        c,
        attempt_input("a", player_name="Ada", elapsed_ms=1500),
        attempt_input("b", player_name="Bob", elapsed_ms=2500),
    )
    for url in (reverse("challenges:home"), reverse("challenges:list")):
        html = client.get(url).content.decode()
        assert "Visible One" in html and "Hidden One" not in html
        assert "Fastest success" in html
        assert "Be quick." in html and "The rest" not in html  # the first paragraph, as text
        assert "<dt>Ranked players</dt><dd>2</dd>" in html
        assert "Ada" in html and "1.500 s" in html
        assert 'datetime="2026-01-01T00:00:00+00:00"' in html  # the last activity


def test_list_plain_words_for_plugins_and_empty_boards(client):
    make_challenge(**WEIGHTED_SEED)
    html = client.get(reverse("challenges:home")).content.decode()
    assert "Highest weighted score" in html
    assert "nobody yet" in html and "no attempts yet" in html


def test_list_empty_state(client):
    response = client.get(reverse("challenges:home"))
    assert response.status_code == 200
    assert "No challenges yet" in response.content.decode()


def test_list_query_count_does_not_grow_with_challenges(client, django_assert_num_queries):
    # Three queries: the challenges (with leader and last activity), their player counts,
    # the collections (none here: no second query for their members).
    home = reverse("challenges:home")
    for n in (2, 6):
        while len(client.get(home).content.decode().split('class="card"')) - 1 < n:
            challenge = make_challenge(scoring_strategy="fastest")
            record(challenge, attempt_input(f"x{challenge.pk}", elapsed_ms=5))
        with django_assert_num_queries(3):
            client.get(home)


# --- the challenge page ------------------------------------------------------------------
def test_challenge_page_ranks_and_formats(client):
    challenge = make_challenge(name="Speed", scoring_strategy="fastest")
    record(
        challenge,
        attempt_input("slow", player_name="Slow Sam", elapsed_ms=9000),
        attempt_input("fast", player_name="Fast Fay", elapsed_ms=1500),
        attempt_input("fail", player_name="Failing Fred", succeeded=False, elapsed_ms=1),
    )
    html = page(client, challenge)
    assert names_in_table(html) == ["Fast Fay", "Slow Sam"]
    assert "1.500 s" in html and "9.000 s" in html
    assert "Failing Fred" not in html
    assert "<table" in html and "<caption>" in html and '<th scope="col"' in html
    assert "<title>Speed · Podium</title>" in html
    assert 'rel="icon"' in html
    assert "Successful attempts are ranked by time taken, fastest first" in html
    assert "Scores as of version 1" in html


@pytest.mark.parametrize(
    ("setup", "attempt", "shown"),
    [
        ({"scoring_strategy": "fewest_tokens"}, {"tokens_total": 12345}, "12,345 tokens"),
        ({"scoring_strategy": "highest_rating"}, {"rating": 7}, "7 / 10"),
        ({"scoring_strategy": "first"}, {"created_at": 90}, "2026-01-01 00:01:30 UTC"),
        (WEIGHTED_SEED, {"rating": 2, "elapsed_ms": 4000, "tokens_total": 100}, "126.00 pts"),
    ],
)
def test_value_formatted_for_the_strategy(client, setup, attempt, shown):
    challenge = make_challenge(**setup)
    record(challenge, attempt_input("p", **attempt))
    assert shown in page(client, challenge)


def test_medals_and_shared_ranks(client):
    challenge = make_challenge(scoring_strategy="fastest")
    record(
        challenge,
        attempt_input("a", elapsed_ms=100),
        attempt_input("b", elapsed_ms=200),
        attempt_input("c", elapsed_ms=200),  # same value and time as b: same rank
        attempt_input("d", elapsed_ms=300),
    )
    html = page(client, challenge)
    assert ranks_in_table(html) == ["1", "=2", "=2", "4"]
    assert html.count('aria-label="gold medal"') == 1
    assert html.count('aria-label="silver medal"') == 2
    assert 'aria-label="bronze medal"' not in html  # rank 3 is nobody's


def test_row_breakdown_shows_terms_never_errors(client):
    challenge = make_challenge(**WEIGHTED_SEED)
    record(challenge, attempt_input("p", rating=4, elapsed_ms=2000, tokens_total=50))
    html = page(client, challenge)
    breakdown = re.search(r'<details class="why".*?</details>', html, re.S).group(0)
    for term in ("Success bonus", "+100.00", "Rating bonus", "+60.00", "Time penalty", "−1.00"):
        assert term in breakdown
    assert "Token penalty" in breakdown and "Judge rating" in breakdown
    assert "error" not in breakdown.lower()


def test_relative_time_with_exact_time_on_hover(client, speed):
    html = page(client, speed)
    assert re.search(
        r'<time datetime="2026-01-01T00:00:00\+00:00" title="2026-01-01 00:00:00 UTC">', html
    )


def test_inactive_or_unknown_challenge_is_a_friendly_404(client):
    hidden = make_challenge(is_active=False)
    for slug in (hidden.slug, "no-such-thing"):
        for view in ("detail", "board", "export-csv", "export-json"):
            response = client.get(page_url(slug, view))
            assert response.status_code == 404
        html = client.get(page_url(slug)).content.decode()
        assert "Nothing here" in html and "See all challenges" in html
        assert "<title>Not found · Podium</title>" in html
    assert client.get(page_url(hidden.slug, "charts")).status_code == 404


def test_description_markdown_is_sanitised(client):
    challenge = make_challenge(
        description=(
            "**bold** <script>alert(1)</script> <img src=x onerror=alert(2)> "
            "[bad](javascript:alert(3)) [good](https://example.com) "
            '<a href="https://example.org" onclick="steal()">raw</a>'
        )
    )
    html = page(client, challenge)
    description = re.search(r'<div class="description">(.*?)</div>', html, re.S).group(1)
    assert "<strong>bold</strong>" in description
    assert "<script" not in description
    assert "onerror" not in description and "onclick" not in description
    assert "javascript:" not in description
    assert 'href="https://example.com" rel="noopener noreferrer"' in description
    assert 'href="https://example.org" rel="noopener noreferrer"' in description


# --- pages, search, ?player= ----------------------------------------------------------------
def test_pages_of_fifty(client, speed):
    first, second = page(client, speed), page(client, speed, page=2)
    assert names_in_table(first) == [f"Runner {i:03d}" for i in range(50)]
    assert names_in_table(second) == [f"Runner {i:03d}" for i in range(50, 60)]
    assert ranks_in_table(second)[0] == "51"
    assert "page 1 of 2" in first and "page 2 of 2" in second
    assert f'aria-current="page" href="{page_url("speed")}?page=2"' in second
    assert 'rel="next"' in first and 'rel="prev"' not in first
    assert 'rel="prev"' in second and 'rel="next"' not in second


@pytest.mark.parametrize(("raw", "shown"), [("abc", 1), ("0", 1), ("-3", 1), ("", 1)])
def test_page_numbers_out_of_range_are_clamped(client, speed, raw, shown):  # past the end: 404
    html = page(client, speed, page=raw)
    assert f"page {shown} of 2" in html


def test_exactly_one_page_has_no_pager(client):
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, *[attempt_input(f"p{i}", elapsed_ms=i + 1) for i in range(50)])
    html = page(client, challenge)
    assert len(names_in_table(html)) == 50 and "Leaderboard pages" not in html
    record(challenge, attempt_input("late", elapsed_ms=999))
    assert "page 1 of 2" in page(client, challenge)


def test_page_number_window_with_gaps(client):
    from challenges.leaderboards.selectors import page_numbers

    assert page_numbers(1, 1) == [1]
    assert page_numbers(1, 10) == [1, 2, 3, None, 10]
    assert page_numbers(6, 10) == [1, None, 4, 5, 6, 7, 8, None, 10]
    assert page_numbers(10, 10) == [1, None, 8, 9, 10]


def test_search_narrows_by_display_name(client, speed):
    html = page(client, speed, q="runner 05")  # case-insensitive substring
    assert names_in_table(html) == [f"Runner {i:03d}" for i in range(50, 60)]
    assert ranks_in_table(html) == [str(i) for i in range(51, 61)]  # their real ranks
    assert 'value="runner 05"' in html
    assert "Show everyone" in html


def test_search_without_match_and_with_too_many(client, speed):
    assert "No ranked player&#x27;s name contains" in page(client, speed, q="zzz") or (
        "No ranked player's name contains" in page(client, speed, q="zzz")
    )
    html = page(client, speed, q="Runner")
    assert len(names_in_table(html)) == 50
    assert "refine the search" in html


def test_search_is_escaped(client, speed):
    html = page(client, speed, q="<b>x</b>")
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html


def test_player_jumps_to_their_page_and_is_highlighted(client, speed):
    html = page(client, speed, player="p055")
    assert "page 2 of 2" in html
    row = re.search(r'<tr id="row-\d+" class="highlight" aria-current="true">.*?</tr>', html, re.S)
    assert row and "Runner 055" in row.group(0)
    assert html.count('class="highlight"') == 1


def test_unknown_player_shows_a_notice_and_the_first_page(client, speed):
    html = page(client, speed, player="nobody")
    assert "No ranked player with the id" in html and "page 1 of 2" in html


def test_status_line_and_rescore_notice(client, speed):
    assert "New scores are being computed" not in page(client, speed)
    RescoreJob.objects.create(
        challenge=speed, version=speed.active_version, status=RescoreJob.Status.RUNNING
    )
    assert "New scores are being computed" in page(client, speed)


def test_empty_leaderboard(client):
    challenge = make_challenge()
    html = page(client, challenge)
    assert "No counted attempts yet" in html and "<table" not in html


# --- live refresh ---------------------------------------------------------------------------
def test_board_fragment_keeps_page_and_search(client, speed):
    html = client.get(page_url(speed.slug, "board"), {"page": 2}).content.decode()
    assert html.startswith('<div id="board"') and "<html" not in html
    assert f'hx-get="{page_url("speed", "board")}?page=2"' in html
    assert 'hx-trigger="every 5s"' in html
    html = page(client, speed, q="Runner 01")
    assert f'hx-get="{page_url("speed", "board")}?q=Runner+01"' in html


def test_new_attempt_shows_on_next_refresh(client, speed):
    url = page_url(speed.slug, "board")
    before = client.get(url).content.decode()
    assert "Newcomer" not in before
    record(speed, attempt_input("new", player_name="Newcomer", elapsed_ms=0))
    after = client.get(url).content.decode()
    assert names_in_table(after)[0] == "Newcomer"
    assert names_in_table(after)[1] == "Runner 000" and ranks_in_table(after)[1] == "2"
    # A rename alone (no better attempt) is new content too: never a stale cached table.
    record(speed, attempt_input("p000", player_name="Renamed Runner", elapsed_ms=50_000))
    assert "Renamed Runner" in client.get(url).content.decode()


def test_deleted_attempt_leaves_the_board(client, speed, django_capture_on_commit_callbacks):
    assert "60 ranked players" in page(client, speed)
    with django_capture_on_commit_callbacks(execute=True):
        # The supported way (the admin's too): entries are repaired with the attempts.
        services.attempts_delete(attempts=Attempt.objects.filter(player__external_id="p000"))
    html = page(client, speed)
    assert names_in_table(html)[0] == "Runner 001" and ranks_in_table(html)[0] == "1"
    assert "59 ranked players" in html


# --- metrics panel --------------------------------------------------------------------------
def test_metrics_panel_renders_nothing_when_empty_and_each_item_otherwise():
    assert render_to_string("challenges/_metrics.html", {"metrics": []}).strip() == ""
    html = render_to_string(
        "challenges/_metrics.html",
        {"metrics": [{"name": "Accuracy", "type": "mean", "value": 0.93}]},
    )
    assert "Accuracy" in html and "mean" in html and "0.93" in html


def test_challenge_page_has_no_metrics_panel_without_metrics(client, speed):
    assert "Metrics" not in page(client, speed)


def test_challenge_page_shows_the_snippet_metrics(client):
    from tests.challenges.admin.test_admin_try_python import field_completeness_challenge

    challenge = field_completeness_challenge()
    html = client.get(page_url(challenge.slug)).content.decode()
    panel = html.split('id="metrics-title"')[1].split("</section>")[0]
    assert "Field Completeness" in panel and "(mean)" in panel and "0.3333" in panel


# --- speed: no N+1 ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "params", [{}, {"page": 2}, {"q": "Runner 05"}, {"player": "p055"}], ids=str
)
def test_page_query_count_is_constant(client, speed, params, django_assert_max_num_queries):
    # The challenge, the ranking's state, the rows (+ the player's place for ?player=).
    most = 5 if "player" in params else 4
    client.get(page_url(speed.slug), params)  # ranking computed once
    with django_assert_max_num_queries(most):
        assert client.get(page_url(speed.slug), params).status_code == 200
    with django_assert_max_num_queries(most):
        assert client.get(page_url(speed.slug, "board"), params).status_code == 200


def test_charts_data(client, speed):
    data = client.get(page_url(speed.slug, "charts")).json()
    assert data["axis"] == "Time taken (s)"
    assert sum(data["distribution"]["counts"]) == 60
    assert len(data["top"]) == 10
    assert data["top"][0] == {"label": "Runner 000", "points": [{"x": 1767225600000, "y": 0.001}]}


# --- wording helpers ---------------------------------------------------------------------------
def test_breakdown_never_shows_errors_or_snippet_metadata():
    from challenges.boards.display import breakdown

    snippet = {
        "scores": {"accuracy": 0.9, "is_correct": True},
        "metadata": {"secret": "x"},
        "error": "Traceback …",
    }
    terms = dict(breakdown(snippet, {"succeeded": True, "rating": None}))
    assert terms == {"Accuracy": "+0.90", "Is correct": "yes", "Succeeded": "yes"}
    plugin = {"bonus": 5, "error": "boom", "nested": {"a": 1}, "note": "x" * 200}
    assert dict(breakdown(plugin, {})) == {"Bonus": "+5.00"}


def test_relative_time_wording():
    from datetime import timedelta

    from challenges.boards.display import relative_time
    from tests.factories import T0

    for delta, words in [
        (timedelta(seconds=5), "just now"),
        (timedelta(minutes=1), "1 minute ago"),
        (timedelta(hours=3), "3 hours ago"),
        (timedelta(days=2), "2 days ago"),
        (timedelta(days=90), "2026-01-01"),
        (timedelta(minutes=-5), "in the future"),
    ]:
        assert relative_time(T0, T0 + delta) == words


def test_template_filters():
    from django.template import Context, Template

    html = Template("{% load podium %}{{ v|ranking_value:'fastest' }} · {{ s|strategy_label }}")
    assert html.render(Context({"v": 1500.0, "s": "fewest_tokens"})) == "1.500 s · Fewest tokens"


def test_search_wildcards_are_literal(client):
    challenge = make_challenge(scoring_strategy="fastest")
    record(
        challenge,
        attempt_input("a", player_name="100% Pat", elapsed_ms=1),
        attempt_input("b", player_name="Under_score", elapsed_ms=2),
        attempt_input("c", player_name="Plain", elapsed_ms=3),
    )
    assert names_in_table(page(client, challenge, q="%")) == ["100% Pat"]
    assert names_in_table(page(client, challenge, q="_")) == ["Under_score"]


def test_top_10_lines_run_on_to_the_newest_attempt(client):
    """Issue 31, item 2: a line stopped at the player's last improvement, so a player who
    improved once was a lone dot; it runs on, at its best, to the newest attempt."""
    c = make_challenge(name="Lines", scoring_strategy="fastest")
    record(
        c,
        attempt_input("ada", player_name="Ada", elapsed_ms=1000, created_at=0),
        attempt_input("bob", player_name="Bob", elapsed_ms=3000, created_at=60),
        attempt_input("bob", player_name="Bob", elapsed_ms=2000, created_at=120),
    )
    top = {
        line["label"]: line["points"]
        for line in client.get(page_url(c.slug, "charts")).json()["top"]
    }
    t0 = 1767225600000
    assert top["Ada"] == [{"x": t0, "y": 1.0}, {"x": t0 + 120_000, "y": 1.0}]
    assert top["Bob"] == [{"x": t0 + 60_000, "y": 3.0}, {"x": t0 + 120_000, "y": 2.0}]
