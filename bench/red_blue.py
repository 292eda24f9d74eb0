"""Red/blue at scale on PostgreSQL: SUBMISSIONS submissions paired as they arrive and
every pairing judged, through the services (as the API calls them), then the public
standings read under gunicorn beside /healthz.

Loads a fresh database (BENCH_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/podium_bench_red_blue: dropped and recreated) with a
red/blue challenge (defences by ``round_robin``, attacks by ``latest_best``, a six-code
suite), PLAYERS players per team each submitting in turn until SUBMISSIONS are in (a
player's earlier submission turns inactive), then judges every pairing with random
verdicts. Prints the median milliseconds of a submission (with its pairing) and of a
judgement, and their totals. Then (``--seconds`` > 0) requests/s of the standings API
(first page, and offset 100) and of the challenge page under gunicorn (2 sync workers,
the cache in Redis at BENCH_CACHE_URL, default redis://127.0.0.1:6379/13) driven by wrk,
beside /healthz in the same rounds. Target: each read >= 0.6x /healthz. Exits non-zero
when a target is missed.

    .venv/bin/python bench/red_blue.py [--submissions 10000] [--players 250] [--seconds 3]
    .venv/bin/python bench/red_blue.py --reuse --rounds 3   # the reads again, no reload
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _http
import _pg

URL = os.environ.get(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/podium_bench_red_blue"
)
CACHE_URL = os.environ.get("BENCH_CACHE_URL", "redis://127.0.0.1:6379/13")
SUITE = ["CBRNE", "SA", "SH", "RWH", "V", "M"]


def load(
    submissions: int, players: int, rng: random.Random
) -> tuple[int, list[float], list[float]]:
    from challenges.models import Pairing
    from challenges.redblue import services
    from challenges.setup import services as setup_services

    challenge = setup_services.challenge_create(
        data={
            "name": "Red blue bench",
            "format": "red_blue",
            "judge_suite": SUITE,
            "defense_selection_policy": "round_robin",
            "attack_selection_policy": "latest_best",
            "time_penalty": 0.01,
        }
    )
    submit_ms: list[float] = []
    for n in range(submissions):
        team = "red" if n % 2 == 0 else "blue"
        player = f"{team}-{rng.randrange(players):04d}"
        started = time.perf_counter()
        services.submission_record(
            challenge=challenge,
            external_id=player,
            team=team,
            prompt=f"{team} prompt {n} " + "x" * rng.randrange(50, 500),
            rng=rng,
        )
        submit_ms.append((time.perf_counter() - started) * 1000)
        if (n + 1) % 2000 == 0:
            print(f"  {n + 1:,} submissions", flush=True)
    judge_ms: list[float] = []
    pending = list(Pairing.objects.filter(challenge=challenge, judged_at__isnull=True))
    for i, pairing in enumerate(pending, start=1):
        breached = set(rng.sample(SUITE, rng.choice([0, 0, 1, 2, 3])))
        started = time.perf_counter()
        services.judgement_record(
            pairing=pairing,
            judgement={
                "categories": {code: code in breached for code in SUITE},
                "rating": rng.randrange(11),
                "feedback": "judged",
                "tokens_total": rng.randrange(100, 2000),
                "elapsed_ms": rng.randrange(200, 5000),
                "raw": {"model": "bench"},
            },
        )
        judge_ms.append((time.perf_counter() - started) * 1000)
        if i % 2000 == 0:
            print(f"  {i:,} judgements", flush=True)
    return challenge.pk, submit_ms, judge_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=int, default=10_000)
    parser.add_argument("--players", type=int, default=250, help="per team")
    parser.add_argument("--seconds", type=float, default=3.0, help="per wrk run; 0: no reads")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--reuse", action="store_true", help="read the database the last run loaded"
    )
    args = parser.parse_args()
    _pg.setup_django(URL, fresh=not args.reuse)
    from challenges.models import Challenge, Pairing

    if args.reuse:
        pk = Challenge.objects.filter(format="red_blue").latest("pk").pk
        print(f"{Pairing.objects.filter(challenge_id=pk).count():,} pairings, loaded before")
    else:
        started = time.perf_counter()
        pk, submit_ms, judge_ms = load(args.submissions, args.players, random.Random(1))
        pairings = Pairing.objects.filter(challenge_id=pk).count()
        print(
            f"\n{args.submissions:,} submissions ({args.players} players a team), "
            f"{pairings:,} pairings judged, in {time.perf_counter() - started:.1f} s"
        )
        print(
            f"  a submission, paired    median {statistics.median(submit_ms):.2f} ms   "
            f"p99 {_p99(submit_ms):.2f} ms   total {sum(submit_ms) / 1000:.1f} s"
        )
        print(
            f"  a judgement             median {statistics.median(judge_ms):.2f} ms   "
            f"p99 {_p99(judge_ms):.2f} ms   total {sum(judge_ms) / 1000:.1f} s"
        )
    ok = True
    if args.seconds > 0:
        slug = Challenge.objects.get(pk=pk).slug
        env = {
            "DATABASE_URL": os.environ["DATABASE_URL"],
            "DEBUG": "false",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "LOG_LEVEL": "WARNING",
            "CELERY_BROKER_URL": "filesystem://localhost//",  # as bench/leaderboard.py
            "CACHE_URL": CACHE_URL,
        }
        targets = [
            ("standings API", f"/api/challenges/{pk}/standings/"),
            ("standings API, offset 100", f"/api/challenges/{pk}/standings/?offset=100"),
            ("challenge page", f"/challenges/{slug}/"),
        ]
        ok = _http.reads_beside_healthz(
            env, targets, seconds=args.seconds, rounds=args.rounds, connections=8
        )
    sys.exit(0 if ok else 1)


def _p99(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.99) - 1)]


if __name__ == "__main__":
    main()
