"""Leaderboard reads on PostgreSQL: the full request beside the bare SQL fetching the same
rows, measured side by side in one run, and requests/s under gunicorn driven by wrk,
beside /healthz measured in the same run.

Loads ATTEMPTS attempts from PLAYERS players (default 1,000,000 and 100,000) into a
fresh database (podium_bench_public: dropped and recreated), scores them with the
weighted plugin through a real rescore (so rows carry score details), then

1. in-process (Django's test client: routing, middleware, view, templates or JSON), each
   request alternating with the bare SQL a developer would write for the same rows (a
   join of entries and players; OFFSET for deep pages, a count of the players ahead for
   a rank): the page's first page, page 1,000, name searches (a name, one letter, no
   match), ?player=, and the API leaderboard (limit 50, offset 50,000, player=).
   Target: p99 <= 15 ms each. The cache in Redis (BENCH_CACHE_URL) and a Celery worker
   (broker BENCH_REDIS_URL, default redis://127.0.0.1:6379/14) as deployed: it builds
   the pages of a new minute (relative times) while readers are served the last one's.
2. gunicorn (2 sync workers, as deployed: DEBUG off, the cache in Redis at
   BENCH_CACHE_URL, default redis://127.0.0.1:6379/13) driven by wrk (bench/_http.py:
   Debian's `apt-get install wrk`; client and server pinned to different CPUs), in
   rounds: the API leaderboard (limit 50, first page and offset 50,000), the page (first
   and page 1,000), each between two windows of /healthz. Target: each >= 0.6x the
   requests/s of /healthz beside it.

Exits non-zero when a target is missed.

    .venv/bin/python bench/leaderboard.py [--attempts 1000000] [--players 100000]
        [--requests 300] [--seconds 5] [--rounds 3] [--connections 8] [--reuse] [--frozen]

``--frozen`` freezes the board after loading: every anonymous request then reads the
public's frozen board (challenges/leaderboards/freeze.py), the bare SQL the same rows.
"""

from __future__ import annotations

import argparse
import gc
import os
import secrets
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _http
import _pg
import _worker

ROOT = Path(__file__).resolve().parent.parent
URL = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/podium_bench_public")
SLUG = "bench"
CACHE_URL = os.environ.get("BENCH_CACHE_URL", "redis://127.0.0.1:6379/13")
BROKER_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
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
SEARCH = "Player 4242"
PLAYER = "player-054321"

_ROWS = """
SELECT e.score, e.sort_key, e.created_at, e.attempt_id, p.external_id, p.display_name
FROM challenges_leaderboardentry e JOIN challenges_player p ON p.id = e.player_id
WHERE e.version_id = %s {where}
ORDER BY e.sort_key, e.created_at, e.attempt_id {tail}
"""
_AHEAD = """
SELECT count(*) FROM challenges_leaderboardentry e, challenges_leaderboardentry me
JOIN challenges_player p ON p.id = me.player_id
WHERE me.version_id = %s AND p.external_id = %s AND e.version_id = me.version_id
  AND (e.sort_key, e.created_at) < (me.sort_key, me.created_at)
"""


def _environment() -> None:
    """As deployed: DEBUG off (no query log kept), the cache in Redis and a Celery broker
    there, which the worker started for the in-process reads shares."""
    os.environ.setdefault("DEBUG", "false")
    os.environ.setdefault("SECRET_KEY", "bench-only-secret-key-not-for-production")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ["CACHE_URL"] = CACHE_URL
    os.environ["CELERY_BROKER_URL"] = BROKER_URL
    os.environ["CELERY_TASK_DEFAULT_QUEUE"] = f"bench-leaderboard-{os.getpid()}"
    import redis

    for url in (CACHE_URL, BROKER_URL):
        redis.Redis.from_url(url).flushdb()


def prepare(args: argparse.Namespace) -> tuple[int, int]:
    """The loaded challenge's id and active version id."""
    from django.db import connection

    if args.reuse:
        os.environ["DATABASE_URL"] = URL
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        sys.path.insert(0, str(ROOT))
        import django

        django.setup()
        from challenges.models import Challenge

        challenge = Challenge.objects.get(slug=SLUG)
        return challenge.pk, challenge.active_version_id
    _pg.setup_django(URL)
    from challenges.models import Challenge
    from challenges.rescoring import jobs as rescoring

    challenge = _pg.load(
        players=args.players, attempts=args.attempts, setup={"slug": SLUG, **WEIGHTED}
    )
    started = time.perf_counter()
    from challenges.setup import services as setup_services

    job = setup_services.challenge_rescore(challenge=Challenge.objects.get(pk=challenge.pk))
    for chunk_id in job.chunks.order_by("number").values_list("pk", flat=True):
        rescoring.chunk_run(chunk_id=chunk_id, finalize=False)
    assert rescoring.job_finalize(job_id=job.pk)
    print(f"scored with the weighted plugin (a rescore) in {time.perf_counter() - started:.1f}s")
    challenge.refresh_from_db()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    return challenge.pk, challenge.active_version_id


def warm(version_id: int) -> None:
    """The first read after a rescore ranks 100,000 new entries (once); then vacuum, as
    autovacuum would, so measurements see the steady state."""
    from django.db import connection

    from challenges.leaderboards import ranking

    started = time.perf_counter()
    ranking.ranking_current(version_id=version_id)
    print(f"first ranking of the new version: {time.perf_counter() - started:.2f}s (once)")
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE challenges_leaderboardentry")


def freeze_board() -> int:
    """Freeze the bench challenge now: the anonymous requests below read its frozen
    board (built once here, as the first frozen read would). Returns the board's id, which
    the bare SQL reads too."""
    from django.db import connection
    from django.utils import timezone

    from challenges.leaderboards import freeze
    from challenges.models import Challenge
    from challenges.setup import services as setup_services

    challenge = Challenge.objects.get(slug=SLUG)
    setup_services.challenge_update(challenge=challenge, data={"freeze_at": timezone.now()})
    challenge.refresh_from_db()
    started = time.perf_counter()
    board = freeze.frozen_ensure(challenge=challenge)
    print(f"frozen board built: {time.perf_counter() - started:.2f}s (once per freeze)")
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE challenges_leaderboardentry")
    return board


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _search(text: str) -> tuple[str, str, list]:
    return ("AND UPPER(p.display_name) LIKE UPPER(%s)", "LIMIT 51", [f"%{text}%"])


def measure(challenge_id: int, version_id: int, requests: int) -> bool:
    from django.db import connection
    from django.test import Client

    api = f"/api/challenges/{challenge_id}/leaderboard/"
    cases = [
        ("first page", f"/challenges/{SLUG}/", [("", "LIMIT 50", [])]),
        (
            "page 1,000",
            f"/challenges/{SLUG}/?page=1000",
            [("", "LIMIT 50 OFFSET 49950", [])],
        ),
        ("name search", f"/challenges/{SLUG}/?q={SEARCH.replace(' ', '+')}", [_search(SEARCH)]),
        ("search 'y' (all)", f"/challenges/{SLUG}/?q=y", [_search("y")]),
        ("search 'q' (none)", f"/challenges/{SLUG}/?q=q", [_search("q")]),
        ("search, no match", f"/challenges/{SLUG}/?q=Nobody+here", [_search("Nobody here")]),
        (
            "?player=",
            f"/challenges/{SLUG}/?player={PLAYER}",
            [("AHEAD", "", [PLAYER]), ("", "LIMIT 50 OFFSET %s", None)],
        ),
        ("API limit 50", f"{api}?limit=50", [("", "LIMIT 50", [])]),
        ("API offset 50,000", f"{api}?limit=50&offset=50000", [("", "LIMIT 50 OFFSET 50000", [])]),
        (
            "API player=",
            f"{api}?player={PLAYER}",
            [("AHEAD", "", [PLAYER]), ("AND p.external_id = %s", "", [PLAYER])],
        ),
    ]
    client = Client()
    for _, url, _ in cases:  # warm: each code path and cache once
        assert client.get(url).status_code == 200, url
    gc.freeze()  # what loading the app made, as a web process does (config/wsgi.py)
    times: dict[str, list[float]] = {}
    sql_times: dict[str, list[float]] = {}
    with connection.cursor() as cursor:
        for _ in range(requests):
            for name, url, statements in cases:
                started = time.perf_counter()
                response = client.get(url)
                times.setdefault(name, []).append(time.perf_counter() - started)
                assert response.status_code == 200
                started = time.perf_counter()
                ahead = 0
                for where, tail, params in statements:
                    if where == "AHEAD":
                        cursor.execute(_AHEAD, [version_id, *params])
                        ahead = cursor.fetchone()[0]
                        continue
                    sql = _ROWS.format(where=where, tail=tail)
                    values = params if params is not None else [ahead // 50 * 50]
                    cursor.execute(sql, [version_id, *values])
                    cursor.fetchall()
                sql_times.setdefault(name, []).append(time.perf_counter() - started)
    print(f"\nfull request (Django test client) vs bare SQL, {requests} each, milliseconds:")
    print(f"  {'':18s} {'median':>8s} {'p99':>8s}   {'SQL median':>10s} {'SQL p99':>8s}  ratio")
    ok = True
    for name, _, _ in cases:
        t, s = times[name], sql_times[name]
        med, p99 = statistics.median(t) * 1000, _pct(t, 0.99) * 1000
        smed, sp99 = statistics.median(s) * 1000, _pct(s, 0.99) * 1000
        ok &= p99 <= 15
        print(
            f"  {name:18s} {med:8.2f} {p99:8.2f}   {smed:10.2f} {sp99:8.2f}  "
            f"{med / smed:5.1f}x  {'ok' if p99 <= 15 else 'OVER'} (p99 target <= 15 ms)"
        )
    return ok


def throughput(challenge_id: int, seconds: float, rounds: int, connections: int) -> bool:
    """Requests/s of each read under gunicorn (2 sync workers) driven by wrk, beside
    /healthz (a trivial view touching the database and the broker) measured in the same
    rounds: each target's median over the rounds, over /healthz's median."""
    api = f"/api/challenges/{challenge_id}/leaderboard/"
    targets = [
        ("API leaderboard, limit 50", f"{api}?limit=50"),
        ("API leaderboard, offset 50,000", f"{api}?limit=50&offset=50000"),
        ("page, first", f"/challenges/{SLUG}/"),
        ("page 1,000", f"/challenges/{SLUG}/?page=1000"),
    ]
    env = {
        "DATABASE_URL": URL,
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "CACHE_URL": CACHE_URL,
        "LOG_LEVEL": "WARNING",
        # The embedded broker, as in the rounds measured before: /healthz checks the
        # broker, and against Redis it opens a connection per request (half the rate).
        "CELERY_BROKER_URL": "filesystem://localhost//",
    }
    return _http.reads_beside_healthz(
        env, targets, seconds=seconds, rounds=rounds, connections=connections
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=1_000_000)
    parser.add_argument("--players", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--reuse", action="store_true", help="keep an already loaded database")
    parser.add_argument(
        "--frozen",
        action="store_true",
        help="freeze the board first: measure the public's frozen board (docs/competitions.md)",
    )
    args = parser.parse_args()
    _http.wrk_path()  # fail before loading a million attempts
    _environment()
    challenge_id, version_id = prepare(args)
    warm(version_id)
    if args.frozen:
        version_id = freeze_board()
    # A worker as deployed: it builds a board's pages for a new minute (relative times)
    # while readers are served the last minute's (tasks.board_rebuild).
    worker = _worker.Worker({"DATABASE_URL": URL})
    try:
        worker.wait()
        fast = measure(challenge_id, version_id, args.requests)
    finally:
        worker.stop()
    served = throughput(challenge_id, args.seconds, args.rounds, args.connections)
    ok = fast and served
    print("\nall targets met" if ok else "\nsome targets missed (see above)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
