"""Services that write: challenges, scoring versions, attempts and their scores.

Views, the API, the admin, commands and tasks call these; the logic lives here once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from challenges import audit
from challenges.ingestion import admission
from challenges.ingestion.budget import PENDING, ScoringBudget, pending_enqueue, score_status
from challenges.leaderboards import bulk, ranking, scores, sql
from challenges.leaderboards import names as player_names
from challenges.leaderboards.bulk import attempts_insert
from challenges.models import (
    Attempt,
    AttemptScore,
    Challenge,
    LeaderboardEntry,
    Player,
    ScoringSetupFields,
    ScoringVersion,
)
from challenges.rescoring import batch as batch_scoring
from challenges.rescoring import jobs as rescoring
from scoring import services as scoring
from scoring.engine.outcome import Outcome

logger = logging.getLogger(__name__)
SETUP_FIELDS = ScoringSetupFields.SETUP_FIELDS
DISPLAY_NAME_MAX = Player._meta.get_field("display_name").max_length


def version_ensure(*, challenge: Challenge) -> None:
    """Give a challenge made without the service (the ORM, a shell, a fixture) its first
    version, so no attempt is recorded with a null score and no reason. Its setup is
    validated first: raises ``scoring.SetupInvalid`` (nothing written) when it cannot run.
    Active at once when it has no attempts yet; else its rescore makes it active."""
    with transaction.atomic():
        locked = Challenge.objects.select_for_update().get(pk=challenge.pk)
        if locked.active_version_id is not None or locked.versions.exists():
            return
        setup = scoring.setup_validate(setup=locked.setup_dict())
        for name, value in setup.items():
            setattr(locked, name, value)
        locked.save(update_fields=[*setup, "updated_at"])
        version = ScoringVersion.objects.create_next(
            challenge=locked, by=None, reason="first attempt"
        )
        if locked.attempts.exists():
            job = rescoring.rescore_start(challenge=locked, version=version, by=None)
            logger.info("first version made", extra={"challenge_id": locked.pk, "job": job.pk})
            return
        version.scored_at = timezone.now()
        version.save(update_fields=["scored_at"])
        locked.active_version = version
        locked.save(update_fields=["active_version"])


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
    score: AttemptScore | None  # under the active version (None: pending)
    version_number: int | None
    status: str = PENDING  # scored | failed | pending (docs/api.md)


def _players_upsert(
    inputs: Sequence[AttemptInput], *, renames_within: frozenset[int] | None = None
) -> dict[str, Player]:
    """Create the players not seen yet and rename the ones given a new name (a display
    name is global: with ``renames_within``, only players with no attempt outside those
    challenges are renamed; the others keep theirs).

    Rows are inserted, then locked and renamed, in external-id order whatever the
    request's order: two requests naming the same players wait for each other in one
    order and never deadlock."""
    names: dict[str, str | None] = {}
    for item in inputs:
        if item.player_name or item.player not in names:
            names[item.player] = item.player_name or names.get(item.player)
    ordered = sorted(names)
    shown = [(names[ext] or ext)[:DISPLAY_NAME_MAX] for ext in ordered]
    players = bulk.players_ensure(ordered, shown)
    renames = [ext for ext in ordered if names[ext] and players[ext].display_name != names[ext]]
    if renames and renames_within is not None:
        elsewhere = set(
            Attempt.objects.filter(player_id__in=[players[ext].pk for ext in renames])
            .exclude(challenge_id__in=renames_within)
            .values_list("player_id", flat=True)
        )
        renames = [ext for ext in renames if players[ext].pk not in elsewhere]
    if renames:
        locked = Player.objects.select_for_update(no_key=True).filter(external_id__in=renames)
        for player in locked.order_by("external_id"):
            players[player.external_id] = player
        renamed = []
        kept = []  # (player id, old name, new name): a frozen board shows the old one
        for ext in renames:
            if players[ext].display_name != names[ext]:
                kept.append((players[ext].pk, players[ext].display_name, names[ext]))
                players[ext].display_name = names[ext]
                renamed.append(players[ext])
        if renamed:
            Player.objects.bulk_update(renamed, ["display_name"])
            player_names.renames_record(renames=kept, at=timezone.now())
            ranking.rankings_renamed(player_ids=[p.pk for p in renamed])
    return players


def _lock_challenge_shared(challenge_id: int) -> None:
    """Hold the challenge row in share mode while attempts are written: a rescore's final
    switch (FOR UPDATE) waits for them, so none misses the new version. SQLite needs no
    lock: its write transactions are serialised already."""
    sql.challenge_lock_shared(challenge_id)


def challenge_active_id(challenge_id: int) -> int | None:
    return (
        Challenge.objects.filter(pk=challenge_id).values_list("active_version_id", flat=True).get()
    )


def _versions_to_score(challenge_id: int) -> tuple[int | None, list[ScoringVersion]]:
    """The active version first, then any version whose rescore job is under way (so
    attempts recorded during a rescore are scored under the new version too)."""
    found = sql.versions_to_score(challenge_id)
    active_id = found[0].active_id if found else challenge_active_id(challenge_id)
    return active_id, sorted(found, key=lambda v: v.pk != active_id)


ATTEMPTS_DELETE_BATCH = 500


AUDITED_IDS = 1000  # attempt ids an attempt_delete event lists (with the full count)


@transaction.atomic
def attempts_delete(*, attempts: QuerySet[Attempt], by: Any = None) -> int:
    """Delete attempts with their scores, and recompute the leaderboard entries that
    pointed at them (the next-best attempt of that player takes the place, or none).
    Returns how many attempts were deleted. Use this, not ``QuerySet.delete()``: entries
    are a cache without a foreign-key constraint, so nothing else repairs them. One
    ``attempt_delete`` audit event per challenge says which were deleted, and by whom."""
    ids = list(attempts.values_list("pk", flat=True))
    by_challenge: dict[int, list[int]] = {}
    for pk, challenge_id in Attempt.objects.filter(pk__in=ids).values_list("pk", "challenge_id"):
        by_challenge.setdefault(challenge_id, []).append(pk)
    for challenge in Challenge.objects.filter(pk__in=by_challenge):
        gone = sorted(by_challenge[challenge.pk])
        audit.audit_record(
            kind=audit.Kind.ATTEMPT_DELETE,
            by=by,
            challenge=challenge,
            before={"attempts": len(gone), "ids": gone[:AUDITED_IDS]},
        )
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


_ATTEMPT_DEFAULTED = [f for f in Attempt._meta.concrete_fields if f.has_default()]


def attempt_build(*, challenge: Challenge, item: AttemptInput, player: Player | None = None):
    """An unsaved Attempt of ``challenge`` from an input (its player set when given),
    built as a bulk request needs a thousand (``bulk.model_build``)."""
    values = {
        **{f.attname: f.get_default() for f in _ATTEMPT_DEFAULTED},
        "challenge_id": challenge.pk,
        "player_id": player.pk if player is not None else None,
        "succeeded": item.succeeded,
        "tokens_total": item.tokens_total,
        "elapsed_ms": item.elapsed_ms,
        "rating": item.rating,
        "created_at": item.created_at,
        "sample": item.sample,
        "output": item.output,
        "messages": item.messages,
    }
    related = {"challenge": challenge, **({"player": player} if player else {})}
    return bulk.model_build(Attempt, values, **related)


def attempts_record(
    *,
    challenge: Challenge,
    inputs: Sequence[AttemptInput],
    within: Callable[[list[RecordedAttempt]], None] | None = None,
    renames_within: frozenset[int] | None = None,
) -> list[RecordedAttempt]:
    """Record attempts, all or nothing, scored under the active version (and any version
    being rescored), and update the leaderboard at once. The challenge's schedule and
    caps apply (``ingestion.admission``: raises ``ScheduleClosed``, ``LimitExceeded``).
    ``renames_within``: the challenges of a scoped writer (``writable_challenges``): a
    ``player_name`` it sends renames only players who have played nowhere else.
    ``within`` is called with the result inside the transaction (an idempotency key is
    stored with the attempts); if it raises, nothing is written."""
    admission.format_check(challenge=challenge)
    if challenge.active_version_id is None and challenge_active_id(challenge.pk) is None:
        version_ensure(challenge=challenge)
    external_ids = [item.player for item in inputs]
    practice = admission.schedule_check(challenge=challenge, now=timezone.now())
    admission.limits_precheck(challenge=challenge, external_ids=external_ids, now=timezone.now())
    attempts = [attempt_build(challenge=challenge, item=item) for item in inputs]
    for attempt, item in zip(attempts, inputs, strict=True):
        attempt.player_external_id = item.player
        attempt.practice = practice
    started = time.perf_counter()
    # Score before the transaction, while the request's budget lasts: a slow plugin must
    # not hold database locks, nor the request for 1,000 × its timeout. Attempts the
    # budget did not reach are stored without a score (pending) and scored by a task.
    budget = ScoringBudget.from_settings()
    scored_active_id, scored = _versions_to_score(challenge.pk)
    computed: dict[int, list[Outcome | None]] = {
        v.pk: budget.compute(version=v, challenge=challenge, attempts=attempts) for v in scored
    }
    with transaction.atomic():
        _lock_challenge_shared(challenge.pk)
        players = _players_upsert(inputs, renames_within=renames_within)
        admission.limits_enforce(
            challenge=challenge, players=players, external_ids=external_ids, now=timezone.now()
        )
        for attempt, item in zip(attempts, inputs, strict=True):
            bulk.related_set(attempt, "player", players[item.player])
        attempts_insert(attempts)
        # Again under the lock, by id: a version made active or rescored since is loaded.
        scored_ids = sorted((v.pk, scored_active_id) for v in scored)
        if sql.version_ids_to_score(challenge.pk) != scored_ids:
            active_id, versions = _versions_to_score(challenge.pk)
        else:
            active_id, versions = scored_active_id, scored
        active_rows: list[AttemptScore | None] = [None] * len(attempts)
        active_number = None
        for version in versions:
            # A version created since we scored (rare) leaves its attempts pending: never
            # score here, inside the transaction.
            outcomes = computed.get(version.pk) or [None] * len(attempts)
            done = [(a, o) for a, o in zip(attempts, outcomes, strict=True) if o is not None]
            done_attempts = [a for a, _ in done]
            rows = scores.scores_write(
                version=version, attempts=done_attempts, outcomes=[o for _, o in done]
            )
            if version.pk == active_id:
                # Only the active version's leaderboard: a version being rescored gets
                # its entries at the switch (``rescoring.job_finalize``), so ingestion
                # never writes the rows the rebuild writes, and neither waits for the other.
                scores.entries_upsert(version=version, attempts=done_attempts, rows=rows)
                by_attempt = {a.pk: row for a, row in zip(done_attempts, rows, strict=True)}
                active_rows = [by_attempt.get(a.pk) for a in attempts]
                active_number = version.number
        # Pending under the active version: scored by the workers once this commits.
        # (Under a version being rescored, its switch scores what is missing.)
        pending = [a.pk for a, row in zip(attempts, active_rows, strict=True) if row is None]
        if pending and active_id is not None:
            transaction.on_commit(
                lambda: pending_enqueue(challenge_id=challenge.pk, attempt_ids=pending)
            )
        recorded = [
            RecordedAttempt(a, r, active_number, score_status(r))
            for a, r in zip(attempts, active_rows, strict=True)
        ]
        if within is not None:
            within(recorded)
    if any(batch_scoring.has_batch(v) for v in versions):
        batch_scoring.batch_request(challenge_id=challenge.pk)  # pending until the next run
    logger.info(
        "attempts recorded",
        extra={
            "challenge_id": challenge.pk,
            "attempts": len(attempts),
            "failed": sum(1 for row in active_rows if row is not None and row.error),
            "pending": len(pending),
            "versions": len(versions),
            "duration_ms": round((time.perf_counter() - started) * 1000, 1),
        },
    )
    return recorded
