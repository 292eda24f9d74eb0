"""Ranks without scanning: checkpoints every PAGE rows of a version's leaderboard.

A leaderboard of 100,000 players cannot be ranked per request (a window over every row,
or a large OFFSET, costs tens of milliseconds). Instead a ``LeaderboardRanking`` row
keeps every PAGE-th entry in rank order: its ranking key and its competition rank. A
page is one index range read from its checkpoint; a player's rank is a checkpoint plus
at most PAGE rows.

Checkpoints go stale when entries change. Writers (ingestion, rescoring) know nothing
of this module: an entry they insert or improve holds an attempt other than the one it
was ranked with (````unranked``, a small partial index), and the next reader that
sees such a row recomputes the checkpoints (one ordered pass over the rank index, a few
tens of milliseconds for 100,000 players). Deleted entries leave no row behind: the
``post_delete`` receivers below mark rankings stale instead.

Each process keeps the parsed checkpoints of the rankings it has read, by token, so a
request pays one small query to learn that they are still current.
"""

from __future__ import annotations

import bisect
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Exists, F
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.utils import timezone

from challenges import enqueue
from challenges.leaderboards import changes, sql
from challenges.models import Attempt, LeaderboardEntry, LeaderboardRanking, Player

PAGE = 50  # rows between checkpoints: the public page size
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
ONE_US = timedelta(microseconds=1)

# A ranking key: (sort_key, created_at in epoch microseconds, attempt_id). Rank order is
# ascending on it; rows equal on the first two share a competition rank.
Key = tuple[float, int, int]


def to_us(value: datetime) -> int:
    return (value - EPOCH) // ONE_US


def from_us(value: int) -> datetime:
    return EPOCH + timedelta(microseconds=value)


@dataclass(frozen=True)
class Ranking:
    """The checkpoints of one version's leaderboard, as of ``computed_at``."""

    version_id: int
    token: str
    entries: int
    keys: list[Key]  # keys[j] is the key of the row at place j * PAGE (0-based)
    ranks: list[int]  # its competition rank
    computed_at: datetime
    lineage: str  # LeaderboardRanking.lineage (its own token for a row that has none)

    def checkpoint_before(self, key: Key) -> int:
        """Index of the last checkpoint at or before ``key`` (0 when there is none)."""
        return max(0, bisect.bisect_right(self.keys, key) - 1)


def assign_ranks(ties: list[tuple[float, datetime]], *, place: int, rank: int) -> list[int]:
    """Competition ranks of consecutive rows in rank order, given as their (sort_key,
    created_at), whose first row is at 0-based ``place`` with rank ``rank``: rows equal
    on both share a rank."""
    ranks = []
    for offset, tie in enumerate(ties):
        if offset and tie != ties[offset - 1]:
            rank = place + offset + 1
        ranks.append(rank)
    return ranks


# --- reading and recomputing ------------------------------------------------------------
_loaded: dict[int, Ranking] = {}  # version id -> the last ranking this process parsed


class State(NamedTuple):
    """What a reader checks: the ranking's token (None: never ranked), whether it is
    marked stale, and whether any entry changed since."""

    token: str | None
    stale: bool | None
    changed: bool


def ranking_state(*, version_id: int) -> State:
    changed = LeaderboardEntry.objects.filter(version_id=version_id, unranked=True)
    found = (
        LeaderboardRanking.objects.filter(version_id=version_id)
        .annotate(changed=Exists(changed))
        .values_list("token", "stale", "changed")
        .first()
    )
    return State(*found) if found else State(None, None, False)


def ranking_current(*, version_id: int, state: State | None = None) -> Ranking:
    """The version's checkpoints, recomputed first when its entries changed. ``state``:
    as just read by the caller (e.g. with the challenge, saving a query), or read here."""
    if state is None:
        state = ranking_state(version_id=version_id)
    if state.token is None or state.stale:
        return _recompute(version_id)
    if state.changed:
        # Under steady ingestion every write changes an entry: recompute at most once per
        # PODIUM_RANKING_MAX_AGE_MS, not on every read (ranks and page boundaries may lag
        # the newest attempts by that long; deletions are never served stale). Past that
        # age a worker recomputes (``_refresh_request``) while readers keep the ranking
        # they have, up to REFRESH_WAIT times the age; only then does a reader recompute.
        kept = ranking_reusable(version_id=version_id, token=state.token)
        return kept if kept is not None else _recompute(version_id, max_age=_max_age())
    cached = _loaded.get(version_id)
    if cached is not None and cached.token == state.token:
        return cached
    return _remember(LeaderboardRanking.objects.get(version_id=version_id))


def _max_age() -> timedelta:
    return timedelta(milliseconds=settings.PODIUM_RANKING_MAX_AGE_MS)


def reuse_bound() -> timedelta:
    """How long after its computation a changed ranking may still be served (and what
    was built from it): PODIUM_RANKING_MAX_AGE_MS × REFRESH_WAIT."""
    return _max_age() * REFRESH_WAIT


def ranking_reusable(*, version_id: int, token: str) -> Ranking | None:
    """The ranking ``token`` of the version if it may be served although entries changed
    since: computed less than ``PODIUM_RANKING_MAX_AGE_MS`` × REFRESH_WAIT ago; else
    None. No query when this process holds it; one plain read (no lock) the first time
    it meets a ranking another process computed (a worker's refresh, say). Past the age
    itself it also asks a worker to recompute it (once per ranking)."""
    max_age = _max_age()
    if not max_age:
        return None
    cached = _loaded.get(version_id)
    if cached is None or cached.token != token:
        row = LeaderboardRanking.objects.filter(
            version_id=version_id, token=token, stale=False
        ).first()
        if row is None:  # replaced or marked stale meanwhile
            return None
        cached = _remember(row)
    now = timezone.now()
    age = now - cached.computed_at
    if age >= max_age:
        seen_token, until = _steady.get(version_id, ("", now))
        if seen_token != token or now >= until:
            steady_until = _steady_until(version_id, max_age)
            if steady_until is None:
                return None  # an idle board's new attempt: shown on this read
            _refresh_request(version_id, token, max_age)
            _steady[version_id] = (token, steady_until)
    return cached if age < reuse_bound() else None


# version id -> (the ranking token, until when): this process saw the board's newest two
# attempts recorded less than PODIUM_RANKING_MAX_AGE_MS apart, and asked for a refresh.
# Until the newest + that age no attempt can come after a quiet (it would be within the
# age of the newest): under steady ingestion a reader asks again about once per age,
# not on every read.
_steady: dict[int, tuple[str, datetime]] = {}


def _steady_until(version_id: int, max_age: timedelta) -> datetime | None:
    """None when the board's newest attempt came with no other write in the
    PODIUM_RANKING_MAX_AGE_MS before it: an idle board shows it on the next read (the
    lag is for steady ingestion, where recomputing on every read is what it spares).
    Else when a new attempt could first be one that came after a quiet."""
    newest = sql.last_two_recorded(version_id)
    if len(newest) < 2 or newest[0] - newest[1] >= max_age:
        return None
    return newest[0] + max_age


# Past PODIUM_RANKING_MAX_AGE_MS a changed ranking is recomputed by a worker: readers
# keep the one they have meanwhile, for at most this many times that age (a busy or
# absent worker), after which a reader recomputes it itself.
REFRESH_WAIT = 5


def _refresh_request(version_id: int, token: str, max_age: timedelta) -> None:
    seconds = max(1, round((max_age * REFRESH_WAIT).total_seconds()))
    if not cache.add(f"podium:ranking-refresh:{version_id}:{token}", 1, timeout=seconds):
        return  # asked already
    enqueue.ranking_refresh(version_id=version_id)  # refused: a reader recomputes later


def ranking_refresh(*, version_id: int) -> None:
    """Recompute a changed ranking (a worker, after ``_refresh_request``); nothing when
    it was recomputed less than PODIUM_RANKING_MAX_AGE_MS ago."""
    _recompute(version_id, max_age=_max_age())


def _remember(row: LeaderboardRanking) -> Ranking:
    keys = [(c[0], c[1], c[2]) for c in row.checkpoints]
    ranking = Ranking(
        version_id=row.version_id,
        token=row.token,
        entries=row.entries,
        keys=keys,
        ranks=[c[3] for c in row.checkpoints],
        computed_at=row.computed_at,
        lineage=row.lineage or row.token,
    )
    _loaded[row.version_id] = ranking
    return ranking


def _recompute(version_id: int, *, max_age: timedelta | None = None) -> Ranking:
    """Recompute the checkpoints. ``max_age`` (entries changed, nothing deleted): a
    ranking computed that recently, by another request while this one waited for the
    row, is used as it is; under steady ingestion entries change between any two
    reads, and readers queued behind one recomputation would each do another."""
    with transaction.atomic():
        row, created = LeaderboardRanking.objects.select_for_update().get_or_create(
            version_id=version_id, defaults={"token": "", "computed_at": timezone.now()}
        )
        entries = LeaderboardEntry.objects.filter(version_id=version_id)
        changed = entries.filter(unranked=True)
        usable = not created and not row.stale and row.token
        if usable and max_age and timezone.now() - row.computed_at < max_age:
            return _remember(row)  # recomputed by another request while we waited
        if usable and not changed.exists():
            return _remember(row)  # another request recomputed it while we waited
        # Mark first, then read: every row marked here is in the read below (a later
        # statement sees at least as much); a row changed after the mark stays unranked
        # and makes the next reader recompute again.
        changed.update(ranked_attempt_id=F("attempt_id"))
        found = sql.checkpoint_rows(version_id, PAGE)
        checkpoints = []
        for sort_key, created_at, attempt_id, place, tied in found:
            if place % PAGE:
                continue  # the last row, read for the count only
            rank = place + 1
            if tied:  # the tie group started before this row: it shares that rank
                rank -= entries.filter(
                    sort_key=sort_key, created_at=created_at, attempt_id__lt=attempt_id
                ).count()
            checkpoints.append([sort_key, to_us(created_at), attempt_id, rank])
        row.checkpoints = checkpoints
        row.entries = found[-1][3] + 1 if found else 0
        lost_rows = created or row.stale or not row.token or not row.lineage
        row.token = uuid.uuid4().hex
        if lost_rows:
            row.lineage = row.token
        row.stale = False
        row.computed_at = timezone.now()
        row.save()
    return _remember(row)


# --- deletions ----------------------------------------------------------------------------
# A deleted attempt or player takes its leaderboard entries with it (a cascade), leaving
# no unranked row to notice: mark every ranking stale once the deletion commits (one
# update per transaction, however many attempts a challenge's deletion removes).
class _MarkStale:
    """The on-commit update; ``pending`` until it ran (a transaction registers one)."""

    def __init__(self) -> None:
        self.pending = True

    def __call__(self) -> None:
        self.pending = False
        LeaderboardRanking.objects.filter(stale=False).update(stale=True)


@receiver(post_delete, sender=Attempt, dispatch_uid="podium-ranking-attempt-deleted")
@receiver(post_delete, sender=Player, dispatch_uid="podium-ranking-player-deleted")
def _entries_deleted(sender: type, **kwargs: Any) -> None:
    using = kwargs.get("using") or "default"
    registered = transaction.get_connection(using).run_on_commit
    if not any(isinstance(func, _MarkStale) and func.pending for _, func, _ in registered):
        transaction.on_commit(_MarkStale(), using=using)


# --- renames ------------------------------------------------------------------------------
# A renamed player changes what the rows of every live board holding them show, with no
# entry changed: the rankings of those boards are marked stale once the rename commits, so
# that a reader holding rows by ranking token (``selectors.board_settled``) reads them
# again. Frozen boards (negative ids) are left alone: they name players as of their
# freeze, which every frozen board's is before now (``leaderboards/names.py``).
def rankings_renamed(*, player_ids: list[int]) -> None:
    """Mark stale, on commit, the rankings of the live boards where these players have
    an entry (call after renaming them)."""
    if not player_ids:
        return
    ids = list(player_ids)

    def mark() -> None:
        boards = LeaderboardEntry.objects.filter(player_id__in=ids, version_id__gt=0).values(
            "version_id"
        )
        LeaderboardRanking.objects.filter(stale=False, version_id__in=boards).update(stale=True)
        played = Attempt.objects.filter(player_id__in=ids).values_list("challenge_id", flat=True)
        changes.board_touch(challenge_ids=set(played))  # a name on a top 10 may change

    transaction.on_commit(mark)


@receiver(post_save, sender=Player, dispatch_uid="podium-ranking-player-saved")
def _player_saved(sender: type, instance: Player, created: bool, **kwargs: Any) -> None:
    # An admin's edit of a player (ingestion renames through rankings_renamed).
    if not created:
        rankings_renamed(player_ids=[instance.pk])
