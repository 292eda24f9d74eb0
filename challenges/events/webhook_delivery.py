"""Webhooks: endpoints per challenge, one delivery per event and endpoint, tries with
exponential backoff, the delivery log, redelivery, and disabling an endpoint that keeps
failing (docs/events.md).

A delivery is claimed before each try (a conditional update: one worker tries it at a
time; a claim whose worker died expires after ``CLAIM_S`` and the tick sends it again)
and is tried outside any transaction. Each try is signed afresh with the same
``webhook-id`` (``evt_<event id>``). A delivery that got a 2xx is never tried again
(only an admin's redeliver does). Retries and when they are due live here; the Celery
task only calls ``delivery_try`` and sends the next one when asked."""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from challenges import enqueue
from challenges.events import log, outbound, signing
from challenges.models import Challenge, Event, WebhookDelivery, WebhookEndpoint
from challenges.text import iso_z

logger = logging.getLogger(__name__)

TIMEOUT_S = 5.0
# Seconds before each retry: the first within a minute, 8 tries over about 5 hours
# (Standard Webhooks' advice; ±10 % jitter so that endpoints recover without a stampede).
RETRY_AFTER_S = (10, 60, 300, 900, 1800, 3600, 10800)
TRIES = len(RETRY_AFTER_S) + 1
DISABLE_AFTER = 100  # failed deliveries in a row
CLAIM_S = 30  # a try's claim: longer than its timeout, short enough to resume soon
EXCERPT = 1000
LOG_KEPT = 50


class WebhookInvalid(ValueError):
    """A bad endpoint: ``field`` names what is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _retry_after(tries: int) -> float:
    """Seconds before the try after ``tries`` failed ones (the schedule can be shortened
    by ``PODIUM_WEBHOOK_RETRY_SCALE``, for development and the benchmark)."""
    base = RETRY_AFTER_S[min(tries, len(RETRY_AFTER_S)) - 1]
    return base * settings.PODIUM_WEBHOOK_RETRY_SCALE * random.uniform(0.9, 1.1)  # noqa: S311 - jitter, not a secret


# --- endpoints ------------------------------------------------------------------------
def endpoint_create(
    *, challenge: Challenge, url: str, events: Sequence[str] = (), description: str = ""
) -> WebhookEndpoint:
    """Add an endpoint (its ``secret`` is shown to the caller once). Raises
    ``WebhookInvalid``."""
    url = (url or "").strip()
    if not url.lower().startswith(("http://", "https://")):
        raise WebhookInvalid("url", "Only http and https URLs are allowed.")
    unknown = [t for t in events if t not in Event.Type.values]
    if unknown:
        raise WebhookInvalid(
            "events",
            f"Unknown event type {unknown[0]!r}; known: {', '.join(Event.Type.values)}.",
        )
    return WebhookEndpoint.objects.create(
        challenge=challenge,
        url=url,
        events=sorted(set(events)),
        description=description,
        secret=signing.secret_new(),
    )


# --- fan-out --------------------------------------------------------------------------
def deliveries_wanted(*, event_ids: Sequence[int]) -> bool:
    """Whether these events have an endpoint to go to; when none has, they are marked
    fanned out at once (no task for the many events of challenges without webhooks)."""
    events = Event.objects.filter(pk__in=list(event_ids), fanned_out=False)
    wanted = WebhookEndpoint.objects.filter(
        challenge_id__in=events.values("challenge_id"), is_active=True
    ).exists()
    if not wanted:
        events.update(fanned_out=True)
    return wanted


def deliveries_create(*, event_ids: Iterable[int]) -> list[int]:
    """Make the deliveries of these events to every active endpoint that wants them
    (idempotent: one per event and endpoint); the ids of those due now."""
    ids = sorted(set(event_ids))
    if not ids:
        return []
    now = timezone.now()
    with transaction.atomic():
        claimed = list(
            Event.objects.select_for_update(skip_locked=True)
            .filter(pk__in=ids, fanned_out=False)
            .values_list("pk", "challenge_id", "type")
        )
        if not claimed:
            return []
        challenges = {challenge_id for _, challenge_id, _ in claimed}
        endpoints = list(
            WebhookEndpoint.objects.filter(challenge_id__in=challenges, is_active=True)
        )
        rows = [
            WebhookDelivery(endpoint=endpoint, event_id=pk, tries_left=TRIES, next_try_at=now)
            for pk, challenge_id, type_ in claimed
            for endpoint in endpoints
            if endpoint.challenge_id == challenge_id and endpoint.wants(type_)
        ]
        WebhookDelivery.objects.bulk_create(rows, ignore_conflicts=True)
        Event.objects.filter(pk__in=[pk for pk, _, _ in claimed]).update(fanned_out=True)
    return list(
        WebhookDelivery.objects.filter(
            event_id__in=[pk for pk, _, _ in claimed], status=WebhookDelivery.Status.PENDING
        )
        .order_by("event_id", "pk")
        .values_list("pk", flat=True)
    )


def events_not_fanned_out(*, older_than_s: float = 5.0, limit: int = 1000) -> list[int]:
    """Events whose fan-out was lost (a broker outage), for the periodic tick."""
    before = timezone.now() - timedelta(seconds=older_than_s)
    return list(
        Event.objects.filter(fanned_out=False, occurred_at__lt=before)
        .order_by("pk")
        .values_list("pk", flat=True)[:limit]
    )


def deliveries_due(*, now: datetime | None = None, limit: int = 1000) -> list[int]:
    """Pending deliveries whose try is due and not under way (for the periodic tick: a
    retry whose task was lost, a try whose worker died)."""
    now = now or timezone.now()
    return list(
        WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING, next_try_at__lte=now)
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
        .order_by("next_try_at")
        .values_list("pk", flat=True)[:limit]
    )


# --- one try --------------------------------------------------------------------------
def _claim(delivery_id: int, now: datetime) -> bool:
    claimed = (
        WebhookDelivery.objects.filter(
            pk=delivery_id, status=WebhookDelivery.Status.PENDING, next_try_at__lte=now
        )
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
        .update(claimed_until=now + timedelta(seconds=CLAIM_S))
    )
    return claimed == 1  # 0: done, not due, or another worker is trying it


def body_of(event: Event) -> bytes:
    return json.dumps(log.event_json(event), separators=(",", ":"), ensure_ascii=False).encode()


def delivery_try(
    *,
    delivery_id: int,
    now: datetime | None = None,
    post: Callable[..., outbound.Answer] = outbound.post,
) -> float | None:
    """Try a delivery once if it is due. Returns the seconds until its next try (the
    caller schedules it), or None when there is none to schedule."""
    now = now or timezone.now()
    if not _claim(delivery_id, now):
        return None
    delivery = WebhookDelivery.objects.select_related("endpoint", "event__challenge").get(
        pk=delivery_id
    )
    endpoint = delivery.endpoint
    if not endpoint.is_active:
        WebhookDelivery.objects.filter(pk=delivery_id).update(
            status=WebhookDelivery.Status.FAILED,
            claimed_until=None,
            finished_at=now,
            last_error=f"The endpoint is disabled: {endpoint.disabled_reason or 'by an admin'}",
        )
        return None
    body = body_of(delivery.event)
    headers = signing.headers(
        secret=endpoint.secret,
        msg_id=f"evt_{delivery.event_id}",
        timestamp=int(timezone.now().timestamp()),
        body=body,
    )
    answer = post(
        endpoint.url,
        body=body,
        headers=headers,
        timeout=TIMEOUT_S,
        allow_private=settings.PODIUM_WEBHOOK_ALLOW_PRIVATE,
    )
    return _record(delivery, answer, now + timedelta(milliseconds=answer.duration_ms))


def _record(delivery: WebhookDelivery, answer: outbound.Answer, now: datetime) -> float | None:
    entry = {
        "at": iso_z(now),
        "status_code": answer.status_code,
        "error": answer.error,
        "duration_ms": answer.duration_ms,
    }
    tries_left = max(0, delivery.tries_left - 1)
    retry_in = None
    if answer.ok:
        status = WebhookDelivery.Status.SUCCEEDED
    elif tries_left == 0:
        status = WebhookDelivery.Status.FAILED
    else:
        status = WebhookDelivery.Status.PENDING
        retry_in = _retry_after(delivery.tries + 1)
    with transaction.atomic():
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            status=status,
            tries=F("tries") + 1,
            tries_left=tries_left,
            claimed_until=None,
            next_try_at=now + timedelta(seconds=retry_in) if retry_in is not None else None,
            finished_at=None if status == WebhookDelivery.Status.PENDING else now,
            last_status_code=answer.status_code,
            last_error=answer.error[:500],
            response_excerpt=answer.excerpt[:EXCERPT],
            duration_ms=answer.duration_ms,
            log=[*delivery.log, entry][-LOG_KEPT:],
        )
        endpoints = WebhookEndpoint.objects.filter(pk=delivery.endpoint_id)
        if status == WebhookDelivery.Status.SUCCEEDED:
            endpoints.exclude(failures_in_row=0).update(failures_in_row=0)
        elif status == WebhookDelivery.Status.FAILED:
            endpoints.update(failures_in_row=F("failures_in_row") + 1)
            endpoint = endpoints.select_for_update().get()
            if endpoint.is_active and endpoint.failures_in_row >= DISABLE_AFTER:
                reason = (
                    f"Disabled on {now:%Y-%m-%d %H:%M} UTC: {endpoint.failures_in_row} "
                    f"deliveries in a row failed (the last: "
                    f"{answer.error or f'HTTP {answer.status_code}'})."
                )[:500]
                endpoints.update(is_active=False, disabled_reason=reason)
                logger.warning("webhook endpoint disabled", extra={"endpoint_id": endpoint.pk})
    return retry_in


def delivery_redeliver(*, delivery: WebhookDelivery) -> WebhookDelivery:
    """Send a delivery again, now, with a fresh set of tries (an admin's choice: even
    one that succeeded). The endpoint must be active."""
    if not delivery.endpoint.is_active:
        raise WebhookInvalid("endpoint", "The endpoint is disabled: enable it first.")
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        status=WebhookDelivery.Status.PENDING,
        tries_left=TRIES,
        next_try_at=timezone.now(),
        claimed_until=None,
        finished_at=None,
    )
    delivery.refresh_from_db()
    return delivery


def delivery_send(*, delivery_id: int) -> None:
    """Queue a try of the delivery once the current transaction commits."""
    transaction.on_commit(lambda: enqueue.webhook_deliver(delivery_id=delivery_id))


def endpoint_enable(*, endpoint: WebhookEndpoint) -> None:
    """Enable a disabled endpoint again (its count of failures starts over)."""
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
        is_active=True, disabled_reason="", failures_in_row=0
    )


def delivery_json(delivery: WebhookDelivery) -> dict[str, Any]:
    return {
        "id": delivery.pk,
        "event": {"id": delivery.event_id, "type": delivery.event.type},
        "status": delivery.status,
        "attempts": delivery.tries,
        "next_try_at": delivery.next_try_at,
        "status_codes": [entry["status_code"] for entry in delivery.log],
        "last_status_code": delivery.last_status_code,
        "last_error": delivery.last_error,
        "response_excerpt": delivery.response_excerpt,
        "duration_ms": delivery.duration_ms,
        "tries": delivery.log,
        "created_at": delivery.created_at,
        "finished_at": delivery.finished_at,
    }
