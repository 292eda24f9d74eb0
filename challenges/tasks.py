"""Celery tasks: thin wrappers that re-fetch by id and call a rescoring service.

Every task is safe to run twice (acks_late redelivers a task whose worker died): the
services check state with conditional updates and row locks.

Transient errors (a lost database connection, a deadlock, a serialization failure, the
broker away: ``config.transient``) are retried with backoff and never fail a job: when
the retries run out the job stays as it is and the periodic watchdog resumes it. Any
other error fails the job, with the reason in the worker log.
"""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_ready
from celery.utils.time import get_exponential_backoff_interval
from django.conf import settings
from django.dispatch import receiver

from challenges.boards import read as boards
from challenges.events import board as event_board
from challenges.events import log as event_log
from challenges.events import moments, webhook_delivery
from challenges.ingestion import budget, idempotency
from challenges.leaderboards import changes, evaluation, partitions, ranking
from challenges.public import views as public_views
from challenges.rescoring import batch, switch
from challenges.rescoring import jobs as rescoring
from config.transient import TRANSIENT, forget_connection, is_transient

logger = logging.getLogger(__name__)
# The watchdog writes a history record left due this long after its switch (a switch's
# own process writes it within seconds; younger ones may be being written now).
HISTORY_DUE_GRACE_S = 30.0
RETRIES = {
    "autoretry_for": TRANSIENT,
    "retry_backoff": 1,
    "retry_backoff_max": 60,
    "retry_jitter": True,
    "max_retries": 8,
}


def _retry_or_give_up(task, task_name: str, exc: BaseException) -> None:
    """Retry a task after a transient error, waiting 1, 2, 4 … 60 s (with jitter); after
    the last retry, leave the job to the watchdog."""
    forget_connection()
    if task.request.retries >= task.max_retries:
        _give_up_quietly(task_name, exc)
        return
    countdown = get_exponential_backoff_interval(
        factor=1, retries=task.request.retries, maximum=60, full_jitter=True
    )
    raise task.retry(exc=exc, countdown=countdown)


def _give_up_quietly(task_name: str, exc: BaseException) -> None:
    logger.warning(
        "%s: transient errors outlasted the retries (%r); the watchdog resumes the job",
        task_name,
        exc,
    )


@shared_task(
    name="challenges.tasks.rescore_dispatch",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=8,
)
def rescore_dispatch(self, job_id: int) -> None:
    """Queue a task per unfinished chunk of a job."""
    try:
        rescoring.job_dispatch(job_id=job_id, send_chunk=rescore_chunk.delay)
    except Exception as exc:
        if not is_transient(exc):
            raise
        _retry_or_give_up(self, "rescore_dispatch", exc)


@shared_task(
    name="challenges.tasks.rescore_chunk",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=8,
)
def rescore_chunk(self, chunk_id: int) -> None:
    """Score one chunk; the last chunk of a job also switches the active version."""
    try:
        rescoring.chunk_run(chunk_id=chunk_id)
    except Exception as exc:
        if is_transient(exc):
            _retry_or_give_up(self, "rescore_chunk", exc)
            return
        _fail_job_of_chunk(chunk_id)
        raise


def _fail_job_of_chunk(chunk_id: int) -> None:
    from challenges.models import RescoreChunk

    job_id = RescoreChunk.objects.filter(pk=chunk_id).values_list("job_id", flat=True).first()
    if job_id is not None:
        logger.exception("Rescore job %s failed on chunk %s", job_id, chunk_id)
        rescoring.job_fail(job_id=job_id, error=f"Chunk {chunk_id} failed; see the worker log.")


@shared_task(
    name="challenges.tasks.rescore_resume", acks_late=True, reject_on_worker_lost=True, **RETRIES
)
def rescore_resume() -> None:
    """Resume the queued or running jobs that show no progress (run when a worker starts:
    a job in progress elsewhere is not sent twice)."""
    rescoring.jobs_resume(
        send_dispatch=rescore_dispatch.delay, stalled_for_s=settings.PODIUM_RESCORE_STALL_S
    )
    # History records whose switch committed but whose process died before writing them.
    switch.history_write_due(older_than_s=HISTORY_DUE_GRACE_S)


@shared_task(
    name="challenges.tasks.rescore_watchdog", acks_late=False, ignore_result=True, **RETRIES
)
def rescore_watchdog() -> None:
    """Periodic (Celery beat, ``CELERY_BEAT_SCHEDULE``): resume stalled jobs, write the
    history records left due, drop the scores of versions no longer kept (PostgreSQL)."""
    rescoring.jobs_resume(
        send_dispatch=rescore_dispatch.delay, stalled_for_s=settings.PODIUM_RESCORE_STALL_S
    )
    # History records whose switch committed but whose process died before writing them.
    switch.history_write_due(older_than_s=HISTORY_DUE_GRACE_S)
    partitions.scores_discard()


@receiver(rescoring.job_queued)
def _dispatch_queued_job(sender: object = None, *, job_id: int, **kwargs: object) -> None:
    rescore_dispatch.delay(job_id)


@shared_task(
    name="challenges.tasks.attempts_score_pending",
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT,
    retry_backoff=2,
    max_retries=5,
)
def attempts_score_pending(challenge_id: int, attempt_ids: list[int] | None = None) -> None:
    """Score attempts a request stored as pending (its scoring budget ran out), for one
    time slice; the rest goes to the back of the queue (fair to other challenges)."""
    budget.attempts_score_pending(
        challenge_id=challenge_id,
        attempt_ids=attempt_ids,
        seconds=settings.PODIUM_PENDING_SLICE_MS / 1000,
    )


@shared_task(
    name="challenges.tasks.attempts_pending_sweep", acks_late=True, reject_on_worker_lost=True
)
def attempts_pending_sweep() -> None:
    """Queue the pending attempts of every challenge (some may have missed their task
    during a broker outage)."""
    budget.pending_sweep()


@receiver(budget.attempts_pending)
def _score_pending(
    sender: object = None, *, challenge_id: int, attempt_ids: list[int] | None, **kwargs: object
) -> None:
    attempts_score_pending.delay(challenge_id, attempt_ids)


@shared_task(name="challenges.tasks.idempotency_purge", ignore_result=True, **RETRIES)
def idempotency_purge() -> None:
    """Periodic (hourly): forget Idempotency-Keys past their keeping time."""
    idempotency.records_purge()


@shared_task(
    name="challenges.tasks.batch_score",
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT,
    max_retries=5,
)
def batch_score(challenge_id: int) -> None:
    """Run a challenge's batch scorers (scheduled, debounced, by batch_request)."""
    batch.batch_run(challenge_id=challenge_id)


@receiver(batch.batch_requested)
def _schedule_batch(
    sender: object = None, *, challenge_id: int, countdown: float, **kwargs: object
) -> None:
    batch_score.apply_async((challenge_id,), countdown=countdown)


@shared_task(name="challenges.tasks.ranking_refresh", ignore_result=True, **RETRIES)
def ranking_refresh(version_id: int) -> None:
    """Recompute a public ranking whose entries changed (asked by a reader past
    PODIUM_RANKING_MAX_AGE_MS), so that no reader waits for it; then build its public
    page and fragment ahead, so that no reader waits for those either."""
    ranking.ranking_refresh(version_id=version_id)
    boards.boards_build_ahead(version_id=version_id)


@receiver(ranking.refresh_requested)
def _refresh_ranking(sender: object = None, *, version_id: int, **kwargs: object) -> None:
    ranking_refresh.delay(version_id)


@shared_task(name="challenges.tasks.evaluation_refresh", ignore_result=True, **RETRIES)
def evaluation_refresh(challenge_id: int) -> None:
    """Recompute an aggregate board's intervals after its data changed (asked by a
    reader, at most once per PODIUM_RANKING_MAX_AGE_MS), so that no reader waits; then
    build its public page and fragment ahead, so that no reader waits for those either."""
    if evaluation.evaluation_compute(challenge_id=challenge_id):
        public_views.evaluation_build_ahead(challenge_id=challenge_id)


@receiver(evaluation.refresh_requested)
def _refresh_evaluation(sender: object = None, *, challenge_id: int, **kwargs: object) -> None:
    evaluation_refresh.delay(challenge_id)


@shared_task(name="challenges.tasks.board_rebuild", ignore_result=True)
def board_rebuild(kind: str, slug: str, query: str) -> None:
    """Build the public's page or fragment of a board for the new minute (its relative
    times), asked by the reader served the previous minute's, so that none waits. Not
    retried: if it fails, a reader a minute later builds it."""
    boards.board_rebuild(kind=kind, slug=slug, query=query)


@receiver(boards.board_rebuild_requested)
def _rebuild_board(
    sender: object = None, *, kind: str, slug: str, query: str, **kwargs: object
) -> None:
    board_rebuild.delay(kind, slug, query)


@shared_task(name="challenges.tasks.events_board_check", ignore_result=True, **RETRIES)
def events_board_check(challenge_id: int) -> None:
    """Look at a challenge's public board and announce what changed (coalesced: see
    ``events.board.board_check_request``)."""
    event_board.board_check(challenge_id=challenge_id)


def _send_board_check(challenge_id: int, countdown: float) -> None:
    events_board_check.apply_async((challenge_id,), countdown=countdown)


@receiver(changes.board_touched)
def _board_touched(sender: object = None, *, challenge_id: int, **kwargs: object) -> None:
    event_board.board_check_request(challenge_id=challenge_id, send=_send_board_check)


@shared_task(name="challenges.tasks.events_tick", acks_late=False, ignore_result=True, **RETRIES)
def events_tick() -> None:
    """Periodic (Celery beat, every PODIUM_EVENTS_TICK_S): announce the schedule's
    moments, and look at every active board (a look lost to a broker outage is made)."""
    moments.schedule_tick()
    for challenge_id in event_board.boards_to_look_at():
        event_board.board_check_request(challenge_id=challenge_id, send=_send_board_check)
    lost = webhook_delivery.events_not_fanned_out()
    if lost:
        webhooks_fan_out.delay(lost)
    for delivery_id in webhook_delivery.deliveries_due():
        webhook_deliver.delay(delivery_id)


@receiver(event_log.events_written)
def _events_written(sender: object = None, *, event_ids: list[int], **kwargs: object) -> None:
    if webhook_delivery.deliveries_wanted(event_ids=event_ids):
        webhooks_fan_out.delay(event_ids)


@shared_task(
    name="challenges.tasks.webhooks_fan_out",
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    **RETRIES,
)
def webhooks_fan_out(event_ids: list[int]) -> None:
    """Make the webhook deliveries of new events and send them."""
    for delivery_id in webhook_delivery.deliveries_create(event_ids=event_ids):
        webhook_deliver.delay(delivery_id)


@receiver(webhook_delivery.delivery_due)
def _delivery_due(sender: object = None, *, delivery_id: int, **kwargs: object) -> None:
    webhook_deliver.delay(delivery_id)


RETRY_BY_COUNTDOWN_S = 60  # a later retry is sent by the periodic tick when it is due


@shared_task(
    name="challenges.tasks.webhook_deliver",
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    **RETRIES,
)
def webhook_deliver(delivery_id: int) -> None:
    """Try one delivery (5 s at most); a near retry is queued with its countdown."""
    retry_in = webhook_delivery.delivery_try(delivery_id=delivery_id)
    if retry_in is not None and retry_in <= RETRY_BY_COUNTDOWN_S:
        webhook_deliver.apply_async((delivery_id,), countdown=retry_in)


@worker_ready.connect
def _resume_on_worker_start(sender: object = None, **kwargs: object) -> None:
    # A job whose worker was killed resumes when a worker starts again (once it shows no
    # progress: see rescoring.jobs_resume); attempts left pending are scored.
    try:
        rescore_resume.delay()
        attempts_pending_sweep.delay()
    except Exception:  # the broker is away: the watchdog does it later
        logger.exception("Could not queue rescore_resume at worker start.")
