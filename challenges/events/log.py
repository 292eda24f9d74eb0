"""The event log: ``Event`` rows, written under the challenge's ``LiveBoard`` row lock
(so that within a challenge ids follow commit order), their JSON shape, and the reads
the stream resumes with. Once a transaction that wrote events commits,
``events_written`` is sent with their ids (webhook fan-out; the stream reads the log)."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.dispatch import Signal
from django.utils import timezone

from challenges.models import Challenge, Event, LiveBoard
from challenges.text import iso_z

logger = logging.getLogger(__name__)

events_written = Signal()  # kwargs: event_ids (list[int])
RESUME_WITHIN = timedelta(minutes=10)  # how far back a stream may resume


def live_locked(*, challenge: Challenge) -> LiveBoard:
    """The challenge's ``LiveBoard`` row, locked for the caller's transaction (made on
    first use: moments before the challenge existed count as announced)."""
    live = LiveBoard.objects.select_for_update().filter(challenge_id=challenge.pk).first()
    if live is not None:
        return live

    def before_creation(moment: datetime | None) -> datetime | None:
        return moment if moment is not None and moment <= challenge.created_at else None

    LiveBoard.objects.get_or_create(
        challenge_id=challenge.pk,
        defaults={
            "top": [],
            "opened_for": before_creation(challenge.opens_at),
            "closed_for": before_creation(challenge.closes_at),
            "frozen_for": before_creation(challenge.freeze_at),
        },
    )
    return LiveBoard.objects.select_for_update().get(challenge_id=challenge.pk)


class _Written:
    """One on-commit callback per transaction with the ids of every event it wrote."""

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.pending = True

    def __call__(self) -> None:
        self.pending = False
        for receiver, result in events_written.send_robust(sender=None, event_ids=self.ids):
            if isinstance(result, Exception):
                logger.warning("events_written receiver %r failed: %r", receiver, result)


def event_write(*, challenge: Challenge, type: str, data: dict[str, Any]) -> Event:
    """Append an event (call inside a transaction holding ``live_locked``)."""
    event = Event.objects.create(
        challenge=challenge, type=type, occurred_at=timezone.now(), data=data
    )
    connection = transaction.get_connection()
    here = set(connection.savepoint_ids)  # never joined to a savepoint's that may roll back
    for savepoints, func, _ in connection.run_on_commit:
        if isinstance(func, _Written) and func.pending and set(savepoints) == here:
            func.ids.append(event.pk)
            return event
    written = _Written()
    written.ids.append(event.pk)
    transaction.on_commit(written)
    return event


def event_json(event: Event, *, slug: str | None = None) -> dict[str, Any]:
    """The event as the stream and webhooks send it."""
    return {
        "id": event.pk,
        "type": event.type,
        "challenge": {"id": event.challenge_id, "slug": slug or event.challenge.slug},
        "occurred_at": iso_z(event.occurred_at),
        "data": event.data,
    }


def events_after(*, challenge_id: int, after_id: int, limit: int = 1000) -> list[Event]:
    """The challenge's events after ``after_id`` within ``RESUME_WITHIN``, in order."""
    since = timezone.now() - RESUME_WITHIN
    return list(
        Event.objects.filter(
            challenge_id=challenge_id, pk__gt=after_id, occurred_at__gte=since
        ).order_by("pk")[:limit]
    )
