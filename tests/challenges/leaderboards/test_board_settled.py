"""Boards kept by their ranking (issue 16): while a board's ranking is current, the API
leaderboard and the page are served from what was built under a key naming every row
(``selectors.board_settled``), reading no row. Each test here changes what a row shows
in one way and checks that the next read shows it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from challenges.ingestion import moderation, services
from challenges.models import Attempt, Player
from tests.challenges.leaderboards.reads import api as _api
from tests.challenges.leaderboards.reads import later as _later
from tests.challenges.leaderboards.reads import page as _page
from tests.challenges.leaderboards.reads import settle as _settle
from tests.factories import attempt_input, make_challenge, record
from tests.urls import leaderboard_url

pytestmark = pytest.mark.django_db


def _names(client, challenge) -> list[tuple[int, str]]:
    return [(r["rank"], r["display_name"]) for r in _api(client, challenge).json()["results"]]


def test_a_poll_of_a_settled_board_reads_no_row_and_sends_the_same_bytes(
    client, board, django_assert_max_num_queries
):
    _api(client, board)  # the first read ranks the new entries
    first = _api(client, board)
    with django_assert_max_num_queries(1):  # the probe
        again = _api(client, board)
    assert again.content == first.content
    assert again["Content-Type"] == first["Content-Type"] == "application/json"
    assert [r["player"] for r in again.json()["results"]] == ["ann", "bob"]


def test_the_page_and_the_fragment_of_a_settled_board_read_no_row(
    client, board, django_assert_max_num_queries
):
    _page(client, board)  # the first read ranks the new entries
    page, fragment = _page(client, board), _page(client, board, "board")
    with django_assert_max_num_queries(1):
        assert _page(client, board) == page
    with django_assert_max_num_queries(1):
        assert _page(client, board, "board") == fragment


def test_a_better_attempt_shows_at_once(client, board):
    _settle(client, board)
    record(board, attempt_input("bob", tokens_total=5))
    assert _names(client, board) == [(1, "Bob"), (2, "Ann")]
    assert _page(client, board).index("Bob") < _page(client, board).index("Ann")


def test_a_rename_with_a_worse_attempt_shows_the_new_name(
    client, board, django_capture_on_commit_callbacks
):
    """The entry does not change (the attempt is worse): only the name does."""
    _settle(client, board)
    with django_capture_on_commit_callbacks(execute=True):
        record(board, attempt_input("ann", tokens_total=99, player_name="Annabel"))
    assert _names(client, board) == [(1, "Annabel"), (2, "Bob")]
    assert "Annabel" in _page(client, board)
    assert "Annabel" in _page(client, board, "board")


def test_a_rename_through_another_challenge_shows_on_this_one(
    client, board, django_capture_on_commit_callbacks
):
    """Nothing of this challenge changes (no attempt, no entry): only the player's name,
    recorded with an attempt to another challenge."""
    _settle(client, board)
    elsewhere = make_challenge(scoring_strategy="fewest_tokens")
    with django_capture_on_commit_callbacks(execute=True):
        record(elsewhere, attempt_input("bob", tokens_total=1, player_name="Roberta"))
    assert _names(client, board) == [(1, "Ann"), (2, "Roberta")]
    assert "Roberta" in _page(client, board)
    assert "Roberta" in _page(client, board, "board")


def test_an_admin_edit_of_a_player_shows(client, board, django_capture_on_commit_callbacks):
    _settle(client, board)
    with django_capture_on_commit_callbacks(execute=True):
        player = Player.objects.get(external_id="bob")
        player.display_name = "Robert"
        player.save()
    assert _names(client, board) == [(1, "Ann"), (2, "Robert")]
    assert "Robert" in _page(client, board)


def test_a_deleted_attempt_leaves_the_board_at_once(
    client, board, django_capture_on_commit_callbacks
):
    _settle(client, board)
    with django_capture_on_commit_callbacks(execute=True):
        services.attempts_delete(attempts=Attempt.objects.filter(player__external_id="ann"))
    assert _names(client, board) == [(1, "Bob")]


def test_a_hidden_player_leaves_the_board_at_once(client, board, admin):
    _settle(client, board)
    player = Player.objects.get(external_id="ann")
    moderation.player_hide(player=player, challenge=board, reason="a test", by=admin)
    assert _names(client, board) == [(1, "Bob")]
    assert "Ann" not in _page(client, board, "board")


def test_the_browsable_api_is_not_served_from_the_json(client, board):
    _settle(client, board)
    html = client.get(leaderboard_url(board.pk), HTTP_ACCEPT="text/html")
    assert html.status_code == 200 and html["Content-Type"].startswith("text/html")


def test_staff_and_the_public_see_the_same_settled_board(client, board, admin_client):
    _settle(client, board)
    public = _api(client, board).content
    assert _api(admin_client, board).content == public


# --- under steady ingestion ----------------------------------------------------------------
# A ranking is reused for PODIUM_RANKING_MAX_AGE_MS while entries change (ranks and page
# boundaries lag new attempts that long); what was read under it may be served as long,
# and not a moment longer. Deletions, hides and renames end it at once.
def test_under_steady_ingestion_the_board_lags_no_longer_than_its_ranks(
    client, board, settings, monkeypatch
):
    settings.PODIUM_RANKING_MAX_AGE_MS = 60_000
    _settle(client, board)
    record(board, attempt_input("bob", tokens_total=5))
    # Past the age: a worker recomputes (here at once, eagerly).
    _later(monkeypatch, timedelta(seconds=61))
    _names(client, board)  # this read keeps what it had
    assert _names(client, board) == [(1, "Bob"), (2, "Ann")]
    record(board, attempt_input("cy", tokens_total=1, player_name="Cy"))
    lagging, page = _names(client, board), _page(client, board)
    record(board, attempt_input("dee", tokens_total=2, player_name="Dee"))
    assert _names(client, board) == lagging  # within the ranks' lag: what was read
    assert _page(client, board) == page
    _later(monkeypatch, timedelta(seconds=61))
    _names(client, board)
    assert _names(client, board) == [(1, "Cy"), (2, "Dee"), (3, "Bob"), (4, "Ann")]
    assert "Dee" in _page(client, board)


def test_without_a_worker_a_reader_recomputes_past_the_longest_wait(
    client, board, settings, monkeypatch
):
    """The refresh is asked of a worker; none comes (no worker, or the broker is away):
    readers keep the ranking they have for REFRESH_WAIT times the age, no longer."""
    from challenges import tasks
    from challenges.leaderboards import ranking

    def broker_away(*args, **kwargs):
        raise ConnectionError("the broker is away")

    monkeypatch.setattr(tasks.ranking_refresh, "delay", broker_away)
    settings.PODIUM_RANKING_MAX_AGE_MS = 60_000
    _settle(client, board)
    before = _names(client, board)
    record(board, attempt_input("cy", tokens_total=1, player_name="Cy"))
    _later(monkeypatch, timedelta(seconds=61))
    assert _names(client, board) == before  # asked (and failed): still served, no error
    _later(monkeypatch, timedelta(seconds=60 * ranking.REFRESH_WAIT))
    assert _names(client, board) == [(1, "Cy"), (2, "Ann"), (3, "Bob")]


def test_under_steady_ingestion_deletions_and_renames_still_show_at_once(
    client, board, settings, django_capture_on_commit_callbacks
):
    settings.PODIUM_RANKING_MAX_AGE_MS = 60_000
    _settle(client, board)
    record(board, attempt_input("cy", tokens_total=1, player_name="Cy"))
    _names(client, board), _page(client, board)  # read under the reused ranking
    with django_capture_on_commit_callbacks(execute=True):
        record(board, attempt_input("ann", tokens_total=50, player_name="Annie"))
    assert _names(client, board) == [(1, "Cy"), (2, "Annie"), (3, "Bob")]
    assert "Annie" in _page(client, board)
    record(board, attempt_input("dee", tokens_total=2, player_name="Dee"))
    _names(client, board), _page(client, board)
    with django_capture_on_commit_callbacks(execute=True):
        services.attempts_delete(attempts=Attempt.objects.filter(player__external_id="cy"))
    assert _names(client, board) == [(1, "Dee"), (2, "Annie"), (3, "Bob")]
    assert "Cy" not in _page(client, board, "board")
