"""Writing scores and keeping the leaderboard: shared by ingestion and rescoring.

Scores of a version are rows of ``AttemptScore``; ``LeaderboardEntry`` holds each
player's best counted attempt per version, upserted on ingestion and rebuilt in one
statement when a rescore finishes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet

from challenges.leaderboards import bulk, changes, exclusions, sql
from challenges.leaderboards.bulk import score_rows
from challenges.leaderboards.sql import scored_in_sql
from challenges.models import (
    Attempt,
    AttemptScore,
    LeaderboardEntry,
    LeaderboardRanking,
    ScoringVersion,
)
from scoring import services as scoring
from scoring.engine import strategies
from scoring.engine.outcome import Outcome
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


def scores_put(*, batches: Sequence[bulk.ScoreBatch]) -> None:
    """Make the versions' scores of each batch's attempts exactly its outcomes: the rows
    in each batch's id range are deleted, then written (one COPY for them all on
    PostgreSQL). Call in a short transaction, after computing the outcomes: a retried or
    duplicated batch writes each score once."""
    batches = [b for b in batches if b.attempt_ids]
    for b in batches:
        AttemptScore.objects.filter(
            version=b.version, attempt_id__gte=b.attempt_ids[0], attempt_id__lte=b.attempt_ids[-1]
        ).delete()
    bulk.scores_insert(batches)
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
    counts = rows.aggregate(scored=Count("pk"), failed=Count("pk", filter=~Q(error="")))
    return counts["scored"], counts["failed"]


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


def scores_write(
    *, version: ScoringVersion, attempts: Sequence[Attempt], outcomes: Sequence[Outcome]
) -> list[AttemptScore]:
    """Write the scores of new attempts (none under the version yet)."""
    rows = bulk.scores_insert_new(version=version, attempts=attempts, outcomes=outcomes)
    _failures_note(version, [a.pk for a in attempts], outcomes)
    return rows


def scores_catch_up(
    *, version: ScoringVersion, after_id: int, batch_size: int = 500
) -> tuple[int, int]:
    """Score the attempts above ``after_id`` that lack a score under the version: each
    batch is computed first, then written in its own short transaction (a row a
    concurrent caller wrote meanwhile is kept). Outside any transaction, but for the
    switch's safety net (``rescoring.switch``; docs/rescoring.md). No leaderboard
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
        outcomes = scoring.scores_compute(version=version, items=items)
        rows = score_rows(version=version, attempts=batch, outcomes=outcomes)
        with transaction.atomic():
            AttemptScore.objects.bulk_create(rows, ignore_conflicts=True)
        _failures_note(version, [a.pk for a in batch], outcomes)
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
    if not bulk.own_connections():
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

    def rebuild_part(k: int) -> None:
        if k == 0:  # committed before the rows it makes stale, as they are
            LeaderboardRanking.objects.filter(version=version).delete()
        with transaction.atomic():
            sql.set_local("work_mem", "'256MB'")
            sql.entries_delete_part(version.pk, (k, parts))
            sql.entries_insert_best(version.pk, part=(k, parts), ranked=True)

    bulk.in_parallel(rebuild_part, parts=parts)
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
