"""Writing scores and keeping the leaderboard: shared by ingestion and rescoring.

Scores of a version are rows of ``AttemptScore``; ``LeaderboardEntry`` holds each
player's best counted attempt per version, upserted on ingestion and rebuilt in one
statement when a rescore finishes.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import Exists, F, OuterRef, QuerySet

from challenges.leaderboards import changes, exclusions, sql
from challenges.models import (
    Attempt,
    AttemptScore,
    Challenge,
    LeaderboardEntry,
    LeaderboardRanking,
    ScoringVersion,
)
from challenges.text import BAD_CHAR, outcome_storable
from scoring import services as scoring
from scoring.engine import strategies
from scoring.engine.outcome import Outcome
from scoring.engine.scorers_list import split_qa
from scoring.failures import failures_log, failures_tick

SCORING_FIELDS = (
    "id",
    "player_id",
    "succeeded",
    "tokens_total",
    "elapsed_ms",
    "rating",
    "created_at",
    "practice",
    "hidden",
)


def attempts_for_scoring(challenge_id: int) -> QuerySet[Attempt]:
    """A challenge's attempts with just what scoring needs (and the player's external id)."""
    return (
        Attempt.objects.filter(challenge_id=challenge_id)
        .annotate(player_external_id=F("player__external_id"))
        .only(*SCORING_FIELDS)
        .order_by("pk")
    )


# A rescore reads a million attempts: plain tuples, not model instances.
# (id, player_id, external_id, succeeded, tokens_total, elapsed_ms, rating, created_ms,
#  created_at) where created_at is the database's own text on PostgreSQL (copied back
#  as it is) and a datetime elsewhere.
AttemptRow = tuple[int, int, str, bool, int | None, int | None, int | None, int, object]


def attempt_rows(*, challenge_id: int, first_id: int, last_id: int) -> list[AttemptRow]:
    """The challenge's attempts with ids in [first_id, last_id], in id order."""
    rows = sql.attempt_rows(challenge_id, first_id, last_id)
    if sql.postgres():  # the database computed the epoch milliseconds
        return rows  # type: ignore[return-value]
    return [(*r[:7], scoring.epoch_ms(r[8]), r[8]) for r in rows]  # type: ignore[misc]


def copy_text(value: object) -> str:
    """A value in PostgreSQL's COPY text format."""
    if value is None:
        return "\\N"
    text = value if isinstance(value, str) else repr(value)
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


Compute = Callable[[Sequence[AttemptRow]], list[Outcome]]


@dataclass(frozen=True)
class ScoreBatch:
    """A computed batch of scores (consecutive attempts in id order), made ready to write
    without the database: the COPY text on PostgreSQL, model rows elsewhere. Built where
    the scorer ran, written by whoever holds the transaction (``scores_put``)."""

    version: ScoringVersion
    attempt_ids: list[int]
    outcomes: Sequence[Outcome]
    text: str | None = None  # COPY text (PostgreSQL)
    rows: list[AttemptScore] | None = None


def scores_prepare(
    *, version: ScoringVersion, attempts: Sequence[AttemptRow], outcomes: Sequence[Outcome]
) -> ScoreBatch:
    """The batch's rows, ready for ``scores_put``."""
    ids = [a[0] for a in attempts]
    if sql.postgres():
        keys = [(a[0], a[1], a[8]) for a in attempts]
        return ScoreBatch(version, ids, outcomes, text=_copy_lines(version, keys, outcomes))
    rows = [
        _score_row(version, a[0], a[1], a[8], o) for a, o in zip(attempts, outcomes, strict=True)
    ]
    return ScoreBatch(version, ids, outcomes, rows=rows)


def scores_put(*, batches: Sequence[ScoreBatch]) -> None:
    """Make the versions' scores of each batch's attempts exactly its outcomes: the rows
    in each batch's id range are deleted, then written (one COPY for them all on
    PostgreSQL). Call in a short transaction, after computing the outcomes: a retried or
    duplicated batch writes each score once."""
    batches = [b for b in batches if b.attempt_ids]
    for b in batches:
        AttemptScore.objects.filter(
            version=b.version, attempt_id__gte=b.attempt_ids[0], attempt_id__lte=b.attempt_ids[-1]
        ).delete()
    if sql.postgres():
        if batches:
            sql.scores_copy("".join(b.text or "" for b in batches))
    else:
        AttemptScore.objects.bulk_create(
            [r for b in batches for r in b.rows or ()], batch_size=2000
        )
    for b in batches:
        _failures_note(b.version, b.attempt_ids, b.outcomes)


def _failures_note(
    version: ScoringVersion, attempt_ids: list[int], outcomes: Sequence[Outcome]
) -> None:
    """Log the batch's scorer failures (a burst of one error is summarised)."""
    if any(o.error for o in outcomes):
        failures_log(version=version, attempt_ids=attempt_ids, outcomes=outcomes)
    else:
        failures_tick()


def scores_count(*, version_id: int, first_id: int, last_id: int) -> tuple[int, int]:
    """How many attempts in [first_id, last_id] have a score under the version, and how
    many of those are failures."""
    rows = AttemptScore.objects.filter(
        version_id=version_id, attempt_id__gte=first_id, attempt_id__lte=last_id
    )
    return rows.count(), rows.exclude(error="").count()


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_ .:-]{1,100}")
_plain_keys: dict[tuple[str, ...], bool] = {}


def _details_json(details: dict[str, Any]) -> str:
    """JSON text of a details dict (never NaN or infinity: the rules refused them).

    Flat dicts of floats under plain keys (what built-in scorers give) are written
    directly, a few times faster than json.dumps; anything else goes through it."""
    keys = tuple(details)
    plain = _plain_keys.get(keys)
    if plain is None:
        plain = _plain_keys[keys] = all(type(k) is str and _PLAIN_KEY.fullmatch(k) for k in keys)
    if plain and all(type(v) is float for v in details.values()):
        return "{" + ", ".join([f'"{k}": {v!r}' for k, v in details.items()]) + "}"
    return json.dumps(details)


def _copy_lines(
    version: ScoringVersion, keys: Sequence[tuple[int, int, Any]], outcomes: Sequence[Outcome]
) -> str:
    """Score rows in COPY text format; ``keys``: each attempt's (id, player id, created_at),
    created_at as a datetime or as the database's own text."""
    version_id = version.pk
    lines = []
    for (attempt_id, player_id, created_at), o in zip(keys, outcomes, strict=True):
        if o.score is None:
            score_text = sort_text = "\\N"
        else:
            score_text, sort_text = repr(o.score), repr(_sort_key(o))
        plain, qa, qa_failed = split_qa(o.details)
        details = "\\N" if plain is None else copy_text(_details_json(plain))
        qa_text = "\\N" if qa is None else copy_text(json.dumps(qa))
        if "\\u" in details or "\\u" in qa_text or (o.error and BAD_CHAR.search(o.error)):
            o = outcome_storable(o)  # rare: check
            plain, qa, qa_failed = split_qa(o.details)
            details = "\\N" if plain is None else copy_text(_details_json(plain))
            qa_text = "\\N" if qa is None else copy_text(json.dumps(qa))
        error = copy_text(o.error) if o.error else ""
        lines.append(
            f"{version_id}\t{attempt_id}\t{player_id}\t{created_at}\t{score_text}\t{sort_text}\t{details}"
            f"\t{error}\t{qa_text}\t{qa_failed}\n"
        )
    return "".join(lines)


def scores_settle(*, version_id: int, first_id: int, last_id: int) -> None:
    """Visit the committed score rows of a range once (PostgreSQL): the first read of a
    freshly written row records that its transaction committed (the row's hint bits),
    which costs about as much as the read itself. Done per chunk, in parallel, it spares
    the final leaderboard rebuild a million such first reads."""
    sql.scores_settle(version_id, first_id, last_id)


def scored_in_sql(version: ScoringVersion | Challenge) -> bool:
    """Whether a rescore computes this version's scores in the database."""
    return sql.postgres() and version.scoring_strategy in sql.STRATEGY_VALUE


def scores_replace_in_sql(
    *, version: ScoringVersion, challenge_id: int, first_id: int, last_id: int
) -> int | None:
    """Like ``scores_replace`` for a built-in strategy, computed by the database.

    Returns the number of attempts scored, or None where this path does not apply (not
    PostgreSQL, or not a built-in strategy): the caller scores in Python instead."""
    if not scored_in_sql(version):
        return None
    AttemptScore.objects.filter(
        version=version, attempt_id__gte=first_id, attempt_id__lte=last_id
    ).delete()
    return sql.scores_insert_computed(
        strategy=version.scoring_strategy,
        negate=strategies.get_strategy(version.scoring_strategy).descending,
        version_id=version.pk,
        challenge_id=challenge_id,
        first_id=first_id,
        last_id=last_id,
    )


def _sort_key(outcome: Outcome) -> float:
    """The ranking key the engine put on a counted outcome (``outcome.ranked``)."""
    if outcome.sort_key is None:
        raise ValueError("an outcome with a score but no sort key: rank it (outcome.ranked)")
    return outcome.sort_key


def score_rows(
    *, version: ScoringVersion, attempts: Sequence[Attempt], outcomes: Sequence[Outcome]
) -> list[AttemptScore]:
    return [
        _score_row(version, a.pk, a.player_id, a.created_at, o)
        for a, o in zip(attempts, outcomes, strict=True)
    ]


_SCORE_ATTNAMES = [f.attname for f in AttemptScore._meta.concrete_fields]
_SCORE_VERSION = AttemptScore._meta.get_field("version")


def _score_row(
    version: ScoringVersion, attempt_id: int, player_id: int, created_at: Any, o: Outcome
) -> AttemptScore:
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
    # Positional, in the model's field order: a bulk request builds a thousand.
    row = AttemptScore(*[values.get(name) for name in _SCORE_ATTNAMES])
    _SCORE_VERSION.set_cached_value(row, version)
    return row


def scores_write(
    *, version: ScoringVersion, attempts: Sequence[Attempt], outcomes: Sequence[Outcome]
) -> list[AttemptScore]:
    """Write the scores of attempts that have none under the version yet (new ones, or
    the ones a rescore catches up while it holds the challenge lock)."""
    rows = score_rows(version=version, attempts=attempts, outcomes=outcomes)
    if sql.postgres():  # COPY: no thousand-row INSERT to compile for a bulk request
        keys = [(a.pk, a.player_id, a.created_at) for a in attempts]
        sql.scores_copy(_copy_lines(version, keys, outcomes), immediate=False)
    else:
        AttemptScore.objects.bulk_create(rows)
    if any(o.error for o in outcomes):
        failures_log(version=version, attempt_ids=[a.pk for a in attempts], outcomes=outcomes)
    else:
        failures_tick()
    return rows


def score_missing(
    *, version: ScoringVersion, after_id: int = 0, batch_size: int = 2000
) -> tuple[int, int]:
    """Score the attempts of the version's challenge with ids above ``after_id`` that
    have no score under it, and keep their players' leaderboard entries. Returns
    (scored, failed)."""
    challenge = version.challenge
    has_score = AttemptScore.objects.filter(version=version, attempt=OuterRef("pk"))
    todo = attempts_for_scoring(challenge.pk).filter(~Exists(has_score))
    scored = failed = 0
    last_pk = after_id
    while batch := list(todo.filter(pk__gt=last_pk)[:batch_size]):
        items = scoring.items_from_attempts(
            batch, challenge=challenge, timeout_ms=version.timeout_ms
        )
        outcomes = scoring.scores_compute(version=version, items=items)
        rows = scores_write(version=version, attempts=batch, outcomes=outcomes)
        entries_upsert(version=version, attempts=batch, rows=rows)
        scored += len(batch)
        failed += sum(1 for o in outcomes if o.error)
        last_pk = batch[-1].pk
    return scored, failed


def scores_catch_up(
    *, version: ScoringVersion, after_id: int, batch_size: int = 500
) -> tuple[int, int]:
    """Score the attempts above ``after_id`` that lack a score under the version, outside
    any transaction: each batch is computed first, then written in its own short
    transaction (a row a concurrent caller wrote meanwhile is kept). No leaderboard
    entries: the caller makes them. Returns (scored, failed)."""
    challenge = version.challenge
    has_score = AttemptScore.objects.filter(version=version, attempt=OuterRef("pk"))
    todo = attempts_for_scoring(challenge.pk).filter(~Exists(has_score))
    scored = failed = 0
    last_pk = after_id
    while batch := list(todo.filter(pk__gt=last_pk)[:batch_size]):
        items = scoring.items_from_attempts(
            batch, challenge=challenge, timeout_ms=version.timeout_ms
        )
        outcomes = scoring.scores_compute(version=version, items=items)  # no transaction
        rows = score_rows(version=version, attempts=batch, outcomes=outcomes)
        with transaction.atomic():
            AttemptScore.objects.bulk_create(rows, ignore_conflicts=True)
        scored += len(batch)
        failed += sum(1 for o in outcomes if o.error)
        last_pk = batch[-1].pk
    return scored, failed


# A large rebuild is split across connections (PostgreSQL runs no INSERT ... SELECT in
# parallel itself): from REBUILD_SPLIT_FROM scores, in REBUILD_PARTS parts.
REBUILD_PARTS = 2
REBUILD_SPLIT_FROM = 200_000


def rebuild_parts(*, scores_count: int) -> int:
    """How many parts to rebuild a version of ``scores_count`` scores in, called before
    the caller's transaction begins: split only on PostgreSQL, and only outside any
    transaction (the parts' own connections see what is committed, not what a caller's
    transaction, e.g. a test's, holds)."""
    if not sql.postgres() or connection.in_atomic_block:
        return 1
    return REBUILD_PARTS if scores_count >= REBUILD_SPLIT_FROM else 1


def entries_rebuild(*, version: ScoringVersion, parts: int = 1) -> None:
    """Recompute every player's best attempt under ``version`` from its scores, in one
    statement over the scores table alone. Attempts recorded meanwhile may upsert
    entries of the version concurrently: the better entry is kept either way.

    ``parts`` > 1 (``rebuild_parts``): the players are split by id modulo ``parts`` and
    each part is deleted and rebuilt by its own connection, in a thread, committed
    before this returns: on two cores, about a third less time for 100,000 players. For
    a version that is not active yet (a rescore's, before its switch): readers of the
    live board see none of it either way."""
    # The rows are written as already ranked (ranked_attempt_id = attempt_id) and the
    # version's page checkpoints are dropped: the first reader recomputes them in one
    # pass instead of first marking 100,000 rows (see leaderboards/ranking.py).
    if parts <= 1:
        LeaderboardRanking.objects.filter(version=version).delete()
        LeaderboardEntry.objects.filter(version=version).delete()
        sql.set_local("work_mem", "'256MB'")  # sort a million rows in memory, not on disk
        sql.entries_insert_best(version.pk, ranked=True)
        changes.board_touch(challenge_ids=[version.challenge_id])
        return
    failures: list[BaseException] = []

    def rebuild_part(k: int) -> None:
        try:
            if k == 0:  # committed before the rows it makes stale, as they are
                LeaderboardRanking.objects.filter(version=version).delete()
            with transaction.atomic():
                sql.set_local("work_mem", "'256MB'")
                sql.entries_delete_part(version.pk, (k, parts))
                sql.entries_insert_best(version.pk, part=(k, parts), ranked=True)
        except BaseException as error:  # raised again in the caller's thread
            failures.append(error)
        finally:
            connection.close()  # this thread's own connection

    threads = [
        threading.Thread(target=rebuild_part, args=(k,), name=f"entries-rebuild-{k}")
        for k in range(parts)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    changes.board_touch(challenge_ids=[version.challenge_id])


def entries_repair(*, version_id: int, player_ids: Sequence[int]) -> None:
    """Recompute the entries of some players under a version from its scores (after
    attempts were deleted: their entries may point at attempts that are gone). The rows
    are left unranked: readers of this version recompute its checkpoints."""
    LeaderboardEntry.objects.filter(version_id=version_id, player_id__in=player_ids).delete()
    sql.entries_insert_best(version_id, player_ids=player_ids, ranked=False)
    changes.board_touch(
        challenge_ids=ScoringVersion.objects.filter(pk=abs(version_id)).values_list(
            "challenge_id", flat=True
        )
    )


def entries_upsert(
    *, version: ScoringVersion, attempts: Sequence[Attempt], rows: Sequence[AttemptScore]
) -> None:
    """Keep each player's best attempt under ``version`` after new attempts."""
    best: dict[int, tuple[tuple[float, datetime, int], Attempt, AttemptScore]] = {}
    hidden = exclusions.hidden_player_ids(
        challenge_id=version.challenge_id, player_ids={a.player_id for a in attempts}
    )
    for a, row in zip(attempts, rows, strict=True):
        if row.sort_key is None or a.practice or a.hidden or a.player_id in hidden:
            continue  # not counted, or never ranked (challenges/leaderboards/exclusions.py)
        key = (row.sort_key, a.created_at, a.pk)
        if a.player_id not in best or key < best[a.player_id][0]:
            best[a.player_id] = (key, a, row)
    if not best:
        return
    # One row per player, so no row is hit twice in a statement; in player order (the
    # order every writer locks entries in).
    sql.entries_upsert(
        [
            (version.pk, a.player_id, a.pk, row.score, row.sort_key, sql.timestamp(a.created_at))
            for _, a, row in sorted(best.values(), key=lambda b: b[1].player_id)
        ]
    )
    changes.board_touch(challenge_ids=[version.challenge_id])
