"""Reads under steady ingestion build nothing (issue 16): the worker that computes a new
ranking builds the public page and fragment ahead (``boards.read.boards_build_ahead``),
and until it has, readers of a lagging board serve what was built from the previous
ranking of the same lineage (``kept.kept_board``) — never past the ranks' lag, never
across a deletion, a hide or a rename. A current board whose new attempts changed no
entry is not built again for each of them either, but shows them within the same lag."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone

from challenges import tasks
from challenges.boards import read as views
from challenges.ingestion import moderation, services
from challenges.leaderboards import kept
from challenges.leaderboards import ranking as R
from challenges.models import Attempt, Challenge, LeaderboardRanking, Player
from tests.challenges.leaderboards.reads import later as _later
from tests.challenges.leaderboards.reads import page as _page
from tests.challenges.leaderboards.reads import settle as _settle
from tests.factories import attempt_input, record

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _reused_rankings(settings):
    settings.PODIUM_RANKING_MAX_AGE_MS = 60_000  # a ranking is reused for a minute


@pytest.fixture
def worker(settings):
    """What the ranking_refresh task does past the ranking's age (``ahead``), or its
    first half alone: the new ranking published, the boards not built yet."""

    def refresh(challenge, *, ahead: bool = True) -> None:
        max_age = settings.PODIUM_RANKING_MAX_AGE_MS
        settings.PODIUM_RANKING_MAX_AGE_MS = 0  # past the age: the worker recomputes
        try:
            if ahead:
                tasks.ranking_refresh(challenge.active_version_id)
            else:
                R.ranking_refresh(version_id=challenge.active_version_id)
        finally:
            settings.PODIUM_RANKING_MAX_AGE_MS = max_age

    return refresh


def test_the_worker_builds_the_new_ranking_s_page_so_that_no_reader_does(
    client, board, builds, worker
):
    _settle(client, board)
    record(board, attempt_input("cy", tokens_total=1, player_name="Cy"))  # a new leader
    builds.clear()
    worker(board)  # the new ranking, and its page and fragment built ahead
    assert len(builds) == 3  # the page (board, then the page around it) and the fragment
    record(board, attempt_input("dee", tokens_total=30, player_name="Dee"))  # lagging again
    builds.clear()
    page, fragment = _page(client, board), _page(client, board, "board")
    assert builds == []  # served what the worker built
    assert page.index("Cy") < page.index("Ann") and "Cy" in fragment
    assert "Dee" not in page  # lags as long as the ranks do


def test_until_the_worker_has_built_it_readers_serve_the_previous_ranking_s_page(
    client, board, builds, worker
):
    _settle(client, board)
    before = _page(client, board)
    record(board, attempt_input("cy", tokens_total=1, player_name="Cy"))
    worker(board, ahead=False)  # published, not built yet
    record(board, attempt_input("dee", tokens_total=30, player_name="Dee"))  # lagging
    builds.clear()
    assert _page(client, board) == before
    assert builds == []


def test_the_previous_ranking_s_page_is_served_no_longer_than_the_ranks_lag(
    client, board, builds, monkeypatch, worker, settings
):
    settings.PODIUM_RANKING_MAX_AGE_MS = 3_000  # a lag of 15 s: within one minute
    minute = timezone.now().replace(second=0, microsecond=0) + timedelta(minutes=1)
    monkeypatch.setattr(timezone, "now", lambda: minute + timedelta(seconds=1))
    _settle(client, board)  # built from the first ranking
    record(board, attempt_input("cy", tokens_total=1, player_name="Cy"))
    _later(monkeypatch, R.reuse_bound() - timedelta(seconds=1))
    worker(board, ahead=False)  # a second ranking, its page not built
    record(board, attempt_input("dee", tokens_total=30, player_name="Dee"))
    assert "Cy" not in _page(client, board)  # the first ranking's page, still in bounds
    # Past the bound for the first ranking (the second is young enough to reuse): its
    # page is not served any more, the reader builds the second's.
    _later(monkeypatch, timedelta(seconds=2))
    page = _page(client, board)
    assert page.index("Cy") < page.index("Ann")
    assert builds


@pytest.mark.parametrize("removal", ["deletion", "hide", "rename"])
def test_after_a_removal_no_earlier_page_is_served(
    client, board, admin, removal, django_capture_on_commit_callbacks, worker
):
    """A deletion, a hide or a rename starts a new lineage: what was built before it is
    never served again, however recent."""
    _settle(client, board)
    record(board, attempt_input("cy", tokens_total=1, player_name="Cy"))
    worker(board)
    record(board, attempt_input("dee", tokens_total=30, player_name="Dee"))
    assert "Cy" in _page(client, board)  # built ahead, served while lagging
    with django_capture_on_commit_callbacks(execute=True):
        if removal == "deletion":
            services.attempts_delete(attempts=Attempt.objects.filter(player__external_id="cy"))
        elif removal == "hide":
            cy = Player.objects.get(external_id="cy")
            moderation.player_hide(player=cy, challenge=board, reason="a test", by=admin)
        else:
            cy = Player.objects.get(external_id="cy")
            cy.display_name = "Cyrus"
            cy.save()
    first = _page(client, board)  # stale: read and built from the rows
    record(board, attempt_input("eve", tokens_total=40, player_name="Eve"))  # lagging again
    for page in (first, _page(client, board), _page(client, board, "board")):
        assert ">Cy<" not in page and "Cy</" not in page


def test_a_ranking_s_lineage_changes_only_when_rows_were_removed(board, settings):
    settings.PODIUM_RANKING_MAX_AGE_MS = 0  # every changed ranking recomputed at once
    version_id = board.active_version_id
    first = R.ranking_current(version_id=version_id)
    record(board, attempt_input("cy", tokens_total=1))
    second = R.ranking_current(version_id=version_id)
    assert second.token != first.token and second.lineage == first.lineage
    LeaderboardRanking.objects.filter(version_id=version_id).update(stale=True)
    third = R.ranking_current(version_id=version_id)
    assert third.lineage == third.token != second.lineage


def test_new_attempts_that_change_no_entry_do_not_rebuild_the_page_each(
    client, board, builds, monkeypatch
):
    _settle(client, board)
    page = _page(client, board)
    record(board, attempt_input("ann", tokens_total=99))  # worse: no entry changes
    builds.clear()
    assert _page(client, board) == page  # the newest activity may lag...
    assert builds == []
    _later(monkeypatch, R.reuse_bound())  # ...as long as the ranks may, no longer
    _page(client, board)
    assert builds != []


def test_nothing_is_built_ahead_for_a_board_the_public_does_not_read(board, builds):
    Challenge.objects.filter(pk=board.pk).update(is_active=False)
    views.boards_build_ahead(version_id=board.active_version_id)
    views.boards_build_ahead(version_id=10**9)  # no such version
    assert builds == []


@pytest.mark.parametrize(
    "found",
    [None, "junk", (1, 2), ("t", "l", "not a time", None, timezone.now(), "x")],
)
def test_whatever_else_the_cache_holds_is_built_again(found):
    assert kept._built(found) is None


def test_what_the_worker_builds_is_what_a_reader_would_build(client, board, worker):
    """The worker builds without a request of the public's: the page and fragment must
    not depend on one (a template reading the request, say, would differ here)."""
    record(board, attempt_input("cy", tokens_total=1, player_name="Cy"))
    worker(board)  # built ahead
    ahead = _page(client, board), _page(client, board, "board")
    cache.clear()
    kept.local_clear()
    assert (_page(client, board), _page(client, board, "board")) == ahead  # a reader's
