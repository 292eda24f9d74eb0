"""Services that write: challenges, scoring versions, attempts and their scores.

Views, the API, the admin, commands and tasks call these; the logic lives here once.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone
from django.utils.text import slugify

from scoring import services as scoring
from scoring.engine import strategies as S
from scoring.engine.outcome import Outcome

from .models import (
    Attempt,
    AttemptScore,
    Challenge,
    LeaderboardEntry,
    Player,
    ScoringSetupFields,
    ScoringVersion,
)

logger = logging.getLogger(__name__)
SETUP_FIELDS = ScoringSetupFields.SETUP_FIELDS
DISPLAY_NAME_MAX = Player._meta.get_field("display_name").max_length
INFO_FIELDS = ("name", "slug", "description", "is_active", "tenant_id", "app_id", "workflow_id")
_EMPTY_SETUP = {
    "scoring_plugin_id": "",
    "scoring_entrypoint": "",
    "scoring_config": {},
    "scoring_code": "",
    "score_key": "",
    "metrics": [],
}


# --- challenges and versions -------------------------------------------------------------
def _unique_slug(name: str, exclude_pk: int | None = None) -> str:
    base = slugify(name)[:190] or "challenge"
    slug, n = base, 1
    taken = Challenge.objects.exclude(pk=exclude_pk)
    while taken.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


@transaction.atomic
def challenge_create(*, data: dict[str, Any], by: Any = None) -> Challenge:
    """Create a challenge and its scoring version 1 (active at once: nothing to score).

    ``data`` has been validated for types; the scoring setup is validated here.
    Raises ``scoring.SetupInvalid``.
    """
    setup = {name: data[name] for name in SETUP_FIELDS if name in data}
    setup.setdefault("scoring_strategy", S.FIRST)
    setup = scoring.setup_validate(setup=setup)
    challenge = Challenge(**{k: v for k, v in data.items() if k in INFO_FIELDS}, **setup)
    if not challenge.slug:
        challenge.slug = _unique_slug(challenge.name)
    challenge.save()
    version = _version_create(challenge=challenge, by=by)
    version.scored_at = timezone.now()
    version.save(update_fields=["scored_at"])
    challenge.active_version = version
    challenge.save(update_fields=["active_version"])
    return challenge


def setup_merge(*, challenge: Challenge, changes: dict[str, Any]) -> dict[str, Any]:
    """The setup a partial change leads to. When the strategy changes, the fields the new
    strategy does not use and the change does not mention are cleared."""
    merged = challenge.setup_dict()
    if changes.get("scoring_strategy", merged["scoring_strategy"]) != merged["scoring_strategy"]:
        merged.update(_EMPTY_SETUP)
    merged.update({k: v for k, v in changes.items() if k in SETUP_FIELDS})
    return merged


@dataclass(frozen=True)
class ChallengeUpdate:
    challenge: Challenge
    new_version: ScoringVersion | None  # set when the scoring setup changed


@transaction.atomic
def challenge_update(
    *, challenge: Challenge, data: dict[str, Any], by: Any = None
) -> ChallengeUpdate:
    """Update a challenge. A change of the scoring setup makes a new version and queues
    its rescore; the active version stays until that rescore is done."""
    challenge = Challenge.objects.select_for_update().get(pk=challenge.pk)
    for name in INFO_FIELDS:
        if name in data:
            setattr(challenge, name, data[name])
    if not challenge.slug:
        challenge.slug = _unique_slug(challenge.name, exclude_pk=challenge.pk)
    new_version = None
    if any(name in data for name in SETUP_FIELDS):
        setup = scoring.setup_validate(setup=setup_merge(challenge=challenge, changes=data))
        if setup != challenge.setup_dict():
            for name, value in setup.items():
                setattr(challenge, name, value)
            new_version = _version_create(challenge=challenge, by=by)
    challenge.save()
    if new_version is not None:
        rescore_enqueue(version=new_version)
    return ChallengeUpdate(challenge, new_version)


def _version_create(*, challenge: Challenge, by: Any) -> ScoringVersion:
    last = challenge.versions.order_by("-number").values_list("number", flat=True).first() or 0
    return ScoringVersion.objects.create(
        challenge=challenge,
        number=last + 1,
        created_by=by if getattr(by, "is_authenticated", False) else None,
        **challenge.setup_dict(),
    )


def rescore_enqueue(*, version: ScoringVersion) -> None:
    """Queue the version's rescore once the transaction commits."""
    from .tasks import rescore_version  # tasks import services: keep the cycle lazy

    def send() -> None:
        try:
            rescore_version.delay(version.pk)
        except Exception:  # the broker is down: the change is saved, the rescore waits
            logger.exception(
                "Could not queue the rescore of challenge %s version %s; the active "
                "version stays until it is rescored.",
                version.challenge_id,
                version.number,
            )

    transaction.on_commit(send)


# --- rescoring ------------------------------------------------------------------------
def _attempts_for_scoring(challenge_id: int):
    return (
        Attempt.objects.filter(challenge_id=challenge_id)
        .annotate(player_external_id=F("player__external_id"))
        .only("id", "player_id", "succeeded", "tokens_total", "elapsed_ms", "rating", "created_at")
    )


def _scores_write(
    *, version: ScoringVersion, attempts: Sequence[Attempt], outcomes: Sequence[Outcome]
) -> list[AttemptScore]:
    rows = [
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
    # ignore_conflicts: a retried chunk, or an attempt ingestion already scored under
    # this version, keeps the one row it has.
    AttemptScore.objects.bulk_create(rows, ignore_conflicts=True)
    return rows


def _score_missing(*, version: ScoringVersion, chunk: int) -> int:
    """Score every attempt of the version's challenge that has no score under it."""
    challenge = version.challenge
    scored = AttemptScore.objects.filter(version=version, attempt=OuterRef("pk"))
    todo = _attempts_for_scoring(challenge.pk).filter(~Exists(scored)).order_by("pk")
    done, last_pk = 0, 0
    while True:
        batch = list(todo.filter(pk__gt=last_pk)[:chunk])
        if not batch:
            return done
        outcomes = scoring.scores_compute(version=version, challenge=challenge, attempts=batch)
        _scores_write(version=version, attempts=batch, outcomes=outcomes)
        done += len(batch)
        last_pk = batch[-1].pk


def version_rescore(*, version_id: int, chunk: int = 2000) -> ScoringVersion | None:
    """Score every attempt under a version, then make it active in one transaction.

    Returns None when the version is gone or a newer version superseded it (the newer
    one's rescore activates that one instead).
    """
    version = ScoringVersion.objects.select_related("challenge").filter(pk=version_id).first()
    if version is None or _superseded(version):
        return None
    _score_missing(version=version, chunk=chunk)
    with transaction.atomic():
        challenge = Challenge.objects.select_for_update().get(pk=version.challenge_id)
        if _superseded(version):
            return None
        version.challenge = challenge
        # Under the lock no attempt can be recorded: catch up the ones recorded meanwhile.
        _score_missing(version=version, chunk=chunk)
        _entries_rebuild(version=version)
        version.scored_at = timezone.now()
        version.save(update_fields=["scored_at"])
        challenge.active_version = version
        challenge.save(update_fields=["active_version", "updated_at"])
    return version


def _superseded(version: ScoringVersion) -> bool:
    return ScoringVersion.objects.filter(
        challenge_id=version.challenge_id, number__gt=version.number
    ).exists()


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


def _entries_rebuild(*, version: ScoringVersion) -> None:
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


def _entries_upsert(
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


# --- attempts ---------------------------------------------------------------------------
@dataclass(frozen=True)
class AttemptInput:
    player: str  # external id
    player_name: str | None
    succeeded: bool
    tokens_total: int | None
    elapsed_ms: int | None
    rating: int | None
    created_at: datetime
    sample: dict[str, Any] | None
    output: str
    messages: list[Any] | None


@dataclass(frozen=True)
class RecordedAttempt:
    attempt: Attempt
    score: AttemptScore | None  # under the active version (None: no active version)
    version_number: int | None


def _players_upsert(inputs: Sequence[AttemptInput]) -> dict[str, Player]:
    names: dict[str, str | None] = {}
    for item in inputs:
        if item.player_name or item.player not in names:
            names[item.player] = item.player_name or names.get(item.player)
    Player.objects.bulk_create(
        [
            Player(external_id=ext, display_name=(name or ext)[:DISPLAY_NAME_MAX])
            for ext, name in names.items()
        ],
        ignore_conflicts=True,
    )
    players = {p.external_id: p for p in Player.objects.filter(external_id__in=list(names))}
    renamed = []
    for ext, name in names.items():
        if name and players[ext].display_name != name:
            players[ext].display_name = name
            renamed.append(players[ext])
    if renamed:
        Player.objects.bulk_update(renamed, ["display_name"])
    return players


def _lock_challenge_shared(challenge_id: int) -> None:
    """Hold the challenge row in share mode while attempts are written: a rescore's final
    switch (FOR UPDATE) waits for them, so none misses the new version. SQLite needs no
    lock: its write transactions are serialised already."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            table = Challenge._meta.db_table
            cursor.execute(f"SELECT 1 FROM {table} WHERE id = %s FOR SHARE", [challenge_id])  # noqa: S608


def challenge_active_id(challenge_id: int) -> int | None:
    return (
        Challenge.objects.filter(pk=challenge_id).values_list("active_version_id", flat=True).get()
    )


def _versions_to_score(challenge_id: int) -> tuple[int | None, list[ScoringVersion]]:
    """The active version, and the newest version too while its rescore runs (only the
    newest can become active: older pending ones are superseded)."""
    active_id = challenge_active_id(challenge_id)
    newest = ScoringVersion.objects.filter(challenge_id=challenge_id).order_by("-number").first()
    versions = list(ScoringVersion.objects.filter(pk=active_id)) if active_id else []
    if newest is not None and newest.pk != active_id and newest.scored_at is None:
        versions.append(newest)
    return active_id, versions


def attempts_record(
    *, challenge: Challenge, inputs: Sequence[AttemptInput]
) -> list[RecordedAttempt]:
    """Record attempts, all or nothing, scored under the active version (and any version
    being rescored), and update the leaderboard at once."""
    attempts = [
        Attempt(
            challenge=challenge,
            succeeded=item.succeeded,
            tokens_total=item.tokens_total,
            elapsed_ms=item.elapsed_ms,
            rating=item.rating,
            created_at=item.created_at,
            sample=item.sample,
            output=item.output,
            messages=item.messages,
        )
        for item in inputs
    ]
    for attempt, item in zip(attempts, inputs, strict=True):
        attempt.player_external_id = item.player
    # Score before the transaction: a slow plugin must not hold database locks.
    computed: dict[int, list[Outcome]] = {}
    for version in _versions_to_score(challenge.pk)[1]:
        computed[version.pk] = scoring.scores_compute(
            version=version, challenge=challenge, attempts=attempts
        )
    with transaction.atomic():
        _lock_challenge_shared(challenge.pk)
        players = _players_upsert(inputs)
        for attempt, item in zip(attempts, inputs, strict=True):
            attempt.player = players[item.player]
        Attempt.objects.bulk_create(attempts)
        active_id, versions = _versions_to_score(challenge.pk)
        active_rows: list[AttemptScore | None] = [None] * len(attempts)
        active_number = None
        for version in versions:
            outcomes = computed.get(version.pk)
            if outcomes is None:  # a version created since we scored: rare, score now
                outcomes = scoring.scores_compute(
                    version=version, challenge=challenge, attempts=attempts
                )
            rows = _scores_write(version=version, attempts=attempts, outcomes=outcomes)
            _entries_upsert(version=version, attempts=attempts, rows=rows)
            if version.pk == active_id:
                active_rows, active_number = list(rows), version.number
    return [
        RecordedAttempt(a, s, active_number) for a, s in zip(attempts, active_rows, strict=True)
    ]
