"""Rescore jobs: score every attempt of a challenge under one version, in chunks, on any
number of workers, then make that version active in one transaction.

The guarantees, and where each one lives:
- *No mix*: scores belong to a version; the public leaderboard reads the active
  version only, and ``job_finalize`` moves the pointer after the last chunk.
- *No lost attempt*: the chunks' id ranges run from 1 to the highest id the plan saw
  (an attempt of a transaction still open at the plan commits into a range);
  ``rescore_start`` creates the job under the challenge row lock, which waits for every
  ingestion under way (they hold it in share mode), so an attempt recorded later is
  scored under the job's version at ingestion (``services``); the few committed between
  the plan and the lock are scored by ``job_finalize`` before the switch.
- *No double write*: a chunk's batches each replace their own rows in a short
  transaction under the chunk row lock, and its ``done_at`` is set once; a retried or
  duplicated chunk task rewrites the same rows or finds it done.
- *Compute, then commit*: no transaction or lock is open while a scorer runs, but for
  the switch's safety net (``switch``; docs/rescoring.md).
- *Always ends*: ``job_finalize`` is one transaction, claimed by one caller at a time,
  retried after any transient error; a chunk task that finds its chunk done finalizes a
  job that is ready; the rebuild and ingestion never write the same rows.
- *Newest wins*: starting a job cancels the challenge's other queued or running jobs;
  only a running job whose chunks are all done can be finalized; a cancelled job's
  chunks stop at their next batch.
- *Resumable*: a job whose progress stopped (a killed worker, a lost message, a broker
  outage) is resumed by the periodic watchdog (``jobs_resume``), which re-sends its
  unfinished chunks, or finalizes it.
"""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Max
from django.utils import timezone

from challenges import audit, enqueue
from challenges.leaderboards import bulk, evaluation, partitions, scores, sql
from challenges.models import (
    AuditEvent,
    Challenge,
    HistoryRecord,
    RescoreChunk,
    RescoreJob,
    ScoringVersion,
)
from challenges.rescoring import batch as batch_scoring
from challenges.rescoring.switch import history_after_switch, version_switch
from config.transient import retry_transient
from scoring import services as scoring
from scoring.engine import strategies

logger = logging.getLogger(__name__)
Status = RescoreJob.Status


class JobStateError(ValueError):
    """An action that the job's status does not allow (e.g. cancelling a finished job)."""


# --- starting ---------------------------------------------------------------------------
def rescore_start(
    *, challenge: Challenge, version: ScoringVersion | None = None, by: Any = None
) -> RescoreJob:
    """Queue a rescore of ``challenge``: of ``version``, or of a new version holding the
    current setup (made under the challenge lock, so numbers never collide). Other queued
    or running jobs of the challenge are cancelled: the newest request wins. The job's
    tasks are sent when the transaction commits."""
    # Plan the chunks before taking the challenge lock (reading a million ids takes a
    # while, and ingestion waits for that lock). An attempt recorded after the plan is
    # in no chunk: it is scored at ingestion once the job exists, or by the switch,
    # which scores every attempt above the planned ranges still missing a score.
    setup = version if version is not None else challenge
    plan = _plan_chunks(challenge.pk, **_chunk_shape(setup))
    with transaction.atomic():
        challenge = Challenge.objects.select_for_update().get(pk=challenge.pk)
        if version is None:
            version = ScoringVersion.objects.create_next(
                challenge=challenge, by=by, reason="rescore"
            )
        # A version whose scores were discarded gets its partition again (PostgreSQL).
        partitions.partition_ensure(version_id=version.pk)
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
        audit.audit_record(
            kind=audit.Kind.RESCORE_START,
            by=by,
            challenge=challenge,
            after={"job": job.pk, "version": version.number, "attempts": plan.total},
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
FAST_CHUNKS_PER_JOB, FAST_CHUNK_FACTOR = 8, 10
SQL_CHUNKS_PER_JOB, SQL_CHUNK_FACTOR = 4, 25


def _chunk_shape(setup: Challenge | ScoringVersion) -> dict[str, int]:
    """Chunks a job of this setup aims at, and the most attempts in one. A sandboxed
    scorer's chunk ends cost nothing next to its scoring: many chunks, over every worker.
    One run in process pays the writer's drain and an unread first batch at each end,
    one scored in SQL its claiming statements: fewer, bigger chunks."""
    if scores.scored_in_sql(setup):
        per_job, factor = SQL_CHUNKS_PER_JOB, SQL_CHUNK_FACTOR
    elif scoring.runs_in_process(setup):
        per_job, factor = FAST_CHUNKS_PER_JOB, FAST_CHUNK_FACTOR
    else:
        per_job, factor = CHUNKS_PER_JOB, 1
    return {"per_job": per_job, "most": settings.PODIUM_SCORING_CHUNK * factor}


def chunk_size(*, total: int, most: int, per_job: int = CHUNKS_PER_JOB) -> int:
    """About ``per_job`` chunks, of FEWEST_PER_CHUNK to ``most`` attempts each."""
    return max(1, min(most, max(FEWEST_PER_CHUNK, -(-total // per_job))))


@dataclass(frozen=True)
class Plan:
    total: int
    ranges: list[tuple[int, int]]  # inclusive attempt id ranges, one per chunk


def _plan_chunks(challenge_id: int, *, most: int, per_job: int = CHUNKS_PER_JOB) -> Plan:
    """Split the challenge's attempts (as they are now) into id ranges that together
    cover every id from 1 to the highest one seen, in one walk of the index that counts
    them too: sized from the id span, walked again only when fewer than half of its ids
    are the challenge's (too few, too big chunks)."""
    span = sql.attempt_id_span(challenge_id)
    if span is None:
        return Plan(0, [])
    first, last = span
    size = chunk_size(total=last - first + 1, most=most, per_job=per_job)
    starts, total = sql.chunk_starts(challenge_id, first, size)
    if (dense := chunk_size(total=total, most=most, per_job=per_job)) * 2 <= size:
        starts, total = sql.chunk_starts(challenge_id, first, dense)
    ends = [start - 1 for start in starts[1:]] + [last]
    # The ranges run from id 1, not from the lowest id seen: a transaction still open
    # now (a bulk POST) may commit lower ids than an attempt committed after it; they
    # must be in a chunk too. Higher ids are the switch's catch-up (``_switch``).
    starts[0] = 1
    return Plan(total, list(zip(starts, ends, strict=True)))


def _send(job: RescoreJob) -> None:
    enqueue.rescore_dispatch(job_id=job.pk)  # on commit; refused: `jobs_resume` sends it


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
    RescoreChunk.objects.filter(pk__in=pending).update(heartbeat_at=timezone.now())
    for chunk_id in pending:
        send_chunk(chunk_id)


def _mark_running(job_id: int) -> None:
    RescoreJob.objects.filter(pk=job_id, status=Status.QUEUED).update(
        status=Status.RUNNING, started_at=timezone.now()
    )


@dataclass(frozen=True)
class Pace:
    elapsed_seconds: float | None  # since the job started (to its end, when over)
    rate: float | None  # attempts per second over that time
    eta_seconds: float | None  # at that rate, for the attempts still to score


def job_pace(job: RescoreJob, *, now: datetime | None = None) -> Pace:
    """Rate = processed / (now − started_at); ETA = remaining / rate (a finished job's
    rate up to ``finished_at``, and no ETA). For the admin's block and the API."""
    if job.started_at is None:
        return Pace(None, None, None)
    active = job.status in RescoreJob.ACTIVE_STATUSES
    end = job.finished_at if job.finished_at and not active else (now or timezone.now())
    elapsed = max(0.0, (end - job.started_at).total_seconds())
    if not (elapsed > 0 and job.processed):
        return Pace(elapsed, None, None)
    rate = job.processed / elapsed
    eta = max(0, job.total - job.processed) / rate if active else None
    return Pace(elapsed, rate, eta)


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
    done = _chunk_score(chunk_id)
    if done is None:
        # Done already (a redelivery, a retry after the finalize failed) or the job is
        # over. A job whose chunks are all done is finalized by whoever sees it first:
        # a retried last chunk must not leave it "running" forever.
        if finalize and _job_ready(job_id):
            retry_transient(lambda: job_finalize(job_id=job_id), what="rescore finalize")
        return False
    logger.info(
        "rescore chunk done",
        extra={**_job_fields(done), "chunk_id": chunk_id, "duration_ms": _ms_since(started)},
    )
    if not finalize:
        return True
    done.refresh_from_db(fields=["chunks_done", "chunks_total", "status"])
    if done.status == Status.RUNNING and done.chunks_done == done.chunks_total:
        retry_transient(lambda: job_finalize(job_id=done.pk), what="rescore finalize")
    return True


def _chunk_score(chunk_id: int) -> RescoreJob | None:
    """Score a chunk, mark it done and return its job; None if there was nothing to do
    (done already, the job is over). Compute, then commit: a built-in strategy on
    PostgreSQL is one statement (no Python scorer); any other scorer runs on a batch
    outside any transaction, then the batch is written in a short transaction under the
    chunk row lock, which checks the job is still on (a cancel stops it at that batch)."""
    chunk = (
        RescoreChunk.objects.select_related("job__version__challenge").filter(pk=chunk_id).first()
    )
    if chunk is None or chunk.done_at is not None:
        return None
    job = chunk.job
    if job.status not in RescoreJob.ACTIVE_STATUSES:
        return None
    version = job.version
    span = {"first_id": chunk.first_attempt_id, "last_id": chunk.last_attempt_id}
    if scores.scored_in_sql(version):
        return _chunk_score_in_sql(chunk_id, version, **span)

    # A snippet's chunk is read at once (its payloads, and a list's one turn per scorer,
    # want every row); any other is read a batch at a time, while the last one is written.
    every = None
    if version.scoring_strategy == strategies.PYTHON:
        every = bulk.attempt_rows(challenge_id=job.challenge_id, **span)
    batches = _Batches(job.challenge_id, **span, every=every)
    scorer = scoring.rows_scorer(
        version=version,
        challenge=version.challenge,
        attempts=every,
        names=batches.names if every is None else None,  # else the rows hold them
    )
    with _BatchWriter(chunk_id, version) as writer, batches.reading() as next_batch:
        while (batch := next_batch()) is not None:
            started = time.perf_counter()
            outcomes = scorer(batch)
            if not writer.put(batch, outcomes):
                return None  # the job was cancelled or superseded, or a twin finished first
            batches.took_since(started)
    if writer.stopped:
        return None
    done = retry_transient(lambda: _chunk_done(chunk_id, version.pk, **span), what="chunk done")
    if done is not None:
        # Read the chunk's rows once now that their done mark's commit is on disk, while
        # other chunks score: the switch's rebuild then finds them settled (PostgreSQL's
        # hint bits), not a million first reads. Not for a chunk scored in SQL: its
        # commit does not wait for the disk, so a read could record nothing.
        sql.scores_settle(version.pk, span["first_id"], span["last_id"])
    return done


class _BatchWriter:
    """Writes scored batches (made ready by the scoring thread: ``bulk.scores_prepare``)
    in short transactions (``_batch_write``). On PostgreSQL, outside a caller's
    transaction, a thread on its own connection writes while the next batch is scored,
    the batches that queued meanwhile in one transaction (when the database is the slower
    side: fewer commits, chunk locks and heartbeats). Elsewhere (SQLite, or a test's
    transaction, which another connection could not see) batches are written in turn."""

    def __init__(self, chunk_id: int, version: ScoringVersion):
        self.chunk_id, self.version = chunk_id, version
        self.stopped = False
        self.error: BaseException | None = None
        self.threaded = bulk.own_connections()
        self.queue: queue.Queue[bulk.ScoreBatch | None] = queue.Queue(maxsize=WRITE_QUEUE)
        self.running = ExitStack()

    def __enter__(self) -> _BatchWriter:
        if self.threaded:
            self.running.enter_context(bulk.writer_thread(self._drain))
        return self

    def put(self, batch: list[bulk.AttemptRow], outcomes: list[Any]) -> bool:
        """Hand a batch over; False once the writer stopped (the job is off, or an error:
        raised when the writer closes)."""
        if self.stopped or self.error is not None:
            return False
        ready = bulk.scores_prepare(version=self.version, attempts=batch, outcomes=outcomes)
        if not self.threaded:
            self.stopped = not self._write([ready])
            return not self.stopped
        self.queue.put(ready)
        return not (self.stopped or self.error is not None)

    def _write(self, batches: list[bulk.ScoreBatch]) -> bool:
        return retry_transient(lambda: _batch_write(self.chunk_id, batches), what="rescore batch")

    def _drain(self) -> None:
        while (item := self.queue.get()) is not None:
            batches, done = [item], False
            while len(batches) < WRITE_QUEUE:  # what queued up meanwhile goes too
                try:
                    more = self.queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    done = True
                    break
                batches.append(more)
            if not (self.stopped or self.error is not None):  # else keep taking batches
                try:  # so that put() never blocks
                    self.stopped = not self._write(batches)
                except BaseException as exc:  # raised in the scoring thread at close
                    self.error = exc
            if done:
                break

    def __exit__(self, *exc_info: object) -> None:
        if self.threaded:
            self.queue.put(None)
            self.running.close()
        if self.error is not None:
            raise self.error


class _Batches:
    """Consecutive slices of a chunk's attempts (read from the database as they are
    needed, the next one while the last is scored, unless ``every`` row was read
    already), sized so that a batch takes about BATCH_TARGET_S to score (a slow snippet:
    a few attempts; a built-in plugin: up to STREAM_BATCH): the job's progress and its
    cancel are seen that often."""

    def __init__(
        self, challenge_id: int, *, first_id: int, last_id: int, every: list | None = None
    ):
        self.challenge_id, self.first_id, self.last_id = challenge_id, first_id, last_id
        self.every, self.taken, self.size = every, 0, FIRST_BATCH
        # External ids by player id: the reader thread adds a batch's new players before
        # it hands the batch over, so the scorer finds every name it looks up.
        self.names: dict[int, str] = {}

    def reading(self) -> AbstractContextManager[Callable[[], list[bulk.AttemptRow] | None]]:
        if self.every is not None:
            return nullcontext(self._read)
        return bulk.read_ahead(self._read)

    def _read(self) -> list[bulk.AttemptRow] | None:
        if self.every is not None:
            batch = self.every[self.taken : self.taken + self.size]
            self.taken += len(batch)
        elif self.first_id <= self.last_id:
            batch = bulk.attempt_rows(
                challenge_id=self.challenge_id,
                first_id=self.first_id,
                last_id=self.last_id,
                limit=self.size,
                names=self.names,
            )
        else:
            batch = []
        if not batch:
            return None
        self.first_id = batch[-1][0] + 1
        return batch

    def took_since(self, started: float) -> None:
        took = max(time.perf_counter() - started, 1e-6)
        wanted = int(self.size * BATCH_TARGET_S / took)
        if took > BATCH_TARGET_S / 100:  # a slow scorer grows its batches step by step;
            wanted = min(wanted, self.size * 4)  # a fast one goes to full batches at once
        self.size = max(1, min(STREAM_BATCH, wanted))


FIRST_BATCH = 10
WRITE_QUEUE = 2  # computed batches waiting for the writer, and the most written at once
STREAM_BATCH = 20000
BATCH_TARGET_S = 1.0


def _lock_chunk_of_active_job(chunk_id: int) -> RescoreChunk | None:
    """The chunk row, locked for this transaction, if it is not done and its job is on."""
    chunk = (
        # of=self: lock the chunk row only, not the job row it is joined with (that
        # would serialize the chunks and block a cancel).
        RescoreChunk.objects.select_for_update(of=("self",))
        .select_related("job")
        .filter(pk=chunk_id)
        .first()
    )
    if chunk is None or chunk.done_at is not None:
        return None
    if chunk.job.status not in RescoreJob.ACTIVE_STATUSES:
        return None
    return chunk


def _batch_write(chunk_id: int, batches: list[bulk.ScoreBatch]) -> bool:
    """Write computed batches (one short transaction); False when the chunk is done or
    its job is no longer on: nothing is written."""
    with transaction.atomic():
        chunk = _lock_chunk_of_active_job(chunk_id)
        if chunk is None:
            return False
        _commit_without_waiting_for_disk()
        scores.scores_put(batches=batches)
        written = sum(len(batch.attempt_ids) for batch in batches)
        RescoreChunk.objects.filter(pk=chunk_id).update(
            heartbeat_at=timezone.now(), partial=F("partial") + written
        )
        # Progress with every batch (about every BATCH_TARGET_S), made exact at the
        # chunk's end (``_count_done``).
        RescoreJob.objects.filter(pk=chunk.job_id).update(processed=F("processed") + written)
    return True


def _commit_without_waiting_for_disk() -> None:
    """A batch's or a chunk's commit need not wait for its WAL flush (PostgreSQL): a
    crash can lose only the last commits, in order, never one before a durable commit
    (the job's switch is one). A batch is lost only with the chunk's done mark, a chunk
    scored in SQL with its own: the chunk is then scored again."""
    sql.set_local("synchronous_commit", "off")


def _chunk_done(
    chunk_id: int, version_id: int, *, first_id: int, last_id: int
) -> RescoreJob | None:
    """Mark the chunk done and count it into its job, once."""
    with transaction.atomic():
        chunk = _lock_chunk_of_active_job(chunk_id)
        if chunk is None:
            return None
        scored, failed = scores.scores_count(
            version_id=version_id, first_id=first_id, last_id=last_id
        )
        return _count_done(chunk, scored, failed)


def _count_done(chunk: RescoreChunk, scored: int, failed: int) -> RescoreJob:
    counted = chunk.partial  # counted batch by batch already (a retry may count twice)
    chunk.done_at, chunk.scored, chunk.failed = timezone.now(), scored, failed
    chunk.save(update_fields=["done_at", "scored", "failed"])
    RescoreJob.objects.filter(pk=chunk.job_id).update(
        processed=F("processed") + scored - counted,
        failed=F("failed") + failed,
        chunks_done=F("chunks_done") + 1,
    )
    return chunk.job


def _chunk_score_in_sql(
    chunk_id: int, version: ScoringVersion, *, first_id: int, last_id: int
) -> RescoreJob | None:
    """A built-in strategy's chunk: one statement, in one transaction with the chunk's
    done mark (no Python scorer runs in it)."""

    def run() -> RescoreJob | None:
        with transaction.atomic():
            chunk = _lock_chunk_of_active_job(chunk_id)
            if chunk is None:
                return None
            _commit_without_waiting_for_disk()
            scored = scores.scores_replace_in_sql(
                version=version,
                challenge_id=chunk.job.challenge_id,
                first_id=first_id,
                last_id=last_id,
            )
            return _count_done(chunk, scored or 0, 0)  # built-in strategies cannot fail

    return retry_transient(run, what="rescore chunk in SQL")


# --- finishing ---------------------------------------------------------------------------
def job_finalize(*, job_id: int) -> bool:
    """Make the job's version active, if the job is running and every chunk is done.
    Safe to call any number of times, from any number of workers, and to retry after
    any error: it is one transaction, claimed by one caller at a time.

    First the version's leaderboard is rebuilt from its scores without blocking anyone
    (public readers do not see a version that is not active, and ingestion writes no
    entries of it). Then, under the challenge row lock (ingestion waits a few
    milliseconds), the attempts recorded since the plan get their scores and entries and
    the pointer moves: readers see the old version or the new one, never a mix.

    Lock order, the same as every other writer's: the claim, the version's entries, the
    challenge row, the job row (``rescore_start`` takes challenge then jobs; ingestion
    takes the challenge in share mode and never touches a pending version's entries)."""
    started = time.perf_counter()
    job = RescoreJob.objects.select_related("version__challenge").filter(pk=job_id).first()
    if job is None or not _ready(job):
        return False
    # The attempts recorded after the plan but before the job existed have no score yet
    # (later ones were scored at ingestion): score them now, outside any transaction, so
    # that no scorer runs while the switch holds the challenge lock.
    planned_up_to = job.chunks.aggregate(last=Max("last_attempt_id"))["last"] or 0
    scores.scores_catch_up(version=job.version, after_id=planned_up_to)
    _batch_before_switch(job)
    # An aggregate board's intervals of the new version, computed before the switch
    # (outside any transaction): the switched board shows intervals of its own scores.
    evaluation.evaluation_compute(challenge_id=job.challenge_id, version_id=job.version_id)
    parts = scores.rebuild_parts(scores_count=job.total)
    with transaction.atomic():
        if not _claim_finalize(job_id):
            return False  # another worker is finalizing this job right now
        job = RescoreJob.objects.filter(pk=job_id).first()
        if job is None or not _ready(job):
            return False
        scores.entries_rebuild(version=ScoringVersion.objects.get(pk=job.version_id), parts=parts)
        rebuilt = time.perf_counter()
        job = _switch(job_id)
    if job is not None:
        history_after_switch(challenge_id=job.challenge_id)
    if job is not None and job.version.scorers and batch_scoring.has_batch(job.version):
        batch_scoring.batch_request(
            challenge_id=job.challenge_id
        )  # attempts recorded during the run
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


_FINALIZE_LOCK = 0x706F6469  # "podi": the advisory-lock namespace of finalizing jobs


def _claim_finalize(job_id: int) -> bool:
    """Claim the right to finalize a job until this transaction ends (PostgreSQL: a
    transaction-level advisory lock, released however the transaction ends, even by a
    killed worker). A second caller gets False at once instead of rebuilding twice.
    SQLite runs one write transaction at a time: the claim is the write lock itself."""
    return sql.advisory_lock(_FINALIZE_LOCK, job_id, wait=False)


def _batch_before_switch(job: RescoreJob) -> None:
    """A version with batch scorers runs them before it goes live (outside any lock);
    attempts recorded after this are pending until the next batch run."""
    if batch_scoring.has_batch(job.version):
        batch_scoring.batch_score_version(version=job.version)
        transaction.on_commit(lambda: batch_scoring.batch_request(challenge_id=job.challenge_id))


def _ms_since(start: float, end: float | None = None) -> float:
    return round(((end if end is not None else time.perf_counter()) - start) * 1000, 1)


def _job_ready(job_id: int) -> bool:
    return RescoreJob.objects.filter(
        pk=job_id, status=Status.RUNNING, chunks_done=F("chunks_total")
    ).exists()


def _ready(job: RescoreJob) -> bool:
    return job.status == Status.RUNNING and job.chunks_done == job.chunks_total


def _switch_reason(job: RescoreJob) -> str:
    """A job that "make active again" queued (its version was never fully scored) ends
    a rollback; any other, a rescore."""
    activation = AuditEvent.objects.filter(
        kind=audit.Kind.VERSION_ACTIVATE,
        challenge_id=job.challenge_id,
        after__rescore_job=job.pk,
    )
    return HistoryRecord.Reason.ROLLBACK if activation.exists() else HistoryRecord.Reason.RESCORE


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
        # Every planned range is scored (its chunk is done): only attempts recorded since
        # the plan can lack a score, and ``job_finalize`` scored those before the lock
        # (the switch finds any it could not). Those recorded since the job started were
        # scored at ingestion, which writes no entries for a version that is not active:
        # the switch makes their players' entries.
        planned_up_to = job.chunks.aggregate(last=Max("last_attempt_id"))["last"] or 0
        now = timezone.now()
        version.scored_at = now
        version.save(update_fields=["scored_at"])
        switched = version_switch(
            challenge=challenge,
            version=version,
            after_id=planned_up_to,
            keep_job_id=job.pk,
            reason=_switch_reason(job),
            cancel_reason=f"Superseded: job {job.pk} switched to version {version.number}.",
        )
        job.status, job.finished_at = Status.SUCCEEDED, now
        # Attempts recorded during the run (after the planned ranges) were scored at
        # ingestion or by the switch: the finished job counts them too.
        job.total = job.processed = job.processed + switched.late
        job.failed += switched.late_failed
        job.save(update_fields=["status", "finished_at", "total", "processed", "failed"])
    return job


def job_cancel(*, job: RescoreJob, by: Any = None) -> RescoreJob:
    """Stop a queued or running job; the active version does not change. Chunks being
    scored stop at their next batch (``_batch_write`` checks the job's status).

    When the challenge's editable setup is the cancelled version's (a setup change whose
    rescore is cancelled), it goes back to the active version's: what the form shows
    and what "Rescore now" scores is what is live, not the setup that was called off."""
    with transaction.atomic():
        challenge = Challenge.objects.select_for_update().get(pk=job.challenge_id)
        cancelled = RescoreJob.objects.filter(
            pk=job.pk, status__in=RescoreJob.ACTIVE_STATUSES
        ).update(status=Status.CANCELLED, finished_at=timezone.now(), error="Cancelled.")
        if cancelled:
            _setup_back_to_active(challenge, cancelled_version_id=job.version_id)
    job.refresh_from_db()
    if not cancelled:
        ended = "been cancelled" if job.status == Status.CANCELLED else job.status
        raise JobStateError(
            f"Rescore job {job.pk} has already {ended}; only a queued or running job can be "
            "cancelled."
        )
    audit.audit_record(
        kind=audit.Kind.RESCORE_CANCEL,
        by=by,
        challenge=job.challenge,
        before={"job": job.pk, "status": "active"},
        after={"job": job.pk, "status": job.status},
    )
    logger.info("rescore cancelled", extra=_job_fields(job))
    return job


def _setup_back_to_active(challenge: Challenge, *, cancelled_version_id: int) -> None:
    active = challenge.active_version
    if active is None or active.pk == cancelled_version_id:
        return
    cancelled = ScoringVersion.objects.get(pk=cancelled_version_id)
    if challenge.setup_dict() != cancelled.setup_dict():
        return  # the setup moved on since (a newer change): leave it
    for name, value in active.setup_dict().items():
        setattr(challenge, name, value)
    challenge.save(update_fields=[*active.SETUP_FIELDS, "updated_at"])


def job_fail(*, job_id: int, error: str) -> None:
    """Give up on a job after an unexpected error (the scorer's own failures do not fail a
    job: they are recorded per attempt)."""
    failed = RescoreJob.objects.filter(pk=job_id, status__in=RescoreJob.ACTIVE_STATUSES).update(
        status=Status.FAILED, finished_at=timezone.now(), error=error[:5000]
    )
    if failed:
        logger.warning("rescore failed", extra={"job_id": job_id})


def jobs_resume(*, send_dispatch: Callable[[int], None], stalled_for_s: float = 0.0) -> list[int]:
    """Re-send the queued or running jobs whose progress stopped ``stalled_for_s``
    seconds ago or more (0: every one): their unfinished chunks are queued again
    (finished chunks are never redone), or, with all chunks done, they are finalized.

    Progress is the job's creation, start, and every chunk's send, batch and end: a job
    whose chunks are being worked on or wait in the queue behind a busy worker is left
    alone until all of them fall silent for that long. Run by the periodic watchdog
    (``tasks.rescore_watchdog``), so a chunk whose message was lost (a broker outage, a
    killed worker) is sent again without waiting for the broker's visibility timeout,
    and a job queued while the broker was down starts when it is back."""
    jobs = RescoreJob.objects.filter(status__in=RescoreJob.ACTIVE_STATUSES).annotate(
        last_beat=Max("chunks__heartbeat_at"), last_done=Max("chunks__done_at")
    )
    quiet_since = timezone.now() - timedelta(seconds=stalled_for_s)
    ids = []
    for job_id, *moments in jobs.values_list(
        "pk", "created_at", "started_at", "last_beat", "last_done"
    ).order_by("pk"):
        if stalled_for_s <= 0 or max(m for m in moments if m is not None) <= quiet_since:
            ids.append(job_id)
    for job_id in ids:
        logger.info("rescore resumed", extra={"job_id": job_id})
        send_dispatch(job_id)
    return ids


# --- running without a worker ----------------------------------------------------------------
def job_run_inline(*, job: RescoreJob) -> RescoreJob:
    """Run a job in this process, chunk after chunk (tests, the command's --inline)."""
    job_dispatch(job_id=job.pk, send_chunk=lambda chunk_id: chunk_run(chunk_id=chunk_id))
    job.refresh_from_db()
    return job
