"""History records: what a switch of the active version did to a challenge's board.

A record compares two boards (the entries of the version that was active and of the one
that replaces it; for a batch run, the same version's entries before and after). Entries
already leave out practice attempts, hidden attempts and hidden players
(``exclusions``), and QA results never make an entry, so neither does a record. Each
board is one ordered read of its rank index; the rest is linear in the players, but for
Kendall's tau-b (a merge sort, O(n log n)).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right, insort
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from challenges.leaderboards import exclusions, freeze, ranking, selectors, sql
from challenges.leaderboards.names import names_now
from challenges.models import Challenge, HistoryDue, HistoryRecord, ScoringVersion

TOP = 10  # k of "entered / left the top k"
LARGEST = 10  # players listed under largest_moves
MAX_NUMBER = 2**31 - 1  # a version number the database can hold

Board = list[tuple[Any, ...]]  # (player_id, sort_key, created_at) in rank order


def competition_ranks(rows: Board) -> dict[int, int]:
    """player_id → competition rank; rows equal on (sort_key, created_at) share one, as
    on the public board (``ranking``)."""
    ranks: dict[int, int] = {}
    previous: tuple[Any, Any] | None = None
    rank = 0
    for place, (player_id, sort_key, created_at) in enumerate(rows, start=1):
        if (sort_key, created_at) != previous:
            rank, previous = place, (sort_key, created_at)
        ranks[player_id] = rank
    return ranks


def _tie_pairs(values: Iterable[Any]) -> int:
    """Pairs of equal values (a C-level count: no Python step per value)."""
    return sum(k * (k - 1) // 2 for k in Counter(values).values() if k > 1)


SWAP_BLOCK = 2048  # values counted by insertion before the merge passes


def _swaps(values: list[int]) -> int:
    """Inversions (pairs i < j with values[i] > values[j]), O(n log n): counted by
    insertion within blocks (``insort`` moves a few kilobytes), then per merge pass
    between neighbouring sorted blocks with ``bisect`` mapped in C."""
    total = 0
    blocks = []
    for start in range(0, len(values), SWAP_BLOCK):
        seen: list[int] = []
        for placed, value in enumerate(values[start : start + SWAP_BLOCK]):
            total += placed - bisect_right(seen, value)
            insort(seen, value)
        blocks.append(seen)
    while len(blocks) > 1:
        merged = []
        for i in range(0, len(blocks) - 1, 2):
            left, right = blocks[i], blocks[i + 1]
            total += len(left) * len(right) - sum(map(partial(bisect_right, left), right))
            left.extend(right)
            left.sort()  # two runs: timsort merges them in linear time
            merged.append(left)
        if len(blocks) % 2:
            merged.append(blocks[-1])
        blocks = merged
    return total


def kendall_tau_b(pairs: Sequence[tuple[int, int]]) -> float | None:
    """Kendall's tau-b of (x, y) pairs (Knight's O(n log n) algorithm, in the same terms
    as ``scipy.stats.kendalltau``); None when fewer than 2 pairs or a constant side."""
    return _tau_sorted(sorted(pairs))


def _tau_sorted(ordered: Sequence[tuple[int, int]]) -> float | None:
    """``kendall_tau_b`` of pairs already sorted by (x, y)."""
    n = len(ordered)
    if n < 2:
        return None
    total = n * (n - 1) // 2
    x_ties = _tie_pairs(x for x, _ in ordered)
    joint_ties = _tie_pairs(ordered)
    ys = [y for _, y in ordered]
    y_ties = _tie_pairs(ys)
    if total == x_ties or total == y_ties:
        return None
    discordant = _swaps(ys)  # pairs tied on x are sorted by y: no swap among them
    agree = total - x_ties - y_ties + joint_ties - 2 * discordant
    tau = agree / math.sqrt(total - x_ties) / math.sqrt(total - y_ties)
    return min(1.0, max(-1.0, tau))


@dataclass(frozen=True)
class Diff:
    players_before: int
    players_after: int
    moved: int
    entered_top: list[tuple[int, int | None, int]]  # (player_id, rank before, rank after)
    left_top: list[tuple[int, int, int | None]]
    largest_moves: list[tuple[int, int, int]]
    kendall_tau: float | None


def pairs_of(before: Board, after: Board) -> list[tuple[int | None, int | None, int]]:
    """``sql.board_pairs`` in Python, from two boards' rows in rank order."""
    old, new = competition_ranks(before), competition_ranks(after)
    pairs = [(r, new.get(p), p) for p, r in old.items()]
    pairs.sort(key=lambda t: (t[0], t[1] is None, t[1] or 0))
    pairs.extend((None, r, p) for p, r in new.items() if p not in old)
    return pairs


def pairs_diff(pairs: Sequence[tuple[Any, Any, int]]) -> Diff:
    """Everything a record says, from (rank before, rank after, player) of every player
    on either board, those ranked before first by (rank before, rank after)."""
    both = [(b, a) for b, a, _ in pairs if b is not None and a is not None]
    entered = [
        (p, b, a) for b, a, p in pairs if a is not None and a <= TOP and (b or TOP + 1) > TOP
    ]
    left = [(p, b, a) for b, a, p in pairs if b is not None and b <= TOP and (a or TOP + 1) > TOP]
    moves = heapq.nsmallest(
        LARGEST,
        ((-abs(b - a), a, p, b) for b, a, p in pairs if b is not None and a is not None and b != a),
    )
    return Diff(
        players_before=sum(1 for b, _, _ in pairs if b is not None),
        players_after=sum(1 for _, a, _ in pairs if a is not None),
        moved=sum(1 for b, a in both if b != a),
        entered_top=sorted(entered, key=lambda e: (e[2], e[0])),
        left_top=sorted(left, key=lambda e: (e[1], e[0])),
        largest_moves=[(p, b, a) for _, a, p, b in moves],
        kendall_tau=_tau_sorted(both),
    )


def board_diff(before: Board, after: Board) -> Diff:
    """Everything a record says about two boards, from their rows in rank order."""
    return pairs_diff(pairs_of(before, after))


def _named(items: list[tuple[int, Any, Any]]) -> list[dict[str, Any]]:
    names = names_now(player_ids={item[0] for item in items})
    return [
        {
            "player_id": pk,
            "external_id": names[pk][0],
            "display_name": names[pk][1],
            "rank_before": before,
            "rank_after": after,
        }
        for pk, before, after in items
        if pk in names
    ]


def history_record(
    *,
    challenge: Challenge,
    version: ScoringVersion,
    previous_version_id: int | None,
    reason: str,
    before: Board | None = None,
    switched_at: datetime | None = None,
) -> HistoryRecord:
    """Write the record of a switch to ``version`` from ``previous_version_id`` (call
    after the new board is complete). ``before``: a snapshot of the board before, when
    it is not kept (a batch run's)."""
    if before is None:  # both boards kept: ranked and joined in SQL
        diff = pairs_diff(sql.board_pairs(previous_version_id or 0, version.pk))
    else:  # the board before is gone (a batch run rewrote it): its snapshot
        diff = board_diff(before, sql.board_order(version.pk))
    return _record_create(
        diff,
        challenge_id=challenge.pk,
        version_id=version.pk,
        previous_version_id=previous_version_id,
        reason=reason,
        switched_at=switched_at or timezone.now(),
    )


def _record_create(diff: Diff, **fields: Any) -> HistoryRecord:
    return HistoryRecord.objects.create(
        **fields,
        players_before=diff.players_before,
        players_after=diff.players_after,
        moved=diff.moved,
        entered_top=_named(diff.entered_top),
        left_top=_named(diff.left_top),
        largest_moves=_named(diff.largest_moves),
        kendall_tau=diff.kendall_tau,
    )


def record_due(
    *,
    challenge: Challenge,
    version: ScoringVersion,
    previous_version_id: int | None,
    reason: str,
    switched_at: datetime,
) -> HistoryDue:
    """In the switch's transaction: note that its record is to be written (both boards
    are kept, so it can be computed after the switch commits, outside its lock). The
    caller then calls ``records_write_due`` once its transaction has committed."""
    return HistoryDue.objects.create(
        challenge_id=challenge.pk,
        version_id=version.pk,
        previous_version_id=previous_version_id,
        reason=reason,
        switched_at=switched_at,
    )


def records_write_due(*, challenge_id: int | None = None, older_than_s: float = 0) -> list[int]:
    """Write the records of switches that are due (of one challenge, or all), each
    computed outside any transaction, then stored and its due row removed in one short
    transaction; a due row another process has just written (or is writing) is
    skipped. Returns the ids of the records this call wrote."""
    dues = HistoryDue.objects.order_by("pk")
    if challenge_id is not None:
        dues = dues.filter(challenge_id=challenge_id)
    if older_than_s:
        dues = dues.filter(switched_at__lte=timezone.now() - timedelta(seconds=older_than_s))
    written: list[int] = []
    for due in list(dues):
        diff = pairs_diff(sql.board_pairs(due.previous_version_id or 0, due.version_id))
        with transaction.atomic():
            mine = HistoryDue.objects.select_for_update(skip_locked=True).filter(pk=due.pk)
            if not mine.exists():
                continue  # written by another process meanwhile
            record = _record_create(
                diff,
                challenge_id=due.challenge_id,
                version_id=due.version_id,
                previous_version_id=due.previous_version_id,
                reason=due.reason,
                switched_at=due.switched_at,
            )
            mine.delete()
        written.append(record.pk)
    return written


# --- public reads ---------------------------------------------------------------------------
def _visible(challenge: Challenge, user: Any) -> QuerySet[HistoryRecord]:
    """The records ``user`` may read: during a freeze the public sees none of a switch
    made after it (computed from boards holding post-freeze attempts) until the reveal."""
    records = HistoryRecord.objects.filter(challenge_id=challenge.pk)
    if freeze.frozen_for(challenge, user):
        records = records.filter(switched_at__lt=challenge.freeze_at)
    return records


def history_stamp(*, challenge: Challenge, user: Any) -> tuple[Any, ...]:
    """Names everything ``history_public`` returns for ``user``, in one small query: the
    records they may read (append-only: how many and the newest) and who is hidden
    (hides are added with a higher id or removed: how many and the highest id name the
    set). What is built from the records (the page, the API answer) is kept under it."""
    before = challenge.freeze_at if freeze.frozen_for(challenge, user) else _NEVER
    return sql.history_stamp(challenge.pk, before)


_NEVER = datetime(9999, 12, 31, tzinfo=UTC)  # no freeze: every record is readable


def history_public(*, challenge: Challenge, user: Any) -> list[HistoryRecord]:
    """The challenge's records, newest first, as ``user`` may read them: players hidden
    since a record was written are left out of its lists (its counts were made without
    the players hidden then)."""
    records = list(_visible(challenge, user).select_related("version", "previous_version"))
    named = {
        item["player_id"]
        for record in records
        for item in (*record.entered_top, *record.left_top, *record.largest_moves)
    }
    hidden = exclusions.hidden_player_ids(challenge_id=challenge.pk, player_ids=named)
    if hidden:
        for record in records:
            for field in ("entered_top", "left_top", "largest_moves"):
                kept = [i for i in getattr(record, field) if i["player_id"] not in hidden]
                setattr(record, field, kept)
    return records


class VersionBoard:
    """A version's board as a reader may read it. ``token``: the ranking token that
    names every row while nothing changed since its ranking (what is built from the
    rows may be kept under it), None otherwise. The version itself is read when a
    build asks for it: a kept read needs only its id."""

    def __init__(self, *, version_id: int, board_id: int, current: bool, token: str | None):
        self.version_id = version_id
        self.board_id = board_id  # the version's entries, or its frozen board during a freeze
        self.current = current
        self.token = token
        self._version: ScoringVersion | None = None

    @property
    def version(self) -> ScoringVersion:
        if self._version is None:
            self._version = ScoringVersion.objects.get(pk=self.version_id)
        return self._version


def version_board(*, challenge: Challenge, number: int, user: Any) -> VersionBoard | None:
    """Version ``number``'s board as ``user`` may read it; None when the version was
    never the active one publicly (or does not exist). One round trip on the common
    read (sql.version_board); a frozen board is made first when it is missing."""
    if not 1 <= number <= MAX_NUMBER:
        return None
    frozen = freeze.frozen_for(challenge, user)
    before = challenge.freeze_at if frozen else _NEVER
    found = sql.version_board(challenge.pk, number, before)
    if found is None:
        return None
    version_id, was_public, token, stale, changed = found
    current = version_id == challenge.active_version_id
    if not (current or was_public):
        return None
    if frozen:
        board = freeze.frozen_ensure(challenge=challenge, version_id=version_id)
        return VersionBoard(
            version_id=version_id, board_id=board, current=current, token=board_token(board)
        )
    kept = token if token and not stale and not changed else None
    return VersionBoard(version_id=version_id, board_id=version_id, current=current, token=kept)


def board_token(board_id: int) -> str | None:
    """The ranking token that names every row of a version's (or frozen) board while no
    entry changed since its ranking and nothing marked it stale (a hide, a rename):
    what is built from the rows may be kept under it. None: read the rows."""
    state = ranking.ranking_state(version_id=board_id)
    return state.token if state.token and not state.stale and not state.changed else None


@dataclass(frozen=True)
class VersionRank:
    number: int
    rank: int | None  # None: not ranked under that version
    current: bool


def player_version_ranks(*, challenge: Challenge, external_id: str, user: Any) -> list[VersionRank]:
    """A player's rank under each version that was the active one publicly, newest
    version first (each read from that version's board as ``user`` may see it)."""
    numbers = {challenge.active_version.number} if challenge.active_version else set()
    for version, previous in _visible(challenge, user).values_list(
        "version__number", "previous_version__number"
    ):
        numbers.update(n for n in (version, previous) if n is not None)
    found = []
    for number in sorted(numbers, reverse=True):
        board = version_board(challenge=challenge, number=number, user=user)
        if board is None:
            continue
        page = selectors.leaderboard_player(
            challenge=challenge, external_id=external_id, board_id=board.board_id
        )
        found.append(VersionRank(number, page.rows[0].rank if page.rows else None, board.current))
    return found
