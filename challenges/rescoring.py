"""Rescore jobs: score every attempt of a challenge under one version, in chunks, on any
number of workers, then make that version active in one transaction.

The guarantees, and where each one lives:
- *No mix*: scores belong to a version; the public leaderboard reads the active
  version only, and ``job_finalize`` moves the pointer after the last chunk.
- *No lost attempt*: chunks cover the attempts that existed at the start; attempts
  recorded later are scored under the job's version at ingestion (``services``), and
  ``job_finalize`` scores any still missing while it holds the challenge row lock, which
  ingestion takes in share mode.
- *No double write*: a chunk's scores and its ``done_at`` are written in one transaction
  with the chunk row locked; a retried or duplicated chunk task finds it done.
- *Newest wins*: starting a job cancels the challenge's other queued or running jobs;
  only a running job whose chunks are all done can be finalized.
- *Resumable*: a job whose worker died is picked up again by ``jobs_resume`` (run when a
  worker starts), which re-queues its unfinished chunks.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, F, Max
from django.utils import timezone

from scoring import services as scoring

from . import scores
from .models import AttemptScore, Challenge, RescoreChunk, RescoreJob, ScoringVersion

logger = logging.getLogger(__name__)
Status = RescoreJob.Status


class JobStateError(ValueError):
    """An action that the job's status does not allow (e.g. cancelling a finished job)."""


# --- starting ---------------------------------------------------------------------------
def rescore_start(
    *, challenge: Challenge, by: Any = None, version: ScoringVersion | None = None
) -> RescoreJob:
    """Queue a rescore of ``challenge``: of ``version``, or of a new version holding the
    current setup. Other queued or running jobs of the challenge are cancelled: the
    newest request wins. The job's tasks are sent when the transaction commits."""
    from .services import version_create  # services import this module

    # Plan the chunks before taking the challenge lock (reading a million ids takes a
    # while, and ingestion waits for that lock). An attempt recorded after the plan is
    # in no chunk: it is scored at ingestion once the job exists, or by the switch,
    # which scores every attempt above the planned ranges still missing a score.
    in_sql = scores.scored_in_sql(version if version is not None else challenge)
    most = settings.PODIUM_SCORING_CHUNK * (SQL_CHUNK_FACTOR if in_sql else 1)
    plan = _plan_chunks(challenge.pk, most=most)
    with transaction.atomic():
        challenge = Challenge.objects.select_for_update().get(pk=challenge.pk)
        if version is None:
            version = version_create(challenge=challenge, by=by, reason="rescore")
        now = timezone.now()
        RescoreJob.objects.filter(
            challenge=challenge, status__in=RescoreJob.ACTIVE_STATUSES
        ).update(status=Status.CANCELLED, finished_at=now, error="Superseded by a newer rescore.")
        job = RescoreJob.objects.create(
            challenge=challenge,
            version=version,
            created_by=by if getattr(by, "is_authenticated", False) else None,
            total=plan.total,
            chunks_total=len(plan.ranges),
        )
        RescoreChunk.objects.bulk_create(
            RescoreChunk(job=job, number=n, first_attempt_id=first, last_attempt_id=last)
            for n, (first, last) in enumerate(plan.ranges, start=1)
        )
        transaction.on_commit(lambda: _send(job))
    logger.info(
        "rescore queued",
        extra={
            **_job_fields(job),
            "strategy": version.scoring_strategy,
            "plugin_id": version.scoring_plugin_id or None,
            "total": job.total,
            "chunks": job.chunks_total,
        },
    )
    return job


def _job_fields(job: RescoreJob) -> dict[str, Any]:
    return {"challenge_id": job.challenge_id, "job_id": job.pk, "version_id": job.version_id}


CHUNKS_PER_JOB = 16
FEWEST_PER_CHUNK = 1000
SQL_CHUNK_FACTOR = 5


def chunk_size(*, total: int, most: int) -> int:
    """About CHUNKS_PER_JOB chunks, of FEWEST_PER_CHUNK to ``most`` attempts each."""
    return max(1, min(most, max(FEWEST_PER_CHUNK, -(-total // CHUNKS_PER_JOB))))


@dataclass(frozen=True)
class Plan:
    total: int
    ranges: list[tuple[int, int]]  # inclusive attempt id ranges, one per chunk


def _plan_chunks(challenge_id: int, *, most: int) -> Plan:
    """Split the challenge's attempts (as they are now) into id ranges."""
    attempts = scores.attempts_for_scoring(challenge_id)
    stats = attempts.aggregate(total=Count("pk"), last=Max("pk"))
    total, last = stats["total"], stats["last"]
    size = chunk_size(total=total, most=most)
    starts: list[int] = []
    if total:
        table = attempts.model._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT id FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS place "  # noqa: S608
                f"FROM {table} WHERE challenge_id = %s) numbered "
                f"WHERE (place - 1) %% %s = 0 ORDER BY id",
                [challenge_id, size],
            )
            starts = [row[0] for row in cursor.fetchall()]
    ends = [start - 1 for start in starts[1:]] + ([last] if starts else [])
    return Plan(total, list(zip(starts, ends, strict=True)))


def _send(job: RescoreJob) -> None:
    from .tasks import rescore_dispatch  # tasks import services: keep the cycle lazy

    try:
        rescore_dispatch.delay(job.pk)
    except Exception:  # the broker is down: the job waits for `jobs_resume`
        logger.exception("Could not queue rescore job %s; it stays queued.", job.pk)


def job_dispatch(*, job_id: int, send_chunk: Callable[[int], None]) -> None:
    """Send a task per unfinished chunk (or finalize a job that has nothing to score)."""
    job = RescoreJob.objects.filter(pk=job_id, status__in=RescoreJob.ACTIVE_STATUSES).first()
    if job is None:
        return
    pending = list(job.chunks.filter(done_at__isnull=True).values_list("pk", flat=True))
    if not pending:
        _mark_running(job.pk)
        job_finalize(job_id=job.pk)
        return
    for chunk_id in pending:
        send_chunk(chunk_id)


def _mark_running(job_id: int) -> None:
    RescoreJob.objects.filter(pk=job_id, status=Status.QUEUED).update(
        status=Status.RUNNING, started_at=timezone.now()
    )


# --- chunks -----------------------------------------------------------------------------
def chunk_run(*, chunk_id: int, finalize: bool = True) -> bool:
    """Score one chunk under its job's version; finalize the job after its last chunk
    (unless ``finalize`` is False: the caller will, e.g. to time the switch alone).

    Returns False when there was nothing to do (chunk done already, job cancelled or
    superseded, chunk gone)."""
    job_id = RescoreChunk.objects.filter(pk=chunk_id).values_list("job_id", flat=True).first()
    if job_id is None:
        return False
    _mark_running(job_id)  # on its own: the job shows "running" while the chunk scores
    started = time.perf_counter()
    with _gc_paused():
        scored = _chunk_score(chunk_id)
    if scored is None:
        return False
    done, chunk = scored
    # Read the chunk's new rows once now that they are committed, while the other chunks
    # are still scoring: the final leaderboard rebuild then finds them settled instead
    # of paying for a million first reads while the switch waits.
    scores.scores_settle(
        version_id=done.version_id,
        first_id=chunk.first_attempt_id,
        last_id=chunk.last_attempt_id,
    )
    logger.info(
        "rescore chunk done",
        extra={**_job_fields(done), "chunk_id": chunk_id, "duration_ms": _ms_since(started)},
    )
    if not finalize:
        return True
    done.refresh_from_db(fields=["chunks_done", "chunks_total", "status"])
    if done.status == Status.RUNNING and done.chunks_done == done.chunks_total:
        job_finalize(job_id=done.pk)
    return True


@contextmanager
def _gc_paused() -> Iterator[None]:
    """A chunk makes hundreds of thousands of short-lived, acyclic tuples; the cyclic
    collector scanning them costs about a tenth of a rescore. It runs again after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _chunk_score(chunk_id: int) -> tuple[RescoreJob, RescoreChunk] | None:
    """Score a chunk and mark it done, in one transaction; None if there was nothing
    to do. Returns the chunk's job and the chunk."""
    with transaction.atomic():
        chunk = (
            # of=self: lock the chunk row only, not the job, version and challenge rows
            # it is joined with (that would block ingestion and serialize the chunks).
            RescoreChunk.objects.select_for_update(of=("self",))
            .select_related("job__version__challenge")
            .filter(pk=chunk_id)
            .first()
        )
        if chunk is None or chunk.done_at is not None:
            return None
        job = chunk.job
        if job.status not in RescoreJob.ACTIVE_STATUSES:
            return None
        version = job.version
        span = {"first_id": chunk.first_attempt_id, "last_id": chunk.last_attempt_id}
        scored = scores.scores_replace_in_sql(
            version=version, challenge_id=job.challenge_id, **span
        )
        failed = 0  # built-in strategies cannot fail
        if scored is None:  # a plugin (or not PostgreSQL): score in Python
            attempts = scores.attempt_rows(challenge_id=job.challenge_id, **span)
            scorer = scoring.rows_scorer(
                version=version, challenge=version.challenge, attempts=attempts
            )
            failed = scores.scores_replace(
                version=version, attempts=attempts, compute=scorer, **span
            )
            scored = len(attempts)
        chunk.done_at, chunk.scored, chunk.failed = timezone.now(), scored, failed
        chunk.save(update_fields=["done_at", "scored", "failed"])
        RescoreJob.objects.filter(pk=job.pk).update(
            processed=F("processed") + scored,
            failed=F("failed") + failed,
            chunks_done=F("chunks_done") + 1,
        )
    return job, chunk


# --- finishing ---------------------------------------------------------------------------
def job_finalize(*, job_id: int) -> bool:
    """Make the job's version active, if the job is running and every chunk is done.

    Two steps. First, without blocking anyone, the version's leaderboard is rebuilt from
    its scores (public readers do not see a version that is not active). Then, under the
    challenge row lock (ingestion waits a few milliseconds), the attempts recorded since
    the plan that still lack a score get one and the pointer moves: readers see the old
    version or the new one, never a mix."""
    started = time.perf_counter()
    _batch_before_switch(job_id)
    with transaction.atomic():
        job = RescoreJob.objects.select_for_update().filter(pk=job_id).first()
        if job is None or not _ready(job):
            return False
        scores.entries_rebuild(version=ScoringVersion.objects.get(pk=job.version_id))
    rebuilt = time.perf_counter()
    job = _switch(job_id)
    if job is not None and job.version.scorers:
        from . import batch_scoring

        if batch_scoring.has_batch(job.version):  # attempts recorded during the run
            batch_scoring.batch_request(challenge_id=job.challenge_id)
    if job is not None:
        logger.info(
            "rescore switched",
            extra={
                **_job_fields(job),
                "processed": job.processed,
                "failed": job.failed,
                "rebuild_ms": _ms_since(started, rebuilt),
                "switch_ms": _ms_since(rebuilt),
            },
        )
    return job is not None


def _batch_before_switch(job_id: int) -> None:
    """A version with batch scorers runs them before it goes live (outside any lock);
    attempts recorded after this are pending until the next batch run."""
    from . import batch_scoring

    job = RescoreJob.objects.select_related("version__challenge").filter(pk=job_id).first()
    if job is not None and _ready(job) and batch_scoring.has_batch(job.version):
        batch_scoring.batch_score_version(version=job.version)
        transaction.on_commit(lambda: batch_scoring.batch_request(challenge_id=job.challenge_id))


def _ms_since(start: float, end: float | None = None) -> float:
    return round(((end if end is not None else time.perf_counter()) - start) * 1000, 1)


def _ready(job: RescoreJob) -> bool:
    return job.status == Status.RUNNING and job.chunks_done == job.chunks_total


def _switch(job_id: int) -> RescoreJob | None:
    """Move the pointer; the finished job, or None when it was not this call's to do."""
    with transaction.atomic():
        job = RescoreJob.objects.filter(pk=job_id).first()
        if job is None:
            return None
        challenge = Challenge.objects.select_for_update().get(pk=job.challenge_id)
        job = RescoreJob.objects.select_for_update().get(pk=job_id)
        if not _ready(job):  # cancelled, superseded, or switched by a twin task
            return None
        version = ScoringVersion.objects.get(pk=job.version_id)
        version.challenge = challenge
        # Every planned range is scored (its chunk is done): only attempts recorded since
        # the plan can lack a score.
        planned_up_to = job.chunks.aggregate(last=Max("last_attempt_id"))["last"] or 0
        scores.score_missing(version=version, after_id=planned_up_to)
        now = timezone.now()
        version.scored_at = now
        version.save(update_fields=["scored_at"])
        challenge.active_version = version
        challenge.save(update_fields=["active_version", "updated_at"])
        job.status, job.finished_at = Status.SUCCEEDED, now
        # Attempts recorded during the run (after the planned ranges) were scored at
        # ingestion or just now: the finished job counts them too.
        late = AttemptScore.objects.filter(version=version, attempt_id__gt=planned_up_to)
        job.total = job.processed = job.processed + late.count()
        job.failed += late.exclude(error="").count()
        job.save(update_fields=["status", "finished_at", "total", "processed", "failed"])
    return job


def job_cancel(*, job: RescoreJob) -> RescoreJob:
    """Stop a queued or running job; the active version does not change."""
    cancelled = RescoreJob.objects.filter(pk=job.pk, status__in=RescoreJob.ACTIVE_STATUSES).update(
        status=Status.CANCELLED, finished_at=timezone.now(), error="Cancelled."
    )
    job.refresh_from_db()
    if not cancelled:
        raise JobStateError(
            f"The job is {job.status}; only queued or running jobs can be cancelled."
        )
    logger.info("rescore cancelled", extra=_job_fields(job))
    return job


def job_fail(*, job_id: int, error: str) -> None:
    """Give up on a job after an unexpected error (the scorer's own failures do not fail a
    job: they are recorded per attempt)."""
    failed = RescoreJob.objects.filter(pk=job_id, status__in=RescoreJob.ACTIVE_STATUSES).update(
        status=Status.FAILED, finished_at=timezone.now(), error=error[:5000]
    )
    if failed:
        logger.warning("rescore failed", extra={"job_id": job_id})


def jobs_resume(*, send_dispatch: Callable[[int], None]) -> list[int]:
    """Re-send every queued or running job (after a worker restart, a broker outage):
    their unfinished chunks are queued again; finished chunks are never redone."""
    ids = list(
        RescoreJob.objects.filter(status__in=RescoreJob.ACTIVE_STATUSES).values_list(
            "pk", flat=True
        )
    )
    for job_id in ids:
        send_dispatch(job_id)
    return ids


# --- running without a worker ----------------------------------------------------------------
def job_run_inline(*, job: RescoreJob) -> RescoreJob:
    """Run a job in this process, chunk after chunk (tests, the command's --inline)."""
    job_dispatch(job_id=job.pk, send_chunk=lambda chunk_id: chunk_run(chunk_id=chunk_id))
    job.refresh_from_db()
    return job
