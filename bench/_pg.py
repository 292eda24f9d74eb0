"""Shared set-up for the PostgreSQL benchmarks: a fresh database, migrated, with
challenges, players and attempts loaded by COPY."""

from __future__ import annotations

import hashlib
import os
import random
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/podium_bench"


def setup_django(url: str, *, fresh: bool = True) -> None:
    """Recreate the benchmark database (unless not ``fresh``: the one loaded before)
    and point Django at it."""
    import psycopg

    name = url.rsplit("/", 1)[1]
    admin_url = url.rsplit("/", 1)[0] + "/postgres"
    if fresh:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def load(*, players: int, attempts: int, setup: dict, seed: int = 1):
    """A challenge with ``attempts`` attempts from ``players`` players, loaded by COPY,
    with version 1 active and scored (by SQL: the set-up, not what is measured)."""
    from django.db import connection

    from challenges.models import Attempt, Player
    from challenges.setup import services as setup_services

    challenge = setup_services.challenge_create(data={"name": "Bench", **setup})
    rng = random.Random(seed)
    base = int(datetime(2026, 1, 1, tzinfo=UTC).timestamp())
    started = time.perf_counter()
    with connection.cursor() as cursor:
        raw = cursor.cursor
        with raw.copy(
            f"COPY {Player._meta.db_table} (external_id, display_name, created_at) FROM STDIN"
        ) as copy:
            now = datetime.now(UTC)
            for i in range(players):
                copy.write_row((f"player-{i:06d}", f"Player {i}", now))
        cursor.execute(f"SELECT min(id) FROM {Player._meta.db_table}")
        first_player = cursor.fetchone()[0]
        cols = (
            "challenge_id, player_id, succeeded, tokens_total, elapsed_ms, rating, "
            "created_at, output, recorded_at"
        )
        with raw.copy(f"COPY {Attempt._meta.db_table} ({cols}) FROM STDIN") as copy:
            for i in range(attempts):
                copy.write_row(
                    (
                        challenge.pk,
                        first_player + rng.randrange(players),
                        rng.random() < 0.6,
                        rng.choice((None, rng.randint(0, 5000))),
                        rng.randint(0, 120_000),
                        rng.choice((None, rng.randint(0, 10))),
                        datetime.fromtimestamp(base + i, UTC),
                        "",
                        now,
                    )
                )
        cursor.execute("VACUUM ANALYZE")  # the steady state autovacuum reaches
    took = time.perf_counter() - started
    print(f"loaded {players:,} players and {attempts:,} attempts in {took:.1f}s")
    return challenge


def checksum(keys) -> tuple[int, str]:
    """How many keys and a digest of them in order: what was sent against what was stored."""
    digest = hashlib.sha256()
    for key in sorted(keys):
        digest.update(repr(key).encode())
    return len(keys), digest.hexdigest()[:16]
