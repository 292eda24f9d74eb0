"""Evaluation-board intervals (scoring/engine/uncertainty.py), checked from outside:
scipy's percentile bootstrap on the same resamples, coverage on simulated players with
known accuracies, the tier rule and rank intervals on random boards, pairing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from scoring.engine.uncertainty import IntervalSetup, board_intervals, tiers


def board(players, values, items=None, reached=None, **setup):
    return board_intervals(
        players=players,
        values=values,
        items=items,
        reached=reached,
        setup=IntervalSetup(**setup),
        salt="c1:v1",
    )


def by_player(result):
    return {row.player: row for row in result.rows}


@pytest.mark.parametrize("aggregate,statistic", [("mean", np.mean), ("sum", np.sum)])
@pytest.mark.parametrize("level", [0.95, 0.8])
def test_paired_interval_equals_scipy_on_the_same_resamples(aggregate, statistic, level):
    rng = np.random.default_rng(7)
    k = 60
    names = [f"q{i:03d}" for i in range(k)]  # sorted as the engine orders items
    x = rng.normal(3.0, 2.0, k)
    result = board([1] * k, x, items=names, aggregate=aggregate, ci_level=level, samples=400)
    row = result.rows[0]
    ref = stats.bootstrap(
        (x,),
        statistic,
        n_resamples=400,
        method="percentile",
        confidence_level=level,
        rng=np.random.default_rng(result.seed),
        vectorized=True,
    )
    assert result.paired
    assert row.ci_low == pytest.approx(ref.confidence_interval.low, abs=1e-9)
    assert row.ci_high == pytest.approx(ref.confidence_interval.high, abs=1e-9)


def test_unpaired_interval_equals_scipy_per_player():
    rng = np.random.default_rng(8)
    players = [10] * 30 + [20] * 45
    values = rng.normal(0, 1, 75)
    result = board(players, values, samples=300)
    assert not result.paired
    rows = by_player(result)
    for index, (player, own) in enumerate(((10, values[:30]), (20, values[30:]))):
        ref = stats.bootstrap(
            (np.sort(own),),  # the engine orders a player's attempts by value
            np.mean,
            n_resamples=300,
            method="percentile",
            rng=np.random.default_rng([result.seed, index]),
            vectorized=True,
        )
        assert rows[player].ci_low == pytest.approx(ref.confidence_interval.low, abs=1e-9)
        assert rows[player].ci_high == pytest.approx(ref.confidence_interval.high, abs=1e-9)


def test_coverage_of_bernoulli_players_is_near_the_level():
    rng = np.random.default_rng(2026)
    count, k = 2000, 200
    truth = rng.uniform(0.2, 0.8, count)
    outcomes = (rng.random((count, k)) < truth[:, None]).astype(float)
    players = np.repeat(np.arange(count), k)
    items = [f"item-{i:03d}" for i in range(k)] * count
    result = board(players, outcomes.ravel(), items=items, samples=1000)
    rows = by_player(result)
    covered = sum(rows[p].ci_low <= truth[p] <= rows[p].ci_high for p in range(count))
    assert 0.93 <= covered / count <= 0.97


boards = st.lists(
    st.tuples(
        st.integers(0, 7),  # player
        st.integers(0, 5),  # item
        st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.5]),  # value: ties are likely
        st.integers(0, 3),  # time
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(rows=boards, paired=st.booleans(), higher=st.booleans(), minimum=st.integers(1, 3))
def test_tier_rule_and_rank_interval_hold_on_random_boards(rows, paired, higher, minimum):
    players, items, values, times = zip(*rows, strict=True)
    result = board(
        players,
        values,
        items=[f"i{item}" for item in items] if paired else None,
        reached=times,
        samples=100,
        min_attempts=minimum,
        higher_is_better=higher,
    )
    ranked = [row for row in result.rows if row.rank is not None]
    for row in ranked:
        assert row.rank_low <= row.rank <= row.rank_high
        assert row.ci_low <= row.ci_high
        if higher:
            better = sum(other.ci_low > row.ci_high for other in ranked)
        else:
            better = sum(other.ci_high < row.ci_low for other in ranked)
        assert row.tier == 1 + better
    for row in result.rows:
        assert (row.rank is None) == (row.n < minimum)
    # the tie rule: by score, then the earlier latest attempt; equal in both share a rank
    sign = 1 if higher else -1
    for a in ranked:
        ahead = [b for b in ranked if (sign * b.score, -b.reached) > (sign * a.score, -a.reached)]
        assert a.rank == 1 + len(ahead)


def test_paired_identical_players_get_identical_intervals():
    rng = np.random.default_rng(3)
    k = 80
    answers = (rng.random(k) < 0.6).astype(float)
    other = (rng.random(k) < 0.4).astype(float)
    items = [f"q{i}" for i in range(k)]
    result = board([1] * k + [2] * k + [3] * k, [*answers, *answers, *other], items=items * 3)
    rows = by_player(result)
    assert (rows[1].ci_low, rows[1].ci_high) == (rows[2].ci_low, rows[2].ci_high)
    assert (rows[1].rank_low, rows[1].rank_high) == (rows[2].rank_low, rows[2].rank_high)
    assert rows[1].ci_low < rows[1].ci_high


def test_the_same_data_in_any_order_gives_the_same_numbers():
    rng = np.random.default_rng(4)
    players = rng.integers(0, 20, 500)
    values = rng.random(500)
    items = [f"i{i % 37}" for i in range(500)]
    first = board(players, values, items=items)
    shuffle = rng.permutation(500)
    second = board(players[shuffle], values[shuffle], items=[items[i] for i in shuffle])
    assert first == second
    other_salt = board_intervals(
        players=players, values=values, items=items, setup=IntervalSetup(), salt="c1:v2"
    )
    assert other_salt.seed != first.seed


def test_min_attempts_lists_the_player_unranked_without_an_interval():
    result = board([1, 1, 1, 2], [1.0, 0.0, 1.0, 1.0], min_attempts=2)
    rows = by_player(result)
    assert rows[1].rank == 1 and rows[1].tier == 1
    assert rows[2].rank is None and rows[2].ci_low is None and rows[2].n == 1
    assert result.rows[-1].player == 2


def test_sum_and_mean_statistics_and_counts():
    result = board([1, 1, 2], [2.0, 4.0, 5.0], aggregate="sum")
    rows = by_player(result)
    assert (rows[1].score, rows[1].n, rows[2].score) == (6.0, 2, 5.0)
    assert rows[1].rank == 1
    mean = by_player(board([1, 1, 2], [2.0, 4.0, 5.0]))
    assert mean[1].score == 3.0 and mean[2].rank == 1


def test_a_player_missing_from_some_items_is_computed_over_their_own_items():
    # player 2 answered only item a: every replicate without a is NaN for them, ignored
    result = board([1, 1, 2], [1.0, 0.0, 1.0], items=["a", "b", "a"])
    rows = by_player(result)
    assert rows[2].ci_low == rows[2].ci_high == 1.0
    assert 0.0 <= rows[1].ci_low <= rows[1].ci_high <= 1.0


def test_separable_players_are_in_different_tiers():
    k = 200
    items = [f"q{i}" for i in range(k)]
    strong = [1.0] * 190 + [0.0] * 10
    weak = [1.0] * 60 + [0.0] * 140
    result = board([1] * k + [2] * k, strong + weak, items=items * 2)
    rows = by_player(result)
    assert (rows[1].tier, rows[2].tier) == (1, 2)
    assert (rows[1].rank_low, rows[1].rank_high, rows[2].rank_low) == (1, 1, 2)


def test_tiers_lower_is_better_mirror_the_rule():
    low = np.array([1.0, 2.0, 5.0])
    high = np.array([1.5, 4.0, 6.0])
    assert tiers(low, high).tolist() == [3, 2, 1]
    assert tiers(low, high, higher_is_better=False).tolist() == [1, 2, 3]


@pytest.mark.parametrize(
    "setup",
    [
        {"aggregate": "median"},
        {"ci_level": 1.0},
        {"ci_level": 0.0},
        {"samples": 0},
        {"min_attempts": 0},
    ],
)
def test_a_bad_setup_is_refused(setup):
    with pytest.raises(ValueError):
        IntervalSetup(**setup)


def test_non_finite_values_are_refused():
    with pytest.raises(ValueError, match="finite"):
        board([1], [float("nan")])


def test_an_empty_board_is_empty():
    result = board([], [])
    assert result.rows == [] and result.attempts == 0


def test_the_worked_example_of_the_docs_holds():
    """docs/ranking.md, "A worked example": challenge 7, version 2, the whole board."""
    answers = {
        1: "1111011111",  # Ada
        2: "1101011011",  # Bo
        3: "0100010010",  # Cy
    }
    players, values, items = [], [], []
    for player, row in answers.items():
        for i, mark in enumerate(row, start=1):
            players.append(player)
            values.append(float(mark))
            items.append(f"q{i:02d}")
    result = board_intervals(
        players=players, values=values, items=items, setup=IntervalSetup(), salt="7:2:"
    )
    table = [
        (r.score, r.n, r.ci_low, r.ci_high, r.rank, r.rank_low, r.rank_high, r.tier)
        for r in result.rows
    ]
    assert table == [
        (0.9, 10, 0.7, 1.0, 1, 1, 1, 1),
        (0.7, 10, 0.4, 0.9, 2, 1, 2, 1),
        (0.3, 10, 0.0, 0.6, 3, 3, 3, 2),
    ]


@pytest.mark.parametrize("aggregate", ["mean", "sum"])
def test_the_sparse_path_gives_the_dense_paths_numbers(monkeypatch, aggregate):
    """A board too wide for dense tables (many items, few per player) is computed by
    weighing attempts instead: the same draws, the same numbers."""
    from scoring.engine import uncertainty

    rng = np.random.default_rng(11)
    players = rng.integers(0, 15, 400)
    items = [f"i{x}" for x in rng.integers(0, 90, 400)]  # gaps and repeats per player
    values = rng.normal(0, 1, 400)
    dense = board(players, values, items=items, aggregate=aggregate, samples=300)
    monkeypatch.setattr(uncertainty, "DENSE_CELLS_MAX", 0)
    sparse = board(players, values, items=items, aggregate=aggregate, samples=300)
    for a, b in zip(dense.rows, sparse.rows, strict=True):
        assert (a.player, a.rank, a.rank_low, a.rank_high, a.tier) == (
            b.player,
            b.rank,
            b.rank_low,
            b.rank_high,
            b.tier,
        )
        assert a.ci_low == pytest.approx(b.ci_low, abs=1e-12)
        assert a.ci_high == pytest.approx(b.ci_high, abs=1e-12)
