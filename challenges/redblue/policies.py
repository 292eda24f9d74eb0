"""Which submission of the other team a new submission is paired with, in plain Python
(docs/ranking.md, "Red/blue"). A challenge names one policy for new attacks
(``defense_selection_policy``: which defence an attack meets) and one for new defences
(``attack_selection_policy``).

- ``latest_best``: the newest active submission of the other team;
- ``random_active``: any active submission of the other team, uniformly;
- ``round_robin``: the active submission paired least often so far, ties to the oldest;
- ``request_new_if_none``: the newest active submission the submitting player has not
  met yet; when they have met them all, none (the submission waits for a new one).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

LATEST_BEST = "latest_best"
RANDOM_ACTIVE = "random_active"
ROUND_ROBIN = "round_robin"
REQUEST_NEW_IF_NONE = "request_new_if_none"
POLICIES = (LATEST_BEST, RANDOM_ACTIVE, ROUND_ROBIN, REQUEST_NEW_IF_NONE)


@dataclass(frozen=True)
class Candidate:
    """An active submission of the other team."""

    id: int
    created_at: datetime
    pairings: int  # how often it was paired so far
    met: bool  # whether the submitting player met it already


def counterpart_pick(
    policy: str, candidates: Sequence[Candidate], *, rng: random.Random | None = None
) -> Candidate | None:
    """The candidate ``policy`` picks (None: no candidate, or none it accepts)."""
    if not candidates:
        return None
    newest_first = sorted(candidates, key=lambda c: (c.created_at, c.id), reverse=True)
    if policy == LATEST_BEST:
        return newest_first[0]
    if policy == RANDOM_ACTIVE:
        return (rng or random.SystemRandom()).choice(sorted(candidates, key=lambda c: c.id))
    if policy == ROUND_ROBIN:
        return min(candidates, key=lambda c: (c.pairings, c.created_at, c.id))
    if policy == REQUEST_NEW_IF_NONE:
        return next((c for c in newest_first if not c.met), None)
    raise ValueError(f"Unknown selection policy {policy!r}.")
