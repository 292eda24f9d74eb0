"""The schedule banner of the cards and the challenge page: upcoming (opens in …),
open (closes in …) or ended, in words, from ``ingestion.admission`` (one rule for the banner
and for what ingestion accepts)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from challenges.boards import display
from challenges.ingestion import admission
from challenges.models import Challenge, LateAttempts


@dataclass(frozen=True)
class Banner:
    phase: str  # upcoming, open, ended
    text: str  # "Opens in 3 hours"
    exact: str  # the moment it refers to, exactly
    iso: str
    note: str = ""  # what happens to attempts now, when it is worth saying


def duration_words(seconds: float) -> str:
    """A duration in the two largest units: "2 days 3 hours", "5 minutes"."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return "less than a minute"
    units = []
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute")):
        n, seconds = divmod(seconds, size)
        units.append((n, unit))
    first = next(i for i, (n, _) in enumerate(units) if n)
    shown = [(n, unit) for n, unit in units[first : first + 2] if n]
    return " ".join(f"{n} {unit}{'' if n == 1 else 's'}" for n, unit in shown)


def _until(moment: datetime, now: datetime) -> str:
    """Time left in words, rounded up to the minute (2:59:40 left reads "3 hours")."""
    return duration_words(math.ceil((moment - now).total_seconds() / 60) * 60)


def banner(*, challenge: Challenge, now: datetime) -> Banner | None:
    """None when the challenge has no schedule (always open: nothing to say)."""
    if challenge.opens_at is None and challenge.closes_at is None:
        return None
    phase = admission.schedule_phase(challenge=challenge, now=now)
    practice = challenge.late_attempts == LateAttempts.PRACTICE
    if phase == admission.Phase.UPCOMING:
        moment = challenge.opens_at
        text = f"Opens in {_until(moment, now)}"
        note = "Attempts made before then are practice: not ranked." if practice else ""
    elif phase == admission.Phase.ENDED:
        moment = challenge.closes_at
        text = f"Ended {display.relative_time(moment, now)}"
        note = "Later attempts are practice: not ranked." if practice else ""
    elif challenge.closes_at is not None:
        moment = challenge.closes_at
        text = f"Open · closes in {_until(moment, now)}"
        note = ""
    else:
        moment = challenge.opens_at
        text = "Open"
        note = ""
    return Banner(phase, text, display.exact_time(moment), moment.isoformat(), note)
