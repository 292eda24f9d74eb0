"""The aggregate metrics of a challenge as people read them (admin and public pages)."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


def _number(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "–" if value is None else str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e6 else f"{value:,.0f}"
    return str(value)


@register.filter
def metric_text(value: Any) -> str:
    """0.3333…→ "0.3333"; a dict → "accuracy 0.75 · precision 0.6667 · …"; per-class
    results → "class 1: precision 0.5, recall 1, f1 0.6667, support 2"; None → "no data"."""
    if value is None:
        return "no data"
    if not isinstance(value, dict):
        return _number(value)
    parts = []
    for key, item in value.items():
        if key == "classes" and isinstance(item, dict):
            for cls, stats in item.items():
                inner = ", ".join(f"{k} {_number(v)}" for k, v in stats.items())
                parts.append(f"class {cls}: {inner}")
        else:
            parts.append(f"{key} {_number(item)}")
    return " · ".join(parts)
