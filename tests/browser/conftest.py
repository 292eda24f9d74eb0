"""Browser tests: Playwright (Python) driving Debian's Chromium against ``live_server``.

Never ``playwright install``: the browser is the system's ``/usr/bin/chromium``. Without
it (or without the playwright package) these tests are skipped with the reason.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from django.db import connections

CHROMIUM = os.environ.get("PODIUM_CHROMIUM", "/usr/bin/chromium")
# Screenshots of every browser test, git-ignored with the rest of var/.
ARTIFACTS = Path(
    os.environ.get(
        "PODIUM_ARTIFACTS_DIR", Path(__file__).resolve().parents[2] / "var" / "artifacts"
    )
)
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture
def browser(monkeypatch):
    """A headless Chromium for one test. Playwright's sync API runs an event loop in this
    thread, so Django's async-safety check must be off while it runs (the ORM calls of
    the test are still plain synchronous calls)."""
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        pytest.skip(f"browser tests need Chromium at {CHROMIUM}")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield browser
        finally:
            browser.close()
            # While Playwright runs, the test's ORM calls get a database connection of
            # their own (asgiref's Local sees another context): close it here, in that
            # context, or it outlives the test (PostgreSQL then cannot drop the test DB).
            connections.close_all()


@pytest.fixture
def page(browser):
    """A page that records console errors and uncaught exceptions in ``page.errors``."""
    context = browser.new_context()
    page = context.new_page()
    page.errors = []

    def on_console(msg):
        # The browser's own favicon probe is not the page's doing (the admin has none).
        if msg.type == "error" and not msg.location.get("url", "").endswith("/favicon.ico"):
            page.errors.append(msg.text)

    page.on("console", on_console)
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.set_default_timeout(10_000)
    yield page
    context.close()


def ranked_players(count: int) -> list:
    """``count`` players' attempts for a weighted board: varied ratings, times and
    tokens, one minute apart, so the board has distinct ranks and a few ties."""
    from tests.factories import attempt_input

    return [
        attempt_input(
            f"user-{i:02d}",
            player_name=f"Player {i:02d}",
            rating=(i * 7) % 11,
            elapsed_ms=2000 + 150 * i,
            tokens_total=300 + 10 * i,
            created_at=60 * i,
        )
        for i in range(count)
    ]
