"""Moments of a challenge: ``challenge.opened``, ``challenge.closed`` and
``challenge.frozen`` (seen by the periodic ``schedule_tick``, every 15 s), and
``challenge.revealed`` and ``rescore.finished`` (written once the reveal or the version
switch commits, in a transaction of their own: the ``LiveBoard`` lock is never taken
while the challenge row is held)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from challenges.events import log
from challenges.leaderboards import exclusions, freeze
from challenges.models import Challenge, Event, HistoryRecord
from challenges.text import iso_z


def _at(moment: datetime | None) -> str | None:
    return None if moment is None else iso_z(moment)


def schedule_tick(*, now: datetime | None = None) -> list[Event]:
    """Announce the schedule moments that passed since the last tick (active challenges:
    an inactive one is not public)."""
    now = now or timezone.now()
    written: list[Event] = []
    due = Challenge.objects.filter(is_active=True).exclude(
        opens_at__isnull=True, closes_at__isnull=True, freeze_at__isnull=True
    )
    for pk in due.values_list("pk", flat=True):
        written.extend(_moments(challenge_id=pk, now=now))
    return written


@transaction.atomic
def _moments(*, challenge_id: int, now: datetime) -> list[Event]:
    challenge = Challenge.objects.filter(pk=challenge_id, is_active=True).first()
    if challenge is None:
        return []
    live = log.live_locked(challenge=challenge)
    written = []

    def say(kind: str, data: dict[str, Any]) -> None:
        written.append(log.event_write(challenge=challenge, type=kind, data=data))

    window = {"opens_at": _at(challenge.opens_at), "closes_at": _at(challenge.closes_at)}
    opens, closes = challenge.opens_at, challenge.closes_at
    if opens is not None and opens <= now and live.opened_for != opens:
        live.opened_for = opens
        if closes is None or now < closes:  # it is open now (not past its close too)
            say(Event.Type.CHALLENGE_OPENED, window)
    if closes is not None and closes <= now and live.closed_for != closes:
        live.closed_for = closes
        say(Event.Type.CHALLENGE_CLOSED, window)
    if freeze.is_frozen(challenge, now) and live.frozen_for != challenge.freeze_at:
        live.frozen_for = challenge.freeze_at
        say(Event.Type.CHALLENGE_FROZEN, {"freeze_at": _at(challenge.freeze_at)})
    live.save(update_fields=["opened_for", "closed_for", "frozen_for"])
    return written


def history_json(record: HistoryRecord, *, hidden: set[int] | None = None) -> dict[str, Any]:
    """A history record as the public reads it (the API's history route, in words and
    numbers; players hidden since it was written left out)."""
    hidden = hidden or set()

    def players(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            {k: item[k] for k in ("external_id", "display_name", "rank_before", "rank_after")}
            for item in items
            if item["player_id"] not in hidden
        ]

    return {
        "version": record.version.number,
        "previous_version": record.previous_version.number if record.previous_version else None,
        "switched_at": _at(record.switched_at),
        "reason": record.reason,
        "players_ranked": {"before": record.players_before, "after": record.players_after},
        "moved": record.moved,
        "entered_top": players(record.entered_top),
        "left_top": players(record.left_top),
        "largest_moves": players(record.largest_moves),
        "kendall_tau": record.kendall_tau,
    }


def _record_written(challenge: Challenge, record: HistoryRecord) -> Event:
    named = {
        item["player_id"] for item in (*record.entered_top, *record.left_top, *record.largest_moves)
    }
    hidden = exclusions.hidden_player_ids(challenge_id=challenge.pk, player_ids=named)
    return log.event_write(
        challenge=challenge,
        type=Event.Type.RESCORE_FINISHED,
        data=history_json(record, hidden=hidden),
    )


@transaction.atomic
def rescore_finished(*, record_id: int) -> Event | None:
    """Announce a version switch (call once it commits). A switch during a freeze is
    announced at the reveal: its record is computed from post-freeze attempts."""
    record = (
        HistoryRecord.objects.select_related("challenge", "version", "previous_version")
        .filter(pk=record_id)
        .first()
    )
    if record is None or not record.challenge.is_active:
        return None
    challenge = record.challenge
    log.live_locked(challenge=challenge)
    if freeze.is_frozen(challenge) and record.switched_at >= challenge.freeze_at:
        return None
    return _record_written(challenge, record)


@transaction.atomic
def challenge_revealed(*, challenge_id: int) -> list[Event]:
    """Announce the reveal (call once it commits), then the switches the freeze held
    back."""
    challenge = Challenge.objects.filter(pk=challenge_id, is_active=True).first()
    if challenge is None or challenge.revealed_at is None or challenge.freeze_at is None:
        return []
    log.live_locked(challenge=challenge)
    written = [
        log.event_write(
            challenge=challenge,
            type=Event.Type.CHALLENGE_REVEALED,
            data={"freeze_at": _at(challenge.freeze_at), "revealed_at": _at(challenge.revealed_at)},
        )
    ]
    held = (
        HistoryRecord.objects.filter(
            challenge=challenge,
            switched_at__gte=challenge.freeze_at,
            switched_at__lt=challenge.revealed_at,
        )
        .select_related("version", "previous_version")
        .order_by("switched_at", "pk")
    )
    written.extend(_record_written(challenge, record) for record in held)
    return written
