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


def _label(value: Any) -> str:
    """A frequency's value as a label: 1.0 → "1", "yes" → "yes"."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return f"{number:g}"


@register.filter
def metric_display(metric: dict[str, Any]) -> str:
    """A metric ``{"type", "value"}`` as people read it: a frequency as labelled value →
    count pairs ("1 → 12 · 0 → 3"), anything else as ``metric_text``."""
    value = metric.get("value")
    if metric.get("type") == "frequency" and isinstance(value, dict):
        if not value:
            return "no data"
        pairs = sorted(value.items(), key=lambda kv: (-kv[1], _label(kv[0])))
        return " · ".join(f"{_label(k)} → {_number(n)}" for k, n in pairs)
    return metric_text(value)
