"""Python snippet throughput: the pool of long-lived sandbox workers vs one fresh
sandboxed process per attempt, side by side in one run.

- pool: ``SnippetScorer.score_many`` over N attempts with a trivial snippet, the whole
  path (attempts encoded, batches of about 1,000 through the sandbox workers, every
  answer checked against the contract and turned into an outcome);
- fresh: the same snippet and sandbox, but a new worker process (bubblewrap, interpreter,
  filters) for every attempt, as a naive implementation would.

Rounds alternate the two; the medians of their rates and the ratio are printed.

- batch: one ``python_batch`` scorer (the rank-normalised answer length of the batch
  tests) over growing batches through the same sandbox (one ``compute_batch_scores``
  call per worker, every answer checked): attempts/s and the largest batch that ran
  within the 60 s ceiling and the 1 GB memory limit (``--batch`` sizes).

- spread: a 40 ms snippet over ``--spread`` attempts in a rescore's slices of 25, on a
  pool whose per-program cap is 1 and on one whose cap is 2: the run spreads over every
  worker its program may hold (target: within 0.9 of the ideal on 2 workers).

Run: .venv/bin/python bench/snippet.py [--n 100000] [--fresh 20] [--rounds 5]
     [--batch 10000,50000,100000,200000] [--spread 400]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scoring import sandbox
from scoring.engine.protocol import AttemptMetrics, ScoringContext
from scoring.engine.snippet import AttemptPayload, SnippetScorer, SnippetSetup
from scoring.sandbox import launch
from scoring.sandbox.pool import SandboxPool

TRIVIAL = "def compute_scores(sample):\n    return {'score': 1.0}\n"
TARGET_RATE = 50_000
TARGET_RATIO = 500


def attempts(n: int):
    ctx = ScoringContext(challenge_id=1)
    items = [
        (AttemptMetrics(True, 100 + i % 50, 2000, 7, 1_700_000_000_000 + i), ctx) for i in range(n)
    ]
    payloads = [
        AttemptPayload(json.dumps({"question": f"q{i % 97}", "answer": "42"})) for i in range(n)
    ]
    return items, payloads


def scorer(pool, owner: str) -> SnippetScorer:
    return SnippetScorer(SnippetSetup(TRIVIAL, {}, "score", 5000, owner), pool)


def pool_rate(pool, items, payloads) -> float:
    started = time.perf_counter()
    outcomes = scorer(pool, "bench").score_many(items, payloads)
    took = time.perf_counter() - started
    assert all(o.score == 1.0 for o in outcomes), outcomes[:3]
    return len(items) / took


def fresh_rate(mode: str, interp, items, payloads) -> float:
    started = time.perf_counter()
    for item, payload in zip(items, payloads, strict=True):
        pool = SandboxPool(mode, interp, size=1)
        [outcome] = scorer(pool, "fresh").score_many([item], [payload])
        pool.close()
        assert outcome.score == 1.0, outcome
    return len(items) / (time.perf_counter() - started)


RANK_NORMALISED = """\
from bisect import bisect_left


def compute_batch_scores(samples):
    lengths = [len(s.get("answer", "")) for s in samples]
    ordered = sorted(lengths)
    top = max(len(lengths) - 1, 1)
    return [{"rank_norm": bisect_left(ordered, n) / top} for n in lengths]
"""


def batch_line(pool, sizes: list[int]) -> None:
    """attempts/s of a batch scorer per batch size, and the largest batch that ran."""
    from scoring.engine.shims import batch_results

    largest, rates = 0, []
    for n in sizes:
        samples = [{"answer": "x" * (i % 200), "question": f"q{i % 97}"} for i in range(n)]
        started = time.perf_counter()
        results = batch_results(
            code=RANK_NORMALISED,
            config={},
            samples=samples,
            outputs=[],
            owner=f"bench batch {n}",
            timeout_ms=60_000,
            score_key="rank_norm",
            sandbox=pool,
        )
        took = time.perf_counter() - started
        failed = [r.outcome.error for r in results if r.outcome.error]
        if failed:
            print(f"batch of {n:>9,}: failed in {took:.1f} s: {failed[0][:120]}")
            break
        largest = n
        rates.append((n, n / took))
        print(f"batch of {n:>9,}: {took:6.2f} s, {n / took:>10,.0f} attempts/s")
    print(
        f"batch scorer: largest batch measured {largest:,} attempts"
        + (f", {rates[-1][1]:,.0f} attempts/s at that size" if rates else "")
    )


SLOW = (
    "import time\ndef compute_scores(sample):\n    time.sleep({s})\n    return {{'score': 1.0}}\n"
)
RESCORE_SLICE = 25  # a rescore's batch of a 40 ms snippet (about 1 s of scoring)
TARGET_SPREAD = 0.9  # the spread run over its ideal (n × sleep / cap)


def spread_line(mode: str, interp, n: int, sleep_ms: int, rounds: int) -> None:
    """A slow snippet (``sleep_ms`` per attempt) scored in the rescore's slices on a pool
    whose cap is 1 (everything on one worker) and on one whose cap is 2 (this machine's
    pool: a worker per core plus the spare slot), alternating; each beside its ideal."""
    items, payloads = attempts(n)
    code = SLOW.format(s=sleep_ms / 1000)
    took: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(rounds):
        for cap in (1, 2):
            pool = SandboxPool(mode, interp, size=cap + 1)
            run = SnippetScorer(SnippetSetup(code, {}, "score", 5000, "spread"), pool)
            run.score_many(items[:4], payloads[:4])  # the workers start
            started = time.perf_counter()
            for at in range(0, n, RESCORE_SLICE):
                cut = slice(at, at + RESCORE_SLICE)
                outcomes = run.score_many(items[cut], payloads[cut])
                assert all(o.score == 1.0 for o in outcomes), outcomes[:3]
            took[cap].append(time.perf_counter() - started)
            pool.close()
    one, two = statistics.median(took[1]), statistics.median(took[2])
    ideal = n * sleep_ms / 1000 / 2
    print(
        f"spread: {n} attempts x {sleep_ms} ms in slices of {RESCORE_SLICE}: cap 1 {one:.2f} s, "
        f"cap 2 {two:.2f} s ({one / two:.2f}x faster); ideal on 2 workers {ideal:.2f} s, "
        f"ratio ideal / cap 2 {ideal / two:.2f} (target >= {TARGET_SPREAD})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="attempts per pool round")
    parser.add_argument("--fresh", type=int, default=20, help="attempts per fresh round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--spread", type=int, default=400, help="slow attempts (0: skip)")
    parser.add_argument(
        "--batch", default="10000,50000,100000,200000", help="batch sizes (empty: skip)"
    )
    args = parser.parse_args()

    found = sandbox.availability()
    if not found.available:
        sys.exit(found.message)
    pool = sandbox.shared_pool()
    interp = launch.interpreter()
    items, payloads = attempts(args.n)
    pool_rate(pool, items[:2000], payloads[:2000])  # warm: the workers start once

    pooled, fresh = [], []
    for _ in range(args.rounds):
        pooled.append(pool_rate(pool, items, payloads))
        fresh.append(fresh_rate(found.mode, interp, items[: args.fresh], payloads[: args.fresh]))
    pool_median, fresh_median = statistics.median(pooled), statistics.median(fresh)
    ratio = pool_median / fresh_median
    print(f"sandbox mode: {found.mode}, {pool.size} workers, {args.rounds} rounds")
    print(
        f"pool of long-lived workers: {pool_median:>10,.0f} attempts/s "
        f"(median; target ≥ {TARGET_RATE:,})"
    )
    print(f"fresh process per attempt:  {fresh_median:>10,.1f} attempts/s (median)")
    print(f"ratio pool / fresh:         {ratio:>10,.0f}x (target ≥ {TARGET_RATIO}x)")
    print("rounds (pool):  " + ", ".join(f"{r:,.0f}" for r in pooled))
    print("rounds (fresh): " + ", ".join(f"{r:,.1f}" for r in fresh))
    if args.batch:
        batch_line(pool, [int(n) for n in args.batch.split(",")])
    if args.spread:
        spread_line(found.mode, interp, args.spread, 40, 3)


if __name__ == "__main__":
    main()
