"""Public leaderboard pages on PostgreSQL: the full request beside the bare SQL query
fetching the same rows, measured side by side in one run, and gunicorn's throughput.

Loads ATTEMPTS attempts from PLAYERS players (default 1,000,000 and 100,000) into a
fresh database (podium_bench_public: dropped and recreated), scores them with the
weighted plugin through a real rescore (so rows carry score details), then for

- the first page            /challenges/bench/
- page 1,000                /challenges/bench/?page=1000
- a name search             /challenges/bench/?q=Player 4242
- a player's page           /challenges/bench/?player=player-054321

measures the whole request through Django's test client (URL routing, middleware, view,
templates) and, alternating with it, the bare SQL a developer would write to fetch the
same rows (a join of entries and players; OFFSET for the deep page, a count of the
players ahead for the player's rank). Then it serves the first page with gunicorn (2
sync workers) on a loopback port above 20000 and drives it with a small asyncio client.

    .venv/bin/python bench/leaderboard.py [--attempts 1000000] [--players 100000]
        [--requests 400] [--seconds 10] [--concurrency 8] [--reuse] [--frozen]

``--frozen`` freezes the board after loading: every request then reads the public's
frozen board (challenges/leaderboards/freeze.py), the bare SQL the same rows.

Targets (2-core machine): each request's p99 <= 15 ms; >= 500 requests/s under gunicorn.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _pg

ROOT = Path(__file__).resolve().parent.parent
URL = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/podium_bench_public")
SLUG = "bench"
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
    os.environ.setdefault("DEBUG", "false")  # as in production: no query log kept
    os.environ.setdefault("SECRET_KEY", "bench-only-secret-key-not-for-production")
    os.environ.setdefault("LOG_LEVEL", "WARNING")


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


def measure(version_id: int, requests: int) -> bool:
    from django.db import connection
    from django.test import Client

    cases = [
        ("first page", f"/challenges/{SLUG}/", [("", "LIMIT 50", [])]),
        (
            "page 1,000",
            f"/challenges/{SLUG}/?page=1000",
            [("", "LIMIT 50 OFFSET 49950", [])],
        ),
        (
            "name search",
            f"/challenges/{SLUG}/?q={SEARCH.replace(' ', '+')}",
            [("AND UPPER(p.display_name) LIKE UPPER(%s)", "LIMIT 51", [f"%{SEARCH}%"])],
        ),
        (
            "?player=",
            f"/challenges/{SLUG}/?player={PLAYER}",
            [("AHEAD", "", [PLAYER]), ("", "LIMIT 50 OFFSET %s", None)],
        ),
    ]
    client = Client()
    for _, url, _ in cases:  # warm: each code path and cache once
        assert client.get(url).status_code == 200, url
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
    print(f"  {'':14s} {'median':>8s} {'p99':>8s}   {'SQL median':>10s} {'SQL p99':>8s}  ratio")
    ok = True
    for name, _, _ in cases:
        t, s = times[name], sql_times[name]
        med, p99 = statistics.median(t) * 1000, _pct(t, 0.99) * 1000
        smed, sp99 = statistics.median(s) * 1000, _pct(s, 0.99) * 1000
        ok &= p99 <= 15
        print(
            f"  {name:14s} {med:8.2f} {p99:8.2f}   {smed:10.2f} {sp99:8.2f}  "
            f"{med / smed:5.1f}x  {'ok' if p99 <= 15 else 'OVER'} (p99 target <= 15 ms)"
        )
    return ok


def _free_port() -> int:
    for port in range(20100, 21000):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port above 20000")


async def _load(port: int, path: str, seconds: float, concurrency: int) -> tuple[int, int]:
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()
    done = failed = 0
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal done, failed
        while time.perf_counter() < deadline:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(request)
            data = await reader.read()
            writer.close()
            if data.startswith(b"HTTP/1.1 200") or data.startswith(b"HTTP/1.0 200"):
                done += 1
            else:
                failed += 1

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done, failed


def throughput(seconds: float, concurrency: int) -> bool:
    port = _free_port()
    env = {**os.environ, "DATABASE_URL": URL, "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("gunicorn")),
            "config.wsgi:application",
            "--workers",
            "2",
            "--bind",
            f"127.0.0.1:{port}",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
    )
    try:
        path = f"/challenges/{SLUG}/"
        for _ in range(100):
            try:
                done, _ = asyncio.run(_load(port, path, 0.5, 2))  # warms both workers
                if done:
                    break
            except OSError:
                time.sleep(0.2)
        done, failed = asyncio.run(_load(port, path, seconds, concurrency))
    finally:
        server.terminate()
        server.wait(timeout=30)
    rate = done / seconds
    print(
        f"\ngunicorn, 2 sync workers, first page, {concurrency} loopback clients, {seconds:.0f}s: "
        f"{rate:,.0f} requests/s ({failed} failed)  "
        f"{'ok' if rate >= 500 and not failed else 'UNDER'} (target >= 500)"
    )
    return rate >= 500 and not failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=1_000_000)
    parser.add_argument("--players", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--reuse", action="store_true", help="keep an already loaded database")
    parser.add_argument(
        "--frozen",
        action="store_true",
        help="freeze the board first: measure the public's frozen board (DESIGN.md freeze)",
    )
    args = parser.parse_args()
    _environment()
    _, version_id = prepare(args)
    warm(version_id)
    if args.frozen:
        version_id = freeze_board()
    fast = measure(version_id, args.requests)
    served = throughput(args.seconds, args.concurrency)
    print("\nall targets met" if fast and served else "\nsome targets missed (see above)")


if __name__ == "__main__":
    main()
