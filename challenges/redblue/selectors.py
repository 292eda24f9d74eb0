"""Reads of red/blue challenges: the pairings waiting for the judge, and the standings
(each team's points and ratio, a board per team).

Boards follow moderation: a pairing with a hidden player on either side counts for no
one (the other side's player loses it too, as a hidden player's attempts leave a
board). Prompts, feedback and the judge's ``raw`` are never part of a standing.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.cache import cache
from django.db.models import (
    Count,
    DateTimeField,
    IntegerField,
    Max,
    OuterRef,
    QuerySet,
    Subquery,
)

from challenges.leaderboards import exclusions
from challenges.models import Challenge, ChallengeFormat, Pairing, PlayerHide, Team


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
        Pairing.objects.filter(challenge=challenge, judged_at__isnull=False).values_list(
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


# --- the standings, kept -------------------------------------------------------------------
# Standings by what they are computed from: the challenge as saved (its points rule), the
# judged pairings (how many, the newest judgement: a judgement or a re-judge moves it)
# and the challenge's hides (how many, the newest). Any change of those gives a new key,
# so a kept copy is never stale; the Django cache shares it between processes and this
# dict spares the cache's round trip within one.
_kept: dict[tuple[Any, ...], Standings] = {}
KEPT_MAX = 256


def _grouped(queryset: Any, by: str, aggregate: Any, field: Any) -> Subquery:
    """One aggregate of ``queryset`` (a single group by ``by``) as a scalar subquery."""
    rows = queryset.order_by().values(by).annotate(v=aggregate).values("v")[:1]
    return Subquery(rows, output_field=field)


def standings_probe(*, pk: int) -> tuple[Challenge, tuple[Any, ...]] | None:
    """A red/blue challenge by id (None: unknown or not red/blue) with the key of its
    standings, in one statement."""
    judged = Pairing.objects.filter(challenge_id=OuterRef("pk"), judged_at__isnull=False)
    here = PlayerHide.objects.filter(challenge_id=OuterRef("pk"))
    everywhere = PlayerHide.objects.filter(challenge__isnull=True)  # one group: NULL
    found = (
        Challenge.objects.filter(pk=pk, format=ChallengeFormat.RED_BLUE)
        .annotate(
            judged_n=_grouped(judged, "challenge_id", Count("pk"), IntegerField()),
            judged_last=_grouped(judged, "challenge_id", Max("judged_at"), DateTimeField()),
            hides_here=_grouped(here, "challenge_id", Count("pk"), IntegerField()),
            hides_here_last=_grouped(here, "challenge_id", Max("hidden_at"), DateTimeField()),
            hides_all=_grouped(everywhere, "challenge_id", Count("pk"), IntegerField()),
            hides_all_last=_grouped(everywhere, "challenge_id", Max("hidden_at"), DateTimeField()),
        )
        .first()
    )
    if found is None:
        return None
    key = (
        found.pk,
        found.updated_at.isoformat(),
        found.judged_n,
        found.judged_last.isoformat() if found.judged_last else None,
        found.hides_here,
        found.hides_here_last.isoformat() if found.hides_here_last else None,
        found.hides_all,
        found.hides_all_last.isoformat() if found.hides_all_last else None,
    )
    return found, key


def standings_kept(*, challenge: Challenge, key: tuple[Any, ...]) -> Standings:
    """The standings of ``challenge`` under ``key`` (``standings_probe``): this process's
    copy, else the cache's, else computed and kept in both."""
    found = _kept.get(key)
    if found is not None:
        return found
    cache_key = "redblue-standings:" + hashlib.sha256(repr(key).encode()).hexdigest()
    found = cache.get(cache_key)
    if found is None:
        found = standings(challenge=challenge)
        cache.set(cache_key, found, timeout=3600)
    if len(_kept) >= KEPT_MAX:
        _kept.clear()
    _kept[key] = found
    return found


def kept_clear() -> None:
    """For tests: forget this process's copies."""
    _kept.clear()
