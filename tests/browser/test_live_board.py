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
from django.db import connections

from tests.browser.conftest import ranked_players
from tests.factories import (
    WEIGHTED_SEED,
    attempt_input,
    make_challenge,
    record,
    record_beside_readers,
)
from tests.urls import page_url

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


class Uvicorn:
    """uvicorn serving the site (static files too) on a port, in a thread; stopped and
    started again on the same port as a restarted web process would be."""

    def __init__(self, port: int = 0):
        self.port = port
        self.resumed_from: list[str | None] = []  # each stream request's Last-Event-ID

    def start(self) -> Uvicorn:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        self.port = sock.getsockname()[1]
        site = ASGIStaticFilesHandler(get_asgi_application())

        async def app(scope, receive, send):
            if scope["type"] == "http" and scope["path"].endswith("/events/"):
                found = dict(scope["headers"]).get(b"last-event-id")
                self.resumed_from.append(found.decode() if found else None)
            return await site(scope, receive, send)

        self.server = uvicorn.Server(
            uvicorn.Config(app, lifespan="off", log_level="warning", timeout_graceful_shutdown=1)
        )
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        from challenges.events import hub

        hub.hub.db_close()  # its thread's database connection (PostgreSQL drops the test DB)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture
def asgi():
    # Each request's database connection closes when the request ends, so that a
    # stopped server leaves none open (PostgreSQL then drops the test database).
    database = connections.settings["default"]
    kept, database["CONN_MAX_AGE"] = database.get("CONN_MAX_AGE", 0), 0
    server = Uvicorn().start()
    yield server
    database["CONN_MAX_AGE"] = kept
    if server.server.started and not server.server.should_exit:
        server.stop()


@pytest.fixture
def asgi_server(asgi):
    return asgi.url


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
    record_beside_readers(
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


def test_a_restarted_server_is_resumed_with_last_event_id(page, asgi, board):
    """The web process restarts: the stream closes, the page says so and polls; once the
    server is back the browser reconnects with the id of the last event it saw, and the
    change made while it was down is on the board without a reload."""
    reconnects = []
    page.on(
        "request",
        lambda r: (
            reconnects.append(r.headers.get("last-event-id"))
            if r.url.endswith("/live-board/events/")
            else None
        ),
    )
    page.goto(asgi.url + page_url("live-board"))
    live = page.locator("#live-status")
    live.wait_for(state="visible", timeout=10_000)
    page.evaluate("window.__notReloaded = true")
    first = attempt_input("first", player_name="Ada First", rating=10, elapsed_ms=2)
    record_beside_readers(board, first)
    page.locator("#board tbody tr").first.filter(has_text="Ada First").wait_for(timeout=4_000)
    section = page.locator("[data-events-url]")
    time.sleep(2)  # the attempt's events (board.changed is coalesced to one a second) are in
    deadline = time.monotonic() + 5  # the event that brought the row names its id
    while not (seen := section.get_attribute("data-last-event-id")):
        assert time.monotonic() < deadline, "no event id on the page"
        time.sleep(0.05)

    asgi.stop()  # the restart: streams closed, nothing served
    live.wait_for(state="hidden", timeout=10_000)
    down = attempt_input("down", player_name="Bo While Down", rating=10, elapsed_ms=1)
    record_beside_readers(board, down)
    asgi.start()  # the same port

    page.locator("#board tbody tr").first.filter(has_text="Bo While Down").wait_for(timeout=15_000)
    live.wait_for(state="visible", timeout=15_000)
    assert asgi.resumed_from[0] is None  # the first connection
    assert asgi.resumed_from[-1] == seen, asgi.resumed_from  # resumed from the last event seen
    assert page.evaluate("window.__notReloaded") is True
