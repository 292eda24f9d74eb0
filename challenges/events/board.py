"""The public top 10, compared with what was last seen: ``attempt.first_blood``,
``record.beaten`` and ``board.changed``.

``board_check`` reads the board exactly as an anonymous reader does (the frozen board
during a freeze; entries never hold practice attempts, hidden attempts, hidden players
or QA results), so an event never says more than the public page. Looks are coalesced:
``board_check_request`` sends at most one pending look per challenge, no sooner than a
second after the previous one, so a burst of attempts makes at most one event of each
kind per second."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from challenges.events import log
from challenges.leaderboards import exclusions, freeze, precision, selectors
from challenges.models import Challenge, Event, Player

TOP = 10
EVERY_S = 1.0  # at most one look (so one board.changed) per second per challenge
PENDING_FOR_S = 30  # a look sent and lost (a broker outage) is sent again after this


def _pending_key(challenge_id: int) -> str:
    return f"podium:events:look-pending:{challenge_id}"


def _last_key(challenge_id: int) -> str:
    return f"podium:events:look-last:{challenge_id}"


def board_check_request(
    *, challenge_id: int, send: Callable[[int, float], None], now: float | None = None
) -> bool:
    """Ask for a look at the challenge's board: ``send(challenge_id, countdown)`` unless
    a look is pending already (it will see this change: it reads the board after it
    starts). Returns whether one was sent."""
    if not cache.add(_pending_key(challenge_id), 1, timeout=PENDING_FOR_S):
        return False
    now = time.time() if now is None else now
    last = cache.get(_last_key(challenge_id))
    countdown = 0.0 if last is None else max(0.0, last + EVERY_S - now)
    try:
        send(challenge_id, countdown)
    except Exception:
        cache.delete(_pending_key(challenge_id))  # the next change (or the tick) asks again
        raise
    return True


def boards_to_look_at() -> list[int]:
    """The challenges the periodic tick looks at: the active ones with a version."""
    looked_at = Challenge.objects.filter(is_active=True, active_version__isnull=False)
    return list(looked_at.values_list("pk", flat=True))


def board_top(*, challenge: Challenge) -> list[dict[str, Any]]:
    """The public's top 10: rank, player, display name, score (as the API serves it)."""
    if not challenge.is_active:
        return []
    board = freeze.board_id(challenge=challenge, user=AnonymousUser())
    if board is None:
        return []
    # Read now, not from the page checkpoints (which may lag a second under steady
    # ingestion): a look that saw a lagging board would miss the last change of a burst.
    # A frozen board names its players as at the freeze (a later rename does not show).
    names_at = freeze.names_at(challenge, board)
    rows = selectors.leaderboard_top(board_id=board, limit=TOP, names_at=names_at)
    return [
        {
            "rank": row.rank,
            "player": row.player_external_id,
            "display_name": row.display_name,
            "score": precision.served(row.score),
        }
        for row in rows
    ]


def _holder(row: dict[str, Any]) -> dict[str, Any]:
    return {"player": row["player"], "display_name": row["display_name"], "score": row["score"]}


def _shown(challenge: Challenge, external_id: str) -> bool:
    """Whether a player may still be named in public (not hidden since)."""
    player = Player.objects.filter(external_id=external_id).values_list("pk", flat=True).first()
    if player is None:
        return False
    hidden = exclusions.hidden_player_ids(challenge_id=challenge.pk, player_ids=[player])
    return not hidden


def board_check(*, challenge_id: int) -> list[Event]:
    """Look at the challenge's public board and write the events of what changed since
    the last look. Safe to run twice or concurrently (the ``LiveBoard`` row lock)."""
    cache.delete(_pending_key(challenge_id))  # a change committed from now on asks again
    cache.set(_last_key(challenge_id), time.time(), timeout=60)
    written: list[Event] = []
    found = Challenge.objects.select_related("active_version").filter(pk=challenge_id).first()
    if found is None:
        return written
    if found.is_active:
        # A frozen board is built (under the challenge row's lock) before the LiveBoard
        # lock is taken: the order is always challenge row, then LiveBoard.
        freeze.board_id(challenge=found, user=AnonymousUser())
    with transaction.atomic():
        challenge = (
            Challenge.objects.select_related("active_version").filter(pk=challenge_id).first()
        )
        if challenge is None or not challenge.is_active:
            return written  # not public: nothing to say (nor to forget, for a comeback)

        def say(kind: str, data: dict[str, Any]) -> None:
            written.append(log.event_write(challenge=challenge, type=kind, data=data))

        live = log.live_locked(challenge=challenge)
        top = board_top(challenge=challenge)
        before = live.top
        live.checked_at = timezone.now()
        if before is None:  # a challenge older than events: this look is the baseline
            live.top = top
            live.save(update_fields=["top", "checked_at"])
            return written
        if top and not live.first_blood:
            live.first_blood = True
            say(Event.Type.FIRST_BLOOD, {"rank": 1, **_holder(top[0])})
        if top and before and top[0]["player"] != before[0]["player"]:
            previous = before[0]
            if _shown(challenge, previous["player"]):
                say(
                    Event.Type.RECORD_BEATEN,
                    {"previous": _holder(previous), "new": _holder(top[0])},
                )
        if top != before:
            say(Event.Type.BOARD_CHANGED, {"top": top})
        live.top = top
        live.save(update_fields=["top", "first_blood", "checked_at"])
    return written
