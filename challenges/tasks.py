"""Celery tasks: thin wrappers that re-fetch by id and call a service. Domain code
queues them through ``challenges.enqueue``, by their explicit names (a queued task
survives a move).

Every task is safe to run twice (acks_late redelivers a task whose worker died): the
services check state with conditional updates and row locks.

One retry policy (``task``): a transient error (a lost database connection, a deadlock,
a serialization failure, the broker away: ``config.transient``, causes included) is
retried after 1, 2, 4 … 60 s (with jitter), 8 times. When the retries run out the task
gives up quietly and its own recovery picks the work up: the watchdog resumes a rescore
job, a worker's start sweeps pending attempts, a reader asks again for a refresh, a
periodic task runs again. Any other error fails the task (a chunk's, its job), with the
reason in the worker log. A webhook's tries follow the delivery's own schedule
(``events.webhook_delivery``), not a Celery retry.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

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
from challenges.rescoring import batch, switch
from challenges.rescoring import jobs as rescoring
from config.celery import app
from config.transient import forget_connection, is_transient

logger = logging.getLogger(__name__)
# The watchdog writes a history record left due this long after its switch (a switch's
# own process writes it within seconds; younger ones may be being written now).
HISTORY_DUE_GRACE_S = 30.0
MAX_RETRIES = 8


def task(name: str, *, retried: bool = True, **options: Any) -> Callable[[Callable], Any]:
    """The task ``challenges.tasks.<name>`` with the one retry policy (above);
    ``retried=False``: none (its reader does the work instead)."""

    def register(run: Callable[..., None]) -> Any:
        if not retried:
            return app.task(name=f"challenges.tasks.{name}", **options)(run)

        def retrying(self: Any, *args: Any, **kwargs: Any) -> None:
            try:
                return run(*args, **kwargs)
            except Exception as exc:
                if not is_transient(exc):
                    raise
                forget_connection()
                if self.request.retries >= self.max_retries:
                    logger.warning("%s: transient errors outlasted the retries (%r)", name, exc)
                    return None
                countdown = get_exponential_backoff_interval(
                    factor=1, retries=self.request.retries, maximum=60, full_jitter=True
                )
                raise self.retry(exc=exc, countdown=countdown) from exc

        retrying.__name__, retrying.__doc__ = run.__name__, run.__doc__
        return app.task(
            name=f"challenges.tasks.{name}", bind=True, max_retries=MAX_RETRIES, **options
        )(retrying)

    return register


@task("rescore_dispatch")
def rescore_dispatch(job_id: int) -> None:
    """Queue a task per unfinished chunk of a job."""
    rescoring.job_dispatch(job_id=job_id, send_chunk=rescore_chunk.delay)


@task("rescore_chunk")
def rescore_chunk(chunk_id: int) -> None:
    """Score one chunk; the last chunk of a job also switches the active version."""
    try:
        rescoring.chunk_run(chunk_id=chunk_id)
    except Exception as exc:
        if not is_transient(exc):
            _fail_job_of_chunk(chunk_id)
        raise


def _fail_job_of_chunk(chunk_id: int) -> None:
    from challenges.models import RescoreChunk

    job_id = RescoreChunk.objects.filter(pk=chunk_id).values_list("job_id", flat=True).first()
    if job_id is not None:
        logger.exception("Rescore job %s failed on chunk %s", job_id, chunk_id)
        rescoring.job_fail(job_id=job_id, error=f"Chunk {chunk_id} failed; see the worker log.")


@task("rescore_resume")
def rescore_resume() -> None:
    """Resume the queued or running jobs that show no progress (run when a worker starts:
    a job in progress elsewhere is not sent twice)."""
    rescoring.jobs_resume(
        send_dispatch=rescore_dispatch.delay, stalled_for_s=settings.PODIUM_RESCORE_STALL_S
    )
    # History records whose switch committed but whose process died before writing them.
    switch.history_write_due(older_than_s=HISTORY_DUE_GRACE_S)


@task("rescore_watchdog", acks_late=False)
def rescore_watchdog() -> None:
    """Periodic (Celery beat, ``CELERY_BEAT_SCHEDULE``): resume stalled jobs, write the
    history records left due, drop the scores of versions no longer kept (PostgreSQL)."""
    rescoring.jobs_resume(
        send_dispatch=rescore_dispatch.delay, stalled_for_s=settings.PODIUM_RESCORE_STALL_S
    )
    # History records whose switch committed but whose process died before writing them.
    switch.history_write_due(older_than_s=HISTORY_DUE_GRACE_S)
    partitions.scores_discard()


@task("attempts_score_pending")
def attempts_score_pending(challenge_id: int, attempt_ids: list[int] | None = None) -> None:
    """Score attempts a request stored as pending (its scoring budget ran out), for one
    time slice; the rest goes to the back of the queue (fair to other challenges)."""
    budget.attempts_score_pending(
        challenge_id=challenge_id,
        attempt_ids=attempt_ids,
        seconds=settings.PODIUM_PENDING_SLICE_MS / 1000,
    )


@task("attempts_pending_sweep")
def attempts_pending_sweep() -> None:
    """Queue the pending attempts of every challenge (some may have missed their task
    during a broker outage)."""
    budget.pending_sweep()


@task("idempotency_purge")
def idempotency_purge() -> None:
    """Periodic (hourly): forget Idempotency-Keys past their keeping time."""
    idempotency.records_purge()


@task("batch_score")
def batch_score(challenge_id: int) -> None:
    """Run a challenge's batch scorers (scheduled, debounced, by batch_request)."""
    batch.batch_run(challenge_id=challenge_id)


@task("ranking_refresh")
def ranking_refresh(version_id: int) -> None:
    """Recompute a public ranking whose entries changed (asked by a reader past
    PODIUM_RANKING_MAX_AGE_MS), so that no reader waits for it; then build its public
    page and fragment ahead, so that no reader waits for those either."""
    ranking.ranking_refresh(version_id=version_id)
    boards.boards_build_ahead(version_id=version_id)


@task("evaluation_refresh")
def evaluation_refresh(challenge_id: int) -> None:
    """Recompute an aggregate board's intervals after its data changed (asked by a
    reader, at most once per PODIUM_RANKING_MAX_AGE_MS), so that no reader waits; then
    build its public page and fragment ahead, so that no reader waits for those either."""
    if evaluation.evaluation_compute(challenge_id=challenge_id):
        boards.evaluation_build_ahead(challenge_id=challenge_id)


@task("board_rebuild", retried=False)
def board_rebuild(kind: str, slug: str, query: str) -> None:
    """Build the public's page or fragment of a board for the new minute (its relative
    times), asked by the reader served the previous minute's, so that none waits. Not
    retried: if it fails, a reader a minute later builds it."""
    boards.board_rebuild(kind=kind, slug=slug, query=query)


@task("events_board_check")
def events_board_check(challenge_id: int) -> None:
    """Look at a challenge's public board and announce what changed (coalesced: see
    ``events.board.board_check_request``)."""
    event_board.board_check(challenge_id=challenge_id)


def _send_board_check(challenge_id: int, countdown: float) -> None:
    events_board_check.apply_async((challenge_id,), countdown=countdown)


@receiver(changes.board_touched)
def _board_touched(sender: object = None, *, challenge_id: int, **kwargs: object) -> None:
    event_board.board_check_request(challenge_id=challenge_id, send=_send_board_check)


@task("events_tick", acks_late=False)
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


@task("webhooks_fan_out")
def webhooks_fan_out(event_ids: list[int]) -> None:
    """Make the webhook deliveries of new events and send them."""
    for delivery_id in webhook_delivery.deliveries_create(event_ids=event_ids):
        webhook_deliver.delay(delivery_id)


RETRY_BY_COUNTDOWN_S = 60  # a later retry is sent by the periodic tick when it is due


@task("webhook_deliver")
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
