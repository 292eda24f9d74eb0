"""The red/blue page and a collection page in a real browser (Debian's Chromium), at
desktop (1280 px) and phone (390 px) width: they render their tables, nothing is wider
than the viewport (wide tables scroll in their box), and nothing logs a console error.
Screenshots go to ``var/artifacts/screenshots/``."""

from __future__ import annotations

import pytest

from challenges.collections import services as collection_services
from challenges.ingestion import services
from tests.browser.conftest import ARTIFACTS
from tests.challenges.redblue.factories import judge, make_red_blue, submit
from tests.factories import attempt_input, make_challenge
from tests.urls import collection_page_url, page_url

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.fixture
def formats():
    league = make_red_blue(
        name="Jailbreak league",
        slug="jailbreak-league",
        instructions="Red: make the assistant say the **password**. Blue: keep it.",
    )
    for i in range(6):
        submit(league, f"blue-{i}", "blue")
    for i in range(12):
        for pairing in submit(league, f"red-{i}", "red").pairings:
            judge(pairing, breached=["SA", "V"][: i % 3], rating=i % 11)
    members = []
    for n, strategy in enumerate(("fastest", "fewest_tokens", "highest_rating", "fastest")):
        c = make_challenge(name=f"Season round {n + 1} with a long name", scoring_strategy=strategy)
        services.attempts_record(
            challenge=c,
            inputs=[
                attempt_input(
                    f"player-{i:02d}",
                    player_name=f"A rather long display name {i:02d}",
                    elapsed_ms=1000 + 37 * i * (n + 1),
                    tokens_total=100 + i,
                    rating=i % 11,
                )
                for i in range(n, 30)
            ],
        )
        members.append(c.pk)
    season = collection_services.collection_create(
        name="Spring season", strategy="fastest_total", challenge_ids=members
    )
    return league, season


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_red_blue_and_collection_pages(browser, live_server, formats, size):
    league, season = formats
    context = browser.new_context(viewport=SIZES[size], device_scale_factor=1)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    (ARTIFACTS / "screenshots").mkdir(parents=True, exist_ok=True)
    try:
        page.goto(live_server.url + page_url(league.slug))
        page.wait_for_selector("table.team-board[data-team=red]")
        assert page.locator("table.team-board[data-team=red] tbody tr").count() == 12
        assert page.locator("table.team-board[data-team=blue] tbody tr").count() == 6
        assert page.locator("dd[data-team=red]").is_visible()
        page.screenshot(
            path=str(ARTIFACTS / "screenshots" / f"red-blue-{size}.png"), full_page=True
        )
        assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0

        page.goto(live_server.url + collection_page_url(season.slug))
        page.wait_for_selector("table.collection")
        assert page.locator("table.collection tbody tr").count() == 30
        assert page.locator("table.collection thead th").count() == 4 + 4
        page.screenshot(
            path=str(ARTIFACTS / "screenshots" / f"collection-{size}.png"), full_page=True
        )
        assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
        assert errors == []
    finally:
        context.close()
