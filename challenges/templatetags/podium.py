"""Template filters for the public pages."""

from __future__ import annotations

from datetime import UTC, datetime

from django import template

from scoring.engine.strategies import get_strategy

register = template.Library()


@register.filter
def ranking_value(score: float, strategy: str) -> str:
    """The leaderboard value in the strategy's own unit."""
    unit = get_strategy(strategy).unit
    if unit == "epoch_ms":
        return datetime.fromtimestamp(score / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    if unit == "ms":
        return f"{score / 1000:,.3f} s"
    if unit == "tokens":
        return f"{score:,.0f} tokens"
    if unit == "rating":
        return f"{score:g} / 10"
    return f"{score:,.2f} pts"


@register.filter
def strategy_label(strategy: str) -> str:
    return get_strategy(strategy).label
