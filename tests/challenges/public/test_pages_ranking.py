"""Ranks read from checkpoints (challenges/leaderboards/ranking.py) equal a brute-force ranking of
every entry: on every page, in search results, for every player, after new attempts,
renames and deletions, with ties across checkpoint boundaries."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from challenges.leaderboards import ranking as R
from challenges.leaderboards import selectors
from challenges.models import Attempt, LeaderboardEntry, LeaderboardRanking, Player
from tests.factories import attempt_input, make_challenge, record

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    """Checkpoints every 7 rows: many boundaries, and tie groups that straddle them."""
    monkeypatch.setattr(R, "PAGE", 7)
    monkeypatch.setattr(selectors, "PAGE", 7)


def brute_force(challenge) -> list[tuple[str, int]]:
    """(external id, competition rank) of every entry, in rank order."""
    challenge.refresh_from_db()
    entries = list(
        LeaderboardEntry.objects.filter(version=challenge.active_version).values_list(
            "sort_key", "created_at", "attempt_id", "player__external_id"
        )
    )
    entries.sort()
    board, rank = [], 0
    for place, (sort_key, created_at, _, player) in enumerate(entries):
        if place == 0 or (sort_key, created_at) != entries[place - 1][:2]:
            rank = place + 1
        board.append((player, rank))
    return board


def random_attempts(rng: random.Random, players: int, count: int, prefix: str = "p"):
    return [
        attempt_input(
            f"{prefix}{rng.randrange(players):03d}",
            player_name=None,
            elapsed_ms=rng.randrange(12),  # few values: many ties on the value
            created_at=rng.randrange(4),  # and on the time
            succeeded=rng.random() < 0.85,
        )
        for _ in range(count)
    ]


def check(challenge) -> None:
    challenge.refresh_from_db()
    expected = brute_force(challenge)
    for offset in range(0, len(expected) + 3):
        for limit in (1, 5, 7, 16):
            got = selectors.leaderboard_page(challenge=challenge, limit=limit, offset=offset)
            assert got.count == len(expected)
            assert [(r.player_external_id, r.rank) for r in got.rows] == expected[
                offset : offset + limit
            ], (offset, limit)
    for player, rank in expected:
        row = selectors.leaderboard_player(challenge=challenge, external_id=player).rows[0]
        assert row.rank == rank
        board = selectors.board_page(challenge=challenge, player=player)
        assert player in [r.player_external_id for r in board.rows]
    pages = -(-len(expected) // 7)
    for n in range(1, pages + 1):
        board = selectors.board_page(challenge=challenge, page=n)
        assert [(r.player_external_id, r.rank) for r in board.rows] == expected[(n - 1) * 7 : n * 7]
    searched = selectors.board_page(challenge=challenge, query="1")
    wanted = [(p, r) for p, r in expected if "1" in Player.objects.get(external_id=p).display_name]
    assert [(r.player_external_id, r.rank) for r in searched.rows] == wanted[:7]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_checkpoint_ranks_equal_brute_force_through_changes(
    seed, django_capture_on_commit_callbacks
):
    rng = random.Random(seed)
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, *random_attempts(rng, 40, 120))
    check(challenge)
    # New and improved entries: the ranking notices the changed rows and recomputes.
    record(challenge, *random_attempts(rng, 55, 30))
    check(challenge)
    # A deletion leaves no changed row: the receiver marks the ranking stale.
    victim = LeaderboardEntry.objects.filter(version=challenge.active_version).first()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        Attempt.objects.filter(pk=victim.attempt_id).delete()
    assert len(callbacks) == 1
    assert LeaderboardRanking.objects.get(version=challenge.active_version).stale
    check(challenge)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        Attempt.objects.filter(challenge=challenge, player__external_id="p009").delete()
        Player.objects.filter(external_id="p007").delete()
    assert len(callbacks) == 1  # one update per transaction, however many rows went
    check(challenge)


def test_recompute_only_when_entries_changed(django_assert_num_queries):
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, attempt_input("a", elapsed_ms=5), attempt_input("b", elapsed_ms=9))
    version_id = challenge.active_version_id
    first = R.ranking_current(version_id=version_id)
    with django_assert_num_queries(1):  # current: one small query, checkpoints from memory
        assert R.ranking_current(version_id=version_id) is first
    record(challenge, attempt_input("b", elapsed_ms=20))  # not better: no entry changes
    assert R.ranking_current(version_id=version_id).token == first.token
    record(challenge, attempt_input("b", elapsed_ms=1))  # better: b's entry changes
    second = R.ranking_current(version_id=version_id)
    assert second.token != first.token and second.ranks == [1]
    assert not LeaderboardEntry.objects.filter(version_id=version_id, unranked=True).exists()


def test_changes_recompute_at_most_once_per_max_age(
    settings, monkeypatch, django_capture_on_commit_callbacks
):
    """Under steady ingestion, readers share one recompute per PODIUM_RANKING_MAX_AGE_MS,
    made by a worker (eagerly here) while the reader that asked keeps what it has;
    deletions are never served stale."""
    settings.PODIUM_RANKING_MAX_AGE_MS = 1000
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, attempt_input("a", elapsed_ms=5))
    version_id = challenge.active_version_id
    first = R.ranking_current(version_id=version_id)
    record(challenge, attempt_input("b", elapsed_ms=1))  # a new leader
    assert R.ranking_current(version_id=version_id) is first  # within the window
    later = first.computed_at + timedelta(milliseconds=1001)
    monkeypatch.setattr(R.timezone, "now", lambda: later)
    assert R.ranking_current(version_id=version_id) is first  # asks a worker, keeps it
    fresh = R.ranking_current(version_id=version_id)  # the worker's, at the next read
    assert fresh.token != first.token and fresh.entries == 2
    monkeypatch.undo()
    settings.PODIUM_RANKING_MAX_AGE_MS = 1000
    from challenges.ingestion import services

    with django_capture_on_commit_callbacks(execute=True):
        services.attempts_delete(attempts=Attempt.objects.filter(player__external_id="b"))
    assert R.ranking_current(version_id=version_id).entries == 1  # stale: recomputed now


@pytest.fixture
def changed(settings):
    """(version id, its first ranking) of a board whose entries changed since."""
    settings.PODIUM_RANKING_MAX_AGE_MS = 1000
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, attempt_input("a", elapsed_ms=5))
    version_id = challenge.active_version_id
    first = R.ranking_current(version_id=version_id)
    record(challenge, attempt_input("b", elapsed_ms=1))  # entries changed
    R._loaded.pop(version_id)  # as in a process that never read it
    return version_id, first


def test_a_ranking_another_process_just_computed_is_not_recomputed(changed, monkeypatch):
    """Under steady ingestion, a reader in another process (or one that waited for the
    row while another recomputed it) uses a ranking computed within the max age."""
    version_id, first = changed
    assert R.ranking_current(version_id=version_id).token == first.token  # not recomputed
    assert LeaderboardEntry.objects.filter(version_id=version_id, unranked=True).exists()

    later = first.computed_at + timedelta(milliseconds=1001)
    monkeypatch.setattr(R.timezone, "now", lambda: later)
    R._loaded.pop(version_id)
    # Past the age, as a process that holds it: keeps it and asks a worker (eager here).
    assert R.ranking_current(version_id=version_id).token == first.token
    R._loaded.pop(version_id)
    fresh = R.ranking_current(version_id=version_id)  # the worker's
    assert fresh.token != first.token and fresh.entries == 2


def test_a_process_that_never_read_a_ranking_too_old_to_reuse_recomputes_it(changed, monkeypatch):
    version_id, first = changed
    later = first.computed_at + R.reuse_bound()
    monkeypatch.setattr(R.timezone, "now", lambda: later)
    fresh = R.ranking_current(version_id=version_id)
    assert fresh.token != first.token and fresh.entries == 2


def test_another_process_reloads_a_newer_ranking():
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, attempt_input("a", elapsed_ms=5))
    version_id = challenge.active_version_id
    R.ranking_current(version_id=version_id)
    R._loaded.pop(version_id)  # as in a process that never read it
    assert R.ranking_current(version_id=version_id).entries == 1


def test_empty_and_missing_boards():
    challenge = make_challenge(scoring_strategy="fastest")
    ranking = R.ranking_current(version_id=challenge.active_version_id)
    assert (ranking.entries, ranking.keys) == (0, [])
    page = selectors.leaderboard_page(challenge=challenge, limit=5, offset=0)
    assert (page.count, page.rows) == (0, [])
    board = selectors.board_page(challenge=challenge, page=3, query="", player="x")
    assert (board.rows, board.page, board.pages, board.player_found) == ([], 1, 1, False)
