"""Writing scores and keeping the leaderboard: shared by ingestion and rescoring.

Scores of a version are rows of ``AttemptScore``; ``LeaderboardEntry`` holds each
player's best counted attempt per version, upserted on ingestion and rebuilt in one
statement when a rescore finishes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db import connection
from django.db.models import Exists, F, OuterRef, QuerySet

from scoring import services as scoring
from scoring.engine.outcome import Outcome

from .models import Attempt, AttemptScore, LeaderboardEntry, ScoringVersion

SCORING_FIELDS = (
    "id",
    "player_id",
    "succeeded",
    "tokens_total",
    "elapsed_ms",
    "rating",
    "created_at",
)


def attempts_for_scoring(challenge_id: int) -> QuerySet[Attempt]:
    """A challenge's attempts with just what scoring needs (and the player's external id)."""
    return (
        Attempt.objects.filter(challenge_id=challenge_id)
        .annotate(player_external_id=F("player__external_id"))
        .only(*SCORING_FIELDS)
        .order_by("pk")
    )


def score_rows(
    *, version: ScoringVersion, attempts: Sequence[Attempt], outcomes: Sequence[Outcome]
) -> list[AttemptScore]:
    return [
        AttemptScore(
            version=version,
            attempt_id=a.pk,
            score=o.score,
            sort_key=scoring.sort_key_of(version, o.score),
            details=o.details,
            error=o.error,
        )
        for a, o in zip(attempts, outcomes, strict=True)
    ]


def scores_write(
    *, version: ScoringVersion, attempts: Sequence[Attempt], outcomes: Sequence[Outcome]
) -> list[AttemptScore]:
    """Write new attempts' scores. ``ignore_conflicts``: an attempt that already has a
    score under the version keeps the one row it has."""
    rows = score_rows(version=version, attempts=attempts, outcomes=outcomes)
    AttemptScore.objects.bulk_create(rows, ignore_conflicts=True)
    return rows


def score_missing(*, version: ScoringVersion, batch_size: int = 2000) -> tuple[int, int]:
    """Score every attempt of the version's challenge that has no score under it.

    Returns (scored, failed)."""
    challenge = version.challenge
    has_score = AttemptScore.objects.filter(version=version, attempt=OuterRef("pk"))
    todo = attempts_for_scoring(challenge.pk).filter(~Exists(has_score))
    scored = failed = 0
    last_pk = 0
    while batch := list(todo.filter(pk__gt=last_pk)[:batch_size]):
        outcomes = scoring.scores_compute(version=version, challenge=challenge, attempts=batch)
        scores_write(version=version, attempts=batch, outcomes=outcomes)
        scored += len(batch)
        failed += sum(1 for o in outcomes if o.error)
        last_pk = batch[-1].pk
    return scored, failed


_REBUILD_SQL = """
INSERT INTO {entry} (version_id, player_id, attempt_id, score, sort_key, created_at)
SELECT version_id, player_id, attempt_id, score, sort_key, created_at FROM (
    SELECT s.version_id, a.player_id, s.attempt_id, s.score, s.sort_key, a.created_at,
           ROW_NUMBER() OVER (
               PARTITION BY a.player_id ORDER BY s.sort_key, a.created_at, s.attempt_id
           ) AS place
    FROM {score} s JOIN {attempt} a ON a.id = s.attempt_id
    WHERE s.version_id = %s AND s.sort_key IS NOT NULL
) best
WHERE place = 1
"""


def entries_rebuild(*, version: ScoringVersion) -> None:
    """Recompute every player's best attempt under ``version`` from its scores."""
    LeaderboardEntry.objects.filter(version=version).delete()
    tables = {
        "entry": LeaderboardEntry._meta.db_table,
        "score": AttemptScore._meta.db_table,
        "attempt": Attempt._meta.db_table,
    }
    with connection.cursor() as cursor:
        cursor.execute(_REBUILD_SQL.format(**tables), [version.pk])


_UPSERT_SQL = """
INSERT INTO {t} (version_id, player_id, attempt_id, score, sort_key, created_at)
VALUES (%s, %s, %s, %s, %s, %s)
ON CONFLICT (version_id, player_id) DO UPDATE SET
    attempt_id = excluded.attempt_id, score = excluded.score,
    sort_key = excluded.sort_key, created_at = excluded.created_at
WHERE excluded.sort_key < {t}.sort_key
   OR (excluded.sort_key = {t}.sort_key AND (excluded.created_at < {t}.created_at
       OR (excluded.created_at = {t}.created_at AND excluded.attempt_id < {t}.attempt_id)))
"""


def entries_upsert(
    *, version: ScoringVersion, attempts: Sequence[Attempt], rows: Sequence[AttemptScore]
) -> None:
    """Keep each player's best attempt under ``version`` after new attempts."""
    best: dict[int, tuple[tuple[float, datetime, int], Attempt, AttemptScore]] = {}
    for a, row in zip(attempts, rows, strict=True):
        if row.sort_key is None:
            continue
        key = (row.sort_key, a.created_at, a.pk)
        if a.player_id not in best or key < best[a.player_id][0]:
            best[a.player_id] = (key, a, row)
    if not best:
        return
    adapt = connection.ops.adapt_datetimefield_value
    params = [
        (version.pk, a.player_id, a.pk, row.score, row.sort_key, adapt(a.created_at))
        for _, a, row in best.values()
    ]
    with connection.cursor() as cursor:
        cursor.executemany(_UPSERT_SQL.format(t=LeaderboardEntry._meta.db_table), params)
