"""Evaluation-board intervals on 1,000,000 attempts (500 players × 2,000 items), B = 1000.

Measures ``scoring.engine.uncertainty.board_intervals`` end to end (canonical order, seed,
per-player statistics, the paired bootstrap, percentile intervals, replicate ranks, rank
intervals, tiers) beside its floor measured in the same run: the one matrix product the
paired bootstrap cannot avoid (B × items by items × players). Then the same board at
half the players, half the items and half of B, to show how the cost grows.

Target: the full board in at most 10 s (median of the repeats). Exits non-zero if missed.
Run: .venv/bin/python bench/uncertainty.py [--players 500] [--items 2000] [--samples 1000]

``--reads`` measures the Django side instead, on PostgreSQL (BENCH_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/podium_bench_uncertainty: dropped and recreated): an
aggregate board of 100 players × 1,000 items with 4 slices (100,000 attempts, loaded by
COPY), the worker's computation through ``evaluation_compute`` (reading the attempts
included), then in-process requests (Django's test client) of the API leaderboard, the
page, a slice and the JSON export, each alternating with ``/healthz``: medians, p99 and
the ratio of /healthz's median to each (target ≥ 0.6 for the API and the page, as the
best-attempt boards'; the export, built per request, is shown and not judged). Then
(``--seconds`` > 0) the same reads under gunicorn (2 sync workers) driven by wrk, beside
/healthz in the same rounds, as bench/leaderboard.py measures the best-attempt boards
(target ≥ 0.6). Page p99 under steady ingestion on an aggregate board:
``bench/load.py --board aggregate``.
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


def reads(players: int, items: int, requests: int, seconds: float, rounds: int) -> int:
    """The Django side: compute through the worker's service, then reads beside /healthz."""
    import os
    import random
    from datetime import UTC, datetime

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _pg

    os.environ.setdefault("DEBUG", "false")
    os.environ.setdefault("SECRET_KEY", "bench-only-secret-key-not-for-production")
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "false"
    url = os.environ.get(
        "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/podium_bench_uncertainty"
    )
    _pg.setup_django(url)
    from django.db import connection
    from django.test import Client

    from challenges.leaderboards import evaluation
    from challenges.models import Attempt, Challenge, Player
    from challenges.rescoring import jobs as rescoring
    from challenges.setup import services as setup_services

    challenge = setup_services.challenge_create(
        data={
            "name": "Evals",
            "slug": "evals",
            "scoring_strategy": "highest_rating",
            "board": "aggregate",
            "slice_by": "topic",
        }
    )
    rng = random.Random(29)
    now = datetime.now(UTC)
    with connection.cursor() as cursor:
        raw = cursor.cursor
        with raw.copy(
            f"COPY {Player._meta.db_table} (external_id, display_name, created_at) FROM STDIN"
        ) as copy:
            for p in range(players):
                copy.write_row((f"model-{p:04d}", f"Model {p}", now))
        cursor.execute(f"SELECT min(id) FROM {Player._meta.db_table}")
        first = cursor.fetchone()[0]
        cols = "challenge_id, player_id, succeeded, rating, created_at, sample, output, recorded_at"
        with raw.copy(f"COPY {Attempt._meta.db_table} ({cols}) FROM STDIN") as copy:
            for p in range(players):
                skill = 3 + 6 * p / players
                for i in range(items):
                    rating = max(0, min(10, round(rng.gauss(skill, 2))))
                    sample = f'{{"id": "q{i:05d}", "topic": "t{i % 4}"}}'
                    copy.write_row((challenge.pk, first + p, True, rating, now, sample, "", now))
        cursor.execute("VACUUM ANALYZE")
    job = setup_services.challenge_rescore(challenge=Challenge.objects.get(pk=challenge.pk))
    for chunk_id in job.chunks.order_by("number").values_list("pk", flat=True):
        rescoring.chunk_run(chunk_id=chunk_id, finalize=False)
    assert rescoring.job_finalize(job_id=job.pk)  # computes the intervals before the switch
    started = time.perf_counter()
    written = evaluation.evaluation_compute(challenge_id=challenge.pk)
    took = time.perf_counter() - started
    print(f"{players * items:,} attempts, {players} players × {items} items, 4 slices")
    print(f"evaluation_compute (read + 5 boards, B = 1000): {took:.2f} s, {written} boards")

    client = Client()
    api = f"/api/challenges/{challenge.pk}/leaderboard/"
    cases = {
        "API leaderboard": f"{api}?limit=50",
        "API ?slice=t1": f"{api}?limit=50&slice=t1",
        "page": "/challenges/evals/",
        "page ?slice=t2": "/challenges/evals/?slice=t2",
        "JSON export": "/challenges/evals/leaderboard.json",  # shown, not judged
    }
    ok = True
    for label, path in cases.items():
        ours, health = [], []
        for _ in range(requests):
            for out, url_ in ((ours, path), (health, "/healthz")):
                start = time.perf_counter()
                response = client.get(url_)
                out.append(time.perf_counter() - start)
                assert response.status_code == 200, (url_, response.status_code)
        med, ref = statistics.median(ours), statistics.median(health)
        p99 = sorted(ours)[round(0.99 * (len(ours) - 1))]
        ratio = ref / med
        ok = ok and (ratio >= 0.6 or "export" in label)
        print(
            f"  {label:16s} median {1000 * med:6.2f} ms  p99 {1000 * p99:6.2f} ms   "
            f"/healthz {1000 * ref:5.2f} ms   ratio {ratio:.2f}"
        )
    if seconds > 0:
        import _http

        env = {
            "DATABASE_URL": url,
            "DEBUG": "false",
            "SECRET_KEY": "bench-only-secret-key-not-for-production",
            "CACHE_URL": os.environ.get("BENCH_CACHE_URL", "redis://127.0.0.1:6379/13"),
            "LOG_LEVEL": "WARNING",
            "CELERY_BROKER_URL": "filesystem://localhost//",  # as bench/leaderboard.py
        }
        targets = [(label, path) for label, path in cases.items() if "export" not in label]
        ok = (
            _http.reads_beside_healthz(env, targets, seconds=seconds, rounds=rounds, connections=8)
            and ok
        )
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", action="store_true", help="the Django side (PostgreSQL)")
    parser.add_argument("--players", type=int, default=500)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=5.0, help="--reads: wrk seconds per round")
    parser.add_argument("--rounds", type=int, default=3, help="--reads: wrk rounds")
    args = parser.parse_args()
    if args.reads:
        return reads(100, 1000, args.requests, args.seconds, args.rounds)
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
