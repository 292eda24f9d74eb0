"""Scoring engine throughput, each figure beside its reference measured in the same run.

- weighted scorer through the runner (failure rules, details, clamping) vs the bare
  formula in a Python loop: the cost of the safety net;
- the same scorer isolated in a scorer process (how third-party plugins run), batched,
  vs in-process, and vs the naive way (one round-trip per attempt).

Medians over repeats; run: .venv/bin/python bench/engine.py [--n 20000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scoring.engine.protocol import AttemptMetrics, ScoringContext
from scoring.engine.registry import WEIGHTED_ENTRYPOINT, builtin_registry
from scoring.engine.runner import ScoringSetup, build_scorer

CONFIG = {"success_bonus": 100.0, "rating_weight": 15.0, "time_penalty": 0.5, "token_penalty": 0.02}


def make_items(n: int) -> list[tuple[AttemptMetrics, ScoringContext]]:
    rng = random.Random(1)
    ctx = ScoringContext(challenge_id=1)
    return [
        (
            AttemptMetrics(
                succeeded=rng.random() < 0.6,
                tokens_total=rng.choice([None, rng.randint(0, 5000)]),
                elapsed_ms=rng.randint(0, 120_000),
                rating=rng.choice([None, rng.randint(0, 10)]),
                created_at=1_700_000_000_000 + i,
            ),
            ctx,
        )
        for i in range(n)
    ]


def bare_formula(items) -> list[float]:
    c = CONFIG
    out = []
    for m, _ in items:
        total = (
            (c["success_bonus"] if m.succeeded else 0.0)
            + (m.rating or 0) * c["rating_weight"]
            - (m.elapsed_ms or 0) / 1000.0 * c["time_penalty"]
            - (m.tokens_total or 0) * c["token_penalty"]
        )
        out.append(max(total, 0.0))
    return out


def median_rate(fn, n: int, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return n / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    items = make_items(args.n)
    registry = builtin_registry()
    registry.register("bench.weighted_isolated", WEIGHTED_ENTRYPOINT)  # not builtin: isolated
    in_process = build_scorer(
        ScoringSetup("custom", "builtin.weighted_scorer", config=CONFIG), registry
    )
    isolated = build_scorer(
        ScoringSetup("custom", "bench.weighted_isolated", config=CONFIG), registry
    )
    isolated.score_many(items[:10])  # start the scorer process outside the timing

    expected = bare_formula(items)
    assert [o.score for o in in_process.score_many(items)] == expected
    assert [o.score for o in isolated.score_many(items)] == expected

    naive_n = min(args.n, 2_000)
    rates = {
        "bare formula (reference)": median_rate(lambda: bare_formula(items), args.n, args.repeats),
        "runner, in-process": median_rate(
            lambda: in_process.score_many(items), args.n, args.repeats
        ),
        "runner, isolated, batched": median_rate(
            lambda: isolated.score_many(items), args.n, args.repeats
        ),
        "isolated, one call per attempt (naive)": median_rate(
            lambda: [isolated.score_many([item]) for item in items[:naive_n]],
            naive_n,
            args.repeats,
        ),
    }
    print(f"attempts: {args.n}, repeats: {args.repeats} (median)")
    for name, rate in rates.items():
        print(f"  {name:40s} {rate:12,.0f} attempts/s")
    bare = rates["bare formula (reference)"]
    print(f"ratio runner in-process / bare formula:      {rates['runner, in-process'] / bare:.2f}")
    print(
        "ratio isolated batched / in-process:         "
        f"{rates['runner, isolated, batched'] / rates['runner, in-process']:.2f}"
    )
    naive = rates["isolated, one call per attempt (naive)"]
    print(
        "ratio isolated batched / one call per attempt: "
        f"{rates['runner, isolated, batched'] / naive:.1f}"
    )


if __name__ == "__main__":
    main()
