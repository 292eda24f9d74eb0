"""Evaluation-board intervals on 1,000,000 attempts (500 players × 2,000 items), B = 1000.

Measures ``scoring.engine.uncertainty.board_intervals`` end to end (canonical order, seed,
per-player statistics, the paired bootstrap, percentile intervals, replicate ranks, rank
intervals, tiers) beside its floor measured in the same run: the one matrix product the
paired bootstrap cannot avoid (B × items by items × players). Then the same board at
half the players, half the items and half of B, to show how the cost grows.

Target: the full board in at most 10 s (median of the repeats). Exits non-zero if missed.
Run: .venv/bin/python bench/uncertainty.py [--players 500] [--items 2000] [--samples 1000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scoring.engine.uncertainty import IntervalSetup, board_intervals

TARGET_S = 10.0


def make_board(players: int, items: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    rng = np.random.default_rng(29)
    skill = rng.uniform(0.2, 0.9, players)
    values = (rng.random((players, items)) < skill[:, None]).astype(float).ravel()
    who = np.repeat(np.arange(players), items)
    names = [f"item-{i:05d}" for i in range(items)] * players
    return who, values, names


def run(players: int, items: int, samples: int) -> float:
    who, values, names = make_board(players, items)
    setup = IntervalSetup(samples=samples)
    start = time.perf_counter()
    result = board_intervals(players=who, values=values, items=names, setup=setup, salt="bench")
    elapsed = time.perf_counter() - start
    assert len(result.rows) == players and result.paired
    return elapsed


def floor(players: int, items: int, samples: int) -> float:
    rng = np.random.default_rng(1)
    weights = rng.integers(0, 3, (samples, items)).astype(float)
    sums = rng.random((players, items))
    start = time.perf_counter()
    _ = weights @ sums.T
    _ = weights @ sums.T  # the mean's counts: a second product of the same size
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--players", type=int, default=500)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    p, k, b = args.players, args.items, args.samples
    print(f"{p * k:,} attempts: {p} players × {k} items, B = {b}, {args.repeats} repeats")
    ours = statistics.median(run(p, k, b) for _ in range(args.repeats))
    bare = statistics.median(floor(p, k, b) for _ in range(args.repeats))
    print(f"board_intervals      median {ours:6.2f} s   (target ≤ {TARGET_S:.0f} s)")
    print(f"two bare matmuls     median {bare:6.2f} s   ratio {ours / bare:.2f}×")
    print("growth (one run each):")
    for label, (pp, kk, bb) in {
        "half the players": (p // 2, k, b),
        "half the items": (p, k // 2, b),
        "half of B": (p, k, b // 2),
    }.items():
        print(f"  {label:18s} {run(pp, kk, bb):6.2f} s")
    if ours > TARGET_S:
        print(f"MISSED: {ours:.2f} s > {TARGET_S:.0f} s")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
