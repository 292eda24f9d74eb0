"""Public pages: server-rendered, read-only, no login.

Views parse the query string into a ``boards.BoardQuery`` and serve what
``boards.read.board_read`` builds (an aggregate board: public/evaluation_pages.py).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils import timezone
from django.views.decorators.http import require_safe

from challenges.boards import display, read, schedule
from challenges.boards.markdown import summary
from challenges.boards.read import BoardQuery, board_query, viewer_of
from challenges.boards.shapes import Echo, csv_cell, page_context
from challenges.collections.selectors import collection_list
from challenges.ingestion.admission import schedule_phase
from challenges.leaderboards import charts, freeze, ranking, selectors
from challenges.leaderboards import evaluation as evaluation_rules
from challenges.leaderboards.evaluation import is_aggregate
from challenges.leaderboards.kept import kept_recomputed
from challenges.models import Challenge, ChallengeFormat
from challenges.public import evaluation_pages as public_evaluation
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


@require_safe
def challenge_detail(request: HttpRequest, slug: str) -> HttpResponse:
    challenge = selectors.challenge_public(slug=slug)
    if challenge is None:
        return not_found(request, slug=slug)
    if challenge.format == ChallengeFormat.RED_BLUE:
        return red_blue_page(request, challenge)
    if is_aggregate(challenge):
        return HttpResponse(_evaluation_page(request, challenge))
    try:
        html = read.board_read(_asked(request, challenge, "page"))
    except read.PageOutOfRange as past:
        return not_found(request, "page", slug=slug, pages=past.args[0])
    return HttpResponse(html)


def _evaluation_kept(
    kind: str, view: Any, parts: tuple[Any, ...], build: Callable[[], str], *, ahead: bool = False
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


def _evaluation_page(request: HttpRequest, challenge: Challenge, *, ahead: bool = False) -> str:
    """An aggregate board's page: the stored intervals (public/evaluation_pages.py), kept by
    what it shows (the schedule's phase and the minute its banner is worded for too)."""
    view, now = public_evaluation.board_view(request, challenge), timezone.now()
    phase = schedule_phase(challenge=challenge, now=now)
    parts = (challenge.rescoring, public_evaluation.metric_asked(request), phase)
    build = lambda: _evaluation_page_build(request, challenge, view)  # noqa: E731
    minute = now.replace(second=0, microsecond=0)
    return _evaluation_kept("page-eval", view, (*parts, minute), build, ahead=ahead)


def _evaluation_fragment(request: HttpRequest, challenge: Challenge, *, ahead: bool = False) -> str:
    view = public_evaluation.board_view(request, challenge)
    return _evaluation_kept(
        "board-eval",
        view,
        (challenge.rescoring, public_evaluation.metric_asked(request)),
        lambda: public_evaluation.board_html(request, challenge, view)[0],
        ahead=ahead,
    )


def evaluation_build_ahead(*, challenge_id: int) -> None:
    """Build the public's page and live fragment of an aggregate board whose intervals a
    worker has just stored (the ``evaluation_refresh`` task), so that no reader builds
    them: until they are kept, readers serve the previous intervals' (``kept_recomputed``)."""
    slug = selectors.challenge_slug_of(challenge_id=challenge_id)
    challenge = selectors.challenge_public(slug=slug) if slug else None
    if challenge is None or not is_aggregate(challenge):
        return
    request = HttpRequest()  # what an anonymous GET of the page without a query shows
    request.method, request.user = "GET", AnonymousUser()
    _evaluation_page(request, challenge, ahead=True)
    _evaluation_fragment(request, challenge, ahead=True)


def _evaluation_page_build(request: HttpRequest, challenge: Challenge, view: Any) -> str:
    html, context = public_evaluation.board_html(request, challenge, view)
    setup = challenge.active_version or challenge
    frozen = freeze.frozen_for(challenge, request.user)
    context.update(
        page_context(challenge, setup, frozen=frozen),
        board_html=html,
        board=None,
        aggregate=True,  # every player on one page: no search; no best-value charts
        aggregate_rule=evaluation_rules.AGGREGATE_RULE.format(statistic=challenge.aggregate),
    )
    return render_to_string("challenges/detail.html", context, request=request)


@require_safe
def challenge_board(request: HttpRequest, slug: str) -> HttpResponse:
    """The leaderboard fragment alone: what the live refresh swaps in."""
    challenge = selectors.challenge_public(slug=slug)
    if challenge is None:
        return not_found(request, slug=slug)
    if is_aggregate(challenge):
        html = _evaluation_fragment(request, challenge)
    else:
        try:
            html = read.board_read(_asked(request, challenge, "board"))
        except read.PageOutOfRange as past:
            return not_found(request, "page", slug=slug, pages=past.args[0])
    response = HttpResponse(html)
    response["Cache-Control"] = "no-cache"
    return response


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
def _attachment(response: HttpResponse, challenge: Challenge, extension: str) -> HttpResponse:
    response["Content-Disposition"] = (
        f'attachment; filename="{challenge.slug}-leaderboard.{extension}"'
    )
    return response


@require_safe
def export_csv(request: HttpRequest, slug: str) -> HttpResponse:
    challenge = selectors.challenge_public(slug=slug)
    if challenge is None:
        return not_found(request, slug=slug)
    if is_aggregate(challenge):
        writer = csv.writer(Echo())
        rows = public_evaluation.export_rows(request, challenge)
        head = [writer.writerow(public_evaluation.EXPORT_COLUMNS)]
        body = (
            writer.writerow([csv_cell(r[c]) for c in public_evaluation.EXPORT_COLUMNS])
            for r in rows
        )
        response = StreamingHttpResponse([*head, *body], content_type="text/csv; charset=utf-8")
        return _attachment(response, challenge, "csv")
    chunks = read.board_read(BoardQuery(challenge, "csv", viewer=viewer_of(request.user)))
    response = StreamingHttpResponse(chunks, content_type="text/csv; charset=utf-8")
    return _attachment(response, challenge, "csv")


@require_safe
def export_json(request: HttpRequest, slug: str) -> HttpResponse:
    challenge = selectors.challenge_public(slug=slug)
    if challenge is None:
        return not_found(request, slug=slug)
    if is_aggregate(challenge):
        response = HttpResponse(
            json.dumps(public_evaluation.export_body(request, challenge)),
            content_type="application/json",
        )
        return _attachment(response, challenge, "json")
    query = BoardQuery(challenge, "export", viewer=viewer_of(request.user))
    response = StreamingHttpResponse(read.board_read(query), content_type="application/json")
    return _attachment(response, challenge, "json")
