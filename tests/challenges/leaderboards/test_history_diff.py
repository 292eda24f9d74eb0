"""History records' arithmetic (no database): Kendall's tau-b against scipy, and a board
diff against a brute force over every pair of players."""

from __future__ import annotations

import itertools
import random

import pytest
from scipy.stats import kendalltau

from challenges.leaderboards import history


def brute_ranks(rows):
    keys = [(k, t) for _, k, t in rows]
    return {p: 1 + sum(1 for other in keys if other < (k, t)) for p, k, t in rows}


def brute_tau_b(pairs):
    concordant = discordant = x_only = y_only = 0
    for (x1, y1), (x2, y2) in itertools.combinations(pairs, 2):
        dx, dy = x1 - x2, y1 - y2
        if dx and dy:
            if (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
        elif dx:
            x_only += 1
        elif dy:
            y_only += 1
    denominator = ((concordant + discordant + x_only) * (concordant + discordant + y_only)) ** 0.5
    return (concordant - discordant) / denominator if denominator else None


@pytest.mark.parametrize("seed", range(40))
def test_tau_b_equals_scipy_with_and_without_ties(seed):
    rng = random.Random(seed)
    n = rng.randint(2, 400)
    spread = rng.choice([3, 10, n * 2])  # many ties, some, almost none
    pairs = [(rng.randint(1, spread), rng.randint(1, spread)) for _ in range(n)]
    mine = history.kendall_tau_b(pairs)
    expected = kendalltau([x for x, _ in pairs], [y for _, y in pairs]).statistic
    if expected != expected:  # nan: a constant side
        assert mine is None
    else:
        assert mine == pytest.approx(expected, abs=1e-12)
        assert mine == pytest.approx(brute_tau_b(pairs), abs=1e-12)


def test_tau_b_of_fewer_than_two_or_constant_is_none():
    assert history.kendall_tau_b([]) is None
    assert history.kendall_tau_b([(1, 1)]) is None
    assert history.kendall_tau_b([(1, 1), (1, 2)]) is None
    assert history.kendall_tau_b([(1, 2), (2, 1)]) == -1.0


def board(rng, players, ties):
    rows = [(p, float(rng.randint(0, ties)), rng.randint(0, 3)) for p in players]
    return sorted(rows, key=lambda r: (r[1], r[2], r[0]))


@pytest.mark.parametrize("seed", range(20))
def test_diff_equals_a_brute_force(seed):
    rng = random.Random(seed)
    universe = list(range(1, rng.randint(3, 60)))
    before = board(rng, rng.sample(universe, rng.randint(0, len(universe))), rng.choice([2, 50]))
    after = board(rng, rng.sample(universe, rng.randint(0, len(universe))), rng.choice([2, 50]))
    old, new = brute_ranks(before), brute_ranks(after)
    both = [p for p in new if p in old]
    diff = history.board_diff(before, after)

    assert (diff.players_before, diff.players_after) == (len(old), len(new))
    assert diff.moved == sum(1 for p in both if old[p] != new[p])
    entered = {p for p in new if new[p] <= 10 and not (p in old and old[p] <= 10)}
    left = {p for p in old if old[p] <= 10 and not (p in new and new[p] <= 10)}
    assert {e[0] for e in diff.entered_top} == entered
    assert {e[0] for e in diff.left_top} == left
    assert all(e[1] == old.get(e[0]) and e[2] == new[e[0]] for e in diff.entered_top)
    moves = sorted((abs(old[p] - new[p]) for p in both if old[p] != new[p]), reverse=True)
    assert [abs(b - a) for _, b, a in diff.largest_moves] == moves[:10]
    expected = brute_tau_b([(old[p], new[p]) for p in both])
    if expected is None:
        assert diff.kendall_tau is None
    else:
        assert diff.kendall_tau == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("block", [1, 2, 3, 16])
def test_tau_b_merge_passes_equal_scipy(monkeypatch, block):
    """Small blocks: the merge passes between blocks do most of the counting."""
    monkeypatch.setattr(history, "SWAP_BLOCK", block)
    rng = random.Random(block)
    for n in (3, 5, 17, 64, 301):
        pairs = [(i % 7, rng.randint(1, n)) for i in range(n - 1)] + [(8, n + 1)]
        expected = kendalltau([x for x, _ in pairs], [y for _, y in pairs]).statistic
        assert history.kendall_tau_b(pairs) == pytest.approx(expected, abs=1e-12)


def test_tau_b_of_a_large_board_equals_scipy():
    rng = random.Random(7)
    n = 20_000  # several blocks of SWAP_BLOCK
    ys = list(range(1, n + 1))
    rng.shuffle(ys)
    pairs = [(i // 3 + 1, y if rng.random() < 0.9 else 1) for i, y in enumerate(ys)]
    expected = kendalltau([x for x, _ in pairs], [y for _, y in pairs]).statistic
    assert history.kendall_tau_b(pairs) == pytest.approx(expected, abs=1e-12)
