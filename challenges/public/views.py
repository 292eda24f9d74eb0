"""Public pages: server-rendered, read-only, no login.

Views parse the query string into a ``boards.BoardQuery`` and serve what
``boards.read.board_read`` builds (an aggregate board's: boards/aggregate.py).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_safe

from challenges.boards import display, read, schedule
from challenges.boards.markdown import summary
from challenges.boards.query import BoardQuery, board_query, viewer_of
from challenges.collections.selectors import collection_list
from challenges.leaderboards import charts, freeze, selectors
from challenges.models import Challenge, ChallengeFormat
from challenges.public.redblue_pages import card_red_blue, red_blue_page


def not_found(request: HttpRequest, missing: str = "challenge", **context: Any) -> HttpResponse:
    """The friendly 404 (also under DEBUG) for what is ``missing``: by default an unknown
    or inactive challenge."""
    return render(request, "404.html", {"missing": missing, **context}, status=404)


@require_safe
def challenge_list(request: HttpRequest) -> HttpResponse:
    cards = selectors.challenge_cards()
    now = timezone.now()
    for c in cards:
        if c.format == ChallengeFormat.RED_BLUE:
            card_red_blue(card=c)
        if freeze.frozen_for(c, request.user):
            freeze.card_frozen(card=c)  # leader, players, activity as of the freeze
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
        c.schedule = schedule.banner(challenge=c, now=now)
    collections = collection_list()
    return render(
        request, "challenges/list.html", {"challenges": cards, "collections": collections}
    )


def _asked(request: HttpRequest, challenge: Challenge, shape: str) -> BoardQuery:
    return board_query(challenge, shape, request.GET, viewer_of(request.user))


def _board_response(
    request: HttpRequest, slug: str, shape: str, headers: dict[str, str] | None = None
) -> HttpResponse:
    """The board page or fragment: the friendly 404 for an unknown challenge or page."""
    challenge = selectors.challenge_public(slug=slug)
    if challenge is None:
        return not_found(request, slug=slug)
    if shape == "page" and challenge.format == ChallengeFormat.RED_BLUE:
        return red_blue_page(request, challenge)
    try:
        html = read.board_read(_asked(request, challenge, shape))
    except read.PageOutOfRange as past:
        return not_found(request, "page", slug=slug, pages=past.args[0])
    return HttpResponse(html, headers=headers)


@require_safe
def challenge_detail(request: HttpRequest, slug: str) -> HttpResponse:
    return _board_response(request, slug, "page")


@require_safe
def challenge_board(request: HttpRequest, slug: str) -> HttpResponse:
    """The leaderboard fragment alone: what the live refresh swaps in."""
    return _board_response(request, slug, "board", {"Cache-Control": "no-cache"})


@require_safe
def challenge_charts(request: HttpRequest, slug: str) -> HttpResponse:
    challenge = selectors.challenge_public(slug=slug)
    if challenge is None:
        return JsonResponse({"detail": "No such challenge."}, status=404)
    board_id = freeze.board_id(challenge=challenge, user=request.user)
    frozen = board_id != challenge.active_version_id
    data = charts.charts_data(
        challenge=challenge, board_id=board_id, before=challenge.freeze_at if frozen else None
    )
    version = challenge.active_version
    if version is not None and version.scoring_strategy == "python":
        # the snippet's own score names the axis, not "points"
        data = {**data, "axis": display.score_name(version).capitalize()}
    return JsonResponse(data)


# --- export ------------------------------------------------------------------------------
def _export(request: HttpRequest, slug: str, shape: str, content_type: str) -> HttpResponse:
    """The board as a file: streamed, or whole when it is one str (an aggregate board's
    JSON); the friendly 404 for an unknown challenge."""
    challenge = selectors.challenge_public(slug=slug)
    if challenge is None:
        return not_found(request, slug=slug)
    body = read.board_read(_asked(request, challenge, shape))
    kind = HttpResponse if isinstance(body, str) else StreamingHttpResponse
    extension = "csv" if shape == "csv" else "json"
    disposition = f'attachment; filename="{challenge.slug}-leaderboard.{extension}"'
    return kind(body, content_type=content_type, headers={"Content-Disposition": disposition})


@require_safe
def export_csv(request: HttpRequest, slug: str) -> HttpResponse:
    return _export(request, slug, "csv", "text/csv; charset=utf-8")


@require_safe
def export_json(request: HttpRequest, slug: str) -> HttpResponse:
    return _export(request, slug, "export", "application/json")
