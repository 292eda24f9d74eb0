"""Reads of red/blue challenges: the pairings waiting for the judge, and the standings
(each team's points and ratio, a board per team).

A judged pairing without points (its pairing scorer failed) counts for no one. Boards
follow moderation: a pairing with a hidden player on either side counts for no
one (the other side's player loses it too, as a hidden player's attempts leave a
board). Prompts, feedback and the judge's ``raw`` are never part of a standing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from challenges.leaderboards import exclusions
from challenges.models import Challenge, Pairing, Team
from challenges.redblue.standings_cache import generation, kept


def pairings_list(*, challenge: Challenge, status: str | None, limit: int) -> QuerySet[Pairing]:
    """Pairings in the order they were made: ``pending`` (not judged yet), ``judged``, or
    all; with both submissions' texts (for the judge: never public)."""
    found = Pairing.objects.filter(challenge=challenge).select_related(
        "attack__player", "defense__player"
    )
    if status == "pending":
        found = found.filter(judged_at__isnull=True)
    elif status == "judged":
        found = found.filter(judged_at__isnull=False)
    return found.order_by("created_at", "id")[:limit]


@dataclass(frozen=True)
class PlayerPoints:
    rank: int
    player: str
    display_name: str
    points: float
    reached_at: datetime  # when their newest counted submission was made


@dataclass(frozen=True)
class Standings:
    red: float
    blue: float
    red_players: list[PlayerPoints]
    blue_players: list[PlayerPoints]

    def ratio(self, team: str) -> float | None:
        total = self.red + self.blue
        if total == 0:
            return None
        return (self.red if team == Team.RED else self.blue) / total


def _board(totals: dict[int, list[Any]]) -> list[PlayerPoints]:
    """Players by points (highest first); equal points: the earlier ``reached_at``; only
    equal in both share a rank (1, 2, 2, 4)."""
    summed = [(ext, name, math.fsum(points), when) for ext, name, points, when in totals.values()]
    ordered = sorted(summed, key=lambda t: (-t[2], t[3], t[0]))
    board: list[PlayerPoints] = []
    for place, (ext, name, points, when) in enumerate(ordered, start=1):
        tied = board and (board[-1].points, board[-1].reached_at) == (points, when)
        board.append(PlayerPoints(board[-1].rank if tied else place, ext, name, points, when))
    return board


def standings(*, challenge: Challenge) -> Standings:
    """Team totals and the two player boards over the judged pairings."""
    rows = list(
        Pairing.objects.filter(
            challenge=challenge, judged_at__isnull=False, red_points__isnull=False
        ).values_list(
            "attack__player_id",
            "attack__player__external_id",
            "attack__player__display_name",
            "attack__created_at",
            "red_points",
            "defense__player_id",
            "defense__player__external_id",
            "defense__player__display_name",
            "defense__created_at",
            "blue_points",
        )
    )
    hidden = exclusions.hidden_player_ids(
        challenge_id=challenge.pk, player_ids={r[0] for r in rows} | {r[5] for r in rows}
    )
    reds: list[float] = []
    blues: list[float] = []
    boards: dict[str, dict[int, list[Any]]] = {Team.RED: {}, Team.BLUE: {}}
    for row in rows:
        if row[0] in hidden or row[5] in hidden:
            continue
        reds.append(row[4])
        blues.append(row[9])
        for team, (pk, ext, name, at, points) in (
            (Team.RED, row[0:5]),
            (Team.BLUE, row[5:10]),
        ):
            entry = boards[team].setdefault(pk, [ext, name, [], at])
            entry[2].append(points)  # summed exactly (fsum): no order makes a tie
            entry[3] = max(entry[3], at)
    return Standings(
        math.fsum(reds), math.fsum(blues), _board(boards[Team.RED]), _board(boards[Team.BLUE])
    )


@dataclass(frozen=True)
class Matrix:
    """Attacks (rows) × defences (columns): per cell the breached categories of the
    judged pairing, "pending", or nothing when the two never met."""

    attacks: list[tuple[int, str]]  # (submission id, player external id), oldest first
    defenses: list[tuple[int, str]]
    cells: dict[tuple[int, int], str]

    def rows(self) -> list[tuple[tuple[int, str], list[str]]]:
        return [
            (a, [self.cells.get((a[0], d[0]), "") for d in self.defenses]) for a in self.attacks
        ]


def pairing_matrix(*, challenge: Challenge) -> Matrix:
    """The admin's matrix of every pairing of the challenge."""
    pairings = Pairing.objects.filter(challenge=challenge).select_related(
        "attack__player", "defense__player"
    )
    attacks: dict[int, tuple[int, str]] = {}
    defenses: dict[int, tuple[int, str]] = {}
    cells = {}
    for p in pairings.order_by("attack__created_at", "defense__created_at", "id"):
        attacks.setdefault(p.attack_id, (p.attack_id, p.attack.player.external_id))
        defenses.setdefault(p.defense_id, (p.defense_id, p.defense.player.external_id))
        if p.judged_at is None:
            cells[(p.attack_id, p.defense_id)] = "pending"
        else:
            hits = [code for code, hit in (p.categories or {}).items() if hit]
            cells[(p.attack_id, p.defense_id)] = ", ".join(hits) or "held"
    return Matrix(list(attacks.values()), sorted(defenses.values()), cells)


def attacks_revealed(*, challenge: Challenge, now: datetime, limit: int = 200) -> list[Any] | None:
    """The attacks the public may read (newest first, hidden players' left out): only
    once the challenge has closed and only when it says so; None otherwise. Defences are
    never public."""
    from challenges.models import Submission

    if not challenge.reveal_attacks_after_close or challenge.closes_at is None:
        return None
    if now < challenge.closes_at:
        return None
    attacks = Submission.objects.filter(challenge=challenge, team=Team.RED).select_related("player")
    hidden = exclusions.hidden_player_ids(
        challenge_id=challenge.pk, player_ids=attacks.values_list("player_id", flat=True)
    )
    return list(attacks.exclude(player_id__in=hidden).order_by("-created_at", "-id")[:limit])


# --- the standings, kept ---------------------------------------------------------------
def standings_read(*, challenge: Challenge) -> Standings:
    """The standings, kept until they change (``redblue.standings_cache``)."""
    key = ("standings", challenge.pk, challenge.updated_at.isoformat(), generation(challenge.pk))
    return kept(key, lambda: standings(challenge=challenge))
