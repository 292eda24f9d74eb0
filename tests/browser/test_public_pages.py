"""The public pages in a real browser (Debian's Chromium): the leaderboard renders, a row
expands to its breakdown, search narrows the table, the live refresh picks up an attempt
recorded through the API, the charts are drawn, and nothing logs a console error.

Screenshots of the list and of a challenge page, at desktop and phone width (and in dark
mode), are saved under ``var/artifacts/screenshots/`` (git-ignored; PODIUM_ARTIFACTS_DIR moves
it).
"""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token

from tests.browser.conftest import ARTIFACTS, ranked_players
from tests.factories import WEIGHTED_SEED, make_challenge, record
from tests.urls import attempts_url, page_url

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
]


DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


@pytest.fixture
def board():
    """A weighted-score challenge with 60 ranked players (two pages)."""
    challenge = make_challenge(
        **WEIGHTED_SEED,
        slug="prompting",
        description=(
            "Write the **shortest prompt** that makes the model solve the puzzle.\n\n"
            "Attempts are recorded by the evaluation service; see [the rules](https://example.com)."
        ),
    )
    record(
        challenge,
        *ranked_players(60),
    )
    make_challenge(
        name="Speed run",
        scoring_strategy="fastest",
        description="Solve it as fast as you can.",
    )
    return challenge


def shoot(page, name: str) -> None:
    (ARTIFACTS / "screenshots").mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "screenshots" / f"{name}.png"), full_page=True)


def rows(page):
    return page.locator("#board table.leaderboard tbody tr")


def test_leaderboard_renders_and_a_row_expands(page, live_server, board):
    page.goto(live_server.url + page_url("prompting"))
    assert page.title() == "Advanced Prompt Challenge · Podium"
    assert rows(page).count() == 50
    first = rows(page).first
    assert first.locator(".medal").get_attribute("aria-label") == "gold medal"
    breakdown = first.locator("dl.terms")
    assert not breakdown.is_visible()
    first.locator("summary").click()
    breakdown.wait_for(state="visible")
    text = breakdown.inner_text()
    assert "Success bonus" in text and "Token penalty" in text and "error" not in text.lower()
    # The keyboard works too: focus a row's summary, Enter toggles it.
    second = rows(page).nth(1)
    second.locator("summary").focus()
    page.keyboard.press("Enter")
    second.locator("dl.terms").wait_for(state="visible")
    # Page 2 by its number.
    page.get_by_role("link", name="2", exact=True).click()
    page.wait_for_url("**/?page=2")
    assert rows(page).count() == 10
    assert page.errors == []


def test_search_narrows_the_table(page, live_server, board):
    page.goto(live_server.url + page_url("prompting"))
    page.fill("#player-search", "player 1")
    page.keyboard.press("Enter")
    page.wait_for_url("**/?q=player+1")
    names = rows(page).locator("th").all_inner_texts()
    assert sorted(names) == [f"Player {i}" for i in range(10, 20)]
    assert page.input_value("#player-search") == "player 1"
    page.get_by_role("link", name="Show everyone").click()
    assert rows(page).count() == 50
    assert page.errors == []


def test_player_link_highlights_their_row(page, live_server, board):
    page.goto(live_server.url + page_url("prompting") + "?player=user-07")
    highlighted = page.locator("#board tr.highlight")
    assert highlighted.count() == 1 and "Player 07" in highlighted.inner_text()
    assert page.errors == []


def test_live_refresh_picks_up_an_attempt_recorded_through_the_api(
    page, live_server, board, integration
):
    token = Token.objects.create(user=integration)
    page.goto(live_server.url + page_url("prompting") + "?page=1")
    page.evaluate("window.__sameDocument = true")
    first = rows(page).first.locator("summary")
    first.click()  # an open breakdown survives the refresh
    # Never shown closed, not even between the swap and htmx's settle (a reader sees a
    # flicker; a check right after the swap saw it closed).
    page.evaluate(
        """() => {
            window.__shownClosed = 0;
            new MutationObserver(() => {
                const board = document.getElementById("board");
                if (board && board.textContent.includes("Newcomer Nia")
                    && !board.querySelector("details.why[open]")) window.__shownClosed++;
            }).observe(document.body, { childList: true, subtree: true });
        }"""
    )
    body = {
        "player": "newcomer",
        "player_name": "Newcomer Nia",
        "succeeded": True,
        "rating": 10,
        "elapsed_ms": 100,
        "tokens_total": 1,
    }
    response = page.request.post(  # over HTTP, as an integration would
        live_server.url + attempts_url(board.pk),
        data=json.dumps(body),
        headers={"Content-Type": "application/json", "Authorization": f"Token {token.key}"},
    )
    assert response.status == 201, response.text()
    page.locator("#board th", has_text="Newcomer Nia").wait_for(timeout=15_000)
    assert rows(page).first.locator("th").inner_text() == "Newcomer Nia"
    assert page.evaluate("window.__sameDocument") is True  # swapped in, not reloaded
    assert "page=1" in page.url
    assert page.locator("#board details.why[open]").count() == 1
    assert page.evaluate("window.__shownClosed") == 0
    assert page.errors == []


def test_charts_are_drawn(page, live_server, board):
    page.goto(live_server.url + page_url("prompting"))
    page.wait_for_selector("section.charts[data-drawn=true]")
    for canvas in ("chart-distribution", "chart-top"):
        painted = page.evaluate(
            """(id) => {
                const c = document.getElementById(id);
                const data = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
                let n = 0;
                for (let i = 3; i < data.length; i += 4) if (data[i] > 0) n++;
                return n;
            }""",
            canvas,
        )
        assert painted > 1000, canvas
    assert page.errors == []


def test_friendly_404(page, live_server):
    response = page.goto(live_server.url + page_url("nothing-here"))
    assert response.status == 404
    assert page.get_by_role("heading", name="Nothing here").is_visible()
    page.get_by_role("link", name="See all challenges").click()
    page.wait_for_url(live_server.url + reverse("challenges:list"))


@pytest.mark.parametrize(
    ("size", "scheme"), [("desktop", "light"), ("phone", "light"), ("phone", "dark")]
)
def test_screenshots(browser, live_server, board, size, scheme):
    context = browser.new_context(
        viewport=DESKTOP if size == "desktop" else PHONE,
        color_scheme=scheme,
        device_scale_factor=1,
    )
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    try:
        page.goto(live_server.url + reverse("challenges:home"))
        page.wait_for_selector(".cards")
        shoot(page, f"list-{size}-{scheme}")
        page.goto(live_server.url + page_url("prompting"))
        page.wait_for_selector("section.charts[data-drawn=true]")
        rows(page).first.locator("summary").click()
        shoot(page, f"challenge-{size}-{scheme}")
        # Nothing wider than the viewport at phone width (the table scrolls in its box).
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0
        assert errors == []
    finally:
        context.close()
