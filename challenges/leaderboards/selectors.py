"""Selectors that read: challenges and leaderboards.

Leaderboards are read through ``ranking`` checkpoints: a page is one index range from
its checkpoint, a rank a checkpoint plus at most a page of rows; nothing scans all the
entries (let alone the attempts) per request.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import (
    Exists,
    F,
    OuterRef,
    QuerySet,
    Subquery,
)

from challenges.leaderboards import ranking as R
from challenges.models import (
    Attempt,
    AttemptScore,
    Challenge,
    LeaderboardEntry,
    LeaderboardRanking,
    Player,
    RescoreJob,
    ScoringVersion,
)

RANK_ORDER = (F("sort_key").asc(), F("created_at").asc())
PAGE = R.PAGE  # the checkpoint spacing is the ranking module's: one name, one value
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
    """The newest attempt by the time it was made (not the last one inserted: a
    backdated import comes after newer attempts); the (challenge, created_at) index."""
    latest = Attempt.objects.filter(challenge=OuterRef("pk")).order_by("-created_at", "-id")
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


# What a public request must learn fresh, in one statement with no ORM compilation
# (it runs on every view and every live refresh): the challenge's identity and version,
# whether a rescore is under way, the newest attempt's time, and its ranking's state.
_PROBE_SQL = """
SELECT c.id, c.updated_at, c.active_version_id,
       EXISTS (SELECT 1 FROM {job} j WHERE j.challenge_id = c.id
               AND j.status IN ('queued', 'running')) AS rescoring,
       (SELECT a.recorded_at FROM {attempt} a WHERE a.challenge_id = c.id
        ORDER BY a.id DESC LIMIT 1) AS last_activity,
       r.token, r.stale,
       EXISTS (SELECT 1 FROM {entry} e WHERE e.version_id = c.active_version_id
               AND e.unranked) AS changed
FROM {challenge} c LEFT JOIN {ranking} r ON r.version_id = c.active_version_id
WHERE c.slug = %s AND c.is_active
"""
# Challenges (with their active version) by (pk, updated_at, active version): a save,
# including a rescore's switch, changes updated_at, so a stale copy is never used.
_challenges: dict[tuple[Any, ...], Challenge] = {}


def challenge_public(*, slug: str) -> Challenge | None:
    """An active challenge by slug (None: unknown or not public), with ``rescoring`` (a
    rescore job is queued or running), ``last_activity`` (the newest attempt's
    recording time) and ``ranking_state``, fresh on every call."""
    sql = _PROBE_SQL.format(
        job=RescoreJob._meta.db_table,
        attempt=Attempt._meta.db_table,
        entry=LeaderboardEntry._meta.db_table,
        challenge=Challenge._meta.db_table,
        ranking=LeaderboardRanking._meta.db_table,
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [slug])
        found = cursor.fetchone()
    if found is None:
        return None
    pk, updated_at, version_id, rescoring, last_activity, token, stale, changed = found
    if connection.vendor == "sqlite":  # datetimes and booleans come back raw there
        convert = connection.ops.convert_datetimefield_value
        field = Challenge._meta.get_field("updated_at")
        updated_at = convert(updated_at, field, connection)
        last_activity = convert(last_activity, field, connection) if last_activity else None
        rescoring, changed = bool(rescoring), bool(changed)
        stale = None if stale is None else bool(stale)
    key = (pk, updated_at, version_id)
    challenge = _challenges.get(key)
    if challenge is None:
        challenge = challenge_list().filter(pk=pk).first()
        if challenge is None:  # deleted meanwhile
            return None
        if len(_challenges) > 1000:
            _challenges.clear()
        _challenges[key] = challenge
    # A per-request copy: the cached object is shared by every request of the process.
    challenge = copy.copy(challenge)
    challenge.rescoring = rescoring
    challenge.last_activity = last_activity
    challenge.ranking_state = R.State(token, stale, changed)
    return challenge


def _ranking(challenge: Challenge, version_id: int) -> R.Ranking:
    """The ranking, from the state read with the challenge when there is one."""
    return R.ranking_current(version_id=version_id, state=getattr(challenge, "ranking_state", None))


# --- leaderboard rows --------------------------------------------------------------------
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


@dataclass(frozen=True)
class Breakdown:
    """Why a row's score is what it is: the scorer's details and the attempt's metrics."""

    details: Any
    metrics: dict[str, Any]


def leaderboard_breakdowns(*, version_id: int, attempt_ids: list[int]) -> dict[int, Breakdown]:
    """The breakdowns of some attempts under a version, in one query."""
    rows = AttemptScore.objects.filter(version_id=version_id, attempt_id__in=attempt_ids).values(
        "attempt_id", "details", *BREAKDOWN_FIELDS
    )
    return {
        r["attempt_id"]: Breakdown(
            r["details"], {name.split("__")[1]: r[name] for name in BREAKDOWN_FIELDS}
        )
        for r in rows
    }


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
        )
        for v, rank in zip(values, ranks, strict=True)
    ]


# The hot reads of every page view and refresh, as constant SQL (no ORM compilation):
# rows in rank order from a key, a name search, a player's row.
_ROWS_SQL = """
SELECT e.sort_key, e.created_at, e.attempt_id, e.score, p.external_id, p.display_name
FROM {entry} e JOIN {player} p ON p.id = e.player_id
WHERE e.version_id = %s AND {condition}
ORDER BY e.sort_key, e.created_at, e.attempt_id
LIMIT %s
"""
_CONDITIONS = {
    "from_key": "(e.sort_key, e.created_at, e.attempt_id) >= (%s, %s, %s)",
    # The expression of the trigram index on PostgreSQL (migration 0007); SQLite's LIKE
    # ignores ASCII case by itself.
    "name_postgresql": "UPPER(p.display_name::text) LIKE UPPER(%s)",
    "name": "p.display_name LIKE %s ESCAPE '\\'",
    "player": "p.external_id = %s",
}


def _rows_where(version_id: int, condition: str, params: list[Any], limit: int):
    """Up to ``limit`` rows in rank order, as ``values(*ROW_FIELDS)`` gives them."""
    sql = _ROWS_SQL.format(
        entry=LeaderboardEntry._meta.db_table,
        player=Player._meta.db_table,
        condition=_CONDITIONS[condition],
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [version_id, *params, limit])
        found = cursor.fetchall()
    if connection.vendor == "sqlite":  # datetimes come back as text there
        field = LeaderboardEntry._meta.get_field("created_at")
        convert = connection.ops.convert_datetimefield_value
        found = [(r[0], convert(r[1], field, connection), *r[2:]) for r in found]
    return [dict(zip(ROW_FIELDS, r, strict=True)) for r in found]


def _rows_from_key(version_id: int, key: R.Key, limit: int) -> list[dict[str, Any]]:
    adapt = connection.ops.adapt_datetimefield_value
    return _rows_where(version_id, "from_key", [key[0], adapt(R.from_us(key[1])), key[2]], limit)


def _rows_named(version_id: int, text: str, limit: int) -> list[dict[str, Any]]:
    """Rows whose display name contains ``text`` (any case)."""
    pattern = f"%{connection.ops.prep_for_like_query(text)}%"
    condition = "name_postgresql" if connection.vendor == "postgresql" else "name"
    return _rows_where(version_id, condition, [pattern], limit)


def _slice(ranking: R.Ranking, *, offset: int, limit: int) -> list[LeaderboardRow]:
    """Rows at 0-based places [offset, offset + limit), read from their checkpoint."""
    if offset >= ranking.entries or limit <= 0 or not ranking.keys:
        return []
    j = min(offset // PAGE, len(ranking.keys) - 1)
    start = j * PAGE
    values = _rows_from_key(ranking.version_id, ranking.keys[j], offset - start + limit)
    ranks = R.assign_ranks(_ties(values), place=start, rank=ranking.ranks[j])
    skip = offset - start
    return _rows(values[skip:], ranks[skip:])


# How many entries lie from a checkpoint up to a key: the rank of a tie group (rows
# before its (sort_key, created_at)) or the place of a row (rows up to its full key).
# The plain sort_key bounds repeat the row comparisons for the planner's estimate (it
# cannot estimate a row comparison, guesses a large range, and plans parallel workers).
_COUNT_SQL = {
    "before_tie": (
        "SELECT %s, COUNT(*) FROM {entry} WHERE version_id = %s"
        " AND (sort_key, created_at, attempt_id) >= (%s, %s, %s)"
        " AND (sort_key, created_at) < (%s, %s) AND sort_key BETWEEN %s AND %s"
    ),
    "up_to": (
        "SELECT %s, COUNT(*) FROM {entry} WHERE version_id = %s"
        " AND (sort_key, created_at, attempt_id) >= (%s, %s, %s)"
        " AND (sort_key, created_at, attempt_id) <= (%s, %s, %s) AND sort_key BETWEEN %s AND %s"
    ),
}


def _counts(version_id: int, kind: str, ranges: list[tuple[R.Key, R.Key]]) -> list[int]:
    """For each (checkpoint, key) range, how many entries it holds: one UNION ALL of
    index-only range counts of at most a page each (an OR of ranges would make the
    database filter every entry)."""
    adapt = connection.ops.adapt_datetimefield_value
    part = _COUNT_SQL[kind].format(entry=LeaderboardEntry._meta.db_table)
    params: list[Any] = []
    for i, (first, key) in enumerate(ranges):
        params += [i, version_id, first[0], adapt(R.from_us(first[1])), first[2]]
        params += [key[0], adapt(R.from_us(key[1]))] + ([key[2]] if kind == "up_to" else [])
        params += [first[0], key[0]]
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join([part] * len(ranges)), params)
        found = dict(cursor.fetchall())
    return [found[i] for i in range(len(ranges))]


def _ranks_of(ranking: R.Ranking, keys: list[R.Key]) -> dict[R.Key, int]:
    """The competition ranks of entries with these keys, in one query: a key's rank is
    its checkpoint's when they tie, else the checkpoint's place plus the rows before
    the key's tie group, plus one."""
    if not ranking.keys or not keys:
        return {}
    checkpoints = [ranking.checkpoint_before(key) for key in keys]
    counts = _counts(
        ranking.version_id,
        "before_tie",
        [(ranking.keys[j], k) for j, k in zip(checkpoints, keys, strict=True)],
    )
    ranks = {}
    for key, j, before in zip(keys, checkpoints, counts, strict=True):
        tied = ranking.keys[j][:2] == key[:2]
        ranks[key] = ranking.ranks[j] if tied else j * PAGE + before + 1
    return ranks


def _place_of(ranking: R.Ranking, key: R.Key) -> int:
    """0-based place of the entry with ``key``."""
    if not ranking.keys:
        return 0
    j = ranking.checkpoint_before(key)
    return j * PAGE + _counts(ranking.version_id, "up_to", [(ranking.keys[j], key)])[0] - 1


# --- the API's reads ------------------------------------------------------------------
def leaderboard_page(
    *, challenge: Challenge, limit: int, offset: int, board_id: int | None = None
) -> LeaderboardPage:
    """One page of the active leaderboard, with competition ranks (1, 2, 2, 4): equal
    on the ranking value and on ``created_at`` share a rank. ``board_id``: another board
    of the active version to read (its frozen board, ``leaderboards.freeze``)."""
    version = challenge.active_version
    if version is None:
        return LeaderboardPage(None, 0, [])
    ranking = R.ranking_current(version_id=board_id or version.pk)
    return LeaderboardPage(version, ranking.entries, _slice(ranking, offset=offset, limit=limit))


def leaderboard_player(
    *, challenge: Challenge, external_id: str, board_id: int | None = None
) -> LeaderboardPage:
    """The one row of a player (empty when the player has no counted attempt)."""
    version = challenge.active_version
    if version is None:
        return LeaderboardPage(None, 0, [])
    ranking = R.ranking_current(version_id=board_id or version.pk)
    entry = _entries(ranking.version_id).filter(player__external_id=external_id).values(*ROW_FIELDS)
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


def board_page(
    *,
    challenge: Challenge,
    page: int = 1,
    query: str = "",
    player: str = "",
    board_id: int | None = None,
) -> Board:
    """A page of the leaderboard (50 rows), a name search (the best-ranked 50 matches),
    or the page holding ``player`` (an external id). ``board_id``: another board of the
    active version (its frozen board)."""
    version = challenge.active_version
    if version is None:
        return Board(None, 0, [], 1, 1, query=query, player=player)
    if board_id is not None and board_id != version.pk:
        ranking = R.ranking_current(version_id=board_id)
    else:
        ranking = _ranking(challenge, version.pk)
    board = ranking.version_id
    pages = max(1, -(-ranking.entries // PAGE))
    common = {"query": query, "player": player, "ranked_at": ranking.computed_at}
    if query:
        values = _rows_named(board, query, PAGE + 1)
        more, values = len(values) > PAGE, values[:PAGE]
        keys = [(v["sort_key"], R.to_us(v["created_at"]), v["attempt_id"]) for v in values]
        ranks = _ranks_of(ranking, keys)
        rows = _rows(values, [ranks.get(k, 0) for k in keys])
        return Board(version, ranking.entries, rows, 0, pages, more_matches=more, **common)
    found = False
    if player:
        entry = _rows_where(board, "player", [player], 1)
        if entry:
            found = True
            key = (entry[0]["sort_key"], R.to_us(entry[0]["created_at"]), entry[0]["attempt_id"])
            page = _place_of(ranking, key) // PAGE + 1
    page = min(max(page, 1), pages)
    rows = _slice(ranking, offset=(page - 1) * PAGE, limit=PAGE)
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
