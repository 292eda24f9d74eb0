"""The scoring history page and a past version's board in a real browser (Debian's
Chromium), at desktop and phone width: they render, link each other, fit the width,
and log no console error. Screenshots under ``var/artifacts/pages/``."""

from __future__ import annotations

import pytest

from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from tests.browser.conftest import ARTIFACTS, ranked_players
from tests.factories import WEIGHTED_SEED, make_challenge, record
from tests.urls import history_page_url, page_url, version_page_url

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.fixture
def switched():
    challenge = make_challenge(**WEIGHTED_SEED, slug="history-demo")
    record(challenge, *ranked_players(30))
    update = setup_services.challenge_update(
        challenge=challenge, data={"scoring_strategy": "fastest"}
    )
    rescoring.job_run_inline(job=update.job)
    return challenge


def shoot(page, name: str) -> None:
    (ARTIFACTS / "pages").mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "pages" / f"{name}.png"), full_page=True)


def fits(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")


@pytest.mark.parametrize("size", SIZES)
def test_history_page_and_a_version_board(page, live_server, switched, size):
    page.set_viewport_size(SIZES[size])
    page.goto(live_server.url + page_url("history-demo"))
    page.get_by_role("link", name="Scoring history").click()
    page.wait_for_url(f"**{history_page_url('history-demo')}")
    sentence = page.locator(".switch-sentence").first.inner_text()
    assert sentence.startswith("Version 2 replaced version 1 on ")
    assert "ranked players moved" in sentence and "rank agreement τ = " in sentence
    assert page.locator("table.moves tbody tr").count() >= 1
    assert fits(page), "the history page scrolls sideways"
    shoot(page, f"history-{size}")

    page.get_by_role("link", name="Board of version 1").click()
    page.wait_for_url(f"**{version_page_url('history-demo', 1)}")
    assert page.locator("[data-current='0']").inner_text().startswith("Not current")
    assert page.locator("table.leaderboard tbody tr").count() == 30
    assert fits(page), "the version board scrolls sideways"
    shoot(page, f"version-1-{size}")
    assert page.errors == []
