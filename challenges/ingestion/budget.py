"""The scoring budget of an attempts request (docs/api.md).

A request scores its attempts inline only while the budget lasts
(``PODIUM_SCORING_BUDGET_MS``); the attempts it did not reach are stored without a score
under the active version, answered ``score_status: "pending"``, and scored by a Celery
task queued when the request commits (``attempts_score_pending``). A slow plugin or
snippet therefore holds a request for about the budget plus one attempt's timeout, not
for 1,000 × its timeout.

Scoring never runs inside a database transaction: outcomes are computed first, then
written in short transactions that are idempotent (a retried task writes each score
once).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef

from challenges import enqueue
from challenges.leaderboards import bulk, freeze, scores
from challenges.models import Attempt, AttemptScore, Challenge, ScoringVersion
from scoring import services as scoring
from scoring.engine import strategies
from scoring.engine.outcome import Outcome

logger = logging.getLogger(__name__)

SCORED, FAILED, PENDING = "scored", "failed", "pending"
SCORE_STATUSES = (SCORED, FAILED, PENDING)
MAX_SLICE = 64  # attempts scored per call when the scorer is fast
PENDING_BATCH = 200  # attempts a pending-scoring task computes, then writes, at a time


def score_status(row: AttemptScore | None) -> str:
    """``scored`` (score or, for an attempt the strategy does not count, null),
    ``failed`` (the scorer failed: null, the error kept for admins), or ``pending``
    (no score under the active version yet, or a batch scorer's part of it waiting for
    the next batch run: ``details.pending``)."""
    if row is None:
        return PENDING
    if row.error:
        return FAILED
    pending = isinstance(row.details, dict) and row.details.get("pending") is True
    return PENDING if pending else SCORED


@dataclass
class ScoringBudget:
    """Time left for scoring in one request, on the monotonic clock."""

    seconds: float
    # looked up at each call, like left(): one clock for both ends of the measure
    started: float = field(default_factory=lambda: time.monotonic())

    @classmethod
    def from_settings(cls) -> ScoringBudget:
        return cls(seconds=settings.PODIUM_SCORING_BUDGET_MS / 1000)

    def left(self) -> float:
        return self.seconds - (time.monotonic() - self.started)

    def compute(
        self, *, version: ScoringVersion, challenge: Challenge, attempts: Sequence[Attempt]
    ) -> list[Outcome | None]:
        """One outcome per attempt, or None for those the budget did not reach.

        Built-in strategies cost microseconds: scored at once. Other scorers are scored in
        slices sized from the time per attempt so far, so that a slice fits the budget
        left: a scorer that turns slow is caught after one slow attempt (its timeout
        bounds it), a fast one keeps the batches large."""
        if version.scoring_strategy in strategies.BUILTIN:  # a comparison of metrics: never slow
            return list(_compute(version, challenge, attempts))
        out: list[Outcome | None] = [None] * len(attempts)
        if not attempts or self.left() <= 0:
            return out
        done, per_attempt = 0, 0.0
        while done < len(attempts):
            left = self.left()
            if left <= 0:
                break
            size = 1  # the first attempt measures the scorer
            if per_attempt > 0:
                size = max(1, min(MAX_SLICE, int(left / per_attempt)))
            batch = attempts[done : done + size]
            began = time.monotonic()
            out[done : done + len(batch)] = _compute(version, challenge, batch)
            per_attempt = max((time.monotonic() - began) / len(batch), 1e-6)
            done += len(batch)
        return out


def _compute(version: ScoringVersion, challenge: Challenge, attempts: Sequence[Attempt]):
    items = scoring.items_from_attempts(
        attempts, challenge=challenge, timeout_ms=version.timeout_ms
    )
    return scoring.scores_compute(version=version, items=items)


def pending_enqueue(*, challenge_id: int, attempt_ids: list[int] | None) -> None:
    """Queue the scoring of pending attempts (None: all of the challenge's; call on
    commit). A broker outage is logged: the attempts stay pending until a worker starts
    (``attempts_pending_sweep``) or the next rescore scores them."""
    enqueue.attempts_score_pending(challenge_id=challenge_id, attempt_ids=attempt_ids)


def attempts_score_pending(
    *, challenge_id: int, attempt_ids: Sequence[int] | None = None, seconds: float | None = None
) -> int:
    """Score the challenge's attempts that have no score under its active version (of
    ``attempt_ids`` only, when given), outside any transaction, then write each batch in
    a short one. Idempotent: a score already written (by a twin task, or by a rescore
    that switched meanwhile) is kept, and the leaderboard entries are upserted from
    what is stored. Returns how many attempts this call scored.

    ``seconds``: a time slice (the task's, PODIUM_PENDING_SLICE_MS). Past it the call
    stops after the attempt under way and queues the rest as a new task, at the back of
    the queue: one challenge's backlog of slow attempts takes turns with every other
    challenge's background work instead of holding the workers until it is done."""
    challenge = Challenge.objects.filter(pk=challenge_id).first()
    if challenge is None or challenge.active_version_id is None:
        return 0
    version = ScoringVersion.objects.get(pk=challenge.active_version_id)
    has_score = AttemptScore.objects.filter(version=version, attempt=OuterRef("pk"))
    todo = scores.attempts_for_scoring(challenge_id).filter(~Exists(has_score))
    if attempt_ids is not None:
        todo = todo.filter(pk__in=list(attempt_ids))
    clock = ScoringBudget(seconds=seconds) if seconds is not None else None
    scored, last_pk = 0, 0
    while batch := list(todo.filter(pk__gt=last_pk)[:PENDING_BATCH]):
        if clock is None:
            outcomes = list(_compute(version, challenge, batch))  # no transaction is open
        else:
            if clock.left() <= 0:
                break
            reached = clock.compute(version=version, challenge=challenge, attempts=batch)
            outcomes = [o for o in reached if o is not None]  # a prefix: scored in order
            if not outcomes:
                break  # the slice ran out before the first: the next turn takes them
            batch = batch[: len(outcomes)]
        last_pk = batch[-1].pk
        with transaction.atomic():
            rows = bulk.score_rows(version=version, attempts=batch, outcomes=outcomes)
            AttemptScore.objects.bulk_create(rows, ignore_conflicts=True)
            stored = {
                row.attempt_id: row
                for row in AttemptScore.objects.filter(
                    version=version, attempt_id__in=[a.pk for a in batch]
                )
            }
            kept = [a for a in batch if a.pk in stored]  # an attempt deleted meanwhile: none
            scores.entries_upsert(version=version, attempts=kept, rows=[stored[a.pk] for a in kept])
            if freeze.is_frozen(challenge):
                early = Attempt.objects.filter(
                    pk__in=[a.pk for a in kept], recorded_at__lt=challenge.freeze_at
                )  # one query: recorded_at is not among the fields read for scoring
                if early.exists():  # the frozen board is rebuilt with them
                    freeze.frozen_drop(challenge_ids=[challenge.pk])
        scored += len(batch)
    if clock is not None and todo.filter(pk__gt=last_pk).exists():
        pending_enqueue(challenge_id=challenge_id, attempt_ids=attempt_ids)  # the next turn
    if scored:
        logger.info(
            "pending attempts scored",
            extra={"challenge_id": challenge_id, "version_id": version.pk, "attempts": scored},
        )
    return scored


def pending_sweep() -> int:
    """Queue the pending attempts of every challenge (at worker start: a request whose
    queueing failed during a broker outage left some behind)."""
    challenges = Challenge.objects.exclude(active_version=None)
    missing = AttemptScore.objects.filter(
        version_id=OuterRef("challenge__active_version_id"), attempt=OuterRef("pk")
    )
    ids = (
        Attempt.objects.filter(challenge__in=challenges)
        .filter(~Exists(missing))
        .values_list("challenge_id", flat=True)
        .order_by()  # no ordering column in the DISTINCT
        .distinct()
    )
    found = list(ids)
    for challenge_id in found:
        pending_enqueue(challenge_id=challenge_id, attempt_ids=None)
    return len(found)


def attempts_pending_count(*, challenge: Any) -> int:
    """How many of the challenge's attempts wait for a score under its active version."""
    if challenge.active_version_id is None:
        return 0
    has_score = AttemptScore.objects.filter(
        version_id=challenge.active_version_id, attempt=OuterRef("pk")
    )
    return Attempt.objects.filter(challenge=challenge).filter(~Exists(has_score)).count()
