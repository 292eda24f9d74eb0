"""The cost of a history record (issue 30): the switch of a rescore with and without
writing its record, side by side in one run on PostgreSQL.

Loads ATTEMPTS attempts from PLAYERS players (default 200,000 and 100,000) into a fresh
database, then per repeat rescores the challenge four times, alternating the weighted
scorer and ``fastest`` (so every switch changes the ranks of most players), twice with
the record written and twice without (the order alternates per repeat). Measured: the
switch until it has committed and the new board is public (``job_finalize``: the
leaderboard rebuild and the locked switch, as bench/rescore.py's "switch"), and the
record alone, written after the commit (outside the switch's lock). The versions are
kept (a switch's record reads the previous version's board). Then (``--seconds`` > 0)
the read targets: requests/s of the history page, a past version's board (first page
and page 1,000) and the history API under gunicorn (2 sync workers) driven by wrk,
beside /healthz in the same rounds (as bench/leaderboard.py). Prints medians and the
ratios; exits non-zero when the record adds more than 10 % to the switch or a read is
under 0.6x /healthz. Needs PostgreSQL (BENCH_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/podium_bench — dropped and recreated).

    .venv/bin/python bench/history.py [--attempts 200000] [--players 100000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _pg

TARGET = 1.10  # the switch with its record / without

WEIGHTED = {
    "scoring_strategy": "custom",
    "scoring_plugin_id": "builtin.weighted_scorer",
    "scoring_entrypoint": "scoring.scorers.weighted:WeightedScorer",
    "scoring_config": {
        "success_bonus": 100.0,
        "rating_weight": 15.0,
        "time_penalty": 0.5,
        "token_penalty": 0.02,
    },
}
FASTEST = {
    "scoring_strategy": "fastest",
    "scoring_plugin_id": "",
    "scoring_entrypoint": "",
    "scoring_config": {},
}


def switch_once(challenge_id: int, setup: dict, *, record: bool) -> tuple[float, float]:
    """Seconds until the switch has committed (the new board is public), and of the
    record written after it (0 without one)."""
    from challenges.models import Challenge, HistoryDue, RescoreJob
    from challenges.rescoring import jobs as rescoring
    from challenges.setup import services as setup_services

    Challenge.objects.filter(pk=challenge_id).update(**setup)  # rescored into a version next
    challenge = Challenge.objects.get(pk=challenge_id)
    job = setup_services.challenge_rescore(challenge=challenge)
    for chunk_id in job.chunks.order_by("number").values_list("pk", flat=True):
        rescoring.chunk_run(chunk_id=chunk_id, finalize=False)
    marks: dict[str, float] = {}
    real_after = rescoring.history_after_switch

    def after(**kwargs):  # called once the switch has committed
        marks["committed"] = time.perf_counter()
        if record:
            real_after(**kwargs)
        marks["recorded"] = time.perf_counter()

    rescoring.history_after_switch = after
    try:
        started = time.perf_counter()
        assert rescoring.job_finalize(job_id=job.pk)
    finally:
        rescoring.history_after_switch = real_after
    assert RescoreJob.objects.get(pk=job.pk).status == RescoreJob.Status.SUCCEEDED
    if not record:
        HistoryDue.objects.all().delete()
    return marks["committed"] - started, marks["recorded"] - marks["committed"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=200_000)
    parser.add_argument("--players", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0, help="per wrk run; 0: no reads")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    _pg.setup_django(os.environ.get("BENCH_DATABASE_URL", _pg.DEFAULT_URL))
    challenge = _pg.load(players=args.players, attempts=args.attempts, setup=WEIGHTED)
    switch_once(challenge.pk, FASTEST, record=True)  # warm-up: caches, statistics
    runs: dict[str, list[float]] = {"without": [], "with": [], "record": []}
    for repeat in range(args.repeats):
        order = (False, True) if repeat % 2 == 0 else (True, False)
        for record in order:
            for setup in (WEIGHTED, FASTEST):
                elapsed, spent = switch_once(challenge.pk, setup, record=record)
                runs["with" if record else "without"].append(elapsed)
                if record:
                    runs["record"].append(spent)
        print(f"repeat {repeat + 1}/{args.repeats} done", flush=True)
    from challenges.models import HistoryRecord

    last = HistoryRecord.objects.order_by("-id").first()
    med = {name: statistics.median(values) for name, values in runs.items()}
    ratio = med["with"] / med["without"]
    print(
        f"\n{args.attempts:,} attempts, {args.players:,} players, "
        f"{len(runs['with'])} switches each way"
    )
    print(f"  switch without the record  {med['without']:.3f} s  ({_all(runs['without'])})")
    print(f"  switch with the record     {med['with']:.3f} s  ({_all(runs['with'])})")
    print(f"  the record, after the commit {med['record']:.3f} s  ({_all(runs['record'])})")
    print(f"  last record: {last.moved:,} of {last.players_after:,} moved, tau {last.kendall_tau}")
    ok = ratio <= TARGET
    print(f"ratio with / without: {ratio:.3f} (target <= {TARGET}: {'ok' if ok else 'OVER'})")
    if args.seconds > 0:
        ok &= reads(challenge.pk, args.seconds, args.rounds)
    sys.exit(0 if ok else 1)


def reads(challenge_id: int, seconds: float, rounds: int) -> bool:
    """Requests/s of the history reads beside /healthz, median over the rounds."""
    import secrets

    import _http

    from challenges.models import Challenge

    slug = Challenge.objects.get(pk=challenge_id).slug
    targets = [
        ("history page", f"/challenges/{slug}/history/"),
        ("history API", f"/api/challenges/{challenge_id}/history/"),
        ("version 2 board, first page", f"/challenges/{slug}/versions/2/"),
        ("version 2 board, page 1,000", f"/challenges/{slug}/versions/2/?page=1000"),
        ("API ?version=2", f"/api/challenges/{challenge_id}/leaderboard/?version=2"),
    ]
    env = {
        "DATABASE_URL": os.environ["DATABASE_URL"],
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "LOG_LEVEL": "WARNING",
        "CELERY_BROKER_URL": "filesystem://localhost//",  # as bench/leaderboard.py
    }
    cache_url = os.environ.get("BENCH_CACHE_URL")
    if cache_url:
        env["CACHE_URL"] = cache_url
    return _http.reads_beside_healthz(env, targets, seconds=seconds, rounds=rounds, connections=8)


def _all(values: list[float]) -> str:
    return "/".join(f"{v:.2f}" for v in values)


if __name__ == "__main__":
    main()
