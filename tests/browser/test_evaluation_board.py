"""An aggregate (evaluation) board in a real browser at desktop and phone width: the
intervals are drawn as bars inside the table, the tiers and the legend are shown, the
slice tabs switch the board, the table scrolls in its box rather than the page, and
nothing logs a console error. Screenshots under ``var/artifacts/screenshots/``."""

from __future__ import annotations

import pytest

from challenges.leaderboards import evaluation
from tests.browser.conftest import ARTIFACTS
from tests.factories import attempt_input, make_challenge, record
from tests.urls import page_url

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
]

SIZES = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}
MODELS = [
    ("model-opus", "Opus 9 (long context, tools)", 0.92),
    ("model-sonnet", "Sonnet 8", 0.85),
    ("model-haiku", "Haiku 7", 0.84),
    ("model-open", "An open-weights model with a rather long name", 0.6),
    ("model-tiny", "Tiny", 0.3),
]


@pytest.fixture
def board():
    challenge = make_challenge(
        name="Reasoning evals",
        slug="reasoning-evals",
        scoring_strategy="highest_rating",
        board="aggregate",
        bootstrap_samples=300,
        slice_by="topic",
    )
    inputs = []
    for n, (external_id, name, skill) in enumerate(MODELS):
        for item in range(60):
            right = ((item * 37 + n * 11) % 100) / 100 < skill
            inputs.append(
                attempt_input(
                    external_id,
                    player_name=name,
                    rating=10 if right else 0,
                    sample={"id": f"q{item:03d}", "topic": ("algebra", "logic", "code")[item % 3]},
                )
            )
    record(challenge, *inputs)
    evaluation.evaluation_compute(challenge_id=challenge.pk)
    return challenge


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_the_board_shows_intervals_tiers_and_slice_tabs(browser, live_server, board, size):
    context = browser.new_context(viewport=SIZES[size], device_scale_factor=1)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    try:
        page.goto(live_server.url + page_url(board.slug))
        table = page.locator("table.evaluation")
        table.wait_for()
        assert table.locator("tbody tr").count() == len(MODELS)
        assert page.locator("[data-tier-legend]").inner_text().startswith("Tier: 1 +")
        # Every bar is drawn with a size inside its cell, and the text bounds beside it.
        for bar in page.locator("svg.ci-bar").all():
            box = bar.bounding_box()
            assert box is not None and box["width"] > 20 and box["height"] > 4
        # The interval and the tier are on screen without scrolling the table sideways.
        width = SIZES[size]["width"]
        for cell in (page.locator("td.col-tier").first, page.locator("td.col-interval").first):
            box = cell.bounding_box()
            assert box is not None and box["x"] + box["width"] <= width
        tiers = page.locator("td.col-tier").all_inner_texts()
        assert tiers[0] == "1" and tiers[-1] != "1"
        (ARTIFACTS / "screenshots").mkdir(parents=True, exist_ok=True)
        page.screenshot(
            path=str(ARTIFACTS / "screenshots" / f"evaluation-{size}.png"), full_page=True
        )
        # Slice tabs: each shows its count; choosing one shows that slice's board.
        tabs = page.get_by_role("navigation", name="Slices of the board")
        assert tabs.get_by_role("link").count() == 4
        tabs.get_by_role("link", name="logic").click()
        page.wait_for_url("**/?slice=logic")
        assert "of “logic”" in page.locator("table.evaluation caption").inner_text()
        current = tabs.get_by_role("link", name="logic")
        assert current.get_attribute("aria-current") == "page"
        page.screenshot(
            path=str(ARTIFACTS / "screenshots" / f"evaluation-{size}-slice.png"), full_page=True
        )
        # The table scrolls in its box: nothing is wider than the viewport.
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0
        assert errors == []
    finally:
        context.close()
