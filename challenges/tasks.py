"""Celery tasks: thin wrappers that re-fetch by id and call a rescoring service.

Every task is safe to run twice (acks_late redelivers a task whose worker died): the
services check state with conditional updates and row locks.
"""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_ready
from django.db import DatabaseError, InterfaceError

from . import rescoring

logger = logging.getLogger(__name__)
TRANSIENT = (DatabaseError, InterfaceError, ConnectionError)


@shared_task(acks_late=True, reject_on_worker_lost=True)
def rescore_dispatch(job_id: int) -> None:
    """Queue a task per unfinished chunk of a job."""
    rescoring.job_dispatch(job_id=job_id, send_chunk=rescore_chunk.delay)


@shared_task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT,
    retry_backoff=2,
    max_retries=5,
)
def rescore_chunk(self, chunk_id: int) -> None:
    """Score one chunk; the last chunk of a job also switches the active version."""
    try:
        rescoring.chunk_run(chunk_id=chunk_id)
    except TRANSIENT:
        if self.request.retries >= self.max_retries:
            _fail_job_of_chunk(chunk_id)
        raise
    except Exception:
        _fail_job_of_chunk(chunk_id)
        raise


def _fail_job_of_chunk(chunk_id: int) -> None:
    from .models import RescoreChunk

    job_id = RescoreChunk.objects.filter(pk=chunk_id).values_list("job_id", flat=True).first()
    if job_id is not None:
        logger.exception("Rescore job %s failed on chunk %s", job_id, chunk_id)
        rescoring.job_fail(job_id=job_id, error=f"Chunk {chunk_id} failed; see the worker log.")


@shared_task(acks_late=True, reject_on_worker_lost=True)
def rescore_resume() -> None:
    """Re-queue the unfinished chunks of every queued or running job."""
    rescoring.jobs_resume(send_dispatch=rescore_dispatch.delay)


@shared_task(acks_late=True, reject_on_worker_lost=True, autoretry_for=TRANSIENT, max_retries=5)
def batch_score(challenge_id: int) -> None:
    """Run a challenge's batch scorers (scheduled, debounced, by batch_request)."""
    from .batch_scoring import batch_run

    batch_run(challenge_id=challenge_id)


@worker_ready.connect
def _resume_on_worker_start(sender: object = None, **kwargs: object) -> None:
    # A job whose worker was killed resumes when a worker starts again.
    rescore_resume.delay()
