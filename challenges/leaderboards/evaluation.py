"""Evaluation boards: each player ranked by a statistic over all their counted attempts,
with bootstrap intervals, rank intervals and tiers (the engine: scoring/engine/uncertainty.py).

A challenge with ``board = "aggregate"`` keeps its ordinary leaderboard underneath; this
module adds the intervals, computed in a worker and stored (``EvaluationBoard``), so that
no reader or writer ever waits for a bootstrap:

- ``evaluation_compute`` (the ``evaluation_refresh`` task, and a rescore's finalisation
  before its switch) reads the counted attempts of a version — the same public rules as
  the leaderboard: ``exclusions.public_scores`` leaves out practice, hidden attempts and
  hidden players; during a freeze the public's board takes only the attempts recorded
  before ``freeze_at`` — runs the engine outside any transaction, then replaces the
  stored rows in one short transaction.
- ``evaluation_board`` (readers) serves the stored rows of the active version, with
  their ``computed_at`` and the attempts they cover. When the board's data changed since
  (its ``stamp``: the version, the newest attempt, the ranking's lineage — which hides,
  deletions and renames renew — and the challenge as saved), it asks a worker to
  recompute, at most once per ``PODIUM_RANKING_MAX_AGE_MS`` (the rankings' lag), and
  serves what it has meanwhile. A player hidden since is left out at once.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import CharField, Value
from django.db.models.fields.json import KeyTextTransform
from django.utils import timezone

from challenges import enqueue
from challenges.fieldsets import BOARD_FIELDS
from challenges.leaderboards import exclusions, freeze, precision, sql
from challenges.leaderboards import ranking as board_ranking
from challenges.leaderboards.metric_counts import challenge_metrics, public_metrics
from challenges.leaderboards.names import names_as_of, names_now
from challenges.models import (
    Aggregate,
    Attempt,
    AttemptScore,
    Board,
    Challenge,
    EvaluationBoard,
    LeaderboardRanking,
    ScoringVersion,
)
from scoring.engine import strategies
from scoring.engine.uncertainty import (
    SAMPLES_MAX,
    SAMPLES_MIN,
    IntervalSetup,
    board_intervals,
)

KEY_MAX = 64  # sample_key and slice_by: a field name of ``sample``
SLICES_MAX = 200  # slices computed per board (the most attempts first)
SLICE_MAX = 200  # characters of a slice's value (EvaluationBoard.slice); longer: no slice
# A stored row (EvaluationBoard.rows): an IntervalRow's fields, but the names, in order.
STORED_ROW = ("player", "score", "n", "ci_low", "ci_high", "rank", "rank_low", "rank_high", "tier")
AGGREGATE_RULE = (
    "This board ranks each player by the {statistic} of their scores over all their "
    "counted attempts, not by their best attempt. Equal values: the player whose latest "
    "counted attempt is earlier ranks first; players equal in both share a rank."
)
TIER_LEGEND = (
    "Tier: 1 + the number of players whose whole interval lies above this one "
    "(separably better); players in the same tier cannot be told apart at this level."
)


# --- setup -------------------------------------------------------------------------------
def board_errors(values: dict[str, Any]) -> dict[str, str]:
    """What is wrong with a challenge's board fields, by field (the API, the admin form
    and ``challenge_create``/``challenge_update`` share it; constraints are the last guard)."""
    errors: dict[str, str] = {}
    if values.get("board", Board.BEST_ATTEMPT) not in Board.values:
        errors["board"] = f"Choose one of: {', '.join(Board.values)}."
    if values.get("aggregate", Aggregate.MEAN) not in Aggregate.values:
        errors["aggregate"] = f"Choose one of: {', '.join(Aggregate.values)}."
    least = values.get("min_attempts", 1)
    if not _whole(least) or least < 1:
        errors["min_attempts"] = "A whole number of attempts, at least 1."
    level = values.get("ci_level", 0.95)
    if (
        isinstance(level, bool)
        or not isinstance(level, int | float)
        or not math.isfinite(level)
        or not 0.5 <= level < 1
    ):
        errors["ci_level"] = "A confidence level from 0.5 up to (not including) 1, e.g. 0.95."
    samples = values.get("bootstrap_samples", 1000)
    if not _whole(samples) or not SAMPLES_MIN <= samples <= SAMPLES_MAX:
        errors["bootstrap_samples"] = (
            f"A whole number of bootstrap replicates from {SAMPLES_MIN} to {SAMPLES_MAX}."
        )
    for name in ("sample_key", "slice_by"):
        key = values.get(name)
        if key is None:
            continue
        if not isinstance(key, str) or len(key) > KEY_MAX or (key and key.strip() != key):
            errors[name] = (
                f"A field name of the attempts' sample: text of at most {KEY_MAX} "
                "characters, without surrounding spaces."
            )
    return errors


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def setup_key(challenge: Challenge) -> str:
    """The board fields intervals are computed with: stored boards made with others are
    not served (a change of ``aggregate`` never shows sums labelled as means)."""
    return repr(tuple(getattr(challenge, name) for name in BOARD_FIELDS))[:400]


def interval_setup(challenge: Challenge, version: ScoringVersion) -> IntervalSetup:
    lower = strategies.sort_key_for(
        version.scoring_strategy, lower_is_better=version.lower_is_better
    )
    return IntervalSetup(
        aggregate=challenge.aggregate,
        ci_level=challenge.ci_level,
        samples=challenge.bootstrap_samples,
        min_attempts=challenge.min_attempts,
        higher_is_better=lower(1.0) < 0,  # a negated sort key: higher ranks first
    )


# --- what counts ------------------------------------------------------------------------
def _counted(challenge: Challenge, version_id: int, *, frozen: bool) -> list[tuple]:
    """(player, score, item, slice, created_at) of every attempt the public board counts."""
    scored = AttemptScore.objects.filter(version_id=version_id, sort_key__isnull=False).order_by()
    scored = exclusions.public_scores(scored, challenge_id=challenge.pk)
    if frozen:  # as the frozen board: the attempts recorded before the freeze
        scored = scored.filter(attempt__recorded_at__lt=challenge.freeze_at)
    rows = scored.annotate(
        _item=_sample_text(challenge.sample_key), _part=_sample_text(challenge.slice_by)
    ).values_list("player_id", "score", "_item", "_part", "created_at")
    # SQLite gives a JSON number back as a number: items and slices compare as text.
    return [(player, score, _text(item), _text(part), at) for player, score, item, part, at in rows]


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _sample_text(key: str | None) -> Any:
    """``sample[key]`` as text (null where absent): items and slices compare as text."""
    if not key:
        return Value(None, output_field=CharField())
    return KeyTextTransform(key, "attempt__sample")


def evaluation_stamp(
    challenge: Challenge,
    version_id: int,
    *,
    frozen: bool,
    lineage: str | None = None,
    newest: int | None = None,
) -> str:
    """What the board's data is, cheaply (two index reads): a change of it asks for new
    intervals. A pending attempt scored later without changing any entry is seen at the
    next change. ``lineage``, ``newest`` (the newest attempt's id): as the caller read
    them, or read here."""
    if newest is None:
        newest = (
            Attempt.objects.filter(challenge_id=challenge.pk)
            .order_by("-id")
            .values_list("id", flat=True)
            .first()
        )
    if lineage is None:
        lineage = _lineage(version_id)
    saved = challenge.updated_at.isoformat() if challenge.updated_at else ""
    return f"{version_id}:{int(frozen)}:{newest or 0}:{lineage}:{saved}"[:200]


# --- computing (a worker) ---------------------------------------------------------------
def evaluation_compute(*, challenge_id: int, version_id: int | None = None) -> int:
    """Compute and store the intervals of the challenge's version (its active version by
    default) for every audience and slice; how many boards were written. Runs the
    engine outside any transaction; never holds a lock while it runs."""
    challenge = Challenge.objects.filter(pk=challenge_id).first()
    if challenge is None or challenge.board != Board.AGGREGATE:
        return 0
    began = time.monotonic()
    try:
        return _compute(challenge, version_id)
    finally:  # what the next refresh's spacing is made from (``_refresh_request``)
        cache.set(_cost_key(challenge_id), time.monotonic() - began, timeout=COST_KEPT_S)


def _compute(challenge: Challenge, version_id: int | None) -> int:
    challenge_id = challenge.pk
    version_id = version_id or challenge.active_version_id
    version = ScoringVersion.objects.filter(pk=version_id, challenge_id=challenge_id).first()
    if version is None:
        return 0
    setup = interval_setup(challenge, version)
    written = 0
    for frozen in (False, True) if freeze.is_frozen(challenge) else (False,):
        stamp = evaluation_stamp(challenge, version.pk, frozen=frozen)  # before the read
        started = timezone.now()
        rows = _counted(challenge, version.pk, frozen=frozen)
        boards = _boards(challenge, version, rows, setup, frozen=frozen, stamp=stamp, as_of=started)
        boards[0].metrics = _player_metrics(challenge, version, {r[0] for r in rows}, frozen)
        if boards_write(boards, challenge=challenge, version_id=version.pk, as_of=started):
            written += len(boards)
    if not freeze.is_frozen(challenge):
        EvaluationBoard.objects.filter(challenge_id=challenge_id, frozen=True).delete()
    return written


METRIC_PLAYERS_MAX = 500  # players whose own metrics are computed (a query per metric each)


def _player_metrics(
    challenge: Challenge, version: ScoringVersion, player_ids: set[int], frozen: bool
) -> dict[str, dict[str, float]]:
    """Each player's own value of the version's numeric metrics (``challenge_metrics``
    over their attempts, by the same public rules), for the page's metric column."""
    if version.scoring_strategy != strategies.PYTHON or not (version.metrics or version.scorers):
        return {}
    if len(player_ids) > METRIC_PLAYERS_MAX:
        return {}
    as_version = copy.copy(challenge)
    as_version.active_version = version  # before a switch: the new version's metrics
    before = challenge.freeze_at if frozen else None
    out: dict[str, dict[str, float]] = {}
    for player_id in sorted(player_ids):
        found = challenge_metrics(challenge=as_version, before=before, player_id=player_id)
        for entry in public_metrics(found):
            value = entry.get("value")
            if isinstance(value, int | float) and not isinstance(value, bool):
                out.setdefault(entry["name"], {})[str(player_id)] = value
    return out


_WRITE_LOCK = 0x6576616C  # "eval": the advisory-lock namespace of boards being written


def boards_write(
    boards: list[EvaluationBoard], *, challenge: Challenge, version_id: int, as_of: datetime
) -> bool:
    """Replace the stored boards of (challenge, version, audience) by ``boards``, computed
    from the data as of ``as_of``, in one short transaction; one writer at a time per
    challenge. False (nothing written) when boards computed from newer data are stored
    already: two workers finishing out of order never put older intervals back."""
    if not boards:
        return False
    frozen = boards[0].frozen
    with transaction.atomic():
        sql.advisory_lock(_WRITE_LOCK, challenge.pk, wait=True)
        mine = EvaluationBoard.objects.filter(
            challenge_id=challenge.pk, version_id=version_id, frozen=frozen
        )
        if mine.filter(computed_at__gt=as_of).exists():
            return False
        EvaluationBoard.objects.filter(challenge_id=challenge.pk, frozen=frozen).exclude(
            version_id__in=[version_id, challenge.active_version_id]
        ).delete()  # other versions' boards: only the active one's and the next are read
        mine.delete()
        EvaluationBoard.objects.bulk_create(boards)
    return True


def _boards(
    challenge: Challenge,
    version: ScoringVersion,
    rows: list[tuple],
    setup: IntervalSetup,
    *,
    frozen: bool,
    stamp: str,
    as_of: datetime,
) -> list[EvaluationBoard]:
    keyed = bool(challenge.sample_key)
    slices: dict[str, int] = {}
    if challenge.slice_by:
        for row in rows:
            if row[3] is not None and len(row[3]) <= SLICE_MAX:
                slices[row[3]] = slices.get(row[3], 0) + 1
    slices = dict(sorted(slices.items(), key=lambda kv: (-kv[1], kv[0]))[:SLICES_MAX])
    parts = [("", rows)] + [
        (value, [row for row in rows if row[3] == value]) for value in sorted(slices)
    ]
    out = []
    for value, part in parts:
        result = board_intervals(
            players=[row[0] for row in part],
            values=[row[1] for row in part],
            items=[row[2] for row in part] if keyed else None,
            reached=[row[4].timestamp() * 1000 for row in part],
            setup=setup,
            salt=f"{challenge.pk}:{version.number}:{value}",
        )
        out.append(
            EvaluationBoard(
                challenge_id=challenge.pk,
                version_id=version.pk,
                frozen=frozen,
                slice=value,
                stamp=stamp,
                setup=setup_key(challenge),
                computed_at=as_of,  # the data's time: "intervals as of"
                attempts=result.attempts,
                items=result.items,
                paired=result.paired,
                rows=[[getattr(row, name) for name in STORED_ROW] for row in result.rows],
                slices=slices if value == "" else {},
            )
        )
    return out


# --- reading ----------------------------------------------------------------------------


@dataclass(frozen=True)
class IntervalRow:
    player_id: int
    external_id: str
    display_name: str
    score: float
    n: int
    ci_low: float | None
    ci_high: float | None
    rank: int | None
    rank_low: int | None
    rank_high: int | None
    tier: int | None

    @property
    def ranked(self) -> bool:
        return self.rank is not None


@dataclass(frozen=True)
class EvaluationView:
    """What a reader is served: the rows (ranked in rank order, then the unranked),
    when they were computed, over how many attempts, the slices and their counts."""

    rows: list[IntervalRow] = field(default_factory=list)
    computed_at: datetime | None = None
    attempts: int = 0
    items: int = 0
    paired: bool = False
    slices: dict[str, int] = field(default_factory=dict)
    slice: str = ""
    pending: bool = True  # nothing computed yet for this version
    ci_level: float = 0.95
    board_id: int | None = None  # the stored board of the slice
    frozen: bool = False  # the public's board during a freeze
    key: str = ""  # names what the rows show ("" while pending: nothing to keep)
    family: str = ""  # the key but for the stored board: the names, hides, setup
    metrics: dict[str, dict[str, float]] = field(default_factory=dict)  # whole board's


def is_aggregate(challenge: Challenge) -> bool:
    return challenge.board == Board.AGGREGATE


def evaluation_board(
    *, challenge: Challenge, frozen: bool, slice: str = "", rows: bool = True
) -> EvaluationView:
    """The stored intervals of the board, ``frozen`` or live (during a freeze the public
    reads the frozen one: ``freeze.frozen_for``), for the whole board or one slice.
    ``rows=False``: everything but the rows (``evaluation_rows`` adds them), for a reader
    that may serve a kept build named by the view's ``key``."""
    version_id = challenge.active_version_id
    if version_id is None:
        return EvaluationView(pending=False, ci_level=challenge.ci_level)
    # One round trip: the stored boards, with their ranking's lineage and the newest
    # attempt (what a check of the stored intervals against the data compares).
    stored = sql.evaluation_boards(challenge.pk, version_id, frozen, slice)
    whole = stored.get("")
    if whole is None or whole.setup != setup_key(challenge):
        _refresh_request(challenge.pk)
        return EvaluationView(slice=slice, ci_level=challenge.ci_level)
    if whole.ranking_stale is None or whole.ranking_stale:  # recomputed, as _lineage does
        lineage = _lineage(version_id)
    else:
        lineage = whole.ranking_lineage or ""
    if _check_due(challenge.pk) and whole.stamp != evaluation_stamp(
        challenge, version_id, frozen=frozen, lineage=lineage, newest=whole.newest_attempt or 0
    ):
        _refresh_request(challenge.pk)
    board = stored.get(slice)
    family = f"{challenge.pk}:{lineage}:{int(frozen)}:{challenge.updated_at.isoformat()}"
    view = EvaluationView(
        computed_at=whole.computed_at,
        attempts=board.attempts if board is not None else 0,
        items=board.items if board is not None else 0,
        paired=board.paired if board is not None else False,
        slices=whole.slices,
        slice=slice,
        pending=False,
        ci_level=challenge.ci_level,
        metrics=whole.metrics,
        board_id=board.id if board is not None else None,
        frozen=frozen,
        # What the rows depend on: the stored board, and the names and hides (a rename or
        # a hide renews the ranking's lineage); never the newest attempt, so a board under
        # steady ingestion keeps its key until its intervals are recomputed.
        key=f"{family}:{board.id if board else 0}:{whole.computed_at.isoformat()}",
        family=family,
    )
    return evaluation_rows(view, challenge) if rows else view


def evaluation_rows(view: EvaluationView, challenge: Challenge) -> EvaluationView:
    """``view`` with its rows: names as they are now, hidden players left out."""
    if view.board_id is None or view.rows:
        return view
    # By what the board is, not its id: a worker may have replaced it since (new rows,
    # new ids); the next read then names the new one in its key.
    stored = (
        EvaluationBoard.objects.filter(
            challenge_id=challenge.pk,
            version_id=challenge.active_version_id,
            frozen=view.frozen,
            slice=view.slice,
        )
        .values_list("rows", flat=True)
        .first()
    )
    names_at = challenge.freeze_at if view.frozen else None  # as of the freeze
    return dataclasses.replace(view, rows=_rows(challenge, stored or [], names_at))


def _lineage(version_id: int) -> str:
    """The lineage of the version's ranking: a hide, a deletion or a rename marks the
    ranking stale, and its recomputation (done here, as a best-attempt board's reader
    would) starts a new lineage, so whatever was kept under the old one is not served."""
    found = (
        LeaderboardRanking.objects.filter(version_id=version_id)
        .values_list("lineage", "stale")
        .first()
    )
    if found is None or found[1]:
        return board_ranking.ranking_current(version_id=version_id).lineage
    return found[0] or ""


_checked_at: dict[int, float] = {}  # challenge id -> when this process last asked


def checks_clear() -> None:
    """Forget when this process last checked each board (tests that clear the cache)."""
    _checked_at.clear()


def _check_due(challenge_id: int) -> bool:
    """Whether this read compares the stored intervals with the data (two index reads):
    once per PODIUM_RANKING_MAX_AGE_MS per challenge, every read when that is 0. Each
    process asks the cache (shared by every process) at most that often per challenge,
    so that the other reads make no round trip for it."""
    if settings.PODIUM_RANKING_MAX_AGE_MS <= 0:
        return True
    seconds = max(1, math.ceil(settings.PODIUM_RANKING_MAX_AGE_MS / 1000))
    now = time.monotonic()
    if now - _checked_at.get(challenge_id, -math.inf) < seconds:
        return False
    _checked_at[challenge_id] = now
    return bool(cache.add(f"podium:evaluation-checked:{challenge_id}", 1, timeout=seconds))


def row_fields(row: IntervalRow) -> dict[str, Any]:
    """A row as the API and the exports serve it (scores at the precision policy's digits)."""
    return {
        "rank": row.rank,
        "player": row.external_id,
        "display_name": row.display_name,
        "score": precision.served(row.score),
        "n": row.n,
        "ci_low": precision.served(row.ci_low),
        "ci_high": precision.served(row.ci_high),
        "rank_low": row.rank_low,
        "rank_high": row.rank_high,
        "tier": row.tier,
    }


COLUMNS = ("rank", "player", "display_name", "score", "n", "ci_low", "ci_high")
COLUMNS += ("rank_low", "rank_high", "tier")


class SliceUnknown(ValueError):
    """``?slice=`` on a board that has no ``slice_by``."""


def slice_check(challenge: Challenge, value: str | None) -> str:
    if value is None or value == "":
        return ""
    if not challenge.slice_by:
        raise SliceUnknown("This board has no slices (its slice_by is empty).")
    return value


def _rows(
    challenge: Challenge, stored: list[list[Any]], names_at: datetime | None = None
) -> list[IntervalRow]:
    """The stored rows with their players' ids and names (as of ``names_at``, a frozen
    board's), hidden players left out."""
    ids = [row[0] for row in stored]
    hidden = exclusions.hidden_player_ids(challenge_id=challenge.pk, player_ids=ids)
    names = names_now(player_ids=ids)
    if names_at is not None and names:
        past = names_as_of(player_ids=names, at=names_at)
        names = {pk: (external, past.get(pk, name)) for pk, (external, name) in names.items()}
    return [
        IntervalRow(row[0], *names[row[0]], *row[1:])
        for row in stored
        if row[0] in names and row[0] not in hidden
    ]


# Under steady ingestion a board's data changes between any two reads: its intervals are
# recomputed at most once per PODIUM_RANKING_MAX_AGE_MS, or once per COST_SPACING times
# the last computation's duration when that is longer, so that recomputing a large
# board takes at most a third of one worker's time (and of the machine's CPU) instead of
# all of it; the page says when the intervals it shows were computed.
COST_SPACING = 3
COST_KEPT_S = 3600


def _cost_key(challenge_id: int) -> str:
    return f"podium:evaluation-cost:{challenge_id}"


def _refresh_spacing_s(challenge_id: int) -> int:
    seconds = max(1, math.ceil(settings.PODIUM_RANKING_MAX_AGE_MS / 1000))
    if settings.PODIUM_RANKING_MAX_AGE_MS <= 0:
        return seconds  # no lag wanted: every change is computed
    cost = cache.get(_cost_key(challenge_id))
    if isinstance(cost, int | float) and cost > 0:
        seconds = max(seconds, math.ceil(COST_SPACING * cost))
    return seconds


def _refresh_request(challenge_id: int) -> None:
    seconds = _refresh_spacing_s(challenge_id)
    if not cache.add(f"podium:evaluation-refresh:{challenge_id}", 1, timeout=seconds):
        return  # asked already within the lag
    if not enqueue.evaluation_refresh(challenge_id=challenge_id):
        cache.delete(f"podium:evaluation-refresh:{challenge_id}")  # the next reader asks


def evaluation_player(*, challenge: Challenge, frozen: bool, player_id: int) -> IntervalRow | None:
    """One player's row of the whole board (the player page)."""
    view = evaluation_board(challenge=challenge, frozen=frozen)
    return next((row for row in view.rows if row.player_id == player_id), None)
