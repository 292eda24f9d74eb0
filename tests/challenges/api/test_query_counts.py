"""Query counts of the API's hot routes: exact, and independent of how many rows, pages
or challenges there are, so the fast path stays fast. A failure prints the queries
whatever the verbosity (pytest-django's ``django_assert_num_queries`` prints them only
under ``-v``).

The leaderboard's counts are for a current ranking (the steady state of a polled
board): a read right after a change recomputes the checkpoints once
(tests/challenges/leaderboards/test_ranking.py has that path's own tests)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from challenges.leaderboards import sql
from challenges.models import Challenge
from tests.factories import attempt_input, make_challenge, record
from tests.urls import attempts_url, challenges_url, leaderboard_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def django_assert_num_queries() -> Callable[[int], AbstractContextManager]:
    """Exactly ``n`` queries inside the block; on failure, every query is listed."""

    @contextmanager
    def exactly(n: int) -> Iterator[CaptureQueriesContext]:
        with CaptureQueriesContext(connection) as context:
            yield context
        if len(context) != n:
            queries = "\n".join(
                f"{i}. {q['sql']}" for i, q in enumerate(context.captured_queries, 1)
            )
            pytest.fail(f"expected {n} queries, {len(context)} were done:\n{queries}")

    return exactly


def _board(players: int) -> Challenge:
    challenge = make_challenge(scoring_strategy="fastest")
    # Equal times but distinct creation times: no ties, so a recomputation is one pass.
    record(
        challenge,
        *(attempt_input(f"p{i:04}", elapsed_ms=1 + i % 97, created_at=i) for i in range(players)),
    )
    return challenge


@pytest.fixture
def board():
    return _board(260)


def _get(client, url, params=None):
    resp = client.get(url, params or {})
    assert resp.status_code == 200, resp.content
    return resp.json()


# --- GET /api/challenges/{id}/leaderboard/ ---------------------------------------------------
# The challenge and its ranking's state in one statement, then one index range of rows
# from a checkpoint: no COUNT(*) over entries, no OFFSET scan, whatever the offset.
@pytest.mark.parametrize(
    "params",
    [
        {},
        {"limit": 50},
        {"limit": 500},
        {"limit": 50, "offset": 50},
        {"limit": 7, "offset": 203},
        {"limit": 50, "offset": 255},
    ],
)
def test_leaderboard_page_is_two_queries(anon_api, board, django_assert_num_queries, params):
    url = leaderboard_url(board.pk)
    _get(anon_api, url, params)  # the first read after the writes ranks them

    with django_assert_num_queries(2):
        body = _get(anon_api, url, params)

    assert body["count"] == 260
    assert body["results"]


def test_leaderboard_past_the_end_is_one_query(anon_api, board, django_assert_num_queries):
    url = leaderboard_url(board.pk)
    _get(anon_api, url)

    with django_assert_num_queries(1):  # the count is the ranking's: nothing to read
        body = _get(anon_api, url, {"offset": 260})

    assert body == {"version": 1, "count": 260, "results": []}


@pytest.mark.parametrize(
    ("player", "queries"),
    [
        ("p0001", 3),  # the probe, the player's row, the rows from its checkpoint to it
        ("p0151", 3),
        ("p0259", 3),
        ("p0000", 2),  # first, a checkpoint: its rank is known
    ],
)
def test_leaderboard_player_is_three_queries(
    anon_api, board, django_assert_num_queries, player, queries
):
    url = leaderboard_url(board.pk)
    _get(anon_api, url)

    with django_assert_num_queries(queries):
        body = _get(anon_api, url, {"player": player})

    assert [r["player"] for r in body["results"]] == [player]


def test_leaderboard_unknown_player_is_two_queries(anon_api, board, django_assert_num_queries):
    url = leaderboard_url(board.pk)
    _get(anon_api, url)

    with django_assert_num_queries(2):
        body = _get(anon_api, url, {"player": "nobody"})

    assert body["results"] == []


def test_leaderboard_unknown_challenge_is_one_query(anon_api, db, django_assert_num_queries):
    with django_assert_num_queries(1):
        assert anon_api.get(leaderboard_url(987_654)).status_code == 404


def test_leaderboard_queries_do_not_grow_with_the_board(anon_api, db, django_assert_num_queries):
    small, large = _board(3), _board(400)
    for challenge in (small, large):
        _get(anon_api, leaderboard_url(challenge.pk))
        with django_assert_num_queries(2):
            _get(anon_api, leaderboard_url(challenge.pk), {"limit": 500})
        with django_assert_num_queries(3):
            _get(anon_api, leaderboard_url(challenge.pk), {"player": "p0002"})


def test_leaderboard_after_a_write_recomputes_once(
    anon_api, integration_api, board, django_assert_num_queries
):
    url = leaderboard_url(board.pk)
    _get(anon_api, url)
    resp = integration_api.post(
        attempts_url(board.pk),
        {"player": "newcomer", "succeeded": True, "elapsed_ms": 0},
        format="json",
    )
    assert resp.status_code == 201, resp.content

    with django_assert_num_queries(9):  # probe, the recomputation, the rows
        first = _get(anon_api, url, {"limit": 1})
    with django_assert_num_queries(2):
        again = _get(anon_api, url, {"limit": 1})

    assert first == again
    assert first["count"] == 261
    assert first["results"][0]["player"] == "newcomer"


# --- GET /api/challenges/ ---------------------------------------------------------------------
@pytest.mark.parametrize("how_many", [1, 12])
def test_challenge_list_is_one_query(anon_api, db, django_assert_num_queries, how_many):
    for _ in range(how_many):
        make_challenge(scoring_strategy="fastest")

    with django_assert_num_queries(1):
        body = _get(anon_api, challenges_url())

    assert len(body) == how_many


@pytest.mark.parametrize("how_many", [1, 12])
def test_challenge_list_for_staff(staff_api, db, django_assert_num_queries, how_many):
    for i in range(how_many):
        make_challenge(scoring_strategy="fastest", is_active=bool(i % 2))

    with django_assert_num_queries(2):  # the token, the challenges
        body = _get(staff_api, challenges_url())

    assert len(body) == how_many


# --- POST /api/challenges/{id}/attempts/ -------------------------------------------------------
def _attempts(n: int, *, new_players: bool = True) -> list[dict]:
    return [
        {
            "player": f"{'new' if new_players else 'p'}{i:04}",
            "succeeded": True,
            "elapsed_ms": 10 + i,
            "created_at": 1_767_225_600_000 + i,
        }
        for i in range(n)
    ]


@pytest.mark.parametrize("n", [1, 40])
@pytest.mark.parametrize("new_players", [True, False])
def test_recording_attempts_is_a_fixed_number_of_queries(
    integration_api, board, django_assert_num_queries, n, new_players, monkeypatch
):
    body = _attempts(n, new_players=new_players)
    payload = body[0] if n == 1 else body

    # The token with its user, the permissions (one statement: config/auth.py), the
    # challenge, the versions to score (one query before scoring, outside the
    # transaction, and their ids again inside it), players, attempts,
    # scores, entries; the hidden players among them (moderation; for a long list, whether
    # anyone is hidden), entries; on PostgreSQL also the challenge row held in share mode
    # against a rescore's switch and the attempts' ids drawn from their sequence (+2),
    # while the attempts and their scores go by COPY, which Django's query log does not
    # see (-2, counted apart below). (18 before the versions took one query each, 14
    # before the permissions took one.)
    postgres = connection.vendor == "postgresql"
    copies: list[str] = []
    copy_in = sql.copy_in
    monkeypatch.setattr(
        sql,
        "copy_in",
        lambda table, *args, **kw: copies.append(table) or copy_in(table, *args, **kw),
    )
    with django_assert_num_queries(13):
        resp = integration_api.post(attempts_url(board.pk), payload, format="json")

    assert resp.status_code == 201, resp.content
    assert copies == ([sql.ATTEMPT, sql.SCORE] if postgres else [])
