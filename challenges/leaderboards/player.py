"""Selector for a player's public page in one challenge: their leaderboard row (rank and
best attempt) and their attempt history under the active version, a page at a time."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from challenges.leaderboards import exclusions, freeze
from challenges.leaderboards.names import names_as_of
from challenges.leaderboards.score_columns import public_details
from challenges.leaderboards.selectors import BREAKDOWN_FIELDS, LeaderboardRow, leaderboard_player
from challenges.models import Attempt, AttemptScore, Challenge, Player

HISTORY_PAGE = 25


@dataclass(frozen=True)
class HistoryItem:
    """One attempt as the public sees it: its metrics, the active version's score (None:
    it does not count under the strategy, or its scorer failed) and the public part of
    the scorer's details (never its error)."""

    attempt_id: int
    created_at: datetime
    metrics: dict[str, Any]
    score: float | None
    details: Any
    counts: bool  # the attempt that ranks the player


@dataclass(frozen=True)
class PlayerPage:
    player: Player
    row: LeaderboardRow | None  # None: no attempt of theirs counts
    ranked: int  # players on the leaderboard
    attempts: int  # all of the player's attempts at the challenge
    items: list[HistoryItem]
    page: int
    pages: int


def player_page(
    *, challenge: Challenge, external_id: str, page: int = 1, user: Any = None
) -> PlayerPage | None:
    """The player's page as ``user`` may see it, newest attempts first; None when the
    player has no attempt at this challenge, does not exist, or is hidden from it.
    Hidden attempts are left out (practice ones stay: they are the player's own); while
    the board is frozen for ``user``, so are attempts recorded after the freeze, the
    rank is the frozen board's and the player's name as of the freeze."""
    player = Player.objects.filter(external_id=external_id).first()
    if player is None or exclusions.player_is_hidden(
        challenge_id=challenge.pk, player_id=player.pk
    ):
        return None
    attempts = Attempt.objects.filter(challenge=challenge, player=player, hidden=False)
    if freeze.frozen_for(challenge, user):
        attempts = attempts.filter(recorded_at__lt=challenge.freeze_at)
        # Named as on the frozen board (this copy of the player is never saved).
        named = names_as_of(player_ids=[player.pk], at=challenge.freeze_at)
        player.display_name = named.get(player.pk, player.display_name)
    total = attempts.count()
    if total == 0:
        return None
    pages = max(1, -(-total // HISTORY_PAGE))
    page = min(max(page, 1), pages)
    board = leaderboard_player(
        challenge=challenge,
        external_id=external_id,
        board_id=freeze.board_id(challenge=challenge, user=user),
    )
    row = board.rows[0] if board.rows else None
    fields = ("pk", "created_at", *(f.split("__")[1] for f in BREAKDOWN_FIELDS))
    shown = list(
        attempts.order_by("-created_at", "-pk").values(*fields)[
            (page - 1) * HISTORY_PAGE : page * HISTORY_PAGE
        ]
    )
    scores = {}
    if challenge.active_version_id is not None:
        scores = {
            s["attempt_id"]: s
            for s in AttemptScore.objects.filter(
                version_id=challenge.active_version_id, attempt_id__in=[a["pk"] for a in shown]
            ).values("attempt_id", "score", "details")
        }
    items = []
    for a in shown:
        scored = scores.get(a["pk"], {})
        details = scored.get("details")
        if isinstance(details, dict):  # no scorer's error (another scorer's included)
            details = public_details(details)
        items.append(
            HistoryItem(
                attempt_id=a["pk"],
                created_at=a["created_at"],
                metrics={f: a[f] for f in fields[2:]},
                score=scored.get("score"),
                details=details,
                counts=row is not None and row.attempt_id == a["pk"],
            )
        )
    return PlayerPage(player, row, board.count, total, items, page, pages)
