"""``Idempotency-Key`` on ``POST /api/challenges/{id}/attempts/`` (docs/api.md).

A client that lost the response (a proxy timeout, a dropped connection after the commit)
retries with the same key: it gets the first response back (same ids) and nothing is
written again. The same key with a different body is a 409. The first response is
stored in the same transaction as the attempts (``attempts_record(within=...)``), so a
key is remembered exactly when its attempts exist; two requests racing with one key
meet on the unique (user, challenge, key) index and the second replays the first.
Keys are per token user and challenge, kept ``PODIUM_IDEMPOTENCY_KEEP_H`` hours.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework import serializers, status
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from challenges.models import Challenge, IdempotencyRecord

HEADER = "Idempotency-Key"
KEY_MAX = 200
REPLAYED_HEADER = "Idempotent-Replayed"


class KeyTaken(Exception):
    """Another request with the same key committed first (the transaction rolls back)."""


def key_of(request: Request) -> str | None:
    """The request's key, or None. Raises a 400 naming the header when it is unusable."""
    key = request.headers.get(HEADER)
    if key is None:
        return None
    if not key or len(key) > KEY_MAX or not key.isprintable():
        raise serializers.ValidationError({HEADER: [f"Use 1 to {KEY_MAX} printable characters."]})
    return key


def body_digest(data: Any) -> str:
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def earlier_response(*, request: Request, challenge: Challenge, key: str) -> Response | None:
    """The first response to this key (a replay), a 409 when the body differs, or None
    when the key is new."""
    record = (
        IdempotencyRecord.objects.filter(
            user_id=request.user.pk, challenge=challenge, key=key, created_at__gte=_oldest()
        )
        .only("body_sha256", "status_code", "response")
        .first()
    )
    if record is None:
        return None
    if record.body_sha256 != body_digest(request.data):
        return Response(
            {
                "detail": f"This {HEADER} was used with a different body.",
                HEADER: [f"{key!r} was first used with another body; use a new key."],
            },
            status=status.HTTP_409_CONFLICT,
        )
    response = Response(record.response, status=record.status_code)
    response[REPLAYED_HEADER] = "true"
    return response


Within = Callable[[Any], None]


def respond_once(
    *,
    request: Request,
    challenge: Challenge,
    record: Callable[[Within | None], Any],
    render: Callable[[Any], Response],
) -> Response:
    """Answer an attempts POST: ``record(within)`` writes (calling ``within`` inside its
    transaction), ``render`` makes the response. With a key, a retry gets the first
    response back and ``record`` is not called; a key used with another body is a 409."""
    key = key_of(request)
    if key is None:
        return render(record(None))
    if (earlier := earlier_response(request=request, challenge=challenge, key=key)) is not None:
        return earlier
    within = remember(request=request, challenge=challenge, key=key, render=render)
    try:
        return render(record(within))
    except KeyTaken:  # a twin request with the same key committed first
        replay = earlier_response(request=request, challenge=challenge, key=key)
        assert replay is not None  # the twin's record is committed: it is there
        return replay


def remember(
    *, request: Request, challenge: Challenge, key: str, render: Callable[[Any], Response]
) -> Within:
    """A hook for ``attempts_record(within=...)``: inside its transaction, store the
    response the request is about to get. Raises ``KeyTaken`` when a concurrent request
    with the same key committed first (so this one writes nothing)."""
    digest = body_digest(request.data)

    def within(recorded: Any) -> None:
        response = render(recorded)
        data = json.loads(JSONRenderer().render(response.data))
        mine = IdempotencyRecord.objects.filter(
            user_id=request.user.pk, challenge=challenge, key=key
        )
        try:
            with transaction.atomic():
                mine.filter(created_at__lt=_oldest()).delete()  # expired: the key is free
                IdempotencyRecord.objects.create(
                    user_id=request.user.pk,
                    challenge=challenge,
                    key=key,
                    body_sha256=digest,
                    status_code=response.status_code,
                    response=data,
                )
        except IntegrityError as exc:
            raise KeyTaken(key) from exc

    return within


def _oldest() -> datetime:
    return timezone.now() - timedelta(hours=settings.PODIUM_IDEMPOTENCY_KEEP_H)


def records_purge() -> int:
    """Forget keys past their keeping time (run by the periodic task)."""
    return IdempotencyRecord.objects.filter(created_at__lt=_oldest()).delete()[0]
