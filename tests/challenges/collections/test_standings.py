"""The collection ranking (challenges/collections/standings.py), without a database,
against the brute force of ``reference``: every strategy, players missing challenges,
best attempts that do not count, ties on value and time."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from challenges.collections.standings import STRATEGIES, BoardRow, Cell, standings_rank
from tests.challenges.collections.reference import Best, reference_standings

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _rows(board: dict[str, Best]) -> list[BoardRow]:
    return [
        BoardRow(
            p,
            f"Name {p}",
            Cell(
                rank=1,
                score=b.score,
                attempt_id=1,
                created_at=b.created_at,
                succeeded=b.succeeded,
                elapsed_ms=b.elapsed_ms,
                tokens_total=b.tokens_total,
                rating=b.rating,
            ),
        )
        for p, b in board.items()
    ]


def ranked(strategy: str, boards: list[dict[str, Best]]) -> list[tuple[int, str, float, int]]:
    found = standings_rank(strategy=strategy, boards=[_rows(b) for b in boards])
    return [(s.rank, s.player, s.value, s.completed) for s in found]


def best(score=0.0, at=0, succeeded=True, elapsed_ms=None, tokens_total=None, rating=None):
    return Best(score, T0 + timedelta(seconds=at), succeeded, elapsed_ms, tokens_total, rating)


# Few distinct values and times, so ties on value and on time are common.
_best = st.builds(
    Best,
    score=st.sampled_from([0.0, 0.1, 0.2, 0.3, 1.5, 2.0, 1e-9, 100.0]),
    created_at=st.integers(0, 3).map(lambda s: T0 + timedelta(seconds=s)),
    succeeded=st.booleans(),
    elapsed_ms=st.one_of(st.none(), st.integers(0, 4)),
    tokens_total=st.one_of(st.none(), st.integers(0, 4)),
    rating=st.one_of(st.none(), st.integers(0, 10)),
)
_boards = st.lists(
    st.dictionaries(st.sampled_from("abcdefg"), _best, max_size=7), min_size=1, max_size=4
)


@pytest.mark.parametrize("strategy", STRATEGIES)
@settings(max_examples=150, deadline=None)
@given(boards=_boards)
def test_every_strategy_matches_the_brute_force(strategy, boards):
    found = ranked(strategy, boards)
    expected = reference_standings(strategy, boards)
    assert [(r, p, c) for r, p, _, c in found] == [(r, p, c) for r, p, _, c in expected]
    for (_, _, value, _), (_, _, exact, _) in zip(found, expected, strict=True):
        assert math.isclose(value, exact, rel_tol=1e-12, abs_tol=1e-12)


def test_more_challenges_completed_rank_first_whatever_the_values():
    boards = [
        {"fast": best(elapsed_ms=1), "slow": best(elapsed_ms=9_000)},
        {"slow": best(elapsed_ms=9_000)},
    ]
    # "slow" completed both: ahead of "fast", who completed one, although far slower.
    assert ranked("fastest_total", boards) == [
        (1, "slow", 18_000.0, 2),
        (2, "fast", 1.0, 1),
    ]


def test_a_failed_best_attempt_does_not_count_for_the_totals():
    boards = [{"a": best(succeeded=False, elapsed_ms=5, tokens_total=5, rating=9, score=3.0)}]
    assert ranked("fastest_total", boards) == []
    assert ranked("fewest_tokens_total", boards) == []
    assert ranked("highest_avg_rating", boards) == []
    assert ranked("sum", boards) == [(1, "a", 3.0, 1)]  # a board value counts as it is


def test_average_rating_is_over_completed_challenges_only():
    boards = [
        {"a": best(rating=8), "b": best(rating=6)},
        {"a": best(rating=4), "b": best(succeeded=False, rating=10)},
        {"b": best(rating=None)},
    ]
    assert ranked("highest_avg_rating", boards) == [(1, "a", 6.0, 2), (2, "b", 6.0, 1)]


def test_equal_values_the_earlier_completion_first_and_only_full_ties_share():
    boards = [
        {"a": best(tokens_total=5, at=3), "b": best(tokens_total=5, at=1)},
        {"c": best(tokens_total=5, at=1)},
    ]
    assert ranked("fewest_tokens_total", boards) == [
        (1, "b", 5.0, 1),
        (1, "c", 5.0, 1),
        (3, "a", 5.0, 1),
    ]


def test_the_sum_is_exact_in_any_member_order():
    boards = [{"a": best(score=0.1)}, {"a": best(score=0.2)}, {"a": best(score=0.3)}]
    forward = ranked("sum", boards)
    backward = ranked("sum", boards[::-1])
    assert forward == backward == [(1, "a", 0.6, 3)]


def test_an_unknown_strategy_is_refused():
    with pytest.raises(ValueError, match="Unknown collection strategy"):
        standings_rank(strategy="median", boards=[])


def test_sums_a_rounding_apart_are_a_tie_on_value():
    """0.1 + 0.3 and 0.2 + 0.2 differ exactly but are one float: tied on value, so the
    earlier completion ranks first (hypothesis found the brute force ranking them apart)."""
    boards = [{"a": best(0.1, at=1), "b": best(0.2, at=2)}, {"a": best(0.3, at=1), "b": best(0.2)}]
    assert ranked("sum", boards) == [(1, "a", 0.4, 2), (2, "b", 0.4, 2)]
    assert ranked("sum", boards) == reference_standings("sum", boards)
