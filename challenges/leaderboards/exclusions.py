"""What a leaderboard leaves out: practice attempts, hidden attempts, hidden players.

Their scores are kept like any other (so an undo brings back exactly what was there);
they are only never made a leaderboard entry. Every writer of entries goes through
``challenges/leaderboards/scores.py``, which asks this module (and whose statements in
``sql.py`` leave the same rows out); every public read of attempts that
does not go through entries (metrics, chart history) filters with ``public_scores`` /
``public_attempts``.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Exists, OuterRef, Q, QuerySet

from challenges.leaderboards import sql
from challenges.models import Attempt, AttemptScore, LeaderboardRanking, PlayerHide


def _hides_of(challenge_id: int) -> QuerySet[PlayerHide]:
    return PlayerHide.objects.filter(Q(challenge_id=challenge_id) | Q(challenge__isnull=True))


HIDES_PROBE_FROM = 20  # players: from this many on, ask first whether anyone is hidden


def hidden_player_ids(*, challenge_id: int, player_ids: Iterable[int]) -> set[int]:
    """Which of these players are hidden from the challenge (one small query)."""
    ids = set(player_ids)
    # Most challenges hide nobody: a small query first spares a list of a thousand ids.
    if not ids or (len(ids) > HIDES_PROBE_FROM and not _hides_of(challenge_id).exists()):
        return set()
    return sql.hidden_among(challenge_id, sorted(ids))


def player_is_hidden(*, challenge_id: int, player_id: int) -> bool:
    """For the player pages: a hidden player's page is a 404 to the public."""
    return _hides_of(challenge_id).filter(player_id=player_id).exists()


def public_attempts(queryset: QuerySet[Attempt], *, challenge_id: int) -> QuerySet[Attempt]:
    """``queryset`` without practice, hidden attempts and hidden players' attempts."""
    hidden = _hides_of(challenge_id).filter(player_id=OuterRef("player_id"))
    return queryset.filter(practice=False, hidden=False).exclude(Exists(hidden))


def public_scores(queryset: QuerySet[AttemptScore], *, challenge_id: int) -> QuerySet[AttemptScore]:
    """``queryset`` of scores without those of practice or hidden attempts or players."""
    hidden = _hides_of(challenge_id).filter(player_id=OuterRef("player_id"))
    return queryset.filter(attempt__practice=False, attempt__hidden=False).exclude(Exists(hidden))


def rankings_invalidate(*, challenge_ids: Iterable[int] | None) -> None:
    """Mark the rankings of these challenges' versions (None: every challenge) stale: the
    next reader recomputes ranks and counts, and every cached page, chart and export
    keyed by the ranking changes with it."""
    rankings = LeaderboardRanking.objects.all()
    if challenge_ids is not None:
        rankings = rankings.filter(version__challenge_id__in=list(challenge_ids))
    rankings.update(stale=True)
