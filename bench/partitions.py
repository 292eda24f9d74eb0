"""Discarding a version's scores on PostgreSQL: the drop of its partition beside a DELETE
of the same rows, measured in one run.

Makes a challenge and, for each repeat, a version whose partition holds ROWS score rows
(1,000,000 by default, written by one INSERT ... SELECT), then times:

- the DELETE of those rows (``DELETE ... WHERE version_id = %s``, committed: what
  discarding them cost before the scores table was partitioned);
- the drop of the version's partition (``sql.score_partition_drop``: DETACH ...
  CONCURRENTLY, then DROP TABLE), on a second version filled the same way.

Prints medians and the ratio; exits non-zero when the drop's median takes more than 1 s.
Needs PostgreSQL (BENCH_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/podium_bench — the database is dropped and recreated).

    .venv/bin/python bench/partitions.py [--rows 1000000] [--repeats 3]
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

DROP_TARGET_S = 1.0

# Score rows of one version (the table has no foreign keys in the database: the ids need
# not name attempts for this measurement).
_FILL = """
INSERT INTO challenges_attemptscore
    (version_id, attempt_id, player_id, created_at, score, sort_key, details, error)
SELECT %(version)s, n, n %% 100000, now(), n * 0.5, -n * 0.5,
       jsonb_build_object('base', 100.0, 'time_penalty', n %% 7), ''
FROM generate_series(1, %(rows)s) AS n
"""


def _filled_version(challenge, rows: int):
    from django.db import connection, transaction

    from challenges.models import ScoringVersion

    with transaction.atomic():
        version = ScoringVersion.objects.create_next(challenge=challenge, by=None, reason="bench")
        with connection.cursor() as cursor:
            cursor.execute(_FILL, {"version": version.pk, "rows": rows})
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE challenges_attemptscore")  # steady state
    return version


def delete_rows(challenge, rows: int) -> float:
    from django.db import connection, transaction

    from challenges.leaderboards import sql

    version = _filled_version(challenge, rows)
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM challenges_attemptscore WHERE version_id = %s", [version.pk])
    elapsed = time.perf_counter() - started
    sql.score_partition_drop(version.pk)  # the emptied partition (not measured)
    return elapsed


PHASES: dict[str, list[float]] = {}


def drop_partition(challenge, rows: int) -> float:
    from challenges.leaderboards import sql

    version = _filled_version(challenge, rows)
    execute = sql.execute

    def timed(statement: str, params=()):  # the drop's statements, each timed
        started_one = time.perf_counter()
        try:
            return execute(statement, params)
        finally:
            phase = statement.split(" PARTITION ")[0].split(" challenges_")[0]
            phase = "DETACH ... CONCURRENTLY" if "DETACH" in statement else phase
            PHASES.setdefault(phase, []).append(time.perf_counter() - started_one)

    sql.execute = timed
    try:
        started = time.perf_counter()
        assert sql.score_partition_drop(version.pk)
        return time.perf_counter() - started
    finally:
        sql.execute = execute


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    _pg.setup_django(os.environ.get("BENCH_DATABASE_URL", _pg.DEFAULT_URL))
    from challenges.setup import services as setup_services

    challenge = setup_services.challenge_create(data={"name": "Bench", "scoring_strategy": "first"})
    deletes, drops = [], []
    for repeat in range(args.repeats):
        deletes.append(delete_rows(challenge, args.rows))
        drops.append(drop_partition(challenge, args.rows))
        print(
            f"repeat {repeat + 1}/{args.repeats}: DELETE {deletes[-1]:.3f} s, "
            f"drop {drops[-1]:.3f} s",
            flush=True,
        )
    delete_s, drop_s = statistics.median(deletes), statistics.median(drops)
    print(f"\n{args.rows:,} score rows of one version, median of {args.repeats} repeats")
    print(f"  {'DELETE of its rows':40s} {delete_s:8.3f} s")
    print(f"  {'drop of its partition (DETACH, DROP)':40s} {drop_s:8.3f} s")
    for phase, values in PHASES.items():
        print(f"    {phase:38s} {statistics.median(values):8.3f} s")
    print(f"  the drop is {delete_s / drop_s:,.0f}x faster than the DELETE")
    ok = drop_s <= DROP_TARGET_S
    print(f"drop target <= {DROP_TARGET_S} s: {'met' if ok else 'MISSED'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
