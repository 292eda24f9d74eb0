"""Services that write: challenges, scoring versions, attempts and their scores.

Views, the API, the admin, commands and tasks call these; the logic lives here once.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.text import slugify

from scoring import services as scoring
from scoring.engine import strategies as S
from scoring.engine.outcome import Outcome

from . import batch_scoring, rescoring, scores
from .models import (
    Attempt,
    AttemptScore,
    Challenge,
    LeaderboardEntry,
    Player,
    RescoreJob,
    ScoringSetupFields,
    ScoringVersion,
)

logger = logging.getLogger(__name__)
SETUP_FIELDS = ScoringSetupFields.SETUP_FIELDS
DISPLAY_NAME_MAX = Player._meta.get_field("display_name").max_length
INFO_FIELDS = ("name", "slug", "description", "is_active", "tenant_id", "app_id", "workflow_id")
EMPTY_SETUP = {  # a setup's fields but the strategy and timeout, empty
    "scoring_plugin_id": "",
    "scoring_entrypoint": "",
    "scoring_config": {},
    "scoring_code": "",
    "score_key": "",
    "metrics": [],
    "scorers": [],
    "rank_by": "",
}
SINGLE_SCORER = ("scoring_code", "scoring_config", "score_key", "metrics")


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
    version = version_create(challenge=challenge, by=by, reason="created")
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
        merged.update(copy.deepcopy(EMPTY_SETUP))
    # Switching between one scorer and a list: the form the change does not use is cleared.
    if changes.get("scorers") and not any(name in changes for name in SINGLE_SCORER):
        merged.update({name: copy.deepcopy(EMPTY_SETUP[name]) for name in SINGLE_SCORER})
    elif changes.get("scoring_code") and "scorers" not in changes:
        merged.update(scorers=[], rank_by="")
    merged.update({k: v for k, v in changes.items() if k in SETUP_FIELDS})
    return merged


@dataclass(frozen=True)
class ChallengeUpdate:
    challenge: Challenge
    new_version: ScoringVersion | None  # set when the scoring setup changed
    job: RescoreJob | None  # the rescore queued for the new version


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
            new_version = version_create(challenge=challenge, by=by, reason="setup change")
    challenge.save()
    job = None
    if new_version is not None:
        job = rescoring.rescore_start(challenge=challenge, version=new_version, by=by)
    return ChallengeUpdate(challenge, new_version, job)


def version_create(*, challenge: Challenge, by: Any, reason: str) -> ScoringVersion:
    """A new version holding the challenge's current setup (call with the challenge row
    locked, or in its creating transaction, so numbers never collide)."""
    last = challenge.versions.order_by("-number").values_list("number", flat=True).first() or 0
    return ScoringVersion.objects.create(
        challenge=challenge,
        number=last + 1,
        reason=reason,
        created_by=by if getattr(by, "is_authenticated", False) else None,
        **challenge.setup_dict(),
    )


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
    """The active version first, then any version whose rescore job is under way (so
    attempts recorded during a rescore are scored under the new version too)."""
    active_id = challenge_active_id(challenge_id)
    pending = ScoringVersion.objects.filter(
        challenge_id=challenge_id, jobs__status__in=RescoreJob.ACTIVE_STATUSES
    ).exclude(pk=active_id)
    versions = list(ScoringVersion.objects.filter(pk=active_id)) if active_id else []
    return active_id, versions + list(pending.distinct())


ATTEMPTS_DELETE_BATCH = 500


@transaction.atomic
def attempts_delete(*, attempts: QuerySet[Attempt]) -> int:
    """Delete attempts with their scores, and recompute the leaderboard entries that
    pointed at them (the next-best attempt of that player takes the place, or none).
    Returns how many attempts were deleted. Use this, not ``QuerySet.delete()``: entries
    are a cache without a foreign-key constraint, so nothing else repairs them."""
    ids = list(attempts.values_list("pk", flat=True))
    deleted = 0
    for start in range(0, len(ids), ATTEMPTS_DELETE_BATCH):
        batch = ids[start : start + ATTEMPTS_DELETE_BATCH]
        owners = list(Attempt.objects.filter(pk__in=batch).values_list("challenge_id", "player_id"))
        versions = ScoringVersion.objects.filter(challenge_id__in={c for c, _ in owners})
        # Entries are keyed (version, player) and have no attempt index: look them up by key.
        stale = LeaderboardEntry.objects.filter(
            version_id__in=versions.values("pk"),
            player_id__in={p for _, p in owners},
            attempt_id__in=batch,
        )
        affected: dict[int, set[int]] = {}
        for version_id, player_id in stale.values_list("version_id", "player_id"):
            affected.setdefault(version_id, set()).add(player_id)
        deleted += Attempt.objects.filter(pk__in=batch).delete()[1].get(Attempt._meta.label, 0)
        for version_id, player_ids in affected.items():
            scores.entries_repair(version_id=version_id, player_ids=sorted(player_ids))
    return deleted


def _compute(version: ScoringVersion, challenge: Challenge, attempts: list[Attempt]):
    items = scoring.items_from_attempts(
        attempts, challenge=challenge, timeout_ms=version.timeout_ms
    )
    return scoring.scores_compute(version=version, items=items)


def attempt_build(*, challenge: Challenge, item: AttemptInput, player: Player | None = None):
    """An unsaved Attempt of ``challenge`` from an input (its player set when given)."""
    return Attempt(
        challenge=challenge,
        player=player,
        succeeded=item.succeeded,
        tokens_total=item.tokens_total,
        elapsed_ms=item.elapsed_ms,
        rating=item.rating,
        created_at=item.created_at,
        sample=item.sample,
        output=item.output,
        messages=item.messages,
    )


def attempts_record(
    *, challenge: Challenge, inputs: Sequence[AttemptInput]
) -> list[RecordedAttempt]:
    """Record attempts, all or nothing, scored under the active version (and any version
    being rescored), and update the leaderboard at once."""
    attempts = [attempt_build(challenge=challenge, item=item) for item in inputs]
    for attempt, item in zip(attempts, inputs, strict=True):
        attempt.player_external_id = item.player
    started = time.perf_counter()
    # Score before the transaction: a slow plugin must not hold database locks.
    computed: dict[int, list[Outcome]] = {}
    for version in _versions_to_score(challenge.pk)[1]:
        computed[version.pk] = _compute(version, challenge, attempts)
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
                outcomes = _compute(version, challenge, attempts)
            rows = scores.scores_write(version=version, attempts=attempts, outcomes=outcomes)
            scores.entries_upsert(version=version, attempts=attempts, rows=rows)
            if version.pk == active_id:
                active_rows, active_number = list(rows), version.number
    if any(batch_scoring.has_batch(v) for v in versions):
        batch_scoring.batch_request(challenge_id=challenge.pk)  # pending until the next run
    logger.info(
        "attempts recorded",
        extra={
            "challenge_id": challenge.pk,
            "attempts": len(attempts),
            "failed": sum(1 for row in active_rows if row is not None and row.error),
            "versions": len(versions),
            "duration_ms": round((time.perf_counter() - started) * 1000, 1),
        },
    )
    return [
        RecordedAttempt(a, s, active_number) for a, s in zip(attempts, active_rows, strict=True)
    ]
