"""The live board in a real browser (Debian's Chromium) against the ASGI server that
``make run`` uses (uvicorn, in a thread): the page subscribes to the event stream,
says "live", skips its polling while connected, and shows a new #1 without a reload;
when the stream is unavailable it polls as before."""

from __future__ import annotations

import socket
import threading
import time

import pytest
import uvicorn
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application

from tests.browser.conftest import ranked_players
from tests.factories import WEIGHTED_SEED, attempt_input, make_challenge, record
from tests.urls import page_url

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def asgi_server():
    """uvicorn serving the site (static files too) on a free port, in a thread."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = ASGIStaticFilesHandler(get_asgi_application())
    server = uvicorn.Server(
        uvicorn.Config(app, lifespan="off", log_level="warning", timeout_graceful_shutdown=1)
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
    from challenges.events import hub

    hub.hub.db_close()  # its thread's database connection (PostgreSQL drops the test DB)


@pytest.fixture
def board():
    challenge = make_challenge(**WEIGHTED_SEED, slug="live-board")
    record(challenge, *ranked_players(12))
    return challenge


def test_the_board_updates_live_without_a_reload(page, asgi_server, board):
    polls = []
    page.on(
        "request",
        lambda r: polls.append(time.monotonic()) if "/live-board/board/" in r.url else None,
    )
    page.goto(asgi_server + page_url("live-board"))
    live = page.locator("#live-status")
    live.wait_for(state="visible", timeout=10_000)
    assert live.inner_text().strip().lower() == "live"
    page.evaluate("window.__notReloaded = true")
    time.sleep(6)  # longer than the 5-second polling: skipped while live
    before = len(polls)
    assert before <= 1, polls  # at most the one refresh made on connecting

    started = time.monotonic()
    record(
        board,
        attempt_input(
            "newcomer", player_name="Zelda Newcomer", rating=10, elapsed_ms=1, tokens_total=1
        ),
    )
    first = page.locator("#board tbody tr").first
    first.filter(has_text="Zelda Newcomer").wait_for(timeout=4_000)
    assert time.monotonic() - started < 4
    assert page.evaluate("window.__notReloaded") is True
    assert not page.errors, page.errors


def test_without_a_stream_the_page_polls(page, live_server, board):
    # The WSGI live server refuses streams (204): the page says nothing and polls.
    page.goto(live_server.url + page_url("live-board"))
    page.wait_for_timeout(1500)
    assert page.locator("#live-status").is_hidden()
    record(
        board,
        attempt_input(
            "newcomer", player_name="Zelda Newcomer", rating=10, elapsed_ms=1, tokens_total=1
        ),
    )
    page.locator("#board tbody tr").first.filter(has_text="Zelda Newcomer").wait_for(timeout=12_000)
    assert not page.errors, page.errors
