"""The public face of an aggregate board (``board = "aggregate"``): the page's table with
intervals, rank ranges, tiers and slice tabs, and the CSV/JSON exports' rows.

The numbers are the stored ones (``leaderboards/evaluation.py``): a read renders them and
never computes a bootstrap. Formatted here once; the template only places them.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from django.http import HttpRequest
from django.template.loader import render_to_string

from challenges.boards import display
from challenges.leaderboards import evaluation, freeze, precision
from challenges.models import Challenge
from challenges.text import iso_z

ROWS_SHOWN = 500  # an evaluation board lists models or agents: a page holds them all


def slice_asked(request: HttpRequest, challenge: Challenge) -> str:
    """``?slice=`` as the board reads it: ignored on a board without slices."""
    return (request.GET.get("slice") or "")[:200] if challenge.slice_by else ""


def statistic_text(value: float | None, strategy: str, *, unit: bool = True) -> str:
    """A player's statistic (a mean is rarely a whole number) in the board's unit;
    ``unit=False``: an interval's bound, whose unit the score beside it says."""
    if value is None:
        return "—"
    if strategy in ("python", "highest_rating"):
        text = f"{value:,.3f}".rstrip("0").rstrip(".")
        return f"{text} / 10" if strategy == "highest_rating" and unit else text
    return display.format_value(value, strategy)


def metric_asked(request: HttpRequest) -> str:
    """``?metric=``: one of the challenge's metrics shown as a column (each player's own)."""
    return (request.GET.get("metric") or "")[:200]


def _query(part: str, metric: str) -> str:
    pairs = [(name, value) for name, value in (("slice", part), ("metric", metric)) if value]
    return "?" + urlencode(pairs) if pairs else ""


def board_view(request: HttpRequest, challenge: Challenge) -> evaluation.EvaluationView:
    """The board this request reads, without its rows: its ``key`` names a kept build."""
    part = slice_asked(request, challenge)
    return evaluation.evaluation_board(
        challenge=challenge, user=request.user, slice=part, rows=False
    )


def board_context(
    request: HttpRequest, challenge: Challenge, view: evaluation.EvaluationView
) -> dict[str, Any]:
    view = evaluation.evaluation_rows(view, challenge)
    part = view.slice
    metric = metric_asked(request)
    metric = metric if metric in view.metrics else ""
    values = view.metrics.get(metric, {})
    strategy = (challenge.active_version or challenge).scoring_strategy
    ranked = [r for r in view.rows if r.ranked]
    bounds = [b for r in ranked for b in (r.ci_low, r.ci_high) if b is not None]
    low, high = (min(bounds), max(bounds)) if bounds else (0.0, 1.0)
    span = (high - low) or 1.0
    detail_url = f"/challenges/{challenge.slug}/"
    rows = []
    for r in view.rows[:ROWS_SHOWN]:
        bar = None
        if r.ci_low is not None and r.ci_high is not None:
            bar = {
                "left": round(100 * (r.ci_low - low) / span, 2),
                "width": max(0.8, round(100 * (r.ci_high - r.ci_low) / span, 2)),
                "mark": round(100 * (r.score - low) / span, 2),
            }
        rows.append(
            {
                "rank": r.rank,
                "name": r.display_name,
                "url": f"{detail_url}players/{quote(r.external_id, safe='')}/",
                "value": statistic_text(r.score, strategy, unit=False),
                "low": statistic_text(r.ci_low, strategy, unit=False),
                "high": statistic_text(r.ci_high, strategy, unit=False),
                "bar": bar,
                "rank_range": (
                    ""
                    if r.rank_low is None
                    else str(r.rank_low)
                    if r.rank_low == r.rank_high
                    else f"{r.rank_low}–{r.rank_high}"
                ),
                "tier": r.tier,
                "n": r.n,
                "metric": _metric_text(values.get(str(r.player_id))) if metric else "",
            }
        )
    for i, row in enumerate(rows):  # "=" before a rank shared with a neighbour
        row["shared"] = row["rank"] is not None and any(
            0 <= i + d < len(rows) and rows[i + d]["rank"] == row["rank"] for d in (-1, 1)
        )
    total = sum(view.slices.values())
    tabs = [{"label": "All", "query": _query("", metric), "count": None, "current": not part}]
    tabs += [
        {
            "label": value,
            "query": _query(value, metric),
            "count": count,
            "current": value == part,
        }
        for value, count in view.slices.items()
    ]
    frozen = freeze.frozen_for(challenge, request.user)
    unit = " / 10" if strategy == "highest_rating" else ""  # said once, in the header
    query = _query(part, metric)
    metric_links = [
        {"label": name, "query": _query(part, "" if name == metric else name), "on": name == metric}
        for name in sorted(view.metrics)
    ]
    return {
        "challenge": challenge,
        "view": view,
        "rows": rows,
        "ranked": len(ranked),
        "tabs": tabs if view.slices else [],
        "slices_total": total,
        "slice": part,
        "level": f"{100 * challenge.ci_level:g}",
        "samples": challenge.bootstrap_samples,
        "statistic": "sum" if challenge.aggregate == "sum" else "mean",
        "tier_legend": evaluation.TIER_LEGEND,
        "computed_exact": display.exact_time(view.computed_at) if view.computed_at else "",
        "computed_iso": view.computed_at.isoformat() if view.computed_at else "",
        "detail_url": detail_url,
        "refresh_url": f"{detail_url}board/{query}",
        "frozen": frozen,
        "frozen_exact": display.exact_time(challenge.freeze_at) if challenge.freeze_at else "",
        "more": max(0, len(view.rows) - ROWS_SHOWN),
        "metric": metric,
        "metric_links": metric_links,
        "attempts_text": f"{view.attempts:,}",  # "over 48,200 attempts"
        "items_text": f"{view.items:,}",
        "unit": unit,
    }


def _metric_text(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{precision.served(value):,.4f}".rstrip("0").rstrip(".")


def board_html(
    request: HttpRequest, challenge: Challenge, view: evaluation.EvaluationView
) -> tuple[str, dict[str, Any]]:
    context = board_context(request, challenge, view)
    return render_to_string("challenges/_evaluation.html", context, request=request), context


def player_context(challenge: Challenge, user: Any, player_id: int) -> dict[str, Any] | None:
    """The player page's interval and tier, or None (not an aggregate board)."""
    if not evaluation.is_aggregate(challenge):
        return None
    row = evaluation.evaluation_player(challenge=challenge, user=user, player_id=player_id)
    strategy = (challenge.active_version or challenge).scoring_strategy
    if row is None:
        return {"found": False}
    return {
        "found": True,
        "ranked": row.ranked,
        "rank": row.rank,
        "value": statistic_text(row.score, strategy),
        "low": statistic_text(row.ci_low, strategy),
        "high": statistic_text(row.ci_high, strategy),
        "rank_low": row.rank_low,
        "rank_high": row.rank_high,
        "tier": row.tier,
        "n": row.n,
        "level": f"{100 * challenge.ci_level:g}",
        "tier_legend": evaluation.TIER_LEGEND,
    }


EXPORT_COLUMNS = (*evaluation.COLUMNS, "score_unit")


def export_rows(request: HttpRequest, challenge: Challenge) -> list[dict[str, Any]]:
    """Every row of the board (or of ``?slice=``), as the API serves them, with the unit."""
    part = slice_asked(request, challenge)
    view = evaluation.evaluation_board(challenge=challenge, user=request.user, slice=part)
    unit = display.score_unit((challenge.active_version or challenge).scoring_strategy)
    return [{**evaluation.row_fields(row), "score_unit": unit} for row in view.rows]


def export_body(request: HttpRequest, challenge: Challenge) -> dict[str, Any]:
    part = slice_asked(request, challenge)
    view = evaluation.evaluation_board(challenge=challenge, user=request.user, slice=part)
    version = challenge.active_version
    return {
        "challenge": challenge.slug,
        "version": version.number if version else None,
        "board": "aggregate",
        "score_unit": display.score_unit((version or challenge).scoring_strategy),
        "ci_level": challenge.ci_level,
        "computed_at": iso_z(view.computed_at) if view.computed_at else None,
        "attempts": view.attempts,
        "slice": part or None,
        "slices": view.slices,
        "results": [evaluation.row_fields(row) for row in view.rows],
    }
