"""Every raw SQL statement of Podium, with the one helper that runs a statement and the
one place where the two databases differ.

The ORM writes most queries. The statements here are the ones it cannot write well or
fast enough: the leaderboard's hot reads (constant text, no compilation per request),
the rank checkpoints (a window pass), the entries' rebuild and upsert (DISTINCT ON and
ON CONFLICT), built-in strategies computed by the database, COPY, and the locks.

- ``fetch`` / ``fetch_one`` run a statement and read its rows. SQLite gives datetimes
  back as text and booleans as integers: the caller names those columns and gets
  Python values on both databases.
- Where the SQL text differs by database, a statement is a dict keyed by vendor with a
  ``"default"`` (``_pick``); where only PostgreSQL has the feature (COPY, advisory
  locks, SET LOCAL, FOR SHARE), the function does nothing elsewhere and says so.
- Table names come from the models; every value is a bound parameter.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from django.db import connection
from django.db.models import CharField
from django.db.models.expressions import RawSQL
from django.db.models.fields.json import compile_json_path

from challenges.models import (
    Attempt,
    AttemptScore,
    Challenge,
    EvaluationBoard,
    HistoryRecord,
    LeaderboardEntry,
    LeaderboardRanking,
    Player,
    PlayerHide,
    PlayerRename,
    RescoreJob,
    ScoringVersion,
)

ATTEMPT = Attempt._meta.db_table
SCORE = AttemptScore._meta.db_table
CHALLENGE = Challenge._meta.db_table
ENTRY = LeaderboardEntry._meta.db_table
RANKING = LeaderboardRanking._meta.db_table
PLAYER = Player._meta.db_table
HIDE = PlayerHide._meta.db_table
RENAME = PlayerRename._meta.db_table
HISTORY = HistoryRecord._meta.db_table
JOB = RescoreJob._meta.db_table
VERSION = ScoringVersion._meta.db_table
EVALUATION = EvaluationBoard._meta.db_table


# --- running a statement -------------------------------------------------------------------
def postgres() -> bool:
    """Whether the database is PostgreSQL (COPY, SQL scoring, advisory locks)."""
    return connection.vendor == "postgresql"


def _pick(statements: dict[str, str]) -> str:
    return statements.get(connection.vendor, statements["default"])


def _sqlite_values(
    rows: list[tuple[Any, ...]], datetimes: Sequence[int], booleans: Sequence[int]
) -> list[tuple[Any, ...]]:
    """SQLite's raw values as Python's: datetimes from text, booleans from integers."""
    convert = connection.ops.convert_datetimefield_value
    out = []
    for row in rows:
        values = list(row)
        for i in datetimes:
            if values[i] is not None:
                values[i] = convert(values[i], None, connection)
        for i in booleans:
            if values[i] is not None:
                values[i] = bool(values[i])
        out.append(tuple(values))
    return out


def fetch(
    statement: str,
    params: Sequence[Any] = (),
    *,
    datetimes: Sequence[int] = (),
    booleans: Sequence[int] = (),
) -> list[tuple[Any, ...]]:
    """Every row of a statement. ``datetimes``/``booleans``: the column indexes that
    SQLite gives back raw (text, integers), made Python values there."""
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        rows = cursor.fetchall()
    if rows and (datetimes or booleans) and connection.vendor == "sqlite":
        return _sqlite_values(rows, datetimes, booleans)
    return rows


def fetch_one(
    statement: str,
    params: Sequence[Any] = (),
    *,
    datetimes: Sequence[int] = (),
    booleans: Sequence[int] = (),
) -> tuple[Any, ...] | None:
    """The first row of a statement, or None (see ``fetch``)."""
    rows = fetch(statement, params, datetimes=datetimes, booleans=booleans)
    return rows[0] if rows else None


def execute(statement: str, params: Sequence[Any] = ()) -> int:
    """Run a statement that returns no rows; the number of rows it wrote."""
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.rowcount


def timestamp(value: datetime | None) -> Any:
    """A datetime as the database takes it as a bound parameter."""
    return connection.ops.adapt_datetimefield_value(value)


def set_local(name: str, value: str) -> None:
    """A setting for the rest of this transaction (PostgreSQL; elsewhere nothing).
    ``name`` and ``value`` are ours, never input."""
    if postgres():
        execute(f"SET LOCAL {name} = {value}")


def advisory_lock(namespace: int, key: int, *, wait: bool) -> bool:
    """A transaction-level advisory lock on (namespace, key) (PostgreSQL), released
    however the transaction ends, even by a killed process. ``wait=False``: False at
    once when someone holds it. Elsewhere True: SQLite runs one write transaction at a
    time, so the write lock is the claim."""
    if not postgres():
        return True
    if wait:
        execute("SELECT pg_advisory_xact_lock(%s, %s)", [namespace, key])
        return True
    found = fetch_one("SELECT pg_try_advisory_xact_lock(%s, %s)", [namespace, key])
    return bool(found and found[0])


def challenge_lock_shared(challenge_id: int) -> None:
    """Hold the challenge row in share mode until the transaction ends (PostgreSQL;
    SQLite serialises write transactions already)."""
    if postgres():
        execute(f"SELECT 1 FROM {CHALLENGE} WHERE id = %s FOR SHARE", [challenge_id])  # noqa: S608


def copy_in(table: str, columns: str, data: str | bytes) -> None:
    """COPY rows into ``table``: ``data`` in PostgreSQL's text format (a str) or its
    binary format (bytes, header and trailer included). The raw psycopg cursor's errors
    are made Django's: a lost connection is then an OperationalError like any other, and
    the connection is marked unusable."""
    form = " (FORMAT binary)" if isinstance(data, bytes) else ""
    with connection.cursor() as cursor, connection.wrap_database_errors:
        with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN{form}") as copy:
            copy.write(data)


_IDS_NEXT = "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)"


def ids_next(table: str, count: int) -> list[int]:
    """``count`` new ids of ``table``'s identity column, in increasing order, for rows
    COPY will write with them (PostgreSQL)."""
    return sorted(i for (i,) in fetch(_IDS_NEXT, [table, count]))


ATTEMPT_COLUMNS = (
    "id, challenge_id, player_id, succeeded, tokens_total, elapsed_ms, rating, created_at, "
    "sample, output, messages, recorded_at, practice, hidden"
)


def attempts_copy(text: str) -> None:
    """Attempt rows (``ATTEMPT_COLUMNS``, COPY text format, ids from ``ids_next``). Their
    foreign keys are checked at commit, as for the ORM's INSERT: the request's
    transaction then rolls back whole."""
    copy_in(ATTEMPT, ATTEMPT_COLUMNS, text)


# --- attempts and scores (challenges/leaderboards/scores.py) --------------------------------
# A rescore's attempts by id range. PostgreSQL computes epoch milliseconds exactly
# (numeric) and gives created_at as binary COPY writes a timestamptz back (microseconds
# since 2000-01-01 UTC, exact: ``bulk.pg_timestamp``); SQLite gives the raw datetime and
# Python computes the milliseconds.
ATTEMPT_ROWS = {
    "postgresql": f"""
SELECT a.id, a.player_id, NULL, a.succeeded, a.tokens_total, a.elapsed_ms, a.rating,
       (EXTRACT(EPOCH FROM a.created_at) * 1000)::bigint,
       ((EXTRACT(EPOCH FROM a.created_at) - 946684800) * 1000000)::bigint
FROM {ATTEMPT} a WHERE a.challenge_id = %s AND a.id BETWEEN %s AND %s ORDER BY a.id LIMIT %s
""",  # noqa: S608 - our tables
    "default": f"""
SELECT a.id, a.player_id, NULL, a.succeeded, a.tokens_total, a.elapsed_ms, a.rating,
       0, a.created_at
FROM {ATTEMPT} a WHERE a.challenge_id = %s AND a.id BETWEEN %s AND %s ORDER BY a.id LIMIT %s
""",  # noqa: S608 - our tables
}


def attempt_rows(
    challenge_id: int, first_id: int, last_id: int, limit: int
) -> list[tuple[Any, ...]]:
    """The first ``limit`` attempts of a challenge with ids in [first_id, last_id], in id
    order, with NULL for the player's external id: a join per row costs the database
    more than the rest of the read (``player_names`` reads them by id)."""
    return fetch(_pick(ATTEMPT_ROWS), [challenge_id, first_id, last_id, limit], datetimes=(8,))


IDS_PER_STATEMENT = 10_000  # SQLite: under its cap of parameters in one statement


def player_names(ids: Sequence[int]) -> dict[int, str]:
    """The external ids of the players ``ids``, by id (PostgreSQL: one array parameter)."""
    if postgres():  # the array as its text: psycopg dumps a list element by element
        array = "{" + ",".join(map(str, ids)) + "}"
        statement = f"SELECT id, external_id FROM {PLAYER} WHERE id = ANY(%s::bigint[])"  # noqa: S608
        return dict(fetch(statement, [array]))
    names: dict[int, str] = {}
    for start in range(0, len(ids), IDS_PER_STATEMENT):
        part = ids[start : start + IDS_PER_STATEMENT]
        marks = ", ".join(["%s"] * len(part))
        names.update(fetch(f"SELECT id, external_id FROM {PLAYER} WHERE id IN ({marks})", part))  # noqa: S608
    return names


SCORE_COLUMNS = (
    "version_id, attempt_id, player_id, created_at, score, sort_key, details, error, qa, qa_failed"
)


def scores_copy(data: bytes) -> None:
    """Score rows (``SCORE_COLUMNS``, binary COPY: ``bulk.copy_binary``) into the scores
    table (a partition per version: no foreign key, so nothing deferred to check)."""
    copy_in(SCORE, SCORE_COLUMNS, data)


# Built-in strategies as SQL (PostgreSQL): the value the engine's strategy computes, so a
# rescore needs no Python per attempt. tests/challenges/leaderboards/test_ranking.py
# checks both ways against the same brute-force reference.
STRATEGY_VALUE = {
    "first": "CASE WHEN a.succeeded THEN (EXTRACT(EPOCH FROM a.created_at) * 1000)::float8 END",
    "fastest": "CASE WHEN a.succeeded THEN a.elapsed_ms::float8 END",
    "fewest_tokens": "CASE WHEN a.succeeded THEN a.tokens_total::float8 END",
    "highest_rating": "CASE WHEN a.succeeded THEN a.rating::float8 END",
}


def scored_in_sql(version: ScoringVersion | Challenge) -> bool:
    """Whether a rescore computes this version's scores in the database."""
    return postgres() and version.scoring_strategy in STRATEGY_VALUE


_STRATEGY_INSERT = f"""
INSERT INTO {SCORE} (version_id, attempt_id, player_id, created_at, score, sort_key, details, error)
SELECT %s, id, player_id, created_at, value, {{sign}} value, NULL, '' FROM (
    SELECT a.id, a.player_id, a.created_at, {{value}} AS value
    FROM {ATTEMPT} a WHERE a.challenge_id = %s AND a.id BETWEEN %s AND %s
) computed
"""  # noqa: S608 - our tables and our strategies' expressions


def scores_insert_computed(
    *, strategy: str, negate: bool, version_id: int, challenge_id: int, first_id: int, last_id: int
) -> int:
    """Insert the scores of a built-in strategy for an id range, computed by the
    database (PostgreSQL only); the number of rows."""
    statement = _STRATEGY_INSERT.format(sign="-" if negate else "", value=STRATEGY_VALUE[strategy])
    return execute(statement, [version_id, challenge_id, first_id, last_id])


def scores_settle(version_id: int, first_id: int, last_id: int) -> None:
    """Visit the committed score rows of a range once (PostgreSQL): the first read of a
    freshly written row records that its transaction committed (the row's hint bits),
    which costs about as much as the read itself. Done per chunk, in parallel, it spares
    the final leaderboard rebuild a million such first reads."""
    if postgres():
        execute(
            f"SELECT count(*) FROM {SCORE} WHERE version_id = %s"  # noqa: S608 - our table
            " AND attempt_id BETWEEN %s AND %s",
            [version_id, first_id, last_id],
        )


# --- leaderboard entries --------------------------------------------------------------------
ENTRY_COLUMNS = "version_id, player_id, attempt_id, score, sort_key, created_at"
# Keep the better of two entries of a player: lower sort_key, then earlier, then lower id.
_KEEP_BETTER = f"""
ON CONFLICT (version_id, player_id) DO UPDATE SET
    attempt_id = excluded.attempt_id, score = excluded.score,
    sort_key = excluded.sort_key, created_at = excluded.created_at
WHERE excluded.sort_key < {ENTRY}.sort_key
   OR (excluded.sort_key = {ENTRY}.sort_key AND (excluded.created_at < {ENTRY}.created_at
       OR (excluded.created_at = {ENTRY}.created_at AND excluded.attempt_id < {ENTRY}.attempt_id)))
"""

# What a leaderboard leaves out (challenges/leaderboards/exclusions.py): practice and
# hidden attempts (per score row: the anti-join reads the small partial index
# ``attempt_unranked``), and hidden players (per player: applied to the best rows, a
# tenth of the rows on a typical board; one parameter, the version id).
_PRACTICE_EXCLUDED = f"""
  AND NOT EXISTS (SELECT 1 FROM {ATTEMPT} x WHERE x.id = {{score}}.attempt_id
                  AND (x.practice OR x.hidden))"""  # noqa: S608
_HIDDEN_EXCLUDED = f"""
  NOT EXISTS (SELECT 1 FROM {HIDE} h WHERE h.player_id = best.player_id
              AND (h.challenge_id IS NULL OR h.challenge_id =
                   (SELECT v.challenge_id FROM {VERSION} v WHERE v.id = %s)))"""  # noqa: S608

# Best attempt per player: the first in (sort_key, created_at, attempt_id) order.
_ENTRIES_BEST = {
    "postgresql": f"""
INSERT INTO {ENTRY} ({ENTRY_COLUMNS}{{marked}})
SELECT {ENTRY_COLUMNS}{{marks}} FROM (
    SELECT DISTINCT ON (player_id) {ENTRY_COLUMNS} FROM {SCORE}
    WHERE version_id = %s AND sort_key IS NOT NULL{{players}}{{practice}}
    ORDER BY player_id, sort_key, created_at, attempt_id
) best
WHERE {_HIDDEN_EXCLUDED}
""",  # noqa: S608 - our tables
    "default": f"""
INSERT INTO {ENTRY} ({ENTRY_COLUMNS}{{marked}})
SELECT {ENTRY_COLUMNS}{{marks}} FROM (
    SELECT {ENTRY_COLUMNS}, ROW_NUMBER() OVER (
        PARTITION BY player_id ORDER BY sort_key, created_at, attempt_id
    ) AS place
    FROM {SCORE} WHERE version_id = %s AND sort_key IS NOT NULL{{players}}{{practice}}
) best
WHERE place = 1 AND {_HIDDEN_EXCLUDED}
""",  # noqa: S608 - our tables
}


def entries_insert_best(
    version_id: int,
    *,
    player_ids: Sequence[int] | None = None,
    part: tuple[int, int] | None = None,
    ranked: bool,
) -> None:
    """Insert each player's best scored attempt under the version (of ``player_ids``
    only, when given; of the players whose id is ``k`` modulo ``n`` for ``part=(k, n)``),
    keeping the better row where one is there already (ingestion may upsert the same
    players meanwhile). ``ranked``: written as already ranked."""
    players, params = "", list(player_ids or ())
    if player_ids is not None:
        players = f" AND player_id IN ({', '.join(['%s'] * len(player_ids))})"
    if part is not None:
        players += " AND MOD(player_id, %s) = %s"
        params += [part[1], part[0]]
    statement = _pick(_ENTRIES_BEST).format(
        marked=", ranked_attempt_id" if ranked else "",
        marks=", attempt_id" if ranked else "",
        players=players,
        practice=_PRACTICE_EXCLUDED.format(score=SCORE),
    )
    execute(statement + _KEEP_BETTER, [version_id, *params, version_id])


_ENTRIES_PART_DELETE = f"DELETE FROM {ENTRY} WHERE version_id = %s AND MOD(player_id, %s) = %s"  # noqa: S608


def entries_delete_part(version_id: int, part: tuple[int, int]) -> None:
    """Delete the version's entries of the players whose id is ``k`` modulo ``n``."""
    execute(_ENTRIES_PART_DELETE, [version_id, part[1], part[0]])


UPSERT_BATCH = 1000  # rows per statement: 6,000 parameters


_ENTRIES_UNNEST = (
    f"INSERT INTO {ENTRY} ({ENTRY_COLUMNS}) SELECT * FROM unnest("  # noqa: S608 - our table
    "%s::bigint[], %s::bigint[], %s::bigint[], %s::float8[], %s::float8[], %s::timestamptz[])"
    + _KEEP_BETTER
)


def entries_upsert(rows: Sequence[tuple[Any, ...]]) -> None:
    """Upsert entries (``ENTRY_COLUMNS`` tuples, one per player), keeping the better one:
    on PostgreSQL one statement whose six parameters are arrays (a thousand rows bind
    as six values, not six thousand); elsewhere one statement per batch of rows."""
    if not rows:
        return
    if postgres():
        execute(_ENTRIES_UNNEST, [array_text(column) for column in zip(*rows, strict=True)])
        return
    size = min(UPSERT_BATCH, connection.ops.bulk_batch_size(["v", "p", "a", "s", "k", "c"], rows))
    with connection.cursor() as cursor:
        for start in range(0, len(rows), size):
            batch = rows[start : start + size]
            values = ", ".join(["(%s, %s, %s, %s, %s, %s)"] * len(batch))
            statement = f"INSERT INTO {ENTRY} ({ENTRY_COLUMNS}) VALUES {values}" + _KEEP_BETTER  # noqa: S608
            cursor.execute(statement, [v for row in batch for v in row])


def array_text(values: Sequence[Any]) -> str:
    """A PostgreSQL array literal of numbers or datetimes (never input text), None as
    NULL: bound as one string and cast in the statement. psycopg adapts a list element
    by element in Python, a third of an entries upsert's time for a thousand rows."""
    return "{" + ",".join("NULL" if v is None else f'"{v}"' for v in values) + "}"


# --- recording attempts: the challenge, its versions to score, hidden players -----------
_CHALLENGE_BY_ID = f"SELECT * FROM {CHALLENGE} WHERE id = %s"  # noqa: S608 - our table


def challenge_by_id(pk: int) -> Challenge | None:
    """The challenge of this id (None: none), by a constant statement."""
    return next(iter(Challenge.objects.raw(_CHALLENGE_BY_ID, [pk])), None)


# The versions a new attempt is scored under: the active one and any being rescored
# (challenges/ingestion/services.py). Constant SQL, run twice per request recording
# attempts: compiling the same query with the ORM cost a third of such a request's CPU.
_ACTIVE_JOB_STATUSES = ", ".join(f"'{s}'" for s in RescoreJob.ACTIVE_STATUSES)
_VERSIONS_TO_SCORE = f"""
SELECT v.*, c.active_version_id AS active_id
FROM {VERSION} v JOIN {CHALLENGE} c ON c.id = v.challenge_id
WHERE v.challenge_id = %s AND (
    v.id = c.active_version_id
    OR EXISTS (SELECT 1 FROM {JOB} j WHERE j.version_id = v.id
               AND j.status IN ({_ACTIVE_JOB_STATUSES}))
)
ORDER BY v.id
"""  # noqa: S608 - our tables, our constants
_VERSION_IDS_TO_SCORE = _VERSIONS_TO_SCORE.replace("v.*,", "v.id,")


def versions_to_score(challenge_id: int) -> list[ScoringVersion]:
    """The challenge's active version and those being rescored, in id order, each with
    ``active_id`` (the challenge's active version id)."""
    return list(ScoringVersion.objects.raw(_VERSIONS_TO_SCORE, [challenge_id]))


# When the two newest attempts of a version's challenge were recorded: whether the newest
# came after a quiet spell (an idle board) or amid others (steady ingestion); ranking.py.
# Two rows from the newest back, on the (challenge, id) index.
_LAST_TWO_RECORDED = f"""
SELECT a.recorded_at FROM {ATTEMPT} a
WHERE a.challenge_id = (SELECT v.challenge_id FROM {VERSION} v WHERE v.id = %s)
ORDER BY a.id DESC LIMIT 2
"""  # noqa: S608 - our tables


def last_two_recorded(version_id: int) -> list[datetime]:
    """When the newest two attempts of the version's challenge were recorded, newest
    first (fewer when it has fewer)."""
    return [row[0] for row in fetch(_LAST_TWO_RECORDED, [version_id], datetimes=(0,))]


def version_ids_to_score(challenge_id: int) -> list[tuple[int, int | None]]:
    """What ``versions_to_score`` finds, as (version id, active version id) rows, without
    loading the versions."""
    return [(pk, active_id) for pk, active_id in fetch(_VERSION_IDS_TO_SCORE, [challenge_id])]


# Which of some players are hidden from a challenge (challenges/leaderboards/exclusions.py),
# asked by every request recording attempts.
_HIDDEN_AMONG = {
    "postgresql": f"""SELECT player_id FROM {HIDE}
WHERE (challenge_id = %s OR challenge_id IS NULL) AND player_id = ANY(%s)""",  # noqa: S608
    "default": f"""SELECT player_id FROM {HIDE}
WHERE (challenge_id = %s OR challenge_id IS NULL) AND player_id IN ({{marks}})""",  # noqa: S608
}


def hidden_among(challenge_id: int, player_ids: list[int]) -> set[int]:
    """Which of ``player_ids`` are hidden from the challenge, or from every challenge."""
    if postgres():
        rows = fetch(_HIDDEN_AMONG["postgresql"], [challenge_id, player_ids])
    else:  # no arrays: one placeholder per id
        marks = ", ".join(["%s"] * len(player_ids))
        rows = fetch(_HIDDEN_AMONG["default"].format(marks=marks), [challenge_id, *player_ids])
    return {player_id for (player_id,) in rows}


_HISTORY_STAMP = f"""SELECT
 (SELECT count(*) FROM {HISTORY} WHERE challenge_id = %s AND switched_at < %s),
 (SELECT max(id) FROM {HISTORY} WHERE challenge_id = %s AND switched_at < %s),
 (SELECT count(*) FROM {HIDE} WHERE challenge_id = %s OR challenge_id IS NULL),
 (SELECT max(id) FROM {HIDE} WHERE challenge_id = %s OR challenge_id IS NULL)"""  # noqa: S608


def history_stamp(challenge_id: int, before: datetime) -> tuple[Any, ...]:
    """(records switched before ``before``: how many, the highest id; hides of the
    challenge or of every challenge: how many, the highest id), in one round trip."""
    at = timestamp(before)
    found = fetch_one(_HISTORY_STAMP, [challenge_id, at] * 2 + [challenge_id] * 2)
    return tuple(found or ())


# A version's board as the public reads it (challenges/leaderboards/history.py): the
# version, whether a public history record names it, and its ranking's state, at once.
_VERSION_BOARD = f"""SELECT v.id,
 EXISTS (SELECT 1 FROM {HISTORY} h WHERE h.challenge_id = v.challenge_id
         AND h.switched_at < %s AND (h.version_id = v.id OR h.previous_version_id = v.id)),
 r.token, r.stale,
 EXISTS (SELECT 1 FROM {ENTRY} e WHERE e.version_id = v.id AND e.unranked)
FROM {VERSION} v LEFT JOIN {RANKING} r ON r.version_id = v.id
WHERE v.challenge_id = %s AND v.number = %s"""  # noqa: S608 - our tables


def version_board(challenge_id: int, number: int, before: datetime) -> tuple[Any, ...] | None:
    """(version id, named by a record switched before ``before``, ranking token, stale,
    entries changed since the ranking) of the challenge's version ``number``; None when
    there is no such version."""
    found = fetch_one(_VERSION_BOARD, [timestamp(before), challenge_id, number])
    if found is None:
        return None
    version_id, was_public, token, stale, changed = found
    return version_id, bool(was_public), token, bool(stale), bool(changed)


# An aggregate board's stored intervals as a reader asks for them
# (challenges/leaderboards/evaluation.py): the whole board's and a slice's, without their
# rows, with the ranking's lineage and the newest attempt, in one round trip.
_EVALUATION_BOARDS = f"""SELECT b.id, b.slice, b.setup, b.stamp, b.computed_at, b.attempts,
 b.items, b.paired, b.slices, b.metrics,
 (SELECT r.lineage FROM {RANKING} r WHERE r.version_id = b.version_id),
 (SELECT r.stale FROM {RANKING} r WHERE r.version_id = b.version_id),
 (SELECT a.id FROM {ATTEMPT} a WHERE a.challenge_id = b.challenge_id ORDER BY a.id DESC LIMIT 1)
FROM {EVALUATION} b
WHERE b.challenge_id = %s AND b.version_id = %s AND b.frozen = %s AND b.slice IN ('', %s)"""  # noqa: S608


class StoredBoard(NamedTuple):
    id: int
    slice: str
    setup: str
    stamp: str
    computed_at: datetime
    attempts: int
    items: int
    paired: bool
    slices: dict[str, int]
    metrics: dict[str, dict[str, float]]
    ranking_lineage: str | None  # None: the version has no ranking yet
    ranking_stale: bool | None
    newest_attempt: int | None


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def evaluation_boards(
    challenge_id: int, version_id: int, frozen: bool, slice: str
) -> dict[str, StoredBoard]:
    """The stored boards of the whole board ("") and of ``slice``, by slice."""
    rows = fetch(
        _EVALUATION_BOARDS,
        [challenge_id, version_id, frozen, slice],
        datetimes=(4,),
        booleans=(7, 11),
    )
    boards = {}
    for row in rows:
        values = list(row)
        values[8], values[9] = _json(values[8]), _json(values[9])
        boards[values[1]] = StoredBoard(*values)
    return boards


# --- players ---------------------------------------------------------------------------
_PLAYERS_NEW = (
    f"INSERT INTO {PLAYER} (external_id, display_name, created_at) "  # noqa: S608 - our table
    "SELECT e, n, %s FROM unnest(%s::text[], %s::text[]) AS t(e, n) "
    "ON CONFLICT (external_id) DO NOTHING"
)
# A player's columns in the model's field order, as Player.from_db takes them.
PLAYER_COLUMNS = [f.attname for f in Player._meta.concrete_fields]
_PLAYERS_NAMED = f"SELECT {', '.join(PLAYER_COLUMNS)} FROM {PLAYER} WHERE external_id = ANY(%s)"  # noqa: S608


def players_insert_missing(external_ids: list[str], names: list[str], now: datetime) -> None:
    """Create the players not seen yet, in the order given (PostgreSQL: two arrays)."""
    execute(_PLAYERS_NEW, [now, external_ids, names])


def players_named(external_ids: list[str]) -> list[tuple[Any, ...]]:
    """These players' rows (``PLAYER_COLUMNS``; PostgreSQL)."""
    return fetch(_PLAYERS_NAMED, [external_ids])


# A frozen board: the best attempt per player under a version, of the attempts recorded
# before the freeze (challenges/leaderboards/freeze.py).
_FROZEN_BEST = {
    "postgresql": f"""
INSERT INTO {ENTRY} (version_id, player_id, attempt_id, score, sort_key, created_at,
                     ranked_attempt_id)
SELECT %s, player_id, attempt_id, score, sort_key, created_at, attempt_id FROM (
    SELECT DISTINCT ON (s.player_id) s.player_id, s.attempt_id, s.score, s.sort_key,
           s.created_at
    FROM {SCORE} s JOIN {ATTEMPT} a ON a.id = s.attempt_id
    WHERE s.version_id = %s AND s.sort_key IS NOT NULL AND a.recorded_at < %s{{practice}}
    ORDER BY s.player_id, s.sort_key, s.created_at, s.attempt_id
) best
WHERE {_HIDDEN_EXCLUDED}
""",  # noqa: S608 - our tables
    "default": f"""
INSERT INTO {ENTRY} (version_id, player_id, attempt_id, score, sort_key, created_at,
                     ranked_attempt_id)
SELECT %s, player_id, attempt_id, score, sort_key, created_at, attempt_id FROM (
    SELECT s.player_id, s.attempt_id, s.score, s.sort_key, s.created_at,
           ROW_NUMBER() OVER (PARTITION BY s.player_id
                              ORDER BY s.sort_key, s.created_at, s.attempt_id) AS place
    FROM {SCORE} s JOIN {ATTEMPT} a ON a.id = s.attempt_id
    WHERE s.version_id = %s AND s.sort_key IS NOT NULL AND a.recorded_at < %s{{practice}}
) best WHERE place = 1 AND {_HIDDEN_EXCLUDED}
""",  # noqa: S608 - our tables
}


def entries_insert_frozen(board: int, version_id: int, freeze_at: datetime) -> None:
    """Fill the frozen board ``board`` from the version's scores of the attempts
    recorded before ``freeze_at``, already ranked."""
    statement = _pick(_FROZEN_BEST).format(practice=_PRACTICE_EXCLUDED.format(score="s"))
    execute(statement, [board, version_id, timestamp(freeze_at), version_id])


# --- rank checkpoints (challenges/leaderboards/ranking.py) ----------------------------------
# Every page-th row in rank order, and the last one (its place + 1 is the row count).
# ``tied``: equal on (sort_key, created_at) to the row before, so the rank is lower than
# place + 1 (rare; resolved per checkpoint). One window pass over the rank index.
_CHECKPOINTS = f"""
SELECT sort_key, created_at, attempt_id, place, tied FROM (
    SELECT sort_key, created_at, attempt_id,
           ROW_NUMBER() OVER w - 1 AS place,
           CASE WHEN LAG(sort_key) OVER w = sort_key
                 AND LAG(created_at) OVER w = created_at THEN 1 ELSE 0 END AS tied,
           CASE WHEN LEAD(attempt_id) OVER w IS NULL THEN 1 ELSE 0 END AS last
    FROM {ENTRY} WHERE version_id = %s
    WINDOW w AS (ORDER BY sort_key, created_at, attempt_id)
) ranked
WHERE place %% %s = 0 OR last = 1
ORDER BY place
"""  # noqa: S608 - our table


def checkpoint_rows(version_id: int, page: int) -> list[tuple[Any, ...]]:
    """(sort_key, created_at, attempt_id, place, tied) of every ``page``-th entry in
    rank order and of the last one."""
    return fetch(_CHECKPOINTS, [version_id, page], datetimes=(1,))


# --- what a public request learns fresh (challenges/leaderboards/selectors.py) --------------
# The challenge's identity and version, whether a rescore is under way, the newest
# attempt's time, and its ranking's state: one statement with no ORM compilation (it
# runs on every view and every live refresh).
_PROBE = f"""
SELECT c.id, c.updated_at, c.active_version_id,
       EXISTS (SELECT 1 FROM {JOB} j WHERE j.challenge_id = c.id
               AND j.status IN ('queued', 'running')) AS rescoring,
       (SELECT a.recorded_at FROM {ATTEMPT} a WHERE a.challenge_id = c.id
        AND NOT (a.practice OR a.hidden)
        AND NOT EXISTS (SELECT 1 FROM {HIDE} h WHERE h.player_id = a.player_id
                        AND (h.challenge_id IS NULL OR h.challenge_id = c.id))
        ORDER BY a.id DESC LIMIT 1) AS last_activity,
       r.token, r.stale,
       EXISTS (SELECT 1 FROM {ENTRY} e WHERE e.version_id = c.active_version_id
               AND e.unranked) AS changed
FROM {CHALLENGE} c LEFT JOIN {RANKING} r ON r.version_id = c.active_version_id
WHERE c.slug = %s AND c.is_active
"""  # noqa: S608 - our tables


def challenge_probe(slug: str) -> tuple[Any, ...] | None:
    """(id, updated_at, active_version_id, rescoring, last_activity, token, stale,
    changed) of an active challenge by slug; ``last_activity`` is when the newest
    attempt the public may see was recorded (no practice, hidden attempt or hidden
    player's: they change nothing the public sees)."""
    return fetch_one(*_kept_plan(_PROBE_PLAN, [slug]), datetimes=(1, 4), booleans=(3, 6, 7))


# The API's leaderboard: the challenge by id (inactive ones only for staff) and its
# ranking's state.
_BOARD_PROBE = f"""
SELECT c.id, c.updated_at, c.active_version_id, r.token, r.stale,
       EXISTS (SELECT 1 FROM {ENTRY} e WHERE e.version_id = c.active_version_id
               AND e.unranked) AS changed
FROM {CHALLENGE} c LEFT JOIN {RANKING} r ON r.version_id = c.active_version_id
WHERE c.id = %s AND (c.is_active OR %s)
"""  # noqa: S608 - our tables


def board_probe(pk: int, include_inactive: bool) -> tuple[Any, ...] | None:
    """(id, updated_at, active_version_id, token, stale, changed) of a challenge by id."""
    params = [pk, include_inactive]
    return fetch_one(*_kept_plan(_BOARD_PROBE_PLAN, params), datetimes=(1,), booleans=(4, 5))


class KeptPlan(NamedTuple):
    """A statement every request runs, also as a PL/pgSQL function (PostgreSQL): the
    database then keeps its plan for the session (``plans_install``)."""

    statement: str  # with %s parameters: SQLite, and PostgreSQL until the function exists
    arguments: str  # the function's parameter types, in order
    returns: str  # its result columns' types, in order (the statement's, exactly)

    @property
    def function(self) -> str:
        """Named by a digest of what it runs: code reading another statement never calls
        a function made for an older one."""
        digest = hashlib.sha256(repr(tuple(self)).encode()).hexdigest()[:12]
        return f"podium_plan_{digest}"


# The probes run on every page and API read and cost more to plan than to run (the page
# probe: about 0.5 of 0.85 ms here; prepared, 0.37 ms).
_PROBE_PLAN = KeptPlan(
    _PROBE, "text", "bigint, timestamptz, bigint, boolean, timestamptz, varchar, boolean, boolean"
)
_BOARD_PROBE_PLAN = KeptPlan(
    _BOARD_PROBE, "bigint, boolean", "bigint, timestamptz, bigint, varchar, boolean, boolean"
)
KEPT_PLANS = (_PROBE_PLAN, _BOARD_PROBE_PLAN)
_plans_found: dict[str, bool] = {}  # function name -> whether this database has it


def _kept_plan(plan: KeptPlan, params: list[Any]) -> tuple[str, list[Any]]:
    """The statement to run for ``plan``: a call of its function where the database has
    it (looked up once per process), else the statement itself."""
    if not postgres():
        return plan.statement, params
    name = plan.function
    if name not in _plans_found:
        found = fetch_one("SELECT to_regproc(%s) IS NOT NULL", [name])
        _plans_found[name] = bool(found and found[0])
    if not _plans_found[name]:
        return plan.statement, params
    marks = ", ".join(["%s"] * len(params))
    return f"SELECT * FROM {name}({marks})", params  # noqa: S608 - our function


def _numbered(statement: str, arguments: int) -> str:
    """``statement`` with its ``%s`` as $1, $2, … and ``%%`` as ``%`` (one pass, so a
    ``%%s`` stays the text ``%s``); refused unless it has one ``%s`` per argument."""
    found = [m for m in re.findall(r"%%|%s", statement) if m == "%s"]
    if len(found) != arguments:
        raise ValueError(f"{len(found)} parameter(s) in the statement, {arguments} declared")
    marks = iter(range(1, arguments + 1))
    return re.sub(r"%%|%s", lambda m: "%" if m[0] == "%%" else f"${next(marks)}", statement)


def plans_install(using: Any) -> None:
    """Make every kept plan's function (PostgreSQL; after each migrate: apps.py). A
    PL/pgSQL function's statements are planned once per session and the plan kept,
    which PgBouncer's transaction pooling keeps too: it lives in the server, not the
    client (unlike a prepared statement)."""
    if using.vendor != "postgresql":
        return
    with using.cursor() as cursor:
        for plan in KEPT_PLANS:
            body = _numbered(plan.statement, plan.arguments.count(",") + 1)
            columns = ", ".join(f"c{i} {t}" for i, t in enumerate(plan.returns.split(", ")))
            cursor.execute(
                f"CREATE OR REPLACE FUNCTION {plan.function}({plan.arguments}) "
                f"RETURNS TABLE ({columns}) LANGUAGE plpgsql STABLE AS "
                f"$podium$ BEGIN RETURN QUERY {body}; END $podium$"
            )
    _plans_found.clear()


# --- display names as of a moment (challenges/leaderboards/names.py) ------------------------
# The player ``p``'s display name as of a moment (its one parameter): the old name of
# their first rename at or after it, else the name they have now. A frozen board shows
# names as of its freeze; one index probe (player, at) per row.
NAME_AS_OF = (
    f"COALESCE((SELECT r.old_name FROM {RENAME} r WHERE r.player_id = p.id"  # noqa: S608
    " AND r.at >= %s ORDER BY r.at, r.id LIMIT 1), p.display_name)"
)
# The same, for a search that tests every row of a board: the players renamed since the
# moment are read once (a hashed set), and only theirs probe for the old name.
_NAME_AS_OF_SCAN = (
    f"CASE WHEN p.id IN (SELECT r.player_id FROM {RENAME} r WHERE r.at >= %s)"  # noqa: S608
    f" THEN {NAME_AS_OF} ELSE p.display_name END"
)
_RENAMED_SINCE = f"p.id = ANY(ARRAY(SELECT r.player_id FROM {RENAME} r WHERE r.at >= %s))"  # noqa: S608
_NAMES_AS_OF = {
    "postgresql": f"SELECT p.id, {NAME_AS_OF} FROM {PLAYER} p WHERE p.id = ANY(%s)",  # noqa: S608
    "default": f"SELECT p.id, {NAME_AS_OF} FROM {PLAYER} p WHERE p.id IN ({{marks}})",  # noqa: S608
}


def names_as_of(player_ids: list[int], at: datetime) -> dict[int, str]:
    """{player id: display name as of ``at``} of these players, in one statement."""
    if not player_ids:
        return {}
    if postgres():
        rows = fetch(_NAMES_AS_OF["postgresql"], [timestamp(at), list(player_ids)])
    else:  # no arrays: one placeholder per id
        marks = ", ".join(["%s"] * len(player_ids))
        statement = _NAMES_AS_OF["default"].format(marks=marks)
        rows = fetch(statement, [timestamp(at), *player_ids])
    return dict(rows)


# --- leaderboard rows -------------------------------------------------------------------------
# Rows in rank order from a key, a name search, a player's row: the hot reads of every
# page view and refresh, as constant SQL. ``ROWS_AS_OF``: the same with the names as of a
# moment (a frozen board's), its first parameter.
_ROWS = f"""
SELECT e.sort_key, e.created_at, e.attempt_id, e.score, p.external_id, {{name}}
FROM {ENTRY} e JOIN {PLAYER} p ON p.id = e.player_id
WHERE e.version_id = %s AND {{condition}}
ORDER BY e.sort_key, e.created_at, e.attempt_id
LIMIT %s
"""  # noqa: S608 - our tables

# Always true, and evaluated once; current_schema() is parallel-unsafe, so the planner
# keeps the statement serial: starting parallel workers for a name search costs more
# than either walk (and it cannot estimate how far a LIKE reaches along the rank order).
SERIAL = "COALESCE(current_schema(), '') IS NOT NULL"
_CONDITIONS = {
    "from_key": "(e.sort_key, e.created_at, e.attempt_id) >= (%s, %s, %s)",
    "after_key": "(e.sort_key, e.created_at, e.attempt_id) > (%s, %s, %s)",
    "all": "1 = 1",
    # The expression of the trigram index on PostgreSQL (migration 0007); SQLite's LIKE
    # ignores ASCII case by itself.
    "name_postgresql": f"UPPER(p.display_name::text) LIKE UPPER(%s) AND {SERIAL}",
    # One letter: the letters index (migration 0010) finds the players who have it.
    "letter_postgresql": (
        "regexp_split_to_array(UPPER(p.display_name::text), '') @> ARRAY[UPPER(%s)]"
        f" AND UPPER(p.display_name::text) LIKE UPPER(%s) AND {SERIAL}"
    ),
    "name": "p.display_name LIKE %s ESCAPE '\\'",
    "player": "p.external_id = %s",
    # A frozen board's search: the names as of the freeze (a scan of its rows in rank
    # order; no name index holds past names).
    # PostgreSQL: first the players whose name now matches (the name indexes, as above)
    # or who were renamed since (by id), then the name as of the moment among those.
    "name_as_of_postgresql": (
        f"(UPPER(p.display_name::text) LIKE UPPER(%s) OR {_RENAMED_SINCE})"
        f" AND UPPER(({_NAME_AS_OF_SCAN})::text) LIKE UPPER(%s) AND {SERIAL}"
    ),
    "letter_as_of_postgresql": (
        "(regexp_split_to_array(UPPER(p.display_name::text), '') @> ARRAY[UPPER(%s)]"
        f" OR {_RENAMED_SINCE})"
        f" AND UPPER(({_NAME_AS_OF_SCAN})::text) LIKE UPPER(%s) AND {SERIAL}"
    ),
    "name_as_of": f"{_NAME_AS_OF_SCAN} LIKE %s ESCAPE '\\'",
}
ROWS = {
    name: _ROWS.format(condition=condition, name="p.display_name")
    for name, condition in _CONDITIONS.items()
}
ROWS_AS_OF = {
    name: _ROWS.format(condition=condition, name=NAME_AS_OF)
    for name, condition in _CONDITIONS.items()
}
ROW_COLUMNS = ("sort_key", "created_at", "attempt_id", "score", "external_id", "display_name")


def entry_rows(
    version_id: int,
    condition: str,
    params: Sequence[Any],
    limit: int,
    *,
    names_at: datetime | None = None,
) -> list[tuple[Any, ...]]:
    """Up to ``limit`` entries (``ROW_COLUMNS``) in rank order that meet a condition of
    ``ROWS``; ``names_at``: with the display names as of that moment."""
    if names_at is None:
        return fetch(ROWS[condition], [version_id, *params, limit], datetimes=(1,))
    at = timestamp(names_at)
    return fetch(ROWS_AS_OF[condition], [at, version_id, *params, limit], datetimes=(1,))


def name_condition(text: str, *, names_at: datetime | None = None) -> tuple[str, list[Any]]:
    """The condition and parameters of a search for names containing ``text`` (any
    case). On PostgreSQL the planner weighs the name indexes against walking the rank
    order (best when most names match) from their statistics, in a serial plan.
    ``names_at``: among the names as of that moment (a frozen board's)."""
    pattern = f"%{connection.ops.prep_for_like_query(text)}%"
    if names_at is not None:
        at = timestamp(names_at)
        if not postgres():
            return "name_as_of", [at, at, pattern]
        if len(text) == 1 and text.isascii():
            return "letter_as_of_postgresql", [text, at, at, at, pattern]
        return "name_as_of_postgresql", [pattern, at, at, at, pattern]
    if not postgres():
        return "name", [pattern]
    if len(text) == 1 and text.isascii():  # (UPPER of some letters is two letters)
        return "letter_postgresql", [text, pattern]
    return "name_postgresql", [pattern]


# How many entries lie from a checkpoint up to a key (rows up to its full key). The plain
# sort_key bounds repeat the row comparisons for the planner's estimate (it cannot
# estimate a row comparison, guesses a large range, and plans parallel workers).
_COUNT_UP_TO = (
    f"SELECT %s, COUNT(*) FROM {ENTRY} WHERE version_id = %s"  # noqa: S608 - our table
    " AND (sort_key, created_at, attempt_id) >= (%s, %s, %s)"
    " AND (sort_key, created_at, attempt_id) <= (%s, %s, %s) AND sort_key BETWEEN %s AND %s"
)


def counts_up_to(
    version_id: int, ranges: Sequence[tuple[Sequence[Any], Sequence[Any]]]
) -> list[int]:
    """For each (first, key) range of (sort_key, adapted created_at, attempt_id) keys, how
    many entries it holds: one UNION ALL of index-only range counts of at most a page
    each (an OR of ranges would make the database filter every entry)."""
    params: list[Any] = []
    for i, (first, key) in enumerate(ranges):
        params += [i, version_id, *first, *key, first[0], key[0]]
    found = dict(fetch(" UNION ALL ".join([_COUNT_UP_TO] * len(ranges)), params))
    return [found[i] for i in range(len(ranges))]


# The tie keys (sort_key, created_at) of the entries from a checkpoint up to (not
# including) a tie group: at most a page of an index-only range.
_TIES = (
    f"SELECT %s, sort_key, created_at FROM {ENTRY} WHERE version_id = %s"  # noqa: S608
    " AND (sort_key, created_at, attempt_id) >= (%s, %s, %s)"
    " AND (sort_key, created_at) < (%s, %s) AND sort_key BETWEEN %s AND %s"
)


def ties_before(
    version_id: int, ranges: Sequence[tuple[int, Sequence[Any], Sequence[Any]]]
) -> list[tuple[Any, ...]]:
    """(j, sort_key, created_at) of the entries from each checkpoint ``first`` (a full
    key) up to the tie group ``last`` (sort_key, created_at): one UNION ALL."""
    params: list[Any] = []
    for j, first, last in ranges:
        params += [j, version_id, *first, *last, first[0], last[0]]
    return fetch(" UNION ALL ".join([_TIES] * len(ranges)), params, datetimes=(2,))


# For each (checkpoint, key) pair, the entries from the checkpoint up to (not including)
# the key's tie group (sort_key, created_at): one statement, planned once, whose
# correlated count reads at most a page of the rank index per pair.
_BEFORE_TIES = f"""
WITH k(i, s0, c0, a0, s1, c1) AS (VALUES {{values}})
SELECT k.i, (SELECT COUNT(*) FROM {ENTRY} e WHERE e.version_id = %s
             AND (e.sort_key, e.created_at, e.attempt_id) >= (k.s0, k.c0, k.a0)
             AND (e.sort_key, e.created_at) < (k.s1, k.c1))
FROM k
"""  # noqa: S608 - our table


def counts_before_ties(
    version_id: int, pairs: Sequence[tuple[Sequence[Any], Sequence[Any]]]
) -> list[int]:
    """For each (first, key) pair — a checkpoint's full key and a (sort_key, created_at)
    tie group — how many entries lie from the first up to the group."""
    cast = "::timestamptz" if postgres() else ""
    row = f"(%s, %s, %s{cast}, %s, %s, %s{cast})"
    params: list[Any] = []
    for i, (first, key) in enumerate(pairs):
        params += [i, *first, *key]
    statement = _BEFORE_TIES.format(values=", ".join([row] * len(pairs)))
    found = dict(fetch(statement, [*params, version_id]))
    return [found[i] for i in range(len(pairs))]


# --- rescoring (challenges/rescoring/jobs.py) ---------------------------------------------------
_ID_SPAN = f"SELECT min(id), max(id) FROM {ATTEMPT} WHERE challenge_id = %s"  # noqa: S608
_NEXT_START = f"""
SELECT id FROM {ATTEMPT} WHERE challenge_id = %s AND id >= %s ORDER BY id LIMIT 1 OFFSET %s
"""  # noqa: S608 - our table
_COUNT_FROM = f"SELECT count(*) FROM {ATTEMPT} WHERE challenge_id = %s AND id >= %s"  # noqa: S608


def attempt_id_span(challenge_id: int) -> tuple[int, int] | None:
    """The lowest and the highest id of a challenge's attempts (two probes of the
    (challenge, id) index), or None when it has none."""
    first, last = fetch_one(_ID_SPAN, [challenge_id]) or (None, None)
    return None if first is None else (first, last)


def chunk_starts(challenge_id: int, first: int, size: int) -> tuple[list[int], int]:
    """The id of every ``size``-th attempt of a challenge from ``first`` (its lowest id),
    and how many there are: a walk of the (challenge, id) index, a statement a chunk, each
    step passing exactly ``size`` attempts, then a count of the last chunk alone."""
    starts: list[int] = []
    start: int | None = first
    while start is not None:
        starts.append(start)
        start = (fetch_one(_NEXT_START, [challenge_id, start, size]) or (None,))[0]
    tail = fetch_one(_COUNT_FROM, [challenge_id, starts[-1]])[0]
    return starts, size * (len(starts) - 1) + tail


# --- metrics (challenges/leaderboards/metric_counts.py) -------------------------------------------
def json_type(column: str, path: list[str]) -> RawSQL:
    """The JSON type of the value at ``path`` in a JSON column, in one vocabulary on both
    databases: 'number', 'string', 'boolean', or NULL/'null'."""
    if postgres():
        return RawSQL(f"jsonb_typeof({column} #> %s)", (path,), CharField())  # noqa: S611 - bound
    statement = (
        f"CASE JSON_TYPE({column}, %s) WHEN 'real' THEN 'number' WHEN 'integer' THEN 'number' "
        "WHEN 'text' THEN 'string' WHEN 'true' THEN 'boolean' WHEN 'false' THEN 'boolean' END"
    )
    return RawSQL(statement, (compile_json_path(path),), CharField())  # noqa: S611 - bound


# --- history records (challenges/leaderboards/history.py) -----------------------------------
# A board in rank order, only what ranks need: one pass over the rank index.
_BOARD_ORDER = f"""
SELECT player_id, sort_key, created_at FROM {ENTRY} WHERE version_id = %s
ORDER BY sort_key, created_at, attempt_id
"""  # noqa: S608 - our table


def board_order(board: int) -> list[tuple[Any, ...]]:
    """(player_id, sort_key, created_at) of every entry of ``board`` in rank order;
    ``created_at`` is only compared for equality (raw text on SQLite)."""
    return fetch(_BOARD_ORDER, [board])


# Every player on either of two boards with their competition rank on each (NULL: not on
# that board), the players ranked on the first board first, by (rank before, rank after):
# the order Kendall's tau wants. One pass over each board's rank index and a hash join,
# so the history record of a 100,000-player switch reads 100,000 pairs of integers
# instead of two boards of keys.
_BOARD_PAIRS = f"""
WITH b AS (SELECT player_id, RANK() OVER (ORDER BY sort_key, created_at) AS r
           FROM {ENTRY} WHERE version_id = %s),
     a AS (SELECT player_id, RANK() OVER (ORDER BY sort_key, created_at) AS r
           FROM {ENTRY} WHERE version_id = %s)
SELECT b.r, a.r, COALESCE(b.player_id, a.player_id)
FROM b FULL OUTER JOIN a ON a.player_id = b.player_id
ORDER BY b.r IS NULL, b.r, a.r
"""  # noqa: S608 - our table


def board_pairs(before: int, after: int) -> list[tuple[Any, ...]]:
    """(rank before | None, rank after | None, player_id) of every player on either
    board, ordered as ``_BOARD_PAIRS`` says."""
    return fetch(_BOARD_PAIRS, [before, after])


# --- score partitions (PostgreSQL; challenges/leaderboards/partitions.py) -------------------
# The scores table is partitioned by version (migration 0029): one partition per version,
# named here. Making one (CREATE, then ATTACH) takes SHARE UPDATE EXCLUSIVE on the scores
# table, which no read or write waits for (only other DDL does); dropping one detaches it
# CONCURRENTLY (the same lock, then a wait for the transactions that may still see it)
# and drops the detached table, which nobody reads. The table has no foreign keys in the
# database, so neither locks the attempts or versions tables.
_PARTITION_STATE = """
SELECT i.inhdetachpending FROM pg_class c LEFT JOIN pg_inherits i ON i.inhrelid = c.oid
WHERE c.oid = to_regclass(%s)
"""


def _partitioned() -> bool:
    """Whether the scores table is partitioned: on PostgreSQL, always (the database's
    own vendor, not ``postgres()``, which tests may turn off to take SQLite's paths)."""
    return connection.vendor == "postgresql"


def score_partition(version_id: int) -> str:
    """The name of a version's partition of the scores table."""
    return f"{SCORE}_v{int(version_id)}"


def score_partition_state(version_id: int) -> str:
    """``"none"``, ``"attached"``, ``"detaching"`` (a detach was interrupted) or
    ``"detached"`` (PostgreSQL; elsewhere always ``"none"``)."""
    if not _partitioned():
        return "none"
    row = fetch_one(_PARTITION_STATE, [score_partition(version_id)])
    if row is None:
        return "none"
    return {None: "detached", False: "attached", True: "detaching"}[row[0]]


def score_partition_make(version_id: int) -> bool:
    """Make the version's partition unless it is there (PostgreSQL; elsewhere nothing);
    whether one was made. In the caller's transaction: the partition is born with its
    version and rolled back with it."""
    if not _partitioned():
        return False
    name, value = score_partition(version_id), int(version_id)
    # One maker at a time (the lock's own queue), and then no race on the name.
    execute(f"LOCK TABLE {SCORE} IN SHARE UPDATE EXCLUSIVE MODE")
    state = score_partition_state(value)
    if state == "attached":
        return False
    if state == "detaching":
        raise RuntimeError(f"{name} is being dropped: drop it (score_partition_drop) first")
    if state == "none":
        execute(f"CREATE TABLE {name} (LIKE {SCORE} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)")
    execute(f"ALTER TABLE {SCORE} ATTACH PARTITION {name} FOR VALUES IN ({value})")
    return True


def score_partition_drop(version_id: int) -> bool:
    """Drop the version's partition and every score in it, in O(1) (PostgreSQL;
    elsewhere nothing); whether there was one. Outside any transaction: DETACH …
    CONCURRENTLY runs two of its own. Finishes a detach that was interrupted."""
    if not _partitioned():
        return False
    if connection.in_atomic_block:
        raise RuntimeError("score_partition_drop runs outside any transaction")
    name = score_partition(version_id)
    state = score_partition_state(version_id)
    if state == "none":
        return False
    if state == "attached":
        execute(f"ALTER TABLE {SCORE} DETACH PARTITION {name} CONCURRENTLY")
    elif state == "detaching":
        execute(f"ALTER TABLE {SCORE} DETACH PARTITION {name} FINALIZE")
    execute(f"DROP TABLE IF EXISTS {name}")
    return True


_PARTITION_VERSIONS = f"""
SELECT substr(c.relname, %s)::bigint FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = '{SCORE}'::regclass ORDER BY 1
"""  # noqa: S608 - our table


def score_partition_versions() -> list[int]:
    """The version ids that have a partition (PostgreSQL; elsewhere none)."""
    if not _partitioned():
        return []
    return [v for (v,) in fetch(_PARTITION_VERSIONS, [len(score_partition(0))])]
