"""Rescore throughput on PostgreSQL, beside the physical limit, measured in one run.

Loads ATTEMPTS attempts from PLAYERS players (default 1,000,000 and 100,000) into a
fresh PostgreSQL database, then for each repeat, side by side on the same rows:

- ours: the real rescore path (plan, chunks, switch) with the weighted scorer, in one
  process and in two worker processes (Celery's default concurrency here), and with a
  built-in strategy (`fastest`);
- the limit: ONE plain SQL statement computing the same formula (and the same details)
  for every attempt, inserting where Podium keeps scores (a per-version score table);
- the naive way: a Django save() loop, on NAIVE attempts;
- the switch: making the new version active, leaderboard rebuild included, beside its
  limit: ONE plain SQL statement inserting the same best attempt per player into the
  leaderboard table (measured right after each switch, on the same scores, rolled back).

Prints medians and the ratios; exits non-zero when a target is missed (built-ins >= 0.9x
the plain SQL statement, scoring; weighted >= 0.6x; the switch <= 1.25x its plain
statement in every repeat). The switch's aim of 2 s for 100,000 players is printed
beside it: on a machine where the plain statement alone takes longer, it is the
statement (sorting a million scores, inserting 100,000 index entries) that bounds it.
Needs PostgreSQL (BENCH_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/podium_bench — the database is dropped and recreated),
as a role that may run CHECKPOINT (a superuser, or a member of pg_checkpoint): each
measurement starts from one.

    .venv/bin/python bench/rescore.py [--attempts 1000000] [--players 100000] [--repeats 3]
    .venv/bin/python bench/rescore.py --scaling 1,2,4   # the weighted rescore alone, by
                                        # worker processes, beside the same statement
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _pg

SWITCH_LIMIT_RATIO = 1.25  # the switch against the plain statement building its entries

WEIGHTS = {
    "success_bonus": 100.0,
    "rating_weight": 15.0,
    "time_penalty": 0.5,
    "token_penalty": 0.02,
}

_WEIGHTED_SQL = """
INSERT INTO challenges_attemptscore
    (version_id, attempt_id, player_id, created_at, score, sort_key, details, error)
SELECT %(version)s, id, player_id, created_at, total, -total,
       jsonb_build_object('base', b, 'rating_contribution', r,
                          'time_penalty', t, 'token_penalty', k), ''
FROM (
    SELECT id, player_id, created_at, b, r, t, k, GREATEST(b + r - t - k, 0.0) AS total
    FROM (
        SELECT id, player_id, created_at,
               CASE WHEN succeeded THEN %(bonus)s ELSE 0.0 END AS b,
               COALESCE(rating, 0) * %(rating)s AS r,
               COALESCE(elapsed_ms, 0) / 1000.0 * %(time)s AS t,
               COALESCE(tokens_total, 0) * %(tokens)s AS k
        FROM challenges_attempt WHERE challenge_id = %(challenge)s
    ) terms
) scored
"""

# The switch's limit: each player's best attempt (the leaderboard's order) inserted as
# entries of an unused version id (entries have no foreign key; rolled back after).
_ENTRIES_SQL = """
INSERT INTO challenges_leaderboardentry
    (version_id, player_id, attempt_id, score, sort_key, created_at, ranked_attempt_id)
SELECT %(scratch)s, player_id, attempt_id, score, sort_key, created_at, attempt_id FROM (
    SELECT DISTINCT ON (player_id) player_id, attempt_id, score, sort_key, created_at
    FROM challenges_attemptscore WHERE version_id = %(version)s AND sort_key IS NOT NULL
    ORDER BY player_id, sort_key, created_at, attempt_id
) best
"""

_FASTEST_SQL = """
INSERT INTO challenges_attemptscore
    (version_id, attempt_id, player_id, created_at, score, sort_key, details, error)
SELECT %(version)s, id, player_id, created_at, value, value, NULL, ''
FROM (
    SELECT id, player_id, created_at,
           CASE WHEN succeeded THEN elapsed_ms::float8 END AS value
    FROM challenges_attempt WHERE challenge_id = %(challenge)s
) scored
"""


def _version(challenge, setup: dict):
    """A new version of ``challenge`` with ``setup`` (no job: the SQL reference's)."""
    from django.db import transaction

    from challenges.models import Challenge, ScoringVersion

    with transaction.atomic():
        locked = Challenge.objects.select_for_update().get(pk=challenge.pk)
        for key, value in setup.items():
            setattr(locked, key, value)
        # The version first: Challenge.save() refuses a setup no version holds.
        version = ScoringVersion.objects.create_next(challenge=locked, by=None, reason="bench")
        locked.save()
        return version


def _drop_scores(version) -> None:
    """Remove a measured version's rows, and vacuum, so the next measurement does not
    read the dead rows of this one (a real deployment keeps its versions instead)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM challenges_leaderboardentry WHERE version_id = %s", [version.pk]
        )
        cursor.execute("DELETE FROM challenges_attemptscore WHERE version_id = %s", [version.pk])
        cursor.execute("VACUUM ANALYZE challenges_attemptscore")
        cursor.execute("VACUUM ANALYZE challenges_leaderboardentry")


def _checkpoint() -> None:
    """Start a measurement from a checkpoint: one that the previous measurement's WAL
    asked for then lands in neither, and each pays the same first writes of pages."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("CHECKPOINT")


def sql_reference(challenge, sql: str, setup: dict) -> float:
    from django.db import connection, transaction

    version = _version(challenge, setup)
    params = {
        "version": version.pk,
        "challenge": challenge.pk,
        "bonus": WEIGHTS["success_bonus"],
        "rating": WEIGHTS["rating_weight"],
        "time": WEIGHTS["time_penalty"],
        "tokens": WEIGHTS["token_penalty"],
    }
    _checkpoint()
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)
    elapsed = time.perf_counter() - started
    _drop_scores(version)
    return elapsed


def entries_reference(version) -> float:
    """Seconds for the plain statement building ``version``'s leaderboard from its
    scores (the switch's limit), in a transaction rolled back after."""
    from django.db import connection, transaction

    from challenges.models import ScoringVersion

    scratch = (ScoringVersion.objects.order_by("-pk").values_list("pk", flat=True).first()) + 1
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL work_mem = '256MB'")  # as the switch's rebuild has
        started = time.perf_counter()
        cursor.execute(_ENTRIES_SQL, {"scratch": scratch, "version": version.pk})
        elapsed = time.perf_counter() - started
        transaction.set_rollback(True)
    return elapsed


def _run_chunk(chunk_id: int) -> None:
    from challenges.rescoring import jobs as rescoring
    from config.celery import as_a_task

    with as_a_task():  # the collector as a worker runs a chunk
        rescoring.chunk_run(chunk_id=chunk_id, finalize=False)


def ours(challenge, setup: dict, *, processes: int) -> dict[str, float]:
    """Seconds for: the whole rescore ("total"), planning and scoring the chunks
    ("scoring", what the SQL statement does), the leaderboard rebuild and the switch
    ("switch"), the switch alone ("locked": the part that holds the challenge lock), and
    the switch's limit ("entries": ``entries_reference`` on the same scores)."""
    from django.db import connections

    from challenges.models import Challenge, RescoreJob
    from challenges.rescoring import jobs as rescoring

    challenge = Challenge.objects.get(pk=challenge.pk)
    for key, value in setup.items():
        setattr(challenge, key, value)
    challenge.save()
    _checkpoint()
    started = time.perf_counter()
    from challenges.setup import services as setup_services

    job = setup_services.challenge_rescore(challenge=challenge)
    chunk_ids = list(job.chunks.order_by("number").values_list("pk", flat=True))
    if processes == 1:
        for chunk_id in chunk_ids:
            _run_chunk(chunk_id)
    else:
        connections.close_all()  # each worker process opens its own connection
        with multiprocessing.get_context("fork").Pool(processes) as pool:
            list(pool.imap_unordered(_run_chunk, chunk_ids))
    switch_started = time.perf_counter()
    locked = []
    original = rescoring._switch

    def timed_switch(job_id: int):
        started_lock = time.perf_counter()
        try:
            return original(job_id)
        finally:
            locked.append(time.perf_counter() - started_lock)

    rescoring._switch = timed_switch
    try:
        assert rescoring.job_finalize(job_id=job.pk)
    finally:
        rescoring._switch = original
    finished = time.perf_counter()
    job = RescoreJob.objects.get(pk=job.pk)
    assert job.status == RescoreJob.Status.SUCCEEDED and job.processed == job.total
    entries = entries_reference(job.version)
    _drop_scores(job.version)
    return {
        "total": finished - started,
        "scoring": switch_started - started,
        "switch": finished - switch_started,
        "locked": locked[0],
        "entries": entries,
    }


def naive(challenge, count: int) -> float:
    """The naive way: score with the plugin and save() each row through the ORM."""
    from django.db import transaction

    from challenges.models import Attempt, AttemptScore
    from scoring.engine.protocol import AttemptMetrics, ScoringContext
    from scoring.scorers.weighted import WeightedScorer

    version = _version(challenge, {})
    scorer = WeightedScorer()
    attempts = list(Attempt.objects.filter(challenge=challenge).order_by("pk")[:count])
    started = time.perf_counter()
    with transaction.atomic():
        for a in attempts:
            metrics = AttemptMetrics(a.succeeded, a.tokens_total, a.elapsed_ms, a.rating, 0)
            result = scorer.score(metrics, WEIGHTS, ScoringContext())
            AttemptScore(
                version=version,
                attempt=a,
                player_id=a.player_id,
                created_at=a.created_at,
                score=result["score"],
                sort_key=-result["score"],
                details=result["details"],
            ).save()
    elapsed = time.perf_counter() - started
    _drop_scores(version)
    return elapsed


def scaling(challenge, setup: dict, counts: list[int], args: argparse.Namespace) -> None:
    """The weighted rescore with each number of worker processes in ``counts``, beside the
    plain SQL statement, in the same repeats: how far more workers take it on this
    machine, and what bounds it (printed beside: the machine's CPUs)."""
    sql_s: list[float] = []
    by: dict[int, dict[str, list[float]]] = {n: {} for n in counts}
    for repeat in range(args.repeats):
        sql_s.append(sql_reference(challenge, _WEIGHTED_SQL, setup))
        for n in counts:
            for name, value in ours(challenge, setup, processes=n).items():
                by[n].setdefault(name, []).append(value)
        print(f"repeat {repeat + 1}/{args.repeats} done", flush=True)
    attempts, sql_med = args.attempts, statistics.median(sql_s)
    print(f"\n{attempts:,} attempts, {args.players:,} players, {os.cpu_count()} CPUs, "
          f"median of {args.repeats} repeats (weighted plugin)")  # fmt: skip
    print(f"  plain SQL statement: {sql_med:6.2f} s {attempts / sql_med:10,.0f} attempts/s")
    one = statistics.median(by[counts[0]]["scoring"])
    for n in counts:
        scoring, total = (statistics.median(by[n][k]) for k in ("scoring", "total"))
        print(
            f"  {n} process{'es' if n > 1 else '  '}: scoring {scoring:6.2f} s "
            f"{attempts / scoring:10,.0f} attempts/s ({sql_med / scoring:.2f}x the statement, "
            f"{one / scoring:.2f}x {counts[0]} process); whole {total:6.2f} s "
            f"({sql_med / total:.2f}x)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=1_000_000)
    parser.add_argument("--players", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--naive", type=int, default=20_000)
    parser.add_argument(
        "--scaling", default="", help="e.g. 1,2,4: only the weighted rescore by processes"
    )
    args = parser.parse_args()
    _pg.setup_django(os.environ.get("BENCH_DATABASE_URL", _pg.DEFAULT_URL))
    from django.db import DatabaseError

    try:  # before the load: a role that may not checkpoint is told at once
        _checkpoint()
    except DatabaseError as exc:
        raise SystemExit(
            f"bench/rescore.py starts each measurement from a CHECKPOINT, which this role "
            f"may not run ({str(exc).strip()}): connect as a superuser or a member of "
            f"pg_checkpoint (BENCH_DATABASE_URL)"
        ) from None
    weighted = {
        "scoring_strategy": "custom",
        "scoring_plugin_id": "builtin.weighted_scorer",
        "scoring_config": WEIGHTS,
    }
    fastest = {
        "scoring_strategy": "fastest",
        "scoring_plugin_id": "",
        "scoring_entrypoint": "",
        "scoring_config": {},
    }
    challenge = _pg.load(players=args.players, attempts=args.attempts, setup=weighted)

    weighted_full = {**weighted, "scoring_entrypoint": "scoring.scorers.weighted:WeightedScorer"}
    runs: dict[str, list[float]] = {}

    def add(name: str, seconds: float) -> None:
        runs.setdefault(name, []).append(seconds)

    sql_w, sql_f = "sql: weighted, one INSERT ... SELECT", "sql: fastest, one INSERT ... SELECT"
    if args.scaling:
        scaling(challenge, weighted_full, [int(n) for n in args.scaling.split(",")], args)
        return
    for repeat in range(args.repeats):
        add(sql_w, sql_reference(challenge, _WEIGHTED_SQL, weighted_full))
        for name, value in ours(challenge, weighted_full, processes=1).items():
            add(f"ours: weighted, 1 process, {name}", value)
        for name, value in ours(challenge, weighted_full, processes=2).items():
            add(f"ours: weighted, 2 processes, {name}", value)
        add(sql_f, sql_reference(challenge, _FASTEST_SQL, fastest))
        for name, value in ours(challenge, fastest, processes=1).items():
            add(f"ours: fastest, 1 process, {name}", value)
        print(f"repeat {repeat + 1}/{args.repeats} done", flush=True)
    naive_s = naive(challenge, args.naive)

    med = {name: statistics.median(values) for name, values in runs.items()}
    n = args.attempts
    print(f"\n{n:,} attempts, {args.players:,} players, median of {args.repeats} repeats")
    for name, seconds in med.items():
        counts = name.startswith("sql") or name.endswith(("total", "scoring"))
        rate = f"{n / seconds:12,.0f} attempts/s" if counts else ""
        print(f"  {name:48s} {seconds:8.2f} s {rate}")
    naive_rate = args.naive / naive_s
    print(f"  {'naive: Django save() loop':48s} {naive_s:8.2f} s {naive_rate:12,.0f} attempts/s")
    print("ratios, rate of ours / rate of the plain SQL statement (scoring / whole rescore):")
    ok = True
    for label, sql, prefix, target in (
        ("weighted, 1 process", sql_w, "ours: weighted, 1 process", 0.6),
        ("weighted, 2 processes", sql_w, "ours: weighted, 2 processes", 0.6),
        ("fastest, 1 process", sql_f, "ours: fastest, 1 process", 0.9),
    ):
        scoring_ratio = med[sql] / med[f"{prefix}, scoring"]
        whole_ratio = med[sql] / med[f"{prefix}, total"]
        ok &= scoring_ratio >= target
        print(
            f"  {label:24s} {scoring_ratio:.2f} / {whole_ratio:.2f}   (target >= {target}, "
            f"scoring: {'ok' if scoring_ratio >= target else 'UNDER'})"
        )
    ours_rate = n / med["ours: weighted, 1 process, total"]
    print(f"ours (weighted, 1 process, whole) / naive save() loop: {ours_rate / naive_rate:.1f}x")
    switches = runs["ours: weighted, 1 process, switch"]
    limits = runs["ours: weighted, 1 process, entries"]
    ratios = [ours_s / limit for ours_s, limit in zip(switches, limits, strict=True)]
    ok &= max(ratios) <= SWITCH_LIMIT_RATIO
    print(
        f"switch for {args.players:,} players, rebuild included: "
        f"{med['ours: weighted, 1 process, switch']:.2f} s, every repeat "
        f"{'/'.join(f'{v:.2f}' for v in switches)} s (aim 2 s: "
        f"{'met' if max(switches) <= 2 else 'missed'}); its plain statement "
        f"{'/'.join(f'{v:.2f}' for v in limits)} s; ratio "
        f"{'/'.join(f'{v:.2f}' for v in ratios)} (target <= {SWITCH_LIMIT_RATIO} each: "
        f"{'ok' if max(ratios) <= SWITCH_LIMIT_RATIO else 'OVER'}); "
        f"challenge lock held {med['ours: weighted, 1 process, locked'] * 1000:.0f} ms"
    )
    print("\nall targets met" if ok else "\nsome targets missed (see above)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
