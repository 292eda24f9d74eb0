"""Name search (``?q=``): the same answer whichever plan serves it (one letter through
the letters index on PostgreSQL, longer text through the trigram index or the rank
order)."""

from __future__ import annotations

import pytest

from challenges.leaderboards import selectors
from challenges.models import Challenge
from tests.factories import attempt_input, make_challenge, record

pytestmark = pytest.mark.django_db

NAMES = ["Quinn", "anna", "Bob", "qat", "Émile", "émeric", "Zed_q", "Ann-Marie", "Jo"]


@pytest.fixture
def board() -> Challenge:
    challenge = make_challenge(scoring_strategy="fastest")
    record(
        challenge,
        *(
            attempt_input(f"p{i}", player_name=name, elapsed_ms=10 * (i + 1))
            for i, name in enumerate(NAMES)
        ),
    )
    challenge.refresh_from_db()
    return challenge


def _search(challenge: Challenge, text: str) -> list[str]:
    found = selectors.board_page(challenge=challenge, query=text)
    assert [r.rank for r in found.rows] == sorted(r.rank for r in found.rows)
    return [r.display_name for r in found.rows]


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("q", ["Quinn", "qat", "Zed_q"]),  # a rare letter, any case, in rank order
        ("Q", ["Quinn", "qat", "Zed_q"]),
        ("n", ["Quinn", "anna", "Ann-Marie"]),
        ("x", []),  # a letter nobody has
        ("-", ["Ann-Marie"]),
        ("_", ["Zed_q"]),
        ("an", ["anna", "Ann-Marie"]),
        ("ann", ["anna", "Ann-Marie"]),
        ("nobody at all", []),
    ],
)
def test_search_finds_every_match_in_rank_order(board, text, names):
    assert _search(board, text) == names


def test_one_non_ascii_letter(board):
    # PostgreSQL's UPPER and Python's differ on some letters: compare with the database's
    # own LIKE rather than assume a case mapping.
    assert set(_search(board, "é")) <= {"Émile", "émeric"}
    assert "émeric" in _search(board, "é")


def test_search_ranks_match_a_brute_force_with_ties_across_pages(db):
    challenge = make_challenge(scoring_strategy="fastest")
    # 260 players over six pages, in tie groups of equal time and creation second that
    # straddle the checkpoints.
    record(
        challenge,
        *(
            attempt_input(f"p{i}", player_name=f"Name {i}", elapsed_ms=i // 7, created_at=i % 2)
            for i in range(260)
        ),
    )
    challenge.refresh_from_db()
    keys = {f"Name {i}": (i // 7, i % 2) for i in range(260)}
    expected = {name: 1 + sum(k < key for k in keys.values()) for name, key in keys.items()}
    for text in ["Name 1", "5", "Name 2", "9", "Name 25", "Name 4", "3"]:
        found = selectors.board_page(challenge=challenge, query=text).rows
        assert found, text
        assert {r.display_name: r.rank for r in found} == {
            r.display_name: expected[r.display_name] for r in found
        }, text


def test_both_ways_of_ranking_keys_agree_with_a_brute_force(db):
    from challenges.leaderboards import ranking as R
    from challenges.models import LeaderboardEntry

    challenge = make_challenge(scoring_strategy="fastest")
    record(
        challenge,
        *(attempt_input(f"p{i}", elapsed_ms=i // 5, created_at=i % 3) for i in range(230)),
    )
    version_id = challenge.active_version_id
    ranking = R.ranking_current(version_id=version_id)
    rows = list(
        LeaderboardEntry.objects.filter(version_id=version_id).values_list(
            "sort_key", "created_at", "attempt_id"
        )
    )
    keys = [(s, R.to_us(c), a) for s, c, a in rows]
    expected = {k: 1 + sum(o[:2] < k[:2] for o in keys) for k in keys}
    for chosen in (keys, keys[::37], keys[:60]):
        assert selectors._ranks_by_ranges(ranking, chosen) == {k: expected[k] for k in chosen}
        assert selectors._ranks_of(ranking, chosen) == {k: expected[k] for k in chosen}
