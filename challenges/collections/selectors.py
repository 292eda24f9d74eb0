"""Reads of collections: the collections, their member challenges, and their standings
built from each member's public board.

A collection has no board of its own: its rows come from ``leaderboards.selectors``
reading each member challenge's *public* board (the frozen board during a freeze; hidden
players, hidden and practice attempts already left out), so whatever a member's board
shows the public, the collection shows, and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.db.models import Prefetch, QuerySet

from challenges.collections.standings import BoardRow, Cell, Standing, standings_rank
from challenges.leaderboards import freeze
from challenges.leaderboards import ranking as board_ranking
from challenges.leaderboards import selectors as boards
from challenges.leaderboards.kept import kept
from challenges.models import Attempt, Challenge, Collection, CollectionMember
from challenges.text import row_id

METRICS_BATCH = 2000  # attempt ids per query: well under every database's parameter limit


def collection_list() -> QuerySet[Collection]:
    """Every collection, each with its members (``members``, in order, challenges and
    their active versions joined)."""
    members = CollectionMember.objects.select_related("challenge__active_version").order_by(
        "position", "id"
    )
    return Collection.objects.prefetch_related(Prefetch("members", queryset=members))


def collection_by_id(pk: Any) -> Collection | None:
    pk = row_id(pk)
    return None if pk is None else collection_list().filter(pk=pk).first()


def collection_by_slug(slug: str) -> Collection | None:
    return collection_list().filter(slug=slug).first()


def collection_challenges(collection: Collection) -> list[Challenge]:
    """The member challenges the public sees, in order: the active ones (an inactive
    challenge's board is not public, so it is no column and counts for no one)."""
    return [m.challenge for m in collection.members.all() if m.challenge.is_active]


def _cells(board_id: int) -> Iterator[BoardRow]:
    """A public board's rows with their best attempts' metrics, in rank order."""
    rows = list(boards.leaderboard_stream(version_id=board_id))
    for start in range(0, len(rows), METRICS_BATCH):
        batch = rows[start : start + METRICS_BATCH]
        metrics = {
            pk: rest
            for pk, *rest in Attempt.objects.filter(
                pk__in=[r.attempt_id for r in batch]
            ).values_list("pk", "succeeded", "elapsed_ms", "tokens_total", "rating")
        }
        for r in batch:
            succeeded, elapsed_ms, tokens_total, rating = metrics[r.attempt_id]
            cell = Cell(
                rank=r.rank,
                score=r.score,
                attempt_id=r.attempt_id,
                created_at=r.created_at,
                succeeded=bool(succeeded),
                elapsed_ms=elapsed_ms,
                tokens_total=tokens_total,
                rating=rating,
            )
            yield BoardRow(r.player_external_id, r.display_name, cell)


@dataclass(frozen=True)
class CollectionBoard:
    """A collection's standings: its public member challenges (the columns, in order)
    and every ranked player."""

    collection: Collection
    challenges: list[Challenge]
    standings: list[Standing]

    def page(self, *, limit: int, offset: int) -> list[Standing]:
        return self.standings[offset : offset + limit]

    def player(self, external_id: str) -> Standing | None:
        return next((s for s in self.standings if s.player == external_id), None)


def _rows(boards_read: list[int | None]) -> list[list[BoardRow]]:
    return [list(_cells(board)) if board is not None else [] for board in boards_read]


# Standings by what they are computed from: the collection as saved, and per member the
# challenge as saved, the board the public reads and that board's ranking token (every
# change of a board's rows gives its ranking a new token once re-ranked: entries written,
# hides, renames, deletions; so the standings lag new attempts exactly as long as the
# member boards' ranks may, PODIUM_RANKING_MAX_AGE_MS). Kept in the cache and in this
# process (``leaderboards.kept``).
def collection_board(*, collection: Collection) -> CollectionBoard:
    """The collection's standings over its members' public boards, kept until a member
    board's ranking changes."""
    challenges = collection_challenges(collection)
    # The board the public reads of each (its frozen board during a freeze).
    read = [freeze.board_id(challenge=c, user=AnonymousUser()) for c in challenges]
    key = (
        collection.pk,
        collection.updated_at.isoformat(),
        collection.strategy,
        tuple(
            (c.pk, c.updated_at.isoformat(), board, _token(board))
            for c, board in zip(challenges, read, strict=True)
        ),
    )
    build = lambda: standings_rank(strategy=collection.strategy, boards=_rows(read))  # noqa: E731
    ranked = kept("collection-standings", key, build, ttl=3600, local=True)
    return CollectionBoard(collection, challenges, ranked)


def _token(board: int | None) -> str | None:
    return None if board is None else board_ranking.ranking_current(version_id=board).token
