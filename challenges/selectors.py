"""Selectors that read: challenges and leaderboards."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import F, Q, QuerySet, Window
from django.db.models.functions import Rank

from .models import Challenge, LeaderboardEntry, ScoringVersion

RANK_ORDER = (F("sort_key").asc(), F("created_at").asc())


def challenge_list(*, include_inactive: bool = False) -> QuerySet[Challenge]:
    """Active challenges (the public's view), or all of them."""
    qs = Challenge.objects.select_related("active_version")
    return qs if include_inactive else qs.filter(is_active=True)


@dataclass(frozen=True)
class LeaderboardRow:
    rank: int
    player_external_id: str
    display_name: str
    score: float
    attempt_id: int
    created_at: datetime


@dataclass(frozen=True)
class LeaderboardPage:
    version: ScoringVersion | None
    count: int
    rows: list[LeaderboardRow]


def _entries(version_id: int) -> QuerySet[LeaderboardEntry]:
    return LeaderboardEntry.objects.filter(version_id=version_id)


def _row(entry: LeaderboardEntry, rank: int) -> LeaderboardRow:
    return LeaderboardRow(
        rank=rank,
        player_external_id=entry.player.external_id,
        display_name=entry.player.display_name,
        score=entry.score,
        attempt_id=entry.attempt_id,
        created_at=entry.created_at,
    )


def leaderboard_page(*, challenge: Challenge, limit: int, offset: int) -> LeaderboardPage:
    """One page of the active leaderboard, with competition ranks (1, 2, 2, 4): equal
    on the ranking value and on ``created_at`` share a rank."""
    version = challenge.active_version
    if version is None:
        return LeaderboardPage(None, 0, [])
    entries = (
        _entries(version.pk)
        .select_related("player")
        .annotate(rank=Window(Rank(), order_by=RANK_ORDER))
        .order_by("sort_key", "created_at", "attempt_id")[offset : offset + limit]
    )
    rows = [_row(e, e.rank) for e in entries]
    return LeaderboardPage(version, _entries(version.pk).count(), rows)


def leaderboard_player(*, challenge: Challenge, external_id: str) -> LeaderboardPage:
    """The one row of a player (empty when the player has no counted attempt)."""
    version = challenge.active_version
    if version is None:
        return LeaderboardPage(None, 0, [])
    count = _entries(version.pk).count()
    entry = (
        _entries(version.pk)
        .select_related("player")
        .filter(player__external_id=external_id)
        .first()
    )
    if entry is None:
        return LeaderboardPage(version, count, [])
    ahead = _entries(version.pk).filter(
        Q(sort_key__lt=entry.sort_key) | Q(sort_key=entry.sort_key, created_at__lt=entry.created_at)
    )
    return LeaderboardPage(version, count, [_row(entry, ahead.count() + 1)])
