"""The rules an attempt must pass before it is written: the challenge's schedule and the
per-player submission caps (docs/competitions.md).

Both are checked by ``services.attempts_record``, so the API, the admin and the commands
refuse alike.

- **Schedule.** Outside [opens_at, closes_at) an attempt is refused (``ScheduleClosed``,
  409 naming the window) or, when the challenge says ``late_attempts = practice``,
  recorded as practice: stored, scored, never ranked. The time that counts is the
  server's recording time, never the client's ``created_at`` (which a client may set).
- **Caps.** ``attempts_per_day`` counts a player's attempts recorded in the last 24
  hours (a rolling window: no time zone to configure, and no midnight at which a player
  may send twice the cap in a minute); ``attempts_total`` counts all of them. Practice
  and hidden attempts count too: they were submitted and scored all the same. Over a
  cap the whole request is refused (``LimitExceeded``, 429), nothing written.

The count is exact under concurrent requests: ``limits_enforce`` runs in the recording
transaction (after scoring, which never runs under a lock) and locks the players' rows
in id order before counting, so two requests of one player count one after the other.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, Q

from challenges.fieldsets import (  # noqa: F401 - the rules name their fields
    COMPETITION_FIELDS,
    FREEZE_FIELDS,
    LIMIT_FIELDS,
    SCHEDULE_FIELDS,
)
from challenges.models import Attempt, Challenge, ChallengeFormat, LateAttempts, Player
from challenges.text import exact_time

DAY = timedelta(hours=24)


def competition_errors(values: dict) -> dict[str, str]:
    """What is wrong with a challenge's schedule and caps, by field (the admin form and
    ``competition_validate`` share it; the database constraints are the last guard)."""
    errors = {}
    opens, closes = values.get("opens_at"), values.get("closes_at")
    if opens and closes and closes <= opens:
        errors["closes_at"] = "The challenge must close after it opens (closes_at > opens_at)."
    late = values.get("late_attempts")
    if late is not None and late not in LateAttempts.values:
        errors["late_attempts"] = f"Choose one of: {', '.join(LateAttempts.values)}."
    for name in LIMIT_FIELDS:
        cap = values.get(name)
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            errors[name] = "A cap is a whole number of attempts, at least 1 (or empty: no cap)."
    return errors


def competition_validate(*, challenge: Challenge) -> None:
    """Raises ``scoring.SetupInvalid`` (a 400 naming the field) for a bad schedule or cap."""
    from scoring.services import SetupInvalid

    errors = competition_errors({n: getattr(challenge, n) for n in COMPETITION_FIELDS})
    if errors:
        raise SetupInvalid(errors)


# --- format -------------------------------------------------------------------------------
class WrongFormat(Exception):
    """Attempts sent to a red/blue challenge, which takes submissions (409)."""


def format_check(*, challenge: Challenge) -> None:
    if challenge.format == ChallengeFormat.RED_BLUE:
        raise WrongFormat(
            f"Challenge {challenge.pk} is a red/blue challenge: it takes submissions "
            f"(POST /api/challenges/{challenge.pk}/submissions/), not attempts."
        )


# --- schedule -----------------------------------------------------------------------------
class ScheduleClosed(Exception):
    """An attempt outside the challenge's window, which refuses late attempts."""

    def __init__(self, message: str, *, opens_at: datetime | None, closes_at: datetime | None):
        super().__init__(message)
        self.message = message
        self.opens_at = opens_at
        self.closes_at = closes_at


def window_text(challenge: Challenge) -> str:
    """The window in words: "from 2026-01-01 00:00:00 UTC until 2026-02-01 00:00:00 UTC"."""
    parts = []
    if challenge.opens_at:
        parts.append(f"from {exact_time(challenge.opens_at)}")
    if challenge.closes_at:
        parts.append(f"until {exact_time(challenge.closes_at)}")
    return " ".join(parts) or "at any time"


class Phase:
    UPCOMING = "upcoming"
    OPEN = "open"
    ENDED = "ended"


def schedule_phase(*, challenge: Challenge, now: datetime) -> str:
    """Where the challenge stands: upcoming, open or ended."""
    if challenge.opens_at and now < challenge.opens_at:
        return Phase.UPCOMING
    if challenge.closes_at and now >= challenge.closes_at:
        return Phase.ENDED
    return Phase.OPEN


def schedule_check(*, challenge: Challenge, now: datetime) -> bool:
    """Whether attempts recorded ``now`` are practice. Raises ``ScheduleClosed`` outside
    the window when the challenge refuses late attempts."""
    phase = schedule_phase(challenge=challenge, now=now)
    if phase == Phase.OPEN:
        return False
    if challenge.late_attempts == LateAttempts.PRACTICE:
        return True
    state = "has not opened yet" if phase == Phase.UPCOMING else "is closed"
    raise ScheduleClosed(
        f"This challenge {state}: it accepts attempts {window_text(challenge)}.",
        opens_at=challenge.opens_at,
        closes_at=challenge.closes_at,
    )


# --- caps -------------------------------------------------------------------------------
class LimitExceeded(Exception):
    """A player over a submission cap; ``retry_after`` in seconds (None: waiting never
    helps, as for the total cap)."""

    def __init__(self, message: str, *, cap: str, player: str, retry_after: int | None):
        super().__init__(message)
        self.message = message
        self.cap = cap
        self.player = player
        self.retry_after = retry_after


def has_limits(challenge: Challenge) -> bool:
    return challenge.attempts_per_day is not None or challenge.attempts_total is not None


@dataclass(frozen=True)
class _Player:
    pk: int
    external_id: str


def limits_precheck(*, challenge: Challenge, external_ids: Iterable[str], now: datetime) -> None:
    """The same check without locks, before scoring: a request that is over a cap
    already is refused without paying for its scoring. ``limits_enforce`` decides."""
    if not has_limits(challenge):
        return
    wanted = Counter(external_ids)
    found = dict(
        Player.objects.filter(external_id__in=list(wanted)).values_list("external_id", "pk")
    )
    _check(challenge, {_Player(pk, ext): wanted[ext] for ext, pk in found.items()}, now)
    new = {_Player(0, ext): n for ext, n in wanted.items() if ext not in found}
    _check(challenge, new, now, existing=False)  # only the request itself can exceed a cap


def limits_enforce(
    *, challenge: Challenge, players: dict[str, Player], external_ids: Iterable[str], now: datetime
) -> None:
    """Lock the players' rows (in id order: no deadlock between requests) and check the
    caps against what is committed. Call inside the recording transaction, before the
    attempts are inserted. Raises ``LimitExceeded``."""
    if not has_limits(challenge):
        return
    wanted = Counter(external_ids)
    ids = sorted(players[ext].pk for ext in wanted)
    list(Player.objects.select_for_update().filter(pk__in=ids).order_by("pk").values_list("pk"))
    _check(challenge, {_Player(players[ext].pk, ext): n for ext, n in wanted.items()}, now)


def _check(
    challenge: Challenge, wanted: dict[_Player, int], now: datetime, *, existing: bool = True
) -> None:
    if not wanted:
        return
    since = now - DAY
    counts: dict[int, tuple[int, int]] = {}
    if existing:
        rows = (
            Attempt.objects.filter(challenge=challenge, player_id__in=[p.pk for p in wanted])
            .values("player_id")
            .annotate(total=Count("pk"), today=Count("pk", filter=Q(recorded_at__gt=since)))
            .order_by()
        )
        counts = {r["player_id"]: (r["total"], r["today"]) for r in rows}
    for player, n in sorted(wanted.items(), key=lambda item: item[0].external_id):
        total, today = counts.get(player.pk, (0, 0))
        cap_total = challenge.attempts_total
        if cap_total is not None and total + n > cap_total:
            raise LimitExceeded(
                f"Player {player.external_id!r} may make at most {cap_total} attempts at "
                f"this challenge in total (attempts_total); {total} recorded, {n} sent.",
                cap="attempts_total",
                player=player.external_id,
                retry_after=None,
            )
        cap_day = challenge.attempts_per_day
        if cap_day is not None and today + n > cap_day:
            raise LimitExceeded(
                f"Player {player.external_id!r} may make at most {cap_day} attempts at "
                f"this challenge in any 24 hours (attempts_per_day); {today} recorded "
                f"in the last 24 hours, {n} sent.",
                cap="attempts_per_day",
                player=player.external_id,
                retry_after=_retry_after(challenge, player.pk, today + n - cap_day, n, now),
            )


def _retry_after(
    challenge: Challenge, player_id: int, excess: int, sent: int, now: datetime
) -> int | None:
    """Seconds until enough of the player's attempts leave the 24-hour window for this
    request to fit: when the ``excess``-th oldest of them turns 24 hours old. None when
    the request alone is over the cap (waiting never makes it fit)."""
    if sent > challenge.attempts_per_day:
        return None
    recent = (
        Attempt.objects.filter(challenge=challenge, player_id=player_id, recorded_at__gt=now - DAY)
        .order_by("recorded_at")
        .values_list("recorded_at", flat=True)
    )
    leaving = list(recent[excess - 1 : excess])
    if not leaving:
        return 1
    return max(1, math.ceil((leaving[0] + DAY - now).total_seconds()))
