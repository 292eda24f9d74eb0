"""How a collection ranks its players, in plain Python (no database): from each member
challenge's public board rows to one ranked list (docs/ranking.md, "Collections").

A player's **cell** in a challenge is their row on that challenge's public board (their
best attempt there). A cell **counts** under the collection's strategy when it has what
the strategy adds up:

- ``sum``: every cell counts; its value is the board's value (``score``);
- ``fastest_total``: a succeeded best attempt with ``elapsed_ms``; the times add up;
- ``fewest_tokens_total``: a succeeded best attempt with ``tokens_total``; they add up;
- ``highest_avg_rating``: a succeeded best attempt with a ``rating``; the mean of them.

Order: more counted challenges first; then the value (``sum`` and the average rating
higher first, the totals lower first); then the earlier **completion time** (the newest
``created_at`` among the counted cells: who got there first); rows equal in all three
share a rank (1, 2, 2, 4). A player with no counted cell is not ranked.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

SUM = "sum"
FASTEST_TOTAL = "fastest_total"
FEWEST_TOKENS_TOTAL = "fewest_tokens_total"
HIGHEST_AVG_RATING = "highest_avg_rating"
STRATEGIES = (SUM, FASTEST_TOTAL, FEWEST_TOKENS_TOTAL, HIGHEST_AVG_RATING)
HIGHER_FIRST = frozenset({SUM, HIGHEST_AVG_RATING})


@dataclass(frozen=True)
class Cell:
    """A player's row on one member challenge's public board, with its best attempt's
    metrics."""

    rank: int
    score: float
    attempt_id: int
    created_at: datetime
    succeeded: bool
    elapsed_ms: int | None
    tokens_total: int | None
    rating: int | None


@dataclass(frozen=True)
class BoardRow:
    """One row of a member board, as the collection reads it."""

    player: str  # external id: how players are matched across challenges
    display_name: str
    cell: Cell


@dataclass(frozen=True)
class Standing:
    rank: int
    player: str
    display_name: str
    value: float
    completed: int  # counted challenges
    completed_at: datetime  # the newest created_at among the counted cells
    cells: tuple[Cell | None, ...]  # one per member challenge, in order; None: no row
    counted: tuple[bool, ...]  # whether each cell counts under the strategy


def cell_value(strategy: str, cell: Cell) -> float | None:
    """What ``cell`` adds to the collection under ``strategy`` (None: it does not
    count)."""
    if strategy == SUM:
        return float(cell.score)
    if not cell.succeeded:
        return None
    metric = {
        FASTEST_TOTAL: cell.elapsed_ms,
        FEWEST_TOKENS_TOTAL: cell.tokens_total,
        HIGHEST_AVG_RATING: cell.rating,
    }[strategy]
    return None if metric is None else float(metric)


def standings_rank(*, strategy: str, boards: Sequence[Iterable[BoardRow]]) -> list[Standing]:
    """Every player with a counted cell, ranked: ``boards`` holds each member challenge's
    rows, in the collection's order."""
    if strategy not in STRATEGIES:
        raise ValueError(f"Unknown collection strategy {strategy!r}.")
    names: dict[str, str] = {}
    cells: dict[str, list[Cell | None]] = {}
    for i, rows in enumerate(boards):
        for row in rows:
            names[row.player] = row.display_name
            cells.setdefault(row.player, [None] * len(boards))[i] = row.cell
    unranked = []
    for player, found in cells.items():
        values = [None if c is None else cell_value(strategy, c) for c in found]
        counted = [v is not None for v in values]
        kept = [v for v in values if v is not None]
        if not kept:
            continue
        total = math.fsum(kept)  # exact: the order of the members never changes a sum
        value = total / len(kept) if strategy == HIGHEST_AVG_RATING else total
        when = max(c.created_at for c, n in zip(found, counted, strict=True) if c and n)
        key = (-len(kept), -value if strategy in HIGHER_FIRST else value, when)
        unranked.append((key, player, value, when, tuple(found), tuple(counted)))
    unranked.sort(key=lambda u: (u[0], u[1]))  # equal keys: by external id, for a stable page
    ranked: list[Standing] = []
    for place, (key, player, value, when, found, counted) in enumerate(unranked, start=1):
        shared = bool(ranked) and key == unranked[place - 2][0]
        rank = ranked[-1].rank if shared else place
        ranked.append(Standing(rank, player, names[player], value, -key[0], when, found, counted))
    return ranked
