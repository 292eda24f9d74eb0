"""Selectors that read: challenges and leaderboards.

Leaderboards are read through ``ranking`` checkpoints: a page is one index range from
its checkpoint, a rank a checkpoint plus at most a page of rows; nothing scans all the
entries (let alone the attempts) per request.
"""

from __future__ import annotations

import bisect
import copy
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from django.db.models import (
    Exists,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
)
from django.db.models.functions import Least

from challenges.leaderboards import freeze, sql
from challenges.leaderboards import ranking as board_ranking
from challenges.models import (
    Attempt,
    AttemptScore,
    Challenge,
    LeaderboardEntry,
    LeaderboardRanking,
    PlayerHide,
    ScoringVersion,
)
from challenges.text import row_id

PAGE = board_ranking.PAGE  # the checkpoint spacing is the ranking module's: one name, one value
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


def _latest_public_attempt() -> Subquery:
    """The time the newest attempt the public may see was made (not the last one
    inserted: a backdated import comes after newer attempts; the (challenge, created_at)
    index), but never after it was recorded: a client's chosen created_at of 2100 is
    activity now, not in the future. Practice, hidden attempts and hidden players'
    attempts are no public activity."""
    hides = PlayerHide.objects.filter(
        Q(challenge_id=OuterRef(OuterRef("pk"))) | Q(challenge__isnull=True),
        player_id=OuterRef("player_id"),
    )
    latest = (
        Attempt.objects.filter(challenge=OuterRef("pk"), practice=False, hidden=False)
        .exclude(Exists(hides))
        .order_by("-created_at", "-id")
        .annotate(made=Least("created_at", "recorded_at"))
    )
    return Subquery(latest.values("made")[:1])


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
            last_activity=_latest_public_attempt(),
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
            counts[version_id] = board_ranking.ranking_current(version_id=version_id).entries
    return counts


# Challenges (with their active version) by (pk, updated_at, active version): a save,
# including a rescore's switch, changes updated_at, so a stale copy is never used.
_challenges: dict[tuple[Any, ...], Challenge] = {}


def challenge_public(*, slug: str) -> Challenge | None:
    """An active challenge by slug (None: unknown or not public), with ``rescoring`` (a
    rescore job is queued or running), ``last_activity`` (the newest attempt's
    recording time) and ``ranking_state``, fresh on every call."""
    found = sql.challenge_probe(slug)  # one constant statement: it runs on every view
    if found is None:
        return None
    pk, updated_at, version_id, rescoring, last_activity, token, stale, changed = found
    challenge = _challenge_copy(pk, updated_at, version_id)
    if challenge is None:
        return None
    challenge.rescoring = rescoring
    challenge.last_activity = last_activity
    challenge.ranking_state = board_ranking.State(token, stale, changed)
    return challenge


def challenge_slug(*, version_id: int) -> str | None:
    """The slug of the public challenge whose live board is ``version_id`` (None: none)."""
    found = challenge_list().filter(active_version_id=version_id).values_list("slug", flat=True)
    return found.first()


def challenge_slug_of(*, challenge_id: int) -> str | None:
    """The slug of challenge ``challenge_id`` if the public may read it (None: not)."""
    return challenge_list().filter(pk=challenge_id).values_list("slug", flat=True).first()


def _challenge_copy(pk: int, updated_at: datetime, version_id: int | None) -> Challenge | None:
    """A per-request copy of the challenge (with its active version) as saved at
    ``updated_at``: the cached object is shared by every request of the process."""
    key = (pk, updated_at, version_id)
    challenge = _challenges.get(key)
    if challenge is None:
        challenge = challenge_list(include_inactive=True).filter(pk=pk).first()
        if challenge is None:  # deleted meanwhile
            return None
        if len(_challenges) > 1000:
            _challenges.clear()
        _challenges[key] = challenge
    return copy.copy(challenge)


def challenge_for_board(*, pk: Any, include_inactive: bool = False) -> Challenge | None:
    """A challenge by id for reading its leaderboard (None: unknown, not an id, or
    inactive and ``include_inactive`` is false), with ``ranking_state`` read fresh."""
    pk = row_id(pk)
    if pk is None:
        return None
    found = sql.board_probe(pk, include_inactive)  # the page's probe, by id
    if found is None:
        return None
    pk, updated_at, version_id, token, stale, changed = found
    challenge = _challenge_copy(pk, updated_at, version_id)
    if challenge is not None:
        challenge.ranking_state = board_ranking.State(token, stale, changed)
    return challenge


def challenge_by_id(pk: Any) -> Challenge | None:
    """A challenge by id, active or not, read fresh (None: unknown or not an id), by one
    constant statement: what recording attempts reads on every request."""
    pk = row_id(pk)
    return None if pk is None else sql.challenge_by_id(pk)


class Settled(NamedTuple):
    """A settled board (``board_settled``): what names its rows (the challenge as saved,
    the version, the ranking's token, whether entries changed since) and the ranking's
    age and lineage, by which ``kept.kept_board`` judges what was built from it."""

    challenge_id: int
    updated_at: str  # the challenge as saved
    version_id: int
    token: str  # the ranking's
    lagging: bool  # entries changed since the ranking: rows lag as long as ranks do
    ranked_at: datetime  # when the ranking was computed
    lineage: str  # the ranking's (LeaderboardRanking.lineage)


def board_settled(challenge: Challenge, board_id: int | None) -> Settled | None:
    """A key that names every row of the challenge's live board while its ranking is
    current, from what the probe read (``challenge_public``/``challenge_for_board``):
    the challenge as saved, its active version and the ranking's token. Every change of
    the rows changes one of them: an entry written marks it changed until a new ranking
    (a new token), a deletion, a hidden player or a rename marks the ranking stale, a
    rescore or a batch run saves the challenge. A reader may keep what it built from the
    rows under this key and skip reading them.

    Under steady ingestion entries change between any two reads, and a ranking is
    reused for ``PODIUM_RANKING_MAX_AGE_MS`` (ranks lag new attempts that long): while
    this process reuses it, the key holds for as long, ``lagging`` True (the rows may
    lag new attempts by as long as the ranks do, never more; deletions, hides and
    renames still end it at once) with the ranking's age and lineage (what may be
    served in its place: ``kept.kept_board``). None: the rows must be read (the board is
    a frozen one, or the ranking is stale or too old to reuse)."""
    state = getattr(challenge, "ranking_state", None)
    if state is None or not state.token or state.stale:
        return None
    version_id = challenge.active_version_id
    if version_id is None or (board_id is not None and board_id != version_id):
        return None
    if state.changed:
        ranking = board_ranking.ranking_reusable(version_id=version_id, token=state.token)
        if ranking is None:
            return None
    else:  # held by this process once it read the board (else one plain read)
        ranking = board_ranking.ranking_current(version_id=version_id, state=state)
    return Settled(
        challenge.pk,
        challenge.updated_at.isoformat(),
        version_id,
        ranking.token,
        bool(state.changed),
        ranking.computed_at,
        ranking.lineage,
    )


def _ranking(challenge: Challenge, version_id: int) -> board_ranking.Ranking:
    """The ranking, from the state read with the challenge when there is one (that state
    is the active version's: a frozen board reads its own)."""
    state = getattr(challenge, "ranking_state", None)
    if version_id != challenge.active_version_id:
        state = None
    return board_ranking.ranking_current(version_id=version_id, state=state)


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


def _rows_where(
    version_id: int,
    condition: str,
    params: list[Any],
    limit: int,
    names_at: datetime | None = None,
) -> list[dict[str, Any]]:
    """Up to ``limit`` rows in rank order (a condition of ``sql.ROWS``), as
    ``values(*ROW_FIELDS)`` gives them; ``names_at``: names as of then (``freeze.names_at``)."""
    return [
        dict(zip(ROW_FIELDS, r, strict=True))
        for r in sql.entry_rows(version_id, condition, params, limit, names_at=names_at)
    ]


def _entry_key(v: dict[str, Any]) -> board_ranking.Key:
    """A row's ranking key (sort_key, created_at in microseconds, attempt_id)."""
    return (v["sort_key"], board_ranking.to_us(v["created_at"]), v["attempt_id"])


def _key_params(key: board_ranking.Key) -> list[Any]:
    """A ranking key as the statements' parameters (sort_key, created_at, attempt_id)."""
    return [key[0], sql.timestamp(board_ranking.from_us(key[1])), key[2]]


def _rows_named(
    version_id: int, text: str, limit: int, names_at: datetime | None = None
) -> list[dict[str, Any]]:
    """Rows whose display name (as of ``names_at``) contains ``text`` (any case)."""
    condition, params = sql.name_condition(text, names_at=names_at)
    return _rows_where(version_id, condition, params, limit, names_at)


def _slice(
    ranking: board_ranking.Ranking, *, offset: int, limit: int, names_at: datetime | None = None
) -> list[LeaderboardRow]:
    """Rows at 0-based places [offset, offset + limit), read from their checkpoint."""
    if offset >= ranking.entries or limit <= 0 or not ranking.keys:
        return []
    j = min(offset // PAGE, len(ranking.keys) - 1)
    start = j * PAGE
    params = _key_params(ranking.keys[j])
    values = _rows_where(ranking.version_id, "from_key", params, offset - start + limit, names_at)
    ties = [(v["sort_key"], v["created_at"]) for v in values]
    ranks = board_ranking.assign_ranks(ties, place=start, rank=ranking.ranks[j])
    skip = offset - start
    return _rows(values[skip:], ranks[skip:])


def _ranks_by_ranges(
    ranking: board_ranking.Ranking, keys: list[board_ranking.Key]
) -> dict[board_ranking.Key, int]:
    """Ranks when many keys share few checkpoints (e.g. fifty matches on the first
    pages): one range read per checkpoint, the rows up to the last of its keys."""
    groups: dict[int, list[board_ranking.Key]] = {}
    for key in keys:
        groups.setdefault(ranking.checkpoint_before(key), []).append(key)
    ranks: dict[board_ranking.Key, int] = {}
    ranges = []
    for j, group in groups.items():
        untied = [k for k in group if k[:2] != ranking.keys[j][:2]]
        for key in group:
            if key not in untied:
                ranks[key] = ranking.ranks[j]
        if untied:
            ranges.append((j, ranking.keys[j], max(untied)))
    if not ranges:
        return ranks
    found = sql.ties_before(
        ranking.version_id,
        [(j, _key_params(first), _key_params(last)[:2]) for j, first, last in ranges],
    )
    ties: dict[int, list[tuple[float, int]]] = {j: [] for j, _, _ in ranges}
    for j, sort_key, created_at in found:
        ties[j].append((sort_key, board_ranking.to_us(created_at)))
    for j, group in groups.items():
        before = sorted(ties.get(j, []))
        for key in group:
            if key not in ranks:
                ranks[key] = j * PAGE + bisect.bisect_left(before, key[:2]) + 1
    return ranks


def _ranks_of(
    ranking: board_ranking.Ranking, keys: list[board_ranking.Key]
) -> dict[board_ranking.Key, int]:
    """The competition ranks of entries with these keys, in one query: a key's rank is
    its checkpoint's when they tie, else the checkpoint's place plus the rows before
    the key's tie group, plus one; those rows counted per key in one statement, or read
    once per checkpoint when many keys share few checkpoints."""
    if not ranking.keys or not keys:
        return {}
    if 2 * len({ranking.checkpoint_before(key) for key in keys}) < len(keys):
        return _ranks_by_ranges(ranking, keys)
    ranks: dict[board_ranking.Key, int] = {}
    pairs = []
    for key in keys:
        j = ranking.checkpoint_before(key)
        if ranking.keys[j][:2] == key[:2]:
            ranks[key] = ranking.ranks[j]
        else:
            pairs.append((j, key))
    if not pairs:
        return ranks
    before = sql.counts_before_ties(
        ranking.version_id,
        [(_key_params(ranking.keys[j]), _key_params(key)[:2]) for j, key in pairs],
    )
    for (j, key), count in zip(pairs, before, strict=True):
        ranks[key] = j * PAGE + count + 1
    return ranks


def _place_of(ranking: board_ranking.Ranking, key: board_ranking.Key) -> int:
    """0-based place of the entry with ``key``."""
    if not ranking.keys:
        return 0
    j = ranking.checkpoint_before(key)
    up_to = sql.counts_up_to(ranking.version_id, [(_key_params(ranking.keys[j]), _key_params(key))])
    return j * PAGE + up_to[0] - 1


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
    ranking = _ranking(challenge, board_id or version.pk)
    names_at = freeze.names_at(challenge, ranking.version_id)
    rows = _slice(ranking, offset=offset, limit=limit, names_at=names_at)
    return LeaderboardPage(version, ranking.entries, rows)


def leaderboard_player(
    *, challenge: Challenge, external_id: str, board_id: int | None = None
) -> LeaderboardPage:
    """The one row of a player (empty when the player has no counted attempt)."""
    version = challenge.active_version
    if version is None:
        return LeaderboardPage(None, 0, [])
    board = board_id or version.pk
    ranking = _ranking(challenge, board)
    entry = _rows_where(board, "player", [external_id], 1, freeze.names_at(challenge, board))
    if not entry:
        return LeaderboardPage(version, ranking.entries, [])
    key = _entry_key(entry[0])
    rank = _ranks_of(ranking, [key]).get(key, 1)
    return LeaderboardPage(version, ranking.entries, _rows(entry, [rank]))


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
        ranking = board_ranking.ranking_current(version_id=board_id)
    else:
        ranking = _ranking(challenge, version.pk)
    board = ranking.version_id
    names_at = freeze.names_at(challenge, board)  # a frozen board's: as of the freeze
    pages = max(1, -(-ranking.entries // PAGE))
    common = {"query": query, "player": player, "ranked_at": ranking.computed_at}
    if query:
        values = _rows_named(board, query, PAGE + 1, names_at)
        more, values = len(values) > PAGE, values[:PAGE]
        keys = [_entry_key(v) for v in values]
        ranks = _ranks_of(ranking, keys)
        rows = _rows(values, [ranks.get(k, 0) for k in keys])
        return Board(version, ranking.entries, rows, 0, pages, more_matches=more, **common)
    entry = _rows_where(board, "player", [player], 1) if player else []
    if entry:
        page = _place_of(ranking, _entry_key(entry[0])) // PAGE + 1
    page = min(max(page, 1), pages)
    rows = _slice(ranking, offset=(page - 1) * PAGE, limit=PAGE, names_at=names_at)
    return Board(version, ranking.entries, rows, page, pages, player_found=bool(entry), **common)


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


def leaderboard_top(
    *, board_id: int, limit: int, names_at: datetime | None = None
) -> list[LeaderboardRow]:
    """The first ``limit`` rows of a board, read now from its rank index (never from
    page checkpoints, which may lag ``PODIUM_RANKING_MAX_AGE_MS`` under steady
    ingestion): a row's competition rank depends only on the rows ahead of it.
    ``names_at``: names as of then (a frozen board's, ``freeze.names_at``)."""
    values = _rows_where(board_id, "all", [], limit, names_at)
    ties = [(v["sort_key"], v["created_at"]) for v in values]
    return _rows(values, board_ranking.assign_ranks(ties, place=0, rank=1))


def leaderboard_stream(
    *, version_id: int, names_at: datetime | None = None
) -> Iterator[LeaderboardRow]:
    """Every row of a version's leaderboard in rank order, read in keyset batches (a
    constant amount of memory, no OFFSET), each one constant statement along the rank
    index. ``names_at``: names as of then (a frozen board's, ``freeze.names_at``)."""
    key: board_ranking.Key | None = None
    place = rank = 0
    previous = None
    while True:
        if key is None:
            batch = _rows_where(version_id, "all", [], EXPORT_BATCH, names_at)
        else:
            params = _key_params(key)
            batch = _rows_where(version_id, "after_key", params, EXPORT_BATCH, names_at)
        for v in batch:
            place += 1
            if (v["sort_key"], v["created_at"]) != previous:
                rank = place
            previous = (v["sort_key"], v["created_at"])
            yield _rows([v], [rank])[0]
        if len(batch) < EXPORT_BATCH:
            return
        key = _entry_key(batch[-1])
