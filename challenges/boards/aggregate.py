"""What a reader of an aggregate board (``board = "aggregate"``) is served: the page and
its live fragment (a table with intervals, rank ranges, tiers and slice tabs), the
CSV/JSON exports' rows and the player page's interval. ``boards.read.board_read`` calls
``aggregate_read`` with the reader's ``BoardQuery`` (its ``slice`` and ``metric``).

The numbers are the stored ones (``leaderboards/evaluation.py``): a read renders them and
never computes a bootstrap. Formatted here once; the template only places them.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote, urlencode

from django.template.loader import render_to_string
from django.utils import timezone
from rest_framework.renderers import JSONRenderer

from challenges.boards import display
from challenges.boards.query import STAFF, BoardQuery
from challenges.boards.shapes import Echo, csv_cell, page_context
from challenges.ingestion.admission import schedule_phase
from challenges.leaderboards import evaluation, freeze, precision, ranking
from challenges.leaderboards.kept import kept, kept_recomputed
from challenges.models import Challenge
from challenges.text import iso_z

ROWS_SHOWN = 500  # an evaluation board lists models or agents: a page holds them all


def statistic_text(value: float | None, strategy: str, *, unit: bool = True) -> str:
    """A player's statistic (a mean is rarely a whole number) in the board's unit;
    ``unit=False``: an interval's bound, whose unit the score beside it says."""
    if value is None:
        return "—"
    if strategy in ("python", "highest_rating"):
        text = f"{value:,.3f}".rstrip("0").rstrip(".")
        return f"{text} / 10" if strategy == "highest_rating" and unit else text
    return display.format_value(value, strategy)


def _query(part: str, metric: str) -> str:
    pairs = [(name, value) for name, value in (("slice", part), ("metric", metric)) if value]
    return "?" + urlencode(pairs) if pairs else ""


def _frozen(query: BoardQuery) -> bool:
    """Whether the viewer reads the frozen board (staff read the live one)."""
    return query.viewer != STAFF and freeze.is_frozen(query.challenge)


def board_view(query: BoardQuery) -> evaluation.EvaluationView:
    """The board ``query`` reads, without its rows: its ``key`` names a kept build."""
    return evaluation.evaluation_board(
        challenge=query.challenge, frozen=_frozen(query), slice=query.slice, rows=False
    )


def board_context(query: BoardQuery, view: evaluation.EvaluationView) -> dict[str, Any]:
    challenge = query.challenge
    view = evaluation.evaluation_rows(view, challenge)
    part = view.slice
    metric = query.metric if query.metric in view.metrics else ""
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
    frozen = _frozen(query)
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


def board_html(query: BoardQuery, view: evaluation.EvaluationView) -> tuple[str, dict[str, Any]]:
    context = board_context(query, view)
    return render_to_string("challenges/_evaluation.html", context), context


def player_context(challenge: Challenge, user: Any, player_id: int) -> dict[str, Any] | None:
    """The player page's interval and tier, or None (not an aggregate board)."""
    if not evaluation.is_aggregate(challenge):
        return None
    frozen = freeze.frozen_for(challenge, user)
    row = evaluation.evaluation_player(challenge=challenge, frozen=frozen, player_id=player_id)
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


def _whole(query: BoardQuery) -> evaluation.EvaluationView:
    """The board ``query`` reads (or its ``?slice=``), every row: what the exports write."""
    return evaluation.evaluation_board(
        challenge=query.challenge, frozen=_frozen(query), slice=query.slice
    )


def _rows(query: BoardQuery) -> list[dict[str, Any]]:
    """Every row, as the API serves them, with the unit."""
    challenge = query.challenge
    unit = display.score_unit((challenge.active_version or challenge).scoring_strategy)
    return [{**evaluation.row_fields(row), "score_unit": unit} for row in _whole(query).rows]


def _export_csv(query: BoardQuery) -> Iterator[str]:
    writer = csv.writer(Echo())
    yield writer.writerow(EXPORT_COLUMNS)
    for row in _rows(query):
        yield writer.writerow([csv_cell(row[c]) for c in EXPORT_COLUMNS])


def _export_json(query: BoardQuery) -> str:
    """The whole body at once (an aggregate board is small: a row a model or agent)."""
    challenge, view = query.challenge, _whole(query)
    version = challenge.active_version
    return json.dumps(
        {
            "challenge": challenge.slug,
            "version": version.number if version else None,
            "board": "aggregate",
            "score_unit": display.score_unit((version or challenge).scoring_strategy),
            "ci_level": challenge.ci_level,
            "computed_at": iso_z(view.computed_at) if view.computed_at else None,
            "attempts": view.attempts,
            "slice": query.slice or None,
            "slices": view.slices,
            "results": [evaluation.row_fields(row) for row in view.rows],
        }
    )


# --- the page and its fragment, kept -------------------------------------------------------
def aggregate_read(query: BoardQuery, *, ahead: bool = False) -> Any:
    """What ``query`` of an aggregate board is served (``board_read``'s shapes): HTML for a
    page or fragment, the API's JSON (bytes), an iterator of str for the CSV export, the
    JSON export's whole body (str)."""
    if query.shape == "csv":
        return _export_csv(query)
    if query.shape == "export":
        return _export_json(query)
    view, challenge = board_view(query), query.challenge
    if query.shape == "json":  # the API's body: the bytes DRF would send, kept
        build_json = lambda: JSONRenderer().render(_api_body(query, view))  # noqa: E731
        if not view.key:  # nothing stored yet
            return build_json()
        asked = (query.offset, query.limit, query.player)
        return kept("api-eval-json", (view.key, view.slice, *asked), build_json)
    if query.shape == "board":
        build = lambda: board_html(query, view)[0]  # noqa: E731
        return _kept("board-eval", view, (challenge.rescoring, query.metric), build, ahead=ahead)
    now = timezone.now()
    phase = schedule_phase(challenge=challenge, now=now)
    minute = now.replace(second=0, microsecond=0)
    parts = (challenge.rescoring, query.metric, phase, minute)
    return _kept("page-eval", view, parts, lambda: _page(query, view), ahead=ahead)


def _kept(
    kind: str, view: Any, parts: tuple[Any, ...], build: Callable[[], str], *, ahead: bool
) -> str:
    """An aggregate board's build, kept under the view's key (the stored board, names,
    hides, the challenge as saved) and ``parts``; built afresh while nothing is stored.
    Just after a worker stored new intervals the previous ones' build may be served
    (``kept_recomputed``): the worker builds the page and fragment ahead."""
    if not view.key:
        return build()
    fresh = view.computed_at is not None and (
        timezone.now() - view.computed_at < ranking.reuse_bound()
    )
    named, family = (view.key, view.slice, *parts), (view.family, view.slice, *parts)
    return kept_recomputed(kind, named, family, build, fresh=fresh, ahead=ahead)


def _api_body(query: BoardQuery, view: evaluation.EvaluationView) -> dict[str, Any]:
    """The API's leaderboard of an aggregate board: a window of rows, or one player's."""
    challenge = query.challenge
    view = evaluation.evaluation_rows(view, challenge)
    rows = view.rows
    if query.player:
        rows = [row for row in rows if row.external_id == query.player]
    else:
        rows = rows[query.offset : query.offset + query.limit]
    return {
        "version": challenge.active_version.number if challenge.active_version_id else None,
        "board": "aggregate",
        "count": len(view.rows),
        "computed_at": iso_z(view.computed_at) if view.computed_at else None,
        "attempts": view.attempts,
        "ci_level": view.ci_level,
        "slice": view.slice or None,
        "slices": view.slices,
        "pending": view.pending,
        "results": [evaluation.row_fields(row) for row in rows],
    }


def _page(query: BoardQuery, view: evaluation.EvaluationView) -> str:
    """The page: the challenge's detail page around the board's table."""
    html, context = board_html(query, view)
    challenge = query.challenge
    setup = challenge.active_version or challenge
    context.update(
        page_context(challenge, setup, frozen=_frozen(query)),
        board_html=html,
        board=None,
        aggregate=True,  # every player on one page: no search; no best-value charts
        aggregate_rule=evaluation.AGGREGATE_RULE.format(statistic=challenge.aggregate),
    )
    return render_to_string("challenges/detail.html", context)
