"""The challenge page's charts: the score distribution and the top 10 over time.

Computed once per ranking (its token changes whenever the leaderboard does) and kept in
the cache, so a chart costs one aggregate over the entries per leaderboard change, not
per view. The top 10's history reads only those ten players' attempts (by the player
index), never the challenge's million.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.core.cache import cache
from django.db.models import Count, F, OuterRef, Subquery
from django.db.models.functions import Floor

from challenges.leaderboards import exclusions
from challenges.leaderboards import ranking as board_ranking
from challenges.leaderboards.names import names_as_of
from challenges.models import Attempt, AttemptScore, Challenge, LeaderboardEntry
from scoring.engine.strategies import get_strategy

BINS = 20
TOP = 10
HISTORY_MAX = 5000  # attempts read for the top 10's lines
CACHE_SECONDS = 3600
RANK_ORDER = ("sort_key", "created_at", "attempt_id")


def _axis(unit: str) -> tuple[str, float]:
    """The axis title and the divisor from the stored value to what people read."""
    return {
        "ms": ("Time taken (s)", 1000.0),
        "tokens": ("Tokens used", 1.0),
        "rating": ("Judge rating", 1.0),
        "epoch_ms": ("First success", 1.0),
    }.get(unit, ("Score (points)", 1.0))


def _label(value: float, unit: str) -> str:
    if unit == "epoch_ms":
        return datetime.fromtimestamp(value / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M")
    if unit == "ms":
        return f"{value / 1000:,.1f} s"
    if unit in ("tokens", "rating"):
        return f"{value:,.0f}"
    return f"{value:,.1f}"


def _distribution(version_id: int, unit: str) -> dict[str, Any]:
    entries = LeaderboardEntry.objects.filter(version_id=version_id)
    ends = [
        entries.order_by(*RANK_ORDER).values_list("score", flat=True).first(),
        entries.order_by(*[f"-{f}" for f in RANK_ORDER]).values_list("score", flat=True).first(),
    ]
    if ends[0] is None:
        return {"labels": [], "counts": []}
    lo, hi = min(ends), max(ends)
    if unit == "rating" or (unit == "tokens" and hi - lo < BINS):
        width = 1.0  # whole numbers: one bar per value
    else:
        width = (hi - lo) / BINS or 1.0
    bins = min(BINS, int((hi - lo) / width) + 1)
    counts = [0] * bins
    grouped = (
        entries.annotate(bin=Floor((F("score") - lo) / width))
        .values("bin")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for row in grouped:
        counts[min(max(int(row["bin"]), 0), bins - 1)] += row["n"]
    return {"labels": [_label(lo + i * width, unit) for i in range(bins)], "counts": counts}


def _top_history(
    challenge: Challenge,
    version_id: int,
    descending: bool,
    scale: float,
    board_id: int,
    before: datetime | None,
):
    top = list(
        LeaderboardEntry.objects.filter(version_id=board_id)
        .order_by(*RANK_ORDER)
        .values_list("player_id", "player__display_name")[:TOP]
    )
    if not top:
        return []
    if before is not None:  # a frozen board: its players named as of the freeze
        names = names_as_of(player_ids=[p for p, _ in top], at=before)
        top = [(p, names.get(p, name)) for p, name in top]
    score = AttemptScore.objects.filter(version_id=version_id, attempt_id=OuterRef("pk"))
    mine = Attempt.objects.filter(challenge_id=challenge.pk, player_id__in=[p for p, _ in top])
    if before is not None:  # a frozen board: no point after the freeze
        mine = mine.filter(recorded_at__lt=before)
    attempts = (
        exclusions.public_attempts(mine, challenge_id=challenge.pk)  # no hidden or practice
        .annotate(score=Subquery(score.values("score")[:1]))
        .filter(score__isnull=False)
        .order_by("created_at", "pk")
        .values_list("player_id", "created_at", "score")[:HISTORY_MAX]
    )
    points: dict[int, list[dict[str, float]]] = {p: [] for p, _ in top}
    best: dict[int, float] = {}
    newest = None
    for player_id, created_at, value in attempts:
        x = board_ranking.to_us(created_at) // 1000
        newest = x
        current = best.get(player_id)
        if current is None or (value > current if descending else value < current):
            best[player_id] = value
            points[player_id].append({"x": x, "y": round(value / scale, 3)})
    # Each line runs on to the newest of these attempts at its best value: a player who
    # improved once is a line, not a lone dot the eye cannot follow.
    for line in points.values():
        if line and newest is not None and line[-1]["x"] < newest:
            line.append({"x": newest, "y": line[-1]["y"]})
    return [{"label": name, "points": points[p]} for p, name in top]


def charts_data(
    *, challenge: Challenge, board_id: int | None = None, before: datetime | None = None
) -> dict[str, Any]:
    """Both charts' data for the active version (empty when nobody is ranked).
    ``board_id``/``before``: a frozen board, and only the attempts recorded before the
    freeze in the top 10's history."""
    version = challenge.active_version
    if version is None:
        return {"axis": "", "distribution": {"labels": [], "counts": []}, "top": []}
    board = board_id or version.pk
    # The ranking's state as read with the challenge (challenge_public), when it was: the
    # active version's (a frozen board reads its own).
    state = getattr(challenge, "ranking_state", None) if board == version.pk else None
    ranking = board_ranking.ranking_current(version_id=board, state=state)
    key = f"podium:charts:{ranking.token}"
    data = cache.get(key)
    if data is None:
        strategy = get_strategy(version.scoring_strategy)
        axis, scale = _axis(strategy.unit)
        data = {
            "axis": axis,
            "time_axis": strategy.unit == "epoch_ms",
            "distribution": _distribution(board, strategy.unit),
            "top": _top_history(
                challenge,
                version.pk,
                strategy.descending and not version.lower_is_better,
                scale,
                board,
                before,
            ),
        }
        cache.set(key, data, CACHE_SECONDS)
    return data
