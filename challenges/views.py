"""Public pages: server-rendered, read-only, no login.

Views parse the query string, call one selector and render. Values are formatted once in
Python (``board_rows``), and the rendered table is cached by its content, so a quiet
leaderboard costs a few small queries per request and no template work.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterator
from typing import Any

from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_safe

from . import charts, display, selectors
from .markdown import render_markdown, summary
from .models import Challenge

SEARCH_MAX = 100  # characters of a name search: display names are at most 200
FRAGMENT_TTL = 300  # seconds; the key holds the content, so this only bounds memory


def _not_found(request: HttpRequest, slug: str) -> HttpResponse:
    """The friendly 404 for an unknown or inactive challenge (also under DEBUG)."""
    return render(
        request,
        "404.html",
        {"missing": "challenge", "slug": slug},
        status=404,
    )


@require_safe
def challenge_list(request: HttpRequest) -> HttpResponse:
    cards = selectors.challenge_cards()
    now = timezone.now()
    for c in cards:
        c.summary = summary(c.description)
        setup = c.active_version or c
        c.strategy_words = display.strategy_words(setup)
        c.leader_value = (
            display.format_value(c.leader_score, setup.scoring_strategy)
            if c.leader_score is not None
            else ""
        )
        c.activity = display.relative_time(c.last_activity, now) if c.last_activity else ""
        c.activity_exact = display.exact_time(c.last_activity) if c.last_activity else ""
    return render(request, "challenges/list.html", {"challenges": cards})


def _page_number(raw: str | None) -> int:
    try:
        return max(1, int(raw or "1"))
    except ValueError:
        return 1


def _board_request(request: HttpRequest) -> dict[str, Any]:
    return {
        "page": _page_number(request.GET.get("page")),
        "query": (request.GET.get("q") or "").strip()[:SEARCH_MAX],
        "player": (request.GET.get("player") or "").strip()[:255],
    }


def board_rows(board: selectors.Board, strategy: str) -> list[dict[str, Any]]:
    """Every cell of the table, formatted once."""
    now = timezone.now()
    rows = []
    for row in board.rows:
        medal = display.MEDALS.get(row.rank)
        rows.append(
            {
                "rank": row.rank,
                "shared": False,
                "medal": medal,
                "name": row.display_name,
                "player": row.player_external_id,
                "value": display.format_value(row.score, strategy),
                "when": display.relative_time(row.created_at, now),
                "when_exact": display.exact_time(row.created_at),
                "when_iso": row.created_at.isoformat(),
                "terms": [
                    *display.breakdown(row.details, row.metrics),
                    ("Attempt time", display.exact_time(row.created_at)),
                ],
                "attempt": row.attempt_id,
                "highlight": bool(board.player) and row.player_external_id == board.player,
            }
        )
    for i, r in enumerate(rows):  # "=" before a rank shared with a neighbour
        r["shared"] = any(
            0 <= i + d < len(rows) and rows[i + d]["rank"] == r["rank"] for d in (-1, 1)
        )
    return rows


def _board_context(request: HttpRequest, challenge: Challenge) -> dict[str, Any]:
    params = _board_request(request)
    board = selectors.board_page(challenge=challenge, **params)
    setup = board.version or challenge
    detail_url = reverse("challenges:detail", args=[challenge.slug])
    board_url = reverse("challenges:board", args=[challenge.slug])
    query_string = request.GET.urlencode()
    now = timezone.now()
    updated = challenge.last_activity or (board.version.scored_at if board.version else None)
    return {
        "challenge": challenge,
        "board": board,
        "rows": board_rows(board, setup.scoring_strategy),
        "numbers": selectors.page_numbers(board.page, board.pages) if board.page else [],
        "detail_url": detail_url,
        "refresh_url": f"{board_url}?{query_string}" if query_string else board_url,
        "updated": display.relative_time(updated, now) if updated else "",
        "updated_exact": display.exact_time(updated) if updated else "",
        "updated_iso": updated.isoformat() if updated else "",
    }


def _render_board(request: HttpRequest, context: dict[str, Any]) -> str:
    """The board fragment, cached by everything it shows: a changed row, name, rank or
    time text is a different key, so nothing stale is ever served."""
    c = context["challenge"]
    board = context["board"]
    content = repr(
        (
            c.pk,
            c.slug,
            c.rescoring,
            board.version.number if board.version else None,
            board.count,
            board.page,
            board.pages,
            board.query,
            board.more_matches,
            board.player,
            board.player_found,
            context["rows"],
            context["updated"],
            context["updated_exact"],
            context["refresh_url"],
        )
    )
    key = "podium:board:" + hashlib.sha256(content.encode()).hexdigest()
    html = cache.get(key)
    if html is None:
        html = render_to_string("challenges/_board.html", context, request=request)
        cache.set(key, html, FRAGMENT_TTL)
    return html


@require_safe
def challenge_detail(request: HttpRequest, slug: str) -> HttpResponse:
    challenge = selectors.challenge_public(slug=slug)
    if challenge is None:
        return _not_found(request, slug)
    context = _board_context(request, challenge)
    setup = context["board"].version or challenge
    context.update(
        {
            "description": render_markdown(challenge.description),
            "strategy_words": display.strategy_words(setup),
            "scoring_sentence": display.scoring_sentence(setup),
            "board_html": _render_board(request, context),
            "charts_url": reverse("challenges:charts", args=[challenge.slug]),
            "metrics": [],  # issue 6 wires the aggregate metrics selector here
        }
    )
    return render(request, "challenges/detail.html", context)


@require_safe
def challenge_board(request: HttpRequest, slug: str) -> HttpResponse:
    """The leaderboard fragment alone: what the live refresh swaps in."""
    challenge = selectors.challenge_public(slug=slug)
    if challenge is None:
        return _not_found(request, slug)
    context = _board_context(request, challenge)
    response = HttpResponse(_render_board(request, context))
    response["Cache-Control"] = "no-cache"
    return response


@require_safe
def challenge_charts(request: HttpRequest, slug: str) -> HttpResponse:
    challenge = selectors.challenge_public(slug=slug)
    if challenge is None:
        return JsonResponse({"detail": "No such challenge."}, status=404)
    return JsonResponse(charts.charts_data(challenge=challenge))


# --- export ------------------------------------------------------------------------------
EXPORT_COLUMNS = ("rank", "player", "display_name", "score", "attempt_id", "created_at")
CSV_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A cell a spreadsheet will not run: text starting like a formula gets a quote."""
    if isinstance(value, str) and value.startswith(CSV_FORMULA_START):
        return "'" + value
    return value


class _Echo:
    def write(self, value: str) -> str:
        return value


def _export_rows(challenge: Challenge) -> Iterator[tuple[Any, ...]]:
    if challenge.active_version_id is None:
        return
    for row in selectors.leaderboard_stream(version_id=challenge.active_version_id):
        yield (
            row.rank,
            row.player_external_id,
            row.display_name,
            row.score,
            row.attempt_id,
            row.created_at.isoformat().replace("+00:00", "Z"),
        )


def _attachment(response: HttpResponse, challenge: Challenge, extension: str) -> HttpResponse:
    response["Content-Disposition"] = (
        f'attachment; filename="{challenge.slug}-leaderboard.{extension}"'
    )
    return response


@require_safe
def export_csv(request: HttpRequest, slug: str) -> HttpResponse:
    challenge = selectors.challenge_public(slug=slug)
    if challenge is None:
        return _not_found(request, slug)
    writer = csv.writer(_Echo())

    def lines() -> Iterator[str]:
        yield writer.writerow(EXPORT_COLUMNS)
        for row in _export_rows(challenge):
            yield writer.writerow([csv_cell(v) for v in row])

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    return _attachment(response, challenge, "csv")


@require_safe
def export_json(request: HttpRequest, slug: str) -> HttpResponse:
    challenge = selectors.challenge_public(slug=slug)
    if challenge is None:
        return _not_found(request, slug)
    version = challenge.active_version

    def chunks() -> Iterator[str]:
        head = {"challenge": challenge.slug, "version": version.number if version else None}
        yield json.dumps(head)[:-1] + ', "results": ['
        first = True
        for row in _export_rows(challenge):
            item = json.dumps(dict(zip(EXPORT_COLUMNS, row, strict=True)))
            yield item if first else ", " + item
            first = False
        yield "]}"

    response = StreamingHttpResponse(chunks(), content_type="application/json")
    return _attachment(response, challenge, "json")
