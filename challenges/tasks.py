"""Celery tasks: thin wrappers that re-fetch by id and call a service."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from . import services


@shared_task(acks_late=True, reject_on_worker_lost=True)
def rescore_version(version_id: int) -> None:
    """Score every attempt under a version, then make it active. Idempotent: a retry
    writes no second score and a superseded or deleted version is left alone."""
    services.version_rescore(version_id=version_id, chunk=settings.PODIUM_SCORING_CHUNK)
