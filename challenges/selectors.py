"""Selectors that read: challenges and leaderboards.

Leaderboards are read through ``ranking`` checkpoints: a page is one index range from
its checkpoint, a rank a checkpoint plus at most a page of rows; nothing scans all the
entries (let alone the attempts) per request.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import (
    Exists,
    F,
    JSONField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
)
from django.db.models.fields.tuple_lookups import TupleGreaterThanOrEqual, TupleLessThanOrEqual

from . import ranking as R
from .models import (
    Attempt,
    AttemptScore,
    Challenge,
    LeaderboardEntry,
    LeaderboardRanking,
    RescoreJob,
    ScoringVersion,
)

RANK_ORDER = (F("sort_key").asc(), F("created_at").asc())
PAGE = R.PAGE
ROW_FIELDS = (
    "sort_key",
    "created_at",
    "attempt_id",
    "score",
    "player__external_id",
    "player__display_name",
)
BREAKDOWN_FIELDS = (
    "attempt__succeeded",
    "attempt__elapsed_ms",
    "attempt__tokens_total",
    "attempt__rating",
)


def challenge_list(*, include_inactive: bool = False) -> QuerySet[Challenge]:
    """Active challenges (the public's view), or all of them."""
    qs = Challenge.objects.select_related("active_version")
    return qs if include_inactive else qs.filter(is_active=True)


def _latest_attempt(field_name: str) -> Subquery:
    latest = Attempt.objects.filter(challenge=OuterRef("pk")).order_by("-id")
    return Subquery(latest.values(field_name)[:1])


def challenge_cards() -> list[Challenge]:
    """Active challenges for the list page, each with ``leader`` (display name, score),
    ``players`` (ranked players) and ``last_activity`` (newest attempt's time). A fixed
    number of queries whatever the number of challenges, once their rankings are
    current."""
    leader = LeaderboardEntry.objects.filter(version_id=OuterRef("active_version_id")).order_by(
        "sort_key", "created_at", "attempt_id"
    )
    challenges = list(
        challenge_list().annotate(
            leader_name=Subquery(leader.values("player__display_name")[:1]),
            leader_score=Subquery(leader.values("score")[:1]),
            last_activity=_latest_attempt("created_at"),
        )
    )
    counts = rankings_entries(version_ids=[c.active_version_id for c in challenges])
    for c in challenges:
        c.players = counts.get(c.active_version_id, 0)
    return challenges


def rankings_entries(*, version_ids: list[int | None]) -> dict[int, int]:
    """Ranked players per version, in one query when every ranking is current (the ones
    that are not are recomputed: rare, and only after their entries changed)."""
    ids = [v for v in version_ids if v is not None]
    changed = LeaderboardEntry.objects.filter(version_id=OuterRef("pk"), unranked=True)
    rows = (
        LeaderboardRanking.objects.filter(pk__in=ids)
        .annotate(changed=Exists(changed))
        .values_list("pk", "entries", "stale", "changed")
    )
    counts = {pk: entries for pk, entries, stale, dirty in rows if not (stale or dirty)}
    for version_id in ids:
        if version_id not in counts:
            counts[version_id] = R.ranking_current(version_id=version_id).entries
    return counts


def challenge_public(*, slug: str) -> Challenge | None:
    """An active challenge by slug, with ``rescoring`` (a rescore job is queued or
    running) and ``last_activity`` (the newest attempt's recording time)."""
    running = RescoreJob.objects.filter(
        challenge=OuterRef("pk"), status__in=RescoreJob.ACTIVE_STATUSES
    )
    return (
        challenge_list()
        .annotate(rescoring=Exists(running), last_activity=_latest_attempt("recorded_at"))
        .filter(slug=slug)
        .first()
    )


# --- leaderboard rows --------------------------------------------------------------------
@dataclass(frozen=True)
class LeaderboardRow:
    rank: int
    player_external_id: str
    display_name: str
    score: float
    attempt_id: int
    created_at: datetime
    # The public page's breakdown: the scorer's details and the attempt's metrics.
    details: Any = None
    metrics: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LeaderboardPage:
    version: ScoringVersion | None
    count: int
    rows: list[LeaderboardRow]


def _entries(version_id: int) -> QuerySet[LeaderboardEntry]:
    return LeaderboardEntry.objects.filter(version_id=version_id)


def _values(queryset: QuerySet, *, version_id: int, breakdown: bool) -> QuerySet:
    if not breakdown:
        return queryset.values(*ROW_FIELDS)
    details = AttemptScore.objects.filter(version_id=version_id, attempt_id=OuterRef("attempt_id"))
    return queryset.annotate(
        details=Subquery(details.values("details")[:1], output_field=JSONField())
    ).values(*ROW_FIELDS, *BREAKDOWN_FIELDS, "details")


def _ties(values: list[dict[str, Any]]) -> list[tuple[float, datetime]]:
    return [(v["sort_key"], v["created_at"]) for v in values]


def _rows(values: list[dict[str, Any]], ranks: list[int]) -> list[LeaderboardRow]:
    return [
        LeaderboardRow(
            rank=rank,
            player_external_id=v["player__external_id"],
            display_name=v["player__display_name"],
            score=v["score"],
            attempt_id=v["attempt_id"],
            created_at=v["created_at"],
            details=v.get("details"),
            metrics={
                name: v[f"attempt__{name}"]
                for name in ("succeeded", "elapsed_ms", "tokens_total", "rating")
                if f"attempt__{name}" in v
            },
        )
        for v, rank in zip(values, ranks, strict=True)
    ]


def _slice(
    ranking: R.Ranking, *, offset: int, limit: int, breakdown: bool = False
) -> list[LeaderboardRow]:
    """Rows at 0-based places [offset, offset + limit), read from their checkpoint."""
    if offset >= ranking.entries or limit <= 0 or not ranking.keys:
        return []
    j = min(offset // PAGE, len(ranking.keys) - 1)
    start = j * PAGE
    queryset = R.rows_from(_entries(ranking.version_id), ranking.keys[j])
    values = list(
        _values(queryset, version_id=ranking.version_id, breakdown=breakdown)[
            : offset - start + limit
        ]
    )
    ranks = R.assign_ranks(_ties(values), place=start, rank=ranking.ranks[j])
    skip = offset - start
    return _rows(values[skip:], ranks[skip:])


def _ranks_of(ranking: R.Ranking, keys: list[R.Key]) -> dict[R.Key, int]:
    """The ranks of entries with these keys: each is a checkpoint plus the rows between,
    read for all of them in one query."""
    if not ranking.keys:
        return {}
    last_in: dict[int, R.Key] = {}
    for key in keys:
        j = ranking.checkpoint_before(key)
        last_in[j] = max(last_in.get(j, key), key)
    ranges = Q()
    for j, last in last_in.items():
        ranges |= R.key_filter(TupleGreaterThanOrEqual, ranking.keys[j]) & R.key_filter(
            TupleLessThanOrEqual, last
        )
    found = list(
        R.rows_from(_entries(ranking.version_id).filter(ranges), None).values_list(
            "sort_key", "created_at", "attempt_id"
        )
    )
    ranks: dict[R.Key, int] = {}
    group, place, rank, previous = -1, 0, 0, None
    for sort_key, created_at, attempt_id in found:
        key = (sort_key, R.to_us(created_at), attempt_id)
        j = ranking.checkpoint_before(key)
        if j != group:  # the first row of a range is its checkpoint
            group, place, rank = j, j * PAGE, ranking.ranks[j]
        else:
            place += 1
            if (sort_key, created_at) != previous:
                rank = place + 1
        previous = (sort_key, created_at)
        ranks[key] = rank
    return ranks


def _place_of(ranking: R.Ranking, key: R.Key) -> int:
    """0-based place of the entry with ``key``."""
    if not ranking.keys:
        return 0
    j = ranking.checkpoint_before(key)
    between = R.rows_between(_entries(ranking.version_id), ranking.keys[j], key)
    return j * PAGE + between.count() - 1


# --- the API's reads ------------------------------------------------------------------
def leaderboard_page(*, challenge: Challenge, limit: int, offset: int) -> LeaderboardPage:
    """One page of the active leaderboard, with competition ranks (1, 2, 2, 4): equal
    on the ranking value and on ``created_at`` share a rank."""
    version = challenge.active_version
    if version is None:
        return LeaderboardPage(None, 0, [])
    ranking = R.ranking_current(version_id=version.pk)
    return LeaderboardPage(version, ranking.entries, _slice(ranking, offset=offset, limit=limit))


def leaderboard_player(*, challenge: Challenge, external_id: str) -> LeaderboardPage:
    """The one row of a player (empty when the player has no counted attempt)."""
    version = challenge.active_version
    if version is None:
        return LeaderboardPage(None, 0, [])
    ranking = R.ranking_current(version_id=version.pk)
    entry = _entries(version.pk).filter(player__external_id=external_id).values(*ROW_FIELDS)
    found = entry.first()
    if found is None:
        return LeaderboardPage(version, ranking.entries, [])
    key = (found["sort_key"], R.to_us(found["created_at"]), found["attempt_id"])
    rank = _ranks_of(ranking, [key]).get(key, 1)
    return LeaderboardPage(version, ranking.entries, _rows([found], [rank]))


# --- the public page --------------------------------------------------------------------
@dataclass(frozen=True)
class Board:
    """What the challenge page shows of its leaderboard."""

    version: ScoringVersion | None
    count: int  # ranked players
    rows: list[LeaderboardRow]
    page: int  # 1-based; 0 for search results
    pages: int
    query: str = ""
    more_matches: bool = False  # a search found more than a page of players
    player: str = ""  # the ?player= asked for
    player_found: bool = False
    ranked_at: datetime | None = None


def board_page(*, challenge: Challenge, page: int = 1, query: str = "", player: str = "") -> Board:
    """A page of the leaderboard (50 rows), a name search (the best-ranked 50 matches),
    or the page holding ``player`` (an external id)."""
    version = challenge.active_version
    if version is None:
        return Board(None, 0, [], 1, 1, query=query, player=player)
    ranking = R.ranking_current(version_id=version.pk)
    pages = max(1, -(-ranking.entries // PAGE))
    common = {"query": query, "player": player, "ranked_at": ranking.computed_at}
    if query:
        matches = _entries(version.pk).filter(player__display_name__icontains=query)
        values = list(
            _values(R.rows_from(matches, None), version_id=version.pk, breakdown=True)[: PAGE + 1]
        )
        more, values = len(values) > PAGE, values[:PAGE]
        keys = [(v["sort_key"], R.to_us(v["created_at"]), v["attempt_id"]) for v in values]
        ranks = _ranks_of(ranking, keys)
        rows = _rows(values, [ranks.get(k, 0) for k in keys])
        return Board(version, ranking.entries, rows, 0, pages, more_matches=more, **common)
    found = False
    if player:
        entry = _entries(version.pk).filter(player__external_id=player)
        key = entry.values_list("sort_key", "created_at", "attempt_id").first()
        if key is not None:
            found = True
            page = _place_of(ranking, (key[0], R.to_us(key[1]), key[2])) // PAGE + 1
    page = min(max(page, 1), pages)
    rows = _slice(ranking, offset=(page - 1) * PAGE, limit=PAGE, breakdown=True)
    return Board(version, ranking.entries, rows, page, pages, player_found=found, **common)


def page_numbers(page: int, pages: int, *, around: int = 2) -> list[int | None]:
    """Page links to show: the first, the last and a window around ``page``; None marks
    a gap ("…")."""
    shown = sorted({1, pages, *range(max(1, page - around), min(pages, page + around) + 1)})
    numbers: list[int | None] = []
    for n in shown:
        if numbers and n - (numbers[-1] or 0) > 1:
            numbers.append(None)
        numbers.append(n)
    return numbers


# --- export and charts ---------------------------------------------------------------------
EXPORT_BATCH = 2000


def leaderboard_stream(*, version_id: int) -> Iterator[LeaderboardRow]:
    """Every row of a version's leaderboard in rank order, read in keyset batches (a
    constant amount of memory, no OFFSET)."""
    key: R.Key | None = None
    place = rank = 0
    previous = None
    while True:
        queryset = R.rows_from(_entries(version_id), key, after=True)
        batch = list(queryset.values(*ROW_FIELDS)[:EXPORT_BATCH])
        for v in batch:
            place += 1
            if (v["sort_key"], v["created_at"]) != previous:
                rank = place
            previous = (v["sort_key"], v["created_at"])
            yield _rows([v], [rank])[0]
        if len(batch) < EXPORT_BATCH:
            return
        last = batch[-1]
        key = (last["sort_key"], R.to_us(last["created_at"]), last["attempt_id"])
