"""The bulk write paths beside the statements they feed (``sql.py``): COPY text and
binary, models built positionally, threads on their own connections. Only here and in
``sql.py`` does code know which database it runs on or touch Django's private model
attributes (tests/test_architecture.py; docs/architecture.md, "Raw SQL")."""

from __future__ import annotations

import functools
import json
import queue
import struct
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import msgspec
from django.db import DatabaseError, connection
from django.db.models import Model
from django.utils import timezone

from challenges.leaderboards import sql
from challenges.models import Attempt, AttemptScore, Player, ScoringVersion
from challenges.text import outcome_storable
from scoring import services as scoring
from scoring.engine.outcome import Outcome
from scoring.engine.scorers_list import split_qa

M = TypeVar("M", bound=Model)


# --- work on connections of its own ----------------------------------------------------------
def own_connections() -> bool:
    """Whether work may go to threads on their own connections: on PostgreSQL, outside any
    transaction (their connections see what is committed, not what a caller's
    transaction, e.g. a test's, holds)."""
    return sql.postgres() and not connection.in_atomic_block


def _on_own_connection(work: Callable[..., None], *args: Any) -> None:
    try:
        work(*args)
    finally:
        connection.close()  # this thread's own connection


def in_parallel(work: Callable[[int], None], *, parts: int) -> None:
    """``work(k)`` for k in range(parts), each in a thread on its own connection; a
    failure is raised again here once all have ended."""
    with ThreadPoolExecutor(parts) as pool:
        done = [pool.submit(_on_own_connection, work, k) for k in range(parts)]
    for future in done:
        future.result()


WRITER_SWITCH_INTERVAL_S = 0.0005


@contextmanager
def writer_thread(work: Callable[[], None]) -> Iterator[threading.Thread]:
    """Run ``work`` in a thread on its own connection while the block runs (the block
    tells it to stop before it ends: the thread is joined then), with a short GIL switch
    interval meanwhile: the writer waits on the socket many times per COPY and must win
    the GIL back from the scoring thread each time, which by default yields it only every
    5 ms (b88a0e6). Only while both run."""
    was = sys.getswitchinterval()
    sys.setswitchinterval(min(was, WRITER_SWITCH_INTERVAL_S))

    def connected_work() -> None:
        with suppress(DatabaseError):  # else the first write connects (and retries)
            connection.ensure_connection()  # while the caller reads its first rows
        work()

    thread = threading.Thread(target=_on_own_connection, args=(connected_work,), daemon=True)
    thread.start()
    try:
        yield thread
    finally:
        thread.join()
        sys.setswitchinterval(was)


T = TypeVar("T")


@contextmanager
def read_ahead(read: Callable[[], T | None]) -> Iterator[Callable[[], T | None]]:
    """``read`` (called until it gives None) for a loop that works on each item it
    reads: where ``own_connections``, a thread on its own connection reads the next item
    while the loop works on the last one, so the database reads while Python scores.
    The loop's call raises what ``read`` raised."""
    if not own_connections():
        yield read
        return
    ready: queue.Queue[T | BaseException | None] = queue.Queue(maxsize=1)
    stop = threading.Event()

    def work() -> None:
        while not stop.is_set():
            try:
                item = read()
            except BaseException as exc:  # raised in the loop's thread
                ready.put(exc)
                return
            ready.put(item)
            if item is None:
                return

    def take() -> T | None:
        item = ready.get()
        if isinstance(item, BaseException):
            raise item
        return item

    with writer_thread(work) as thread:
        try:
            yield take
        finally:
            stop.set()
            while thread.is_alive():  # a reader blocked on a full queue: free it
                with suppress(queue.Empty):
                    ready.get(timeout=0.01)


# --- models built positionally ----------------------------------------------------------------
@functools.cache
def _attnames(model: type[Model]) -> list[str]:
    return [f.attname for f in model._meta.concrete_fields]


def model_build(model: type[M], values: dict[str, Any], **related: Model) -> M:
    """An unsaved ``model`` from attname values, built positionally in the model's field
    order (a bulk request builds a thousand: keyword construction costs three times as
    much), ``related`` objects (field name → object) cached on it as keyword
    construction would."""
    row = model(*[values.get(name) for name in _attnames(model)])
    for name, value in related.items():
        model._meta.get_field(name).set_cached_value(row, value)  # type: ignore[union-attr]
    return row


def related_set(row: Model, name: str, value: Model) -> None:
    """``row.<name> = value`` without the descriptor's checks (same database, a saved
    object): a bulk request sets a thousand."""
    field = row._meta.get_field(name)
    setattr(row, field.attname, value.pk)  # type: ignore[union-attr]
    field.set_cached_value(row, value)  # type: ignore[union-attr]


# --- COPY text --------------------------------------------------------------------------------
def copy_text(value: object) -> str:
    """A value in PostgreSQL's COPY text format."""
    if value is None:
        return "\\N"
    text = value if isinstance(value, str) else repr(value)
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def _copy_value(value: int | None) -> str:
    return "\\N" if value is None else str(int(value))


def _copy_bool(value: bool) -> str:
    return "t" if value else "f"


def _copy_json(value: Any) -> str:
    """A JSONField's value as JSONField stores it (json.dumps; None is SQL NULL)."""
    return "\\N" if value is None else copy_text(json.dumps(value))


# --- attempts and players ---------------------------------------------------------------------
def players_ensure(ordered: list[str], names: list[str]) -> dict[str, Player]:
    """The players of these external ids (sorted), created with these names where new.
    On PostgreSQL two statements whose parameters are arrays (a list of a thousand
    players binds as three values); elsewhere the ORM."""
    if not sql.postgres():
        Player.objects.bulk_create(
            [
                Player(external_id=ext, display_name=name)
                for ext, name in zip(ordered, names, strict=True)
            ],
            ignore_conflicts=True,
        )
        return {p.external_id: p for p in Player.objects.filter(external_id__in=ordered)}
    sql.players_insert_missing(ordered, names, timezone.now())
    db = Player.objects.db
    players = (Player.from_db(db, sql.PLAYER_COLUMNS, row) for row in sql.players_named(ordered))
    return {p.external_id: p for p in players}


def attempts_insert(attempts: Sequence[Attempt]) -> None:
    """Write new attempts and set their ids. On PostgreSQL the ids are drawn from the
    table's sequence and the rows go through COPY: a bulk request's thousand rows
    without compiling and binding a thousand-row INSERT (bench/ingest.py). Elsewhere
    ``bulk_create``. Constraints are checked as for an INSERT."""
    if not sql.postgres():
        Attempt.objects.bulk_create(attempts)
        return
    ids = sql.ids_next(sql.ATTEMPT, len(attempts))
    now = timezone.now()
    db = Attempt.objects.db
    lines = []
    for attempt, pk in zip(attempts, ids, strict=True):
        attempt.pk, attempt.recorded_at = pk, now
        attempt._state.adding, attempt._state.db = False, db
        lines.append(
            f"{pk}\t{attempt.challenge_id}\t{attempt.player_id}\t{_copy_bool(attempt.succeeded)}"
            f"\t{_copy_value(attempt.tokens_total)}\t{_copy_value(attempt.elapsed_ms)}"
            f"\t{_copy_value(attempt.rating)}\t{attempt.created_at}\t{_copy_json(attempt.sample)}"
            f"\t{copy_text(attempt.output)}\t{_copy_json(attempt.messages)}\t{now}"
            f"\t{_copy_bool(attempt.practice)}\t{_copy_bool(attempt.hidden)}\n"
        )
    sql.attempts_copy("".join(lines))


# A rescore reads a million attempts: plain tuples, not model instances.
# (id, player_id, external_id, succeeded, tokens_total, elapsed_ms, rating, created_ms,
#  created_at) where created_at is a ``pg_timestamp`` on PostgreSQL (written back as it
#  is) and a datetime elsewhere; external_id is None when read with ``names``.
AttemptRow = tuple[int, int, str, bool, int | None, int | None, int | None, int, object]


def attempt_rows(
    *,
    challenge_id: int,
    first_id: int,
    last_id: int,
    limit: int | None = None,
    names: dict[int, str] | None = None,
) -> list[AttemptRow]:
    """The challenge's attempts with ids in [first_id, last_id], in id order (the first
    ``limit`` of them). With ``names`` (the players' external ids by player id, kept
    from one batch to the next), the rows' external ids are None and ``names`` gets the
    players it lacked; without, the rows hold them."""
    rows = sql.attempt_rows(challenge_id, first_id, last_id, limit or last_id - first_id + 1)
    known = {} if names is None else names
    missing = {r[1] for r in rows if r[1] not in known}
    if missing:
        known.update(sql.player_names(sorted(missing)))
    if names is None:
        rows = [(r[0], r[1], known[r[1]], *r[3:]) for r in rows]
    if sql.postgres():  # the database computed the epoch milliseconds
        return rows  # type: ignore[return-value]
    return [(*r[:7], scoring.epoch_ms(r[8]), r[8]) for r in rows]  # type: ignore[misc]


# --- scores -----------------------------------------------------------------------------------
def _sort_key(outcome: Outcome) -> float:
    """The ranking key the engine put on a counted outcome (``outcome.ranked``)."""
    if outcome.sort_key is None:
        raise ValueError("an outcome with a score but no sort key: rank it (outcome.ranked)")
    return outcome.sort_key


def score_row(
    version: ScoringVersion, attempt_id: int, player_id: int, created_at: Any, o: Outcome
) -> AttemptScore:
    """An unsaved score row of an outcome."""
    o = outcome_storable(o)  # a scorer's text may hold what no column can store
    details, qa, qa_failed = split_qa(o.details)
    values = {
        "version_id": version.pk,
        "attempt_id": attempt_id,
        "player_id": player_id,
        "created_at": created_at,
        "score": o.score,
        "sort_key": None if o.score is None else _sort_key(o),
        "details": details,
        "error": o.error,
        "qa": qa,
        "qa_failed": qa_failed,
    }
    return model_build(AttemptScore, values, version=version)


# Score rows go to PostgreSQL in COPY's binary format (``SCORE_COLUMNS``): ids, times and
# floats as their 8 bytes, nothing for Python to write as text or for the database to
# parse back but the details' JSON (bench/rescore.py). Per row: the field count, then each
# field's length (-1: NULL) and bytes; a header and a trailer around the rows.
_COPY_BINARY_HEADER = b"PGCOPY\n\xff\r\n\x00" + bytes(8)  # signature, flags, no extension
_COPY_BINARY_TRAILER = b"\xff\xff"
_NULL = b"\xff\xff\xff\xff"
_FIELDS = 10
_PG_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)
# A field: its length, then the value (float8, int2).
_float8, _int2 = (struct.Struct(f">i{c}").pack for c in "dh")
# The common row, whole but for the details' JSON: a counted score without an error or
# QA; its details a jsonb (a version byte, then the text).
_SCORED = struct.Struct(">hiqiqiqiqididib")
_SCORED_INTO, _SCORED_SIZE = _SCORED.pack_into, _SCORED.size
_SCORED_SPACE = bytes(_SCORED_SIZE)
_AFTER_DETAILS = b"\x00\x00\x00\x00" + _NULL + _int2(2, 0)  # error "", qa NULL, qa_failed 0


def pg_timestamp(value: datetime) -> int:
    """A datetime as binary COPY takes a timestamptz: microseconds since 2000-01-01 UTC
    (what ``sql.attempt_rows`` reads for the rescore's rows)."""
    return (value - _PG_EPOCH) // _US


_encoder = msgspec.json.Encoder()


def _plain_json_into(details: Any, buffer: bytearray) -> bool:
    """Append the JSON of ``details`` to ``buffer`` (msgspec) if nothing in it needs the
    general path: a dict, no "qa" key (its own column), no lone surrogate, NUL or null
    (NaN or infinity, which msgspec writes as null; or a None). Else False, ``buffer`` as it was."""
    if type(details) is not dict or "qa" in details:
        return False
    at = len(buffer)
    try:
        _encoder.encode_into(details, buffer, -1)
    except (TypeError, ValueError, msgspec.EncodeError):  # a surrogate, an object
        del buffer[at:]
        return False
    if buffer.find(b"null", at) >= 0 or buffer.find(b"\\u0000", at) >= 0:
        del buffer[at:]
        return False
    return True


def _json(value: Any) -> bytes:
    """JSON of a details or QA value (never NaN or infinity: the rules refused them)."""
    buffer = bytearray()
    return bytes(buffer) if _plain_json_into(value, buffer) else json.dumps(value).encode()


def _field(data: bytes | None) -> bytes:
    return _NULL if data is None else len(data).to_bytes(4, "big") + data


_IDS = struct.Struct(">hiqiqiqiq").pack  # the field count, then the ids and created_at


def _score_row_binary(
    version_id: int, attempt_id: int, player_id: int, created_us: int, o: Outcome
) -> bytes:
    """One score row in binary COPY, whatever the outcome holds."""
    o = outcome_storable(o)  # a scorer's text may hold what no column can store
    plain, qa, qa_failed = split_qa(o.details)
    ids = _IDS(_FIELDS, 8, version_id, 8, attempt_id, 8, player_id, 8, created_us)
    score = _NULL * 2 if o.score is None else _float8(8, o.score) + _float8(8, _sort_key(o))
    details = _NULL if plain is None else _field(b"\x01" + _json(plain))
    qa_json = _NULL if qa is None else _field(b"\x01" + _json(qa))
    return ids + score + details + _field(o.error.encode()) + qa_json + _int2(2, qa_failed)


def _score_rows_binary(
    version_id: int, keys: Sequence[tuple[int, int, int]], outcomes: Sequence[Outcome]
) -> bytes:
    """Score rows in binary COPY (without the header and trailer); ``keys``: each
    attempt's (id, player id, created_at as ``pg_timestamp``). A common row is written in
    place: its fixed part reserved, its JSON appended, then the fixed part filled in."""
    rows = bytearray()
    for (attempt_id, player_id, created), o in zip(keys, outcomes, strict=True):
        score, details, error, _, sort_key = o
        if score is not None and sort_key is not None and not error:
            # The common row (what built-in scorers give): details nothing in which needs
            # cleaning or moving to another column; else the general path below.
            at = len(rows)
            rows += _SCORED_SPACE
            if _plain_json_into(details, rows):
                ids = (8, version_id, 8, attempt_id, 8, player_id, 8, created)
                text = len(rows) - at - _SCORED_SIZE
                _SCORED_INTO(rows, at, _FIELDS, *ids, 8, score, 8, sort_key, text + 1, 1)
                rows += _AFTER_DETAILS
                continue
            del rows[at:]
        rows += _score_row_binary(version_id, attempt_id, player_id, created, o)
    return bytes(rows)


def copy_binary(rows: Sequence[bytes]) -> bytes:
    """Rows in binary COPY format made one COPY's data."""
    return b"".join([_COPY_BINARY_HEADER, *rows, _COPY_BINARY_TRAILER])


def score_rows(
    *, version: ScoringVersion, attempts: Sequence[Attempt], outcomes: Sequence[Outcome]
) -> list[AttemptScore]:
    return [
        score_row(version, a.pk, a.player_id, a.created_at, o)
        for a, o in zip(attempts, outcomes, strict=True)
    ]


@dataclass(frozen=True)
class ScoreBatch:
    """A computed batch of scores (consecutive attempts in id order), made ready to write
    without the database: binary COPY rows on PostgreSQL, model rows elsewhere. Built where
    the scorer ran, written by whoever holds the transaction (``scores.scores_put``)."""

    version: ScoringVersion
    attempt_ids: list[int]
    outcomes: Sequence[Outcome]
    data: bytes | None = None  # binary COPY rows (PostgreSQL)
    rows: list[AttemptScore] | None = None


def scores_prepare(
    *, version: ScoringVersion, attempts: Sequence[AttemptRow], outcomes: Sequence[Outcome]
) -> ScoreBatch:
    """The batch's rows, ready for ``scores_insert``."""
    ids = [a[0] for a in attempts]
    if sql.postgres():
        keys = [(a[0], a[1], a[8]) for a in attempts]
        data = _score_rows_binary(version.pk, keys, outcomes)
        return ScoreBatch(version, ids, outcomes, data=data)
    rows = [
        score_row(version, a[0], a[1], a[8], o) for a, o in zip(attempts, outcomes, strict=True)
    ]
    return ScoreBatch(version, ids, outcomes, rows=rows)


def scores_insert(batches: Sequence[ScoreBatch]) -> None:
    """Insert the batches' rows (one COPY for them all on PostgreSQL)."""
    if sql.postgres():
        if batches:
            sql.scores_copy(copy_binary([b.data or b"" for b in batches]))
    else:
        AttemptScore.objects.bulk_create(
            [r for b in batches for r in b.rows or ()], batch_size=2000
        )


def scores_insert_new(
    *, version: ScoringVersion, attempts: Sequence[Attempt], outcomes: Sequence[Outcome]
) -> list[AttemptScore]:
    """Insert the scores of new attempts; their rows. On PostgreSQL through COPY: no
    thousand-row INSERT to compile for a bulk request."""
    rows = score_rows(version=version, attempts=attempts, outcomes=outcomes)
    if sql.postgres():
        keys = [(a.pk, a.player_id, pg_timestamp(a.created_at)) for a in attempts]
        sql.scores_copy(copy_binary([_score_rows_binary(version.pk, keys, outcomes)]))
    else:
        AttemptScore.objects.bulk_create(rows)
    return rows
