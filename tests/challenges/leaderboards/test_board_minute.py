"""A board page words times relative to now ("updated 3 minutes ago"), so it is built for
a minute. The first public read of a new minute does not wait for that build (issue 16:
a deep page's p99 was the one read per minute that built it): it is served the previous
minute's build, otherwise usable, and a worker builds the new minute's
(``tasks.board_rebuild``). Never older than that, never across a window opening or
closing; staff, who may read boards the public does not, build their own."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from challenges import tasks
from challenges.boards import read as views
from challenges.leaderboards import kept, selectors
from tests.challenges.leaderboards.conftest import two_player_board
from tests.challenges.leaderboards.reads import later
from tests.urls import page_url

pytestmark = pytest.mark.django_db
MINUTE = timedelta(minutes=1)


@pytest.fixture
def asked(monkeypatch):
    """The rebuilds asked of the workers (kind, slug, query), kept, not run."""
    calls: list[tuple[str, str, str]] = []
    monkeypatch.setattr(tasks.board_rebuild, "delay", lambda *args: calls.append(args))
    return calls


def read(client, challenge, name="detail", query="") -> str:
    response = client.get(page_url(challenge.slug, name) + query)
    assert response.status_code == 200
    return response.content.decode()


@pytest.fixture
def fresh(monkeypatch, client):
    """A board whose entries changed at the start of a minute, read and kept in the
    next; the clock stopped there."""
    start = timezone.now().replace(second=0, microsecond=0) + MINUTE + timedelta(seconds=1)
    monkeypatch.setattr(timezone, "now", lambda: start)
    # The process's copies of challenges are keyed by id and updated_at: with the clock
    # stopped, an earlier test's challenge 1 would be this one's.
    monkeypatch.setattr(selectors, "_challenges", {})
    challenge = two_player_board()
    later(monkeypatch, MINUTE)  # read the minute after: "updated just now" (59 s)
    for _ in range(2):  # ranked, then kept
        read(client, challenge), read(client, challenge, "board")
    return challenge


def test_the_first_read_of_a_minute_is_served_the_last_one_s_and_a_worker_builds(
    client, fresh, builds, asked, monkeypatch
):
    before = read(client, fresh), read(client, fresh, "board")
    assert "just now" in before[0]
    later(monkeypatch, MINUTE)
    builds.clear()
    assert (read(client, fresh), read(client, fresh, "board")) == before
    assert builds == []  # no reader built
    assert asked == [("page", fresh.slug, ""), ("board", fresh.slug, "")]
    read(client, fresh), read(client, fresh, "board")
    assert len(asked) == 2  # asked once per minute
    for kind, slug, query in asked:  # the worker
        tasks.board_rebuild(kind, slug, query)
    builds.clear()
    page, fragment = read(client, fresh), read(client, fresh, "board")
    assert builds == []
    assert "1 minute ago" in page and "1 minute ago" in fragment


def test_what_the_worker_builds_for_a_query_is_what_a_reader_would(
    client, fresh, asked, monkeypatch
):
    query = "?q=an&page=1"
    read(client, fresh, query=query)
    later(monkeypatch, MINUTE)
    read(client, fresh, query=query)
    assert asked == [("page", fresh.slug, "q=an")]  # as the board reads it (page 1: none)
    tasks.board_rebuild(*asked[0])
    ahead = read(client, fresh, query=query)
    kept.cache.clear()
    kept.local_clear()
    assert read(client, fresh, query=query) == ahead  # a reader's own build


def test_a_build_two_minutes_old_is_not_served(client, fresh, builds, asked, monkeypatch):
    read(client, fresh)
    later(monkeypatch, 2 * MINUTE)
    builds.clear()
    assert "2 minutes ago" in read(client, fresh)
    assert builds and asked == []


def test_staff_build_their_own(client, fresh, builds, asked, monkeypatch, staff):
    client.force_login(staff)
    read(client, fresh)
    later(monkeypatch, MINUTE)
    builds.clear()
    assert "1 minute ago" in read(client, fresh)
    assert builds and asked == []


def test_a_window_closing_shows_at_once(client, fresh, asked, monkeypatch):
    closes = timezone.now() + timedelta(seconds=30)
    later(monkeypatch, timedelta(seconds=1))
    fresh.closes_at = closes
    fresh.save()  # as the admin saves it (a new updated_at)
    read(client, fresh)
    assert "closes in" in read(client, fresh)
    later(monkeypatch, MINUTE)  # closed since
    page = read(client, fresh)
    assert "closes in" not in page and "Ended" in page
    assert asked == []  # not served the open page meanwhile


def test_a_broker_away_fails_no_read_the_reader_builds(client, fresh, monkeypatch, caplog):
    def away(*args):
        raise ConnectionError("broker away")

    monkeypatch.setattr(tasks.board_rebuild, "delay", away)
    read(client, fresh)
    later(monkeypatch, MINUTE)
    assert "1 minute ago" in read(client, fresh)  # not asked: built here
    assert "Could not queue the board rebuild" in caplog.text


def test_public_reads_ask_the_workers_for_so_many_builds_a_minute(
    client, fresh, asked, builds, monkeypatch
):
    monkeypatch.setattr(views, "REBUILDS_PER_MINUTE", 2)
    queries = ["?page=1", "?q=a", "?q=b", "?q=c"]
    for query in queries:
        read(client, fresh, query=query)
    later(monkeypatch, MINUTE)
    builds.clear()
    pages = [read(client, fresh, query=query) for query in queries]
    assert [query for _, _, query in asked] == ["", "q=a"]  # page 1 is the plain board
    assert ["1 minute ago" in page for page in pages] == [False, False, True, True]
    assert builds  # the readers past the budget built theirs


def test_a_build_kept_by_the_previous_release_is_built_again():
    now = timezone.now()
    assert kept._built(("t", "l", now, None, now, "<html>")) is None  # no minute
