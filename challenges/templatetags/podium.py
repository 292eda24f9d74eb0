"""Template filters for the public pages (thin wrappers of ``challenges.boards.display``; the
leaderboard itself is formatted in Python once per render, not per cell)."""

from __future__ import annotations

from django import template

from challenges.boards import display
from scoring.engine.strategies import get_strategy

register = template.Library()


@register.filter
def ranking_value(score: float, strategy: str) -> str:
    """The leaderboard value in the strategy's own unit."""
    return display.format_value(score, strategy)


@register.filter
def exact_time(value) -> str:
    """A moment as every page writes it: "2026-11-26 14:05:09 UTC" ("" for none)."""
    return display.exact_time(value) if value else ""


@register.filter
def strategy_label(strategy: str) -> str:
    return get_strategy(strategy).label
