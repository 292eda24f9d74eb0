"""Built-in strategies and the ranking direction of every strategy (docs/ranking.md).

A strategy turns an attempt's metrics into its ranking value, or None when the attempt
does not count. Ranking everywhere uses one ascending ``sort_key`` (the value itself for
"lower is better", its negation for "higher is better"), then the earlier ``created_at``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .protocol import AttemptMetrics

FIRST = "first"
FASTEST = "fastest"
FEWEST_TOKENS = "fewest_tokens"
HIGHEST_RATING = "highest_rating"
CUSTOM = "custom"
PYTHON = "python"


@dataclass(frozen=True, slots=True)
class Strategy:
    name: str
    label: str  # plain words for people: "Fastest success"
    unit: str  # what the leaderboard value is: "epoch_ms", "ms", "tokens", "rating", "points"
    descending: bool  # True: a higher value ranks first
    value: Callable[[AttemptMetrics], float | None] | None  # None: computed by a scorer
    choice: str = ""  # its name where an admin chooses it, when not its label: "Scorer plugin"

    @property
    def chosen_as(self) -> str:
        """The one name of the strategy in forms, version summaries and diffs."""
        return self.choice or self.label


def _first(m: AttemptMetrics) -> float | None:
    return float(m.created_at) if m.succeeded and m.created_at is not None else None


def _fastest(m: AttemptMetrics) -> float | None:
    return float(m.elapsed_ms) if m.succeeded and m.elapsed_ms is not None else None


def _fewest_tokens(m: AttemptMetrics) -> float | None:
    return float(m.tokens_total) if m.succeeded and m.tokens_total is not None else None


def _highest_rating(m: AttemptMetrics) -> float | None:
    return float(m.rating) if m.succeeded and m.rating is not None else None


STRATEGIES: dict[str, Strategy] = {
    s.name: s
    for s in (
        Strategy(FIRST, "First success", "epoch_ms", False, _first),
        Strategy(FASTEST, "Fastest success", "ms", False, _fastest),
        Strategy(FEWEST_TOKENS, "Fewest tokens", "tokens", False, _fewest_tokens),
        Strategy(HIGHEST_RATING, "Highest rating", "rating", True, _highest_rating),
        Strategy(CUSTOM, "Highest plugin score", "points", True, None, "Scorer plugin"),
        Strategy(PYTHON, "Highest snippet score", "points", True, None, "Python snippet"),
    )
}
BUILTIN = (FIRST, FASTEST, FEWEST_TOKENS, HIGHEST_RATING)


def get_strategy(name: str) -> Strategy:
    try:
        return STRATEGIES[name]
    except KeyError:
        known = ", ".join(STRATEGIES)
        raise ValueError(f"Unknown strategy {name!r}; choose one of: {known}.") from None


def _same(value: float) -> float:
    return value


def _negated(value: float) -> float:
    return -value


def sort_key_for(strategy: str, *, lower_is_better: bool = False) -> Callable[[float], float]:
    """Which way a setup ranks, as the ascending sort key of a score: the one place that
    says it. A python setup says it itself (``lower_is_better``); any other strategy has
    its own direction."""
    if strategy == PYTHON:
        return _same if lower_is_better else _negated
    return _negated if get_strategy(strategy).descending else _same
