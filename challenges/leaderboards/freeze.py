"""The board freeze: from ``freeze_at`` until an admin reveals, the public sees the
standings of the attempts recorded before ``freeze_at`` under the active version; staff
and admins see the live board.

The frozen board is a leaderboard of its own, kept like any other: ``LeaderboardEntry``
rows and a ``LeaderboardRanking`` under the *negated* active version id (entries and
rankings carry no foreign-key constraint for this), so every public reader — pages,
ranks, search, exports, charts, the API — reads it unchanged, by id. It is built on the
first frozen read of a version, from that version's scores of the attempts recorded
before the freeze (never their client-given ``created_at``), leaving out what is never
ranked (``exclusions``). Its players are named as they were at the freeze
(``names_at``): a rename after it shows only after the reveal. A rescore or "make active
again" during the freeze changes the active version, hence the board id: the new
version's frozen board is built from its own scores, so a frozen board never mixes
versions. Ingestion after the freeze writes only the live boards; moderation, a change
of ``freeze_at`` and the reveal drop the challenge's frozen boards, and deleted attempts
mark them stale (either way rebuilt at the next read).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from challenges.leaderboards import changes, sql
from challenges.leaderboards import ranking as board_ranking
from challenges.leaderboards.names import names_as_of
from challenges.models import (
    Challenge,
    LeaderboardEntry,
    LeaderboardRanking,
    ScoringVersion,
)
from challenges.permissions import is_staff_member


def is_frozen(challenge: Challenge, now: datetime | None = None) -> bool:
    """Whether the public sees the frozen board now."""
    if challenge.freeze_at is None or challenge.revealed_at is not None:
        return False
    return (now or timezone.now()) >= challenge.freeze_at


def frozen_for(challenge: Challenge, user: Any) -> bool:
    """Whether ``user`` sees the frozen board (staff and admins see the live one)."""
    return is_frozen(challenge) and not is_staff_member(user)


def frozen_id(version_id: int) -> int:
    return -version_id


def names_at(challenge: Challenge, board_id: int | None) -> datetime | None:
    """The moment the names of board ``board_id`` are shown as of: a frozen board's are
    as of the freeze (``leaderboards/names.py``: a rename after it does not show until
    the reveal); None: the names as they are now (a live board)."""
    if board_id is None or board_id >= 0:
        return None
    return challenge.freeze_at


def board_id(*, challenge: Challenge, user: Any) -> int | None:
    """The id of the board ``user`` reads: the active version's, or its frozen board's
    (built first if needed)."""
    if challenge.active_version_id is None:
        return None
    if not frozen_for(challenge, user):
        return challenge.active_version_id
    return frozen_ensure(challenge=challenge)


_FREEZE_LOCK = 0x7F0D  # the advisory-lock namespace of frozen boards being built


def _built(board: int) -> bool:
    """Whether the frozen board is there and whole: a deletion of attempts marks every
    ranking stale (leaderboards/ranking.py), and a stale frozen board may hold an attempt
    that is gone, so it is rebuilt rather than re-ranked."""
    return LeaderboardRanking.objects.filter(version_id=board, stale=False).exists()


def frozen_ensure(*, challenge: Challenge, version_id: int | None = None) -> int:
    """Build the frozen board of the challenge's active version (or of its version
    ``version_id``: a past version's board, ``history``) unless it is there; its id. Its
    ranking row marks it built (a board with no player has one too)."""
    version_id = version_id or challenge.active_version_id
    board = frozen_id(version_id)
    if _built(board):
        return board
    # Wait for the recordings under way (they hold the challenge in share mode): any
    # attempt recorded after this gets a recording time after the freeze.
    with transaction.atomic():
        Challenge.objects.select_for_update().filter(pk=challenge.pk).exists()
    with transaction.atomic():
        sql.advisory_lock(_FREEZE_LOCK, board, wait=True)  # one builder per board
        if _built(board):
            return board
        LeaderboardRanking.objects.filter(version_id=board).delete()
        LeaderboardEntry.objects.filter(version_id=board).delete()
        sql.entries_insert_frozen(board, version_id, challenge.freeze_at)
        board_ranking.ranking_current(version_id=board)
    return board


def frozen_drop(*, challenge_ids: Iterable[int]) -> None:
    """Drop the frozen boards of these challenges (rebuilt at the next frozen read)."""
    challenge_ids = list(challenge_ids)
    versions = ScoringVersion.objects.filter(challenge_id__in=challenge_ids)
    boards = [frozen_id(pk) for pk in versions.values_list("pk", flat=True)]
    if boards:
        LeaderboardRanking.objects.filter(version_id__in=boards).delete()
        LeaderboardEntry.objects.filter(version_id__in=boards).delete()
        changes.board_touch(challenge_ids=challenge_ids)


def last_activity(challenge: Challenge, newest: datetime | None) -> datetime | None:
    """The newest activity the frozen board may show: none after the freeze."""
    if newest is None or challenge.freeze_at is None:
        return newest
    return min(newest, challenge.freeze_at)


def card_frozen(*, card: Challenge) -> None:
    """A challenge card (``selectors.challenge_cards``) as of the freeze: its leader and
    ranked players from the frozen board, no activity after the freeze."""
    board = frozen_ensure(challenge=card)
    leader = (
        LeaderboardEntry.objects.filter(version_id=board)
        .order_by("sort_key", "created_at", "attempt_id")
        .values_list("player_id", "score")
        .first()
    )
    card.leader_name, card.leader_score = None, None
    if leader is not None:
        named = names_as_of(player_ids=[leader[0]], at=card.freeze_at)
        card.leader_name, card.leader_score = named.get(leader[0]), leader[1]
    card.players = board_ranking.ranking_current(version_id=board).entries
    card.last_activity = last_activity(card, card.last_activity)


class RevealRefused(ValueError):
    """Nothing to reveal: no freeze has begun, or it was revealed already."""


@transaction.atomic
def board_reveal(*, challenge: Challenge, by: Any = None) -> Challenge:
    """End the freeze: the public sees the live board again (until ``freeze_at``
    changes, which starts a new freeze)."""
    from challenges.audit import Kind, audit_record

    challenge = Challenge.objects.select_for_update().get(pk=challenge.pk)
    if challenge.freeze_at is None:
        raise RevealRefused("This challenge has no freeze to reveal (freeze_at is empty).")
    if challenge.revealed_at is not None:
        raise RevealRefused(
            f"The board was revealed already ({challenge.revealed_at:%Y-%m-%d %H:%M} UTC)."
        )
    if not is_frozen(challenge):
        raise RevealRefused("The freeze has not begun yet (freeze_at is in the future).")
    challenge.revealed_at = timezone.now()
    challenge.save(update_fields=["revealed_at", "updated_at"])
    frozen_drop(challenge_ids=[challenge.pk])
    audit_record(
        kind=Kind.REVEAL,
        by=by,
        challenge=challenge,
        before={"revealed_at": None},
        after={"revealed_at": challenge.revealed_at},
    )
    return challenge
