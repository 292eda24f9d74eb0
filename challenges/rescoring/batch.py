"""Batch scorers (``python_batch``): scored over the whole challenge, in the background.

A batch scorer's ``compute_batch_scores(samples[, solver_outputs])`` sees every attempt
of the challenge at once (a rank-normalised score, a duplicate detector). Attempts are
stored as they come; the batch scorer's part of their score waits (``pending``; when the
batch scorer ranks, they are off the leaderboard until then).

- ``batch_request``: after attempts are recorded. Claims the challenge's ``BatchState``
  with a conditional update (``scheduled`` False → True) and queues one task
  ``PODIUM_BATCH_DEBOUNCE_MS`` later: a burst of attempts costs one run.
- ``batch_run``: the task. Un-claims first (attempts from now on schedule the next
  run), snapshots the attempts (ids up to the newest committed one), runs each batch
  scorer once in the sandbox *outside any transaction*, then, under the challenge row
  lock, writes every covered score row and rebuilds the leaderboard in one transaction:
  readers see the previous run's leaderboard or this one's, never a mix.
- A rescore of a version with batch scorers runs them before its switch
  (``batch_score_version``), so a new version never goes live with pending scores.

One call takes at most ``PODIUM_BATCH_MAX_ATTEMPTS`` attempts (50,000 by default) within
the challenge's timeout and the sandbox's memory ceiling; a larger challenge is not
scored in parts (that would change what "relative to the whole set" means): the run is
refused with that reason, shown to admins, and the attempts stay pending.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Max
from django.utils import timezone

from challenges import enqueue
from challenges.events import moments
from challenges.leaderboards import exclusions, freeze, history, scores, sql
from challenges.models import (
    Attempt,
    AttemptScore,
    BatchState,
    Challenge,
    HistoryRecord,
    ScoringVersion,
)
from scoring import sandbox
from scoring import services as scoring
from scoring.engine import strategies
from scoring.engine.scorers_list import batch_specs, merge_batch, ranking_of
from scoring.engine.shims import batch_results
from scoring.engine.snippet import SnippetInvalid

logger = logging.getLogger(__name__)


def has_batch(version: Any) -> bool:
    return bool(
        version is not None
        and version.scoring_strategy == strategies.PYTHON
        and batch_specs(version.scorers or ())
    )


# --- scheduling ---------------------------------------------------------------------------
def batch_request(*, challenge_id: int) -> bool:
    """Schedule a run unless one is scheduled already; True when this call did."""
    BatchState.objects.bulk_create([BatchState(challenge_id=challenge_id)], ignore_conflicts=True)
    claimed = BatchState.objects.filter(pk=challenge_id, scheduled=False).update(
        scheduled=True, requested_at=timezone.now()
    )
    if claimed != 1:
        return False  # a run is scheduled already: it will see these attempts too
    countdown = settings.PODIUM_BATCH_DEBOUNCE_MS / 1000
    transaction.on_commit(lambda: _send(challenge_id, countdown))
    return True


def _send(challenge_id: int, countdown: float) -> None:
    if not enqueue.batch_score(challenge_id=challenge_id, countdown=countdown):
        # The broker refused it: release the claim, so that the next attempt schedules
        # the run instead of finding it scheduled for ever.
        BatchState.objects.filter(pk=challenge_id, scheduled=True).update(scheduled=False)


# --- one scorer over a batch --------------------------------------------------------------
class BatchRefused(ValueError):
    """A batch that cannot run (too large, or the sandbox is unavailable)."""


def _rows(challenge_id: int, last_id: int, arity: int) -> list[tuple[int, Any, str, Any]]:
    fields = ["pk", "sample"] + (["output", "messages"] if arity == 2 else [])
    query = (
        Attempt.objects.filter(challenge_id=challenge_id, pk__lte=last_id)
        .order_by("pk")
        .values_list(*fields)
    )
    return [(r[0], r[1], *(r[2:] if arity == 2 else ("", None))) for r in query]


def _ranked_ids(challenge: Challenge, last_id: int) -> set[int]:
    """The set a batch scorer ranks relative to: the attempts up to ``last_id`` that
    may rank (no practice, hidden attempt or hidden player's attempt) and, while a
    freeze holds, only those recorded before it — so nothing after the freeze changes
    a score the frozen board shows."""
    attempts = Attempt.objects.filter(challenge_id=challenge.pk, pk__lte=last_id)
    if freeze.is_frozen(challenge):
        attempts = attempts.filter(recorded_at__lt=challenge.freeze_at)
    ranked = exclusions.public_attempts(attempts, challenge_id=challenge.pk)
    return set(ranked.values_list("pk", flat=True))


def _run_scorer(
    version: ScoringVersion, spec: dict[str, Any], rows: list[tuple[int, Any, str, Any]]
) -> list[Any]:
    """One batch scorer's Results over the rows, in order (never raises for what the
    snippet does: a failed call fails every attempt with its error)."""
    try:
        pool = sandbox.shared_pool()
    except sandbox.SandboxUnavailable as exc:
        raise BatchRefused(str(exc)) from exc
    rank_key, rank_score = ranking_of(version.scorers, version.rank_by)
    try:
        return batch_results(
            code=spec["compute_scores_snippet"],
            config=spec.get("config") or {},
            samples=[r[1] if isinstance(r[1], dict) else {} for r in rows],
            outputs=[(r[2] or "", r[3]) for r in rows],
            owner=f"ScoringVersion {version.pk} batch {spec['key']}",
            timeout_ms=version.timeout_ms,
            score_key=rank_score if spec["key"] == rank_key else "",
            sandbox=pool,
        )
    except SnippetInvalid as exc:
        raise BatchRefused(str(exc)) from exc


@dataclass(frozen=True)
class BatchRun:
    version: ScoringVersion
    covered: int  # attempts this run scored
    ms: float  # sandbox time, all batch scorers
    error: str = ""


def _compute(version: ScoringVersion, last_id: int) -> tuple[list[int], dict[str, list[Any]]]:
    """(attempt ids, {batch scorer key: Results}) for the attempts up to ``last_id``.

    One call over the ranked set (``_ranked_ids``); when other attempts exist (practice,
    hidden, after the freeze), a second call over the set and them, of which only
    their results are kept: they are scored against the ranked set and change nobody
    else's score."""
    specs = batch_specs(version.scorers)
    limit = settings.PODIUM_BATCH_MAX_ATTEMPTS
    rows = _rows(version.challenge_id, last_id, 2)
    if len(rows) > limit:
        raise BatchRefused(
            f"{len(rows):,} attempts: over the {limit:,} one batch call may take "
            "(PODIUM_BATCH_MAX_ATTEMPTS); the attempts stay pending"
        )
    if not rows:
        return [], {}
    ranked_ids = _ranked_ids(version.challenge, last_id)
    ranked = [r for r in rows if r[0] in ranked_ids]
    others = [r for r in rows if r[0] not in ranked_ids]
    results: dict[str, list[Any]] = {}
    for spec in specs:
        found: dict[int, Any] = {}
        if ranked:
            found.update(
                zip([r[0] for r in ranked], _run_scorer(version, spec, ranked), strict=True)
            )
        if others:
            extra = _run_scorer(version, spec, ranked + others)[len(ranked) :]
            found.update(zip([r[0] for r in others], extra, strict=True))
        results[spec["key"]] = [found[r[0]] for r in rows]
    return [r[0] for r in rows], results


def _write(
    version: ScoringVersion, ids: list[int], results: dict[str, list[Any]]
) -> tuple[int, bool]:
    """Merge the results into the version's score rows (call in a transaction). Returns
    how many rows, and whether the public saw a change: False only during a freeze when
    no score of an attempt recorded before it changed (the frozen board stands)."""
    if not ids:
        return 0, False
    specs = batch_specs(version.scorers)
    rank_key = ranking_of(version.scorers, version.rank_by)[0]
    position = {attempt_id: i for i, attempt_id in enumerate(ids)}
    rows = list(AttemptScore.objects.filter(version=version, attempt_id__in=ids))
    before = {row.attempt_id: row.score for row in rows}
    for row in rows:
        i = position[row.attempt_id]
        score, details, error, qa = row.score, row.details, row.error, row.qa
        failed = row.qa_failed
        for spec in specs:
            score, details, error, qa, failed = merge_batch(
                score=score,
                details=details,
                error=error,
                qa=qa,
                spec=spec,
                rank_key=rank_key,
                result=results[spec["key"]][i],
            )
        row.score, row.details, row.error, row.qa, row.qa_failed = score, details, error, qa, failed
        row.sort_key = scoring.sort_key_of(version, score)  # the way the setup ranks
    AttemptScore.objects.bulk_update(
        rows, ["score", "sort_key", "details", "error", "qa", "qa_failed"], batch_size=2000
    )
    scores.entries_rebuild(version=version)
    challenge = version.challenge
    if not freeze.is_frozen(challenge):
        return len(rows), True
    # A score of an attempt recorded before the freeze came (or changed): the frozen
    # board is rebuilt at its next read, with it.
    changed = [row.attempt_id for row in rows if row.score != before[row.attempt_id]]
    early = Attempt.objects.filter(pk__in=changed, recorded_at__lt=challenge.freeze_at)
    if changed and early.exists():
        freeze.frozen_drop(challenge_ids=[challenge.pk])
        return len(rows), True
    return len(rows), False


def batch_score_version(*, version: ScoringVersion) -> BatchRun:
    """Run the batch scorers of a version that is not active yet (a rescore's, before
    its switch) over the attempts recorded so far."""
    last_id = (
        version.challenge.attempts.aggregate(last=Max("pk"))["last"] or 0
        if version.challenge_id
        else 0
    )
    started = time.perf_counter()
    try:
        ids, results = _compute(version, last_id)
    except BatchRefused as exc:
        return BatchRun(version, 0, 0.0, str(exc))
    ms = (time.perf_counter() - started) * 1000
    with transaction.atomic():
        covered, _ = _write(version, ids, results)
    return BatchRun(version, covered, ms)


def batch_run(*, challenge_id: int) -> BatchRun | None:
    """Run the active version's batch scorers over every attempt recorded so far and
    switch the leaderboard to the new scores in one transaction. None: nothing to do."""
    BatchState.objects.filter(pk=challenge_id, scheduled=True).update(scheduled=False)
    challenge = Challenge.objects.select_related("active_version").filter(pk=challenge_id).first()
    if challenge is None or not has_batch(challenge.active_version):
        return None
    version = challenge.active_version
    # Every attempt up to here has committed with its score rows (ingestion holds the
    # challenge row in share mode while it writes): the snapshot.
    with transaction.atomic():
        Challenge.objects.select_for_update().filter(pk=challenge_id).exists()
        last_id = challenge.attempts.aggregate(last=Max("pk"))["last"] or 0
    started = time.perf_counter()
    try:
        ids, results = _compute(version, last_id)  # the sandbox: no transaction, no lock
    except BatchRefused as exc:
        logger.warning("batch run refused", extra={"challenge_id": challenge_id, "error": str(exc)})
        BatchState.objects.filter(pk=challenge_id).update(error=str(exc)[:2000])
        return BatchRun(version, 0, 0.0, str(exc))
    ms = (time.perf_counter() - started) * 1000
    with transaction.atomic():
        locked = Challenge.objects.select_for_update().get(pk=challenge_id)
        if locked.active_version_id != version.pk:  # a rescore switched meanwhile
            transaction.on_commit(lambda: batch_request(challenge_id=challenge_id))
            return None
        before = sql.board_order(version.pk)
        covered, public = _write(version, ids, results)
        now = timezone.now()
        if public:  # same version, new scores: cached pages are keyed by updated_at
            Challenge.objects.filter(pk=challenge_id).update(updated_at=now)
        record = history.history_record(
            challenge=locked,
            version=version,
            previous_version_id=version.pk,
            before=before,
            reason=HistoryRecord.Reason.BATCH,
            switched_at=now,
        )
        transaction.on_commit(lambda: moments.rescore_finished(record_id=record.pk))
        BatchState.objects.filter(pk=challenge_id).update(
            version=version,
            covered=covered,
            last_attempt_id=last_id,
            runs=F("runs") + 1,
            last_run_at=timezone.now(),
            last_run_ms=ms,
            error="",
        )
    logger.info(
        "batch run",
        extra={"challenge_id": challenge_id, "covered": covered, "duration_ms": round(ms, 1)},
    )
    return BatchRun(version, covered, ms)


def batch_coverage(*, challenge: Challenge) -> tuple[int, int] | None:
    """(attempts the current batch scores cover, attempts in all), or None when the
    active version has no batch scorer."""
    if not has_batch(challenge.active_version):
        return None
    state = BatchState.objects.filter(pk=challenge.pk).values("version_id", "covered").first()
    covered = (
        state["covered"] if state and state["version_id"] == challenge.active_version_id else 0
    )
    return covered, challenge.attempts.count()
