"""An independent brute force of a collection's standings (docs/ranking.md,
"Collections"): exact arithmetic (fractions), and a player's rank counted as one plus
the players strictly ahead of them, compared pair by pair."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction
from typing import Any


@dataclass(frozen=True)
class Best:
    """A player's best attempt on one member board."""

    score: float
    created_at: datetime
    succeeded: bool
    elapsed_ms: int | None
    tokens_total: int | None
    rating: int | None


def _counted(strategy: str, best: Best) -> Fraction | None:
    if strategy == "sum":
        return Fraction(best.score)
    if not best.succeeded:
        return None
    metric = {
        "fastest_total": best.elapsed_ms,
        "fewest_tokens_total": best.tokens_total,
        "highest_avg_rating": best.rating,
    }[strategy]
    return None if metric is None else Fraction(metric)


def reference_standings(
    strategy: str, boards: list[dict[str, Best]]
) -> list[tuple[int, str, float, int]]:
    """(rank, player, value, completed) for every player with a counted board, sorted by
    rank then external id. ``boards``: per member challenge, player → best attempt."""
    players = sorted({p for board in boards for p in board})
    facts: dict[str, tuple[int, Fraction, datetime]] = {}
    for p in players:
        counted = [
            (v, board[p].created_at)
            for board in boards
            if p in board and (v := _counted(strategy, board[p])) is not None
        ]
        if not counted:
            continue
        total = sum((v for v, _ in counted), Fraction(0))
        exact = total / len(counted) if strategy == "highest_avg_rating" else total
        # The rule ranks by the value as a float: the exact result, correctly rounded
        # (docs/ranking.md). Two exact sums a rounding apart are one value: a tie, and the
        # earlier completion goes first, as on any board.
        value = Fraction(float(exact))
        facts[p] = (len(counted), value, max(t for _, t in counted))
    higher = strategy in ("sum", "highest_avg_rating")

    def ahead(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
        if a[0] != b[0]:
            return a[0] > b[0]
        if a[1] != b[1]:
            return a[1] > b[1] if higher else a[1] < b[1]
        return a[2] < b[2]

    out = [
        (1 + sum(ahead(facts[q], facts[p]) for q in facts), p, float(facts[p][1]), facts[p][0])
        for p in facts
    ]
    return sorted(out)
