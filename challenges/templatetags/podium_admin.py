"""Template tags of the admin's scoring pages: numbers as admins read them, and the
dashboard of ``/admin/``."""

from __future__ import annotations

import json
from typing import Any

from django import template

register = template.Library()


@register.filter
def score_text(score: float | None) -> str:
    """A score as the admin pages show it, two decimals: "145.50", "0.00"; "–" for none."""
    if score is None:
        return "–"
    return f"{score:,.2f}"


@register.filter
def signed(delta: float | None) -> str:
    """A score change: "+12.50", "−3.00", "0.00"; "" when there is none to compare."""
    if delta is None:
        return ""
    if abs(delta) < 0.005:  # rounds to 0.00: no sign
        return "0.00"
    text = score_text(abs(delta))
    return f"+{text}" if delta > 0 else f"−{text}"


@register.filter
def detail_text(value: Any) -> str:
    """A details value: numbers like scores, booleans as yes/no, None as "–", nested
    values as JSON (never a Python repr), the rest as it is."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return score_text(value)
    if value is None:
        return "–"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


@register.filter
def json_text(value: Any) -> str:
    """A sample or payload as indented JSON, cut at a readable length."""
    text = json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True)
    return text if len(text) <= 2000 else text[:2000] + "\n…"


@register.simple_tag(takes_context=True)
def challenge_dashboard(context: Any) -> Any:
    """The dashboard rows (``challenges.admin.dashboard``) for ``admin/index.html``, each running
    job with its live progress block."""
    from challenges.admin.dashboard import dashboard_rows
    from challenges.admin.views import render_progress

    request = context["request"]
    rows = dashboard_rows()
    return [
        (row, [render_progress(request, job, compact=True) for job in row.running]) for row in rows
    ]


@register.simple_tag(takes_context=True)
def failures_link(context: Any, count: int, version_id: int) -> str:
    """ "3 failures", linking to the failed scores for users who may see them."""
    from challenges.admin.views import failures_link as link

    return link(count, version_id, context["request"].user)


@register.simple_tag(takes_context=True)
def qa_link(context: Any, count: int, version_id: int) -> str:
    """ "3 failing QA", linking to those scores for users who may see them."""
    from challenges.admin.qa import qa_link as link

    return link(count, version_id, context["request"].user)
