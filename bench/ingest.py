"""Ingestion through gunicorn beside its limit, measured in the same run.

Posts attempts to `POST /api/challenges/{id}/attempts/` with wrk (bench/_http.py;
Debian's `apt-get install wrk`, client and server pinned to different CPUs) against
gunicorn (2 sync workers), as lists of 1 and of 1,000 attempts, for three challenges:
built-in (`fastest`), weighted (the `builtin.weighted_scorer` plugin) and a Python
snippet (skipped where the machine cannot sandbox snippets). Each round also measures
the limit: a bare `COPY` of the same attempt rows into the attempts table, on one
connection from this process pinned to gunicorn's CPUs (no HTTP, no validation, no
scoring, no scores or leaderboard). Lists of 1,000 are driven three times as long (a
request takes about a second). Prints attempts/s,
the limit's median and the ratio; the target is >= 0.2x the limit for lists of 1,000
on built-in and weighted scoring. Then a profile of recording 1,000 attempts in-process
(the API view, test client) says where the time goes: parsing and validation, players,
scoring, writing attempts, scores and leaderboard entries.

Needs PostgreSQL (BENCH_DATABASE_URL, default .../podium_bench_ingest, recreated).
Exits non-zero when a target is missed.

    .venv/bin/python bench/ingest.py [--seconds 5] [--rounds 3] [--connections 4]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import secrets
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _http
import _pg

URL = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/podium_bench_ingest")
TARGET = 0.2
SETUPS = {
    "built-in": {"scoring_strategy": "fastest"},
    "weighted": {
        "scoring_strategy": "custom",
        "scoring_plugin_id": "builtin.weighted_scorer",
        "scoring_entrypoint": "scoring.scorers.weighted:WeightedScorer",
        "scoring_config": {"success_bonus": 100.0, "rating_weight": 10.0},
    },
    "snippet": {
        "scoring_strategy": "python",
        "scoring_code": (
            "def compute_scores(sample):\n"
            "    return {'score': float(len(sample.get('answer', '')))}\n"
        ),
        "score_key": "score",
    },
}
BASE_MS = int(datetime(2026, 1, 1, tzinfo=UTC).timestamp() * 1000)


def attempts(n: int) -> list[dict]:
    """``n`` attempts of ``n`` players, every field set, a small sample each."""
    return [
        {
            "player": f"bench-{i:05d}",
            "player_name": f"Bench player {i}",
            "succeeded": i % 4 != 0,
            "tokens_total": 500 + i % 3000,
            "elapsed_ms": 1000 + (i * 7919) % 90_000,
            "rating": i % 11,
            "created_at": BASE_MS + i,
            "sample": {"question": f"q{i % 97}", "answer": "4" * (1 + i % 5)},
        }
        for i in range(n)
    ]


def copy_rate(challenge_id: int, n: int, seconds: float) -> float:
    """Attempts/s of a bare COPY of ``n`` attempt rows at a time, for ``seconds``."""
    from django.db import connection

    from challenges.models import Attempt, Player

    rows = attempts(n)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id FROM {Player._meta.db_table} WHERE external_id = ANY(%s)",
            [[r["player"] for r in rows]],
        )
        players = [pid for (pid,) in cursor.fetchall()] or [None]
    cols = (
        "challenge_id, player_id, succeeded, tokens_total, elapsed_ms, rating, created_at, "
        "sample, output, messages, recorded_at"
    )
    done = 0
    # On the server's CPUs, as gunicorn is: the same share of the machine.
    affinity = os.sched_getaffinity(0)
    os.sched_setaffinity(0, _http.server_cpus())
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        now = datetime.now(UTC)
        with connection.cursor() as cursor:
            with cursor.cursor.copy(f"COPY {Attempt._meta.db_table} ({cols}) FROM STDIN") as copy:
                for i, r in enumerate(rows):
                    copy.write_row(
                        (
                            challenge_id,
                            players[i % len(players)],
                            r["succeeded"],
                            r["tokens_total"],
                            r["elapsed_ms"],
                            r["rating"],
                            datetime.fromtimestamp(r["created_at"] / 1000, UTC),
                            json.dumps(r["sample"]),
                            "",
                            None,
                            now,
                        )
                    )
        done += n
    rate = done / (time.perf_counter() - started)
    os.sched_setaffinity(0, affinity)
    return rate


def setup() -> tuple[dict[str, int], str, bool]:
    """The challenges (by setup name), an integration token, and whether snippets run."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from rest_framework.authtoken.models import Token

    from challenges.setup import services as setup_services
    from scoring import sandbox

    snippets = sandbox.availability().available
    ids = {}
    for name, data in SETUPS.items():
        if name == "snippet" and not snippets:
            continue
        slug = f"ingest-{name}"
        ids[name] = setup_services.challenge_create(data={"name": slug, "slug": slug, **data}).pk
    user = get_user_model().objects.create_user("bench-ingest")
    user.groups.add(Group.objects.get(name="Integrations"))
    return ids, Token.objects.create(user=user).key, snippets


def profile(challenge_id: int, token: str) -> str:
    """Where recording 1,000 attempts spends its time (the API view, in-process)."""
    from django.test import Client

    client = Client(HTTP_AUTHORIZATION=f"Token {token}")
    body = json.dumps(attempts(1000))
    url = f"/api/challenges/{challenge_id}/attempts/"
    assert client.post(url, body, content_type="application/json").status_code == 201
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    for _ in range(3):
        resp = client.post(url, body, content_type="application/json")
        assert resp.status_code == 201, resp.content[:300]
    profiler.disable()
    total = (time.perf_counter() - started) / 3
    stats = pstats.Stats(profiler, stream=io.StringIO())
    # (function, called from) -> label.
    parts = {
        ("attempts_parse", None): "parse + validate (attempts_parse)",
        ("_players_upsert", None): "players upsert",
        ("scores_compute", None): "scoring (scores_compute)",
        ("attempts_insert", None): "attempts insert (attempts_insert: COPY)",
        ("scores_write", None): "score rows (scores_write)",
        ("entries_upsert", None): "leaderboard entries (entries_upsert)",
        ("_attempt_out", None): "response (_attempt_out)",
    }
    found: dict[str, float] = {}
    for (_, _, func), (_, _, _, cumulative, callers) in stats.stats.items():
        for (name, caller), label in parts.items():
            if func != name:
                continue
            if caller is None:
                found[label] = found.get(label, 0.0) + cumulative / 3
            else:
                for (_, _, called_from), (_, _, _, ct) in callers.items():
                    if called_from == caller:
                        found[label] = found.get(label, 0.0) + ct / 3
    lines = [f"  one request of 1,000 attempts: {total * 1000:.0f} ms (profiled)"]
    for label, seconds in found.items():
        lines.append(f"    {label:40s} {seconds * 1000:7.1f} ms  {seconds / total:4.0%}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=4)
    args = parser.parse_args()
    _http.wrk_path()
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    _pg.setup_django(URL)
    ids, token, snippets = setup()
    env = {
        "DATABASE_URL": URL,
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "PODIUM_ATTEMPTS_RATE": "100000000/min",
        "LOG_LEVEL": "WARNING",
    }
    headers = {"Authorization": f"Token {token}"}
    bodies = {1: attempts(1)[0], 1000: attempts(1000)}
    rates: dict[tuple[str, int], list[float]] = {}
    limits: list[float] = []
    errors = 0
    with _http.Server(env, workers=2) as server:
        for pk in ids.values():  # warm: each path, both workers, players created
            url = f"{server.base}/api/challenges/{pk}/attempts/"
            for body in bodies.values():
                _http.wrk(url, seconds=1, connections=2, body=body, headers=headers)
        for _ in range(args.rounds):
            limits.append(copy_rate(ids["built-in"], 1000, args.seconds))
            for name, pk in ids.items():
                url = f"{server.base}/api/challenges/{pk}/attempts/"
                for n, body in bodies.items():
                    result = _http.wrk(
                        url,
                        # a list of 1,000 takes about a second: enough of them to count
                        seconds=args.seconds * (3 if n > 1 else 1),
                        connections=args.connections if n == 1 else 2,
                        body=body,
                        headers=headers,
                    )
                    rates.setdefault((name, n), []).append(result.rate * n)
                    errors += result.errors
    limit = statistics.median(limits)
    print(
        f"\nrecording attempts through gunicorn (2 sync workers, CPUs {_http.server_cpus()}; "
        f"wrk on CPU {_http.client_cpus()}), {args.rounds} rounds of {args.seconds:.0f}s, "
        "median attempts/s:"
    )
    print(
        f"  {'limit: bare COPY of the same rows':34s} {limit:9,.0f}"
        f"   rounds {'/'.join(f'{v:,.0f}' for v in limits)}"
    )
    ok = errors == 0
    for (name, n), values in rates.items():
        rate = statistics.median(values)
        ratio = rate / limit
        line = f"  {name + ', lists of ' + format(n, ','):34s} {rate:9,.0f}   {ratio:5.3f}x limit"
        if n == 1000 and name in ("built-in", "weighted"):
            ok &= ratio >= TARGET
            line += f"  {'ok' if ratio >= TARGET else 'UNDER'} (target >= {TARGET}x)"
        print(f"{line}   rounds {'/'.join(f'{v:,.0f}' for v in values)}")
    if not snippets:
        print("  snippet: skipped (this machine cannot sandbox Python snippets)")
    if errors:
        print(f"  {errors} failed requests")
    print("\nwhere the time goes (cProfile, cumulative time of each part; the rest is Django,")
    print("DRF, the JSON parser and renderer, the transaction and the version lookups):")
    for name in ("built-in", "weighted"):
        print(f" {name}:")
        print(profile(ids[name], token))
    print("\nall targets met" if ok else "\nsome targets missed (see above)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
