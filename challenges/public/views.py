"""Public pages: server-rendered, read-only, no login.

Views parse the query string, call one selector and render. Values are formatted once in
Python (``board_rows``), and the rendered table is cached by its content, so a quiet
leaderboard costs a few small queries per request and no template work.
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
import unicodedata
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any
from urllib.parse import quote, urlencode

from django.contrib.auth.models import AnonymousUser
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict, StreamingHttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils import timezone
from django.views.decorators.http import require_safe

from challenges import enqueue
from challenges.collections.selectors import collection_list
from challenges.leaderboards import charts, freeze, precision, ranking, score_columns, selectors
from challenges.leaderboards import evaluation as evaluation_rules
from challenges.leaderboards.evaluation import is_aggregate
from challenges.leaderboards.kept import kept, kept_board, kept_recomputed
from challenges.leaderboards.metric_counts import challenge_metrics, public_metrics
from challenges.leaderboards.tie_rule import TIE_RULE
from challenges.models import Challenge, ChallengeFormat
from challenges.public import display, schedule
from challenges.public import evaluation_pages as public_evaluation
from challenges.public.markdown import render_markdown, summary
from challenges.public.redblue_pages import card_red_blue, red_blue_page
from challenges.rescoring.batch import batch_coverage
from challenges.text import iso_z, page_number

logger = logging.getLogger(__name__)

SEARCH_MAX = 100  # characters of a name search: display names are at most 200


class PageOutOfRange(Exception):
    """``?page=`` past a board's last page: a 404 (docs/pages.md), never page 1 again."""


def _page_not_found(request: HttpRequest, slug: str, pages: int) -> HttpResponse:
    return render(
        request, "404.html", {"missing": "page", "slug": slug, "pages": pages}, status=404
    )


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


def _board_request(request: HttpRequest) -> dict[str, Any]:
    return {
        "page": page_number(request.GET.get("page")),
        "query": (request.GET.get("q") or "").strip()[:SEARCH_MAX],
        "player": (request.GET.get("player") or "").strip()[:255],
    }


def _board_query(request: HttpRequest) -> str:
    """The query string as the board reads it: page, q and player, defaults left out.
    What a board is kept under and what its refresh link repeats, so a parameter it
    does not read (``?utm_source=…``) shows the same page and makes no cache entry."""
    wanted = _board_request(request)
    pairs = [
        ("page", wanted["page"] if wanted["page"] > 1 else ""),
        ("q", wanted["query"]),
        ("player", wanted["player"]),
    ]
    return urlencode([(name, value) for name, value in pairs if value])


def board_rows(
    board: selectors.Board,
    strategy: str,
    breakdowns: dict[int, selectors.Breakdown],
    now: datetime,
    setup: Any = None,
    slug: str = "",
) -> list[dict[str, Any]]:
    """Every cell of the table, formatted once."""
    rows = []
    players_url = f"/challenges/{slug}/players/"
    for row in board.rows:
        why = breakdowns.get(row.attempt_id)
        rows.append(
            {
                "rank": row.rank,
                "shared": False,
                "medal": (
                    display.medal(row.rank, row.score, setup)
                    if setup is not None
                    else display.MEDALS.get(row.rank)
                ),
                "name": row.display_name,
                "url": players_url + quote(row.player_external_id, safe="") + "/",
                "value": display.format_value(row.score, strategy),
                "when": display.relative_time(row.created_at, now),
                "when_exact": display.exact_time(row.created_at),
                "when_iso": row.created_at.isoformat(),
                "terms": [
                    *(display.breakdown(why.details, why.metrics) if why else []),
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


class BoardView:
    """One request's leaderboard: the rows (a light query) and a key naming everything
    the rendered HTML shows. Identical content renders identically, so the HTML is
    cached under that key and formatting, breakdowns and templates are skipped on a
    hit; any change (a new attempt, a rename, a rescore, the minute for relative
    times) is a new key, never a stale page."""

    def __init__(self, request: HttpRequest, challenge: Challenge, board_id: int | None):
        self.request = request
        self.challenge = challenge
        self.board_id = board_id  # ``_board_id``
        self.frozen = self.board_id is not None and self.board_id != challenge.active_version_id
        self.frozen_live = not self.frozen and freeze.is_frozen(challenge)
        if self.frozen:
            challenge.last_activity = freeze.last_activity(challenge, challenge.last_activity)
        asked = _board_request(request)
        self.board = selectors.board_page(challenge=challenge, board_id=self.board_id, **asked)
        if not asked["query"] and not asked["player"] and asked["page"] > self.board.pages:
            raise PageOutOfRange(self.board.pages)
        # Relative times are worded against the minute, so a minute shares one render.
        self.now = timezone.now().replace(second=0, microsecond=0)
        query_string = _board_query(request)
        slug_url = f"/challenges/{challenge.slug}/"  # == reverse("challenges:detail")
        self.detail_url = slug_url
        self.refresh_url = f"{slug_url}board/" + (f"?{query_string}" if query_string else "")
        board = self.board
        self.key = hashlib.sha256(
            repr(
                (
                    challenge.pk,
                    challenge.slug,
                    challenge.updated_at,  # a batch run's new scores (same version) bump it
                    challenge.rescoring,
                    challenge.last_activity,
                    board.version.pk if board.version else None,
                    board.count,
                    board.page,
                    board.pages,
                    board.query,
                    board.more_matches,
                    board.player,
                    board.player_found,
                    [
                        (r.rank, r.attempt_id, r.player_external_id, r.display_name)
                        for r in board.rows
                    ],
                    self.refresh_url,
                    self.now,
                    # A new ranking (after moderation, say) may change what the page
                    # around the rows shows (metrics) with the same rows.
                    board.ranked_at,
                    self.board_id,
                    self.frozen_live,
                )
            ).encode()
        ).hexdigest()

    def context(self) -> dict[str, Any]:
        board, challenge = self.board, self.challenge
        setup = board.version or challenge
        breakdowns = (
            selectors.leaderboard_breakdowns(
                version_id=board.version.pk, attempt_ids=[r.attempt_id for r in board.rows]
            )
            if board.version and board.rows
            else {}
        )
        updated = challenge.last_activity or (board.version.scored_at if board.version else None)
        if self.frozen and updated:
            updated = freeze.last_activity(challenge, updated)
        rows = board_rows(
            board, setup.scoring_strategy, breakdowns, self.now, setup, challenge.slug
        )
        header = score_columns.page_columns(board.version, rows, breakdowns)
        return {
            "challenge": challenge,
            "board": board,
            "rows": rows,
            "score_header": header,
            "numbers": selectors.page_numbers(board.page, board.pages) if board.page else [],
            "detail_url": self.detail_url,
            "refresh_url": self.refresh_url,
            "updated": display.relative_time(updated, self.now) if updated else "",
            "updated_exact": display.exact_time(updated) if updated else "",
            "updated_iso": updated.isoformat() if updated else "",
            "frozen": self.frozen,
            "frozen_live": self.frozen_live,
            "frozen_exact": display.exact_time(challenge.freeze_at) if challenge.freeze_at else "",
            "frozen_iso": challenge.freeze_at.isoformat() if challenge.freeze_at else "",
        }

    def html(self, page: Callable[[], dict[str, Any]] | None = None) -> str:
        """The board alone, or (with ``page``, the rest of the page's context) the
        whole challenge page around it."""

        def render() -> str:
            context = self.context()
            html = render_to_string("challenges/_board.html", context, request=self.request)
            if page is not None:
                context.update(page(), board_html=html)
                html = render_to_string("challenges/detail.html", context, request=self.request)
            return html

        return kept("page" if page else "board", (self.key,), render)


def _board_html(
    request: HttpRequest,
    challenge: Challenge,
    kind: str,
    build: Callable[[int | None], str],
    *,
    ahead: bool = False,
) -> str | None:
    """The HTML of a board request, ``build(board_id)``. While the board's ranking is
    current or lagging (``selectors.board_settled``) it is kept under a key naming what
    the page (or fragment) shows besides its rows: the settled board, the request's
    query, the rescore flag, the minute (relative times) and the freeze; and served
    while it shows the rows and the newest activity as they are, or as they were no
    longer ago than the ranks may lag (``kept.kept_board``). ``ahead``: built by the
    worker that computed a new ranking (``boards_build_ahead``); None when the public's
    board is not a settled one (nothing to build ahead)."""
    # During a freeze the public reads the frozen board (leaderboards/freeze.py) and
    # learns of no activity after it; staff read the live one.
    board_id = freeze.board_id(challenge=challenge, user=request.user)
    settled = selectors.board_settled(challenge, board_id)
    if settled is None:
        return None if ahead else build(board_id)  # BoardView keeps it by its rows
    now = timezone.now()
    query = _board_query(request)
    parts = (
        challenge.slug,
        challenge.rescoring,
        freeze.is_frozen(challenge, now),
        schedule.phase(challenge=challenge, now=now),  # a window opening or closing: at once
        query,
    )

    minute = now.replace(second=0, microsecond=0)  # relative times are worded for it

    def refresh() -> bool:
        """Ask a worker for the public's build of the new minute; False: not asked (the
        reader builds it), past REBUILDS_PER_MINUTE for the challenge or with the broker
        away."""
        asked = f"podium:board-rebuilds:{challenge.pk}:{minute.isoformat()}"
        cache.add(asked, 0, timeout=120)
        try:
            if cache.incr(asked) > REBUILDS_PER_MINUTE:
                return False
        except Exception:  # a cache away must not fail a read
            logger.warning("board rebuild not queued", extra={"challenge_id": challenge.pk})
            return False
        return enqueue.board_rebuild(kind=kind, slug=challenge.slug, query=query)

    return kept_board(
        f"{kind}-settled",
        settled,
        parts,
        lambda: build(board_id),
        activity=challenge.last_activity,
        ahead=ahead,
        minute=minute,
        refresh=refresh if not request.user.is_authenticated else None,
    )


# A worker builds the public's board for the new minute (``board_rebuild``) at most this
# many times a minute per challenge: each query string is a build, and public reads must
# not flood the workers (past it, readers build, as without them).
REBUILDS_PER_MINUTE = 30


def board_rebuild(*, kind: str, slug: str, query: str) -> None:
    """Build the public's page or fragment (``kind``) of a challenge, for this query
    string and this minute (a worker, asked by a reader served the previous minute's)."""
    challenge = selectors.challenge_public(slug=slug)
    if challenge is None or kind not in _BUILDS:
        return
    request = _anonymous_get(query)
    try:
        _board_html(request, challenge, kind, _BUILDS[kind](request, challenge), ahead=True)
    except PageOutOfRange:
        return  # the page is gone (fewer players now): its readers get a 404


def _anonymous_get(query: str = "") -> HttpRequest:
    """A request as an anonymous GET of a board with this query string shows it."""
    request = HttpRequest()
    request.method = "GET"
    request.GET = QueryDict(query)
    request.user = AnonymousUser()
    return request


def boards_build_ahead(*, version_id: int) -> None:
    """Build the public's page and live fragment of the board whose ranking a worker has
    just recomputed (the ``ranking_refresh`` task), so that under steady ingestion no
    reader builds them: until they are kept, readers serve what was built from the
    previous ranking (``kept.kept_board``). Nothing when the version is no public
    challenge's live board."""
    slug = selectors.challenge_slug(version_id=version_id)
    if slug is None:
        return
    request = _anonymous_get()  # what an anonymous GET of the page without a query shows
    for kind, builder in _BUILDS.items():
        challenge = selectors.challenge_public(slug=slug)  # read as a request reads it
        if challenge is None or challenge.active_version_id != version_id:
            return
        _board_html(request, challenge, kind, builder(request, challenge), ahead=True)


@require_safe
def challenge_detail(request: HttpRequest, slug: str) -> HttpResponse:
    challenge = selectors.challenge_public(slug=slug)
    if challenge is None:
        return _not_found(request, slug)
    if challenge.format == ChallengeFormat.RED_BLUE:
        return red_blue_page(request, challenge)
    if is_aggregate(challenge):
        return HttpResponse(_evaluation_page(request, challenge))
    try:
        html = _board_html(request, challenge, "page", _page_build(request, challenge))
    except PageOutOfRange as past:
        return _page_not_found(request, slug, past.args[0])
    return HttpResponse(html)


def _page_build(request: HttpRequest, challenge: Challenge) -> Callable[[int | None], str]:
    return lambda board_id: _page_html(request, challenge, board_id)


def _fragment_build(request: HttpRequest, challenge: Challenge) -> Callable[[int | None], str]:
    return lambda board_id: BoardView(request, challenge, board_id).html()


_BUILDS = {"page": _page_build, "board": _fragment_build}


def _page_html(request: HttpRequest, challenge: Challenge, board_id: int | None) -> str:
    view = BoardView(request, challenge, board_id)
    # The page around the board depends on the challenge as saved (its updated_at) and
    # its active version (in the board's key) as well.
    view.key += f":{challenge.updated_at.isoformat()}"

    def extra() -> dict[str, Any]:
        setup = view.board.version or challenge
        return {
            "description": render_markdown(challenge.description),
            "strategy_words": display.strategy_words(setup),
            "scoring_sentence": display.scoring_sentence(setup),
            "charts_url": f"{view.detail_url}charts.json",
            "tie_rule": TIE_RULE,
            # Computed on a build only, which is served while it shows the newest activity
            # or for as long as the ranks may lag (kept.kept_board).
            "metrics": public_metrics(
                challenge_metrics(
                    challenge=challenge, before=challenge.freeze_at if view.frozen else None
                )
            ),
            "batch_coverage": batch_coverage(challenge=challenge),
            # The key has the phase and the challenge's updated_at: never a stale phase
            # (the time left is worded for the minute, as the relative times are).
            "schedule": schedule.banner(challenge=challenge, now=timezone.now()),
        }

    return view.html(page=extra)


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
    return kept_recomputed(
        kind,
        (view.key, view.slice, *parts),
        (view.family, view.slice, *parts),
        build,
        fresh=fresh,
        ahead=ahead,
    )


def _evaluation_page(request: HttpRequest, challenge: Challenge, *, ahead: bool = False) -> str:
    """An aggregate board's page: the stored intervals (public/evaluation_pages.py), kept by
    what it shows (the schedule's phase and the minute its banner is worded for too)."""
    view = public_evaluation.board_view(request, challenge)
    now = timezone.now()
    parts = (
        challenge.rescoring,
        public_evaluation.metric_asked(request),
        schedule.phase(challenge=challenge, now=now),
        now.replace(second=0, microsecond=0),
    )
    return _evaluation_kept(
        "page-eval",
        view,
        parts,
        lambda: _evaluation_page_build(request, challenge, view),
        ahead=ahead,
    )


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
    request = _anonymous_get()  # what an anonymous GET of the page without a query shows
    _evaluation_page(request, challenge, ahead=True)
    _evaluation_fragment(request, challenge, ahead=True)


def _evaluation_page_build(request: HttpRequest, challenge: Challenge, view: Any) -> str:
    html, context = public_evaluation.board_html(request, challenge, view)
    setup = challenge.active_version or challenge
    frozen = freeze.frozen_for(challenge, request.user)
    context.update(
        board_html=html,
        board=None,
        aggregate=True,  # every player on one page: no search; no best-value charts
        aggregate_rule=evaluation_rules.AGGREGATE_RULE.format(statistic=challenge.aggregate),
        description=render_markdown(challenge.description),
        strategy_words=display.strategy_words(setup),
        scoring_sentence=display.scoring_sentence(setup),
        charts_url=f"/challenges/{challenge.slug}/charts.json",
        tie_rule=TIE_RULE,
        metrics=public_metrics(
            challenge_metrics(challenge=challenge, before=challenge.freeze_at if frozen else None)
        ),
        batch_coverage=batch_coverage(challenge=challenge),
        schedule=schedule.banner(challenge=challenge, now=timezone.now()),
    )
    return render_to_string("challenges/detail.html", context, request=request)


@require_safe
def challenge_board(request: HttpRequest, slug: str) -> HttpResponse:
    """The leaderboard fragment alone: what the live refresh swaps in."""
    challenge = selectors.challenge_public(slug=slug)
    if challenge is None:
        return _not_found(request, slug)
    if is_aggregate(challenge):
        response = HttpResponse(_evaluation_fragment(request, challenge))
        response["Cache-Control"] = "no-cache"
        return response
    try:
        html = _board_html(request, challenge, "board", _fragment_build(request, challenge))
    except PageOutOfRange as past:
        return _page_not_found(request, slug, past.args[0])
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
EXPORT_COLUMNS = (
    "rank",
    "player",
    "display_name",
    "score",
    "score_unit",  # the score's unit (display.score_unit): "ms" under fastest, …
    "attempt_id",
    "created_at",
)
CSV_FORMULA_START = ("=", "+", "-", "@", "|", "\t", "\r")


def _formula_lead(value: str) -> str:
    """The character a spreadsheet would read first: leading whitespace and invisible
    format characters (BOM, zero-width, joiners) skipped, look-alikes folded (the
    full-width and small forms of = + - @ | become their ASCII selves)."""
    for char in value:
        if char.isspace() or unicodedata.category(char) == "Cf":
            continue
        return unicodedata.normalize("NFKC", char)[:1]
    return ""


def csv_cell(value: Any) -> Any:
    """A cell a spreadsheet will not run: text starting like a formula (even behind
    spaces, invisible characters or a look-alike) gets a quote."""
    if isinstance(value, str) and (
        value.startswith(CSV_FORMULA_START) or _formula_lead(value) in CSV_FORMULA_START[:5]
    ):
        return "'" + value
    return value


class _Echo:
    def write(self, value: str) -> str:
        return value


def _export_rows(challenge: Challenge, board_id: int | None) -> Iterator[tuple[Any, ...]]:
    """(the row's cells..., its scores or None): scores for python versions only (a
    frozen board's rows are the active version's attempts: their scores are its)."""
    if board_id is None:
        return
    rows = selectors.leaderboard_stream(
        version_id=board_id, names_at=freeze.names_at(challenge, board_id)
    )
    unit = display.score_unit((challenge.active_version or challenge).scoring_strategy)
    for row, scores in score_columns.with_scores(rows, challenge.active_version):
        yield (
            row.rank,
            row.player_external_id,
            row.display_name,
            precision.served(row.score),
            unit,
            row.attempt_id,
            iso_z(row.created_at),
            precision.served_json(scores),
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
    if is_aggregate(challenge):
        rows = public_evaluation.export_rows(request, challenge)
        head = [writer.writerow(public_evaluation.EXPORT_COLUMNS)]
        body = (
            writer.writerow([csv_cell(r[c]) for c in public_evaluation.EXPORT_COLUMNS])
            for r in rows
        )
        response = StreamingHttpResponse([*head, *body], content_type="text/csv; charset=utf-8")
        return _attachment(response, challenge, "csv")
    board_id = freeze.board_id(challenge=challenge, user=request.user)

    def lines() -> Iterator[str]:
        rows = _export_rows(challenge, board_id)
        names, rows = score_columns.csv_names(rows)
        yield writer.writerow([*EXPORT_COLUMNS, *(f"scores.{n}" for n in names)])
        for *row, scores in rows:
            extra = [(scores or {}).get(n) for n in names]
            yield writer.writerow([csv_cell(v) for v in (*row, *extra)])

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    return _attachment(response, challenge, "csv")


@require_safe
def export_json(request: HttpRequest, slug: str) -> HttpResponse:
    challenge = selectors.challenge_public(slug=slug)
    if challenge is None:
        return _not_found(request, slug)
    version = challenge.active_version
    if is_aggregate(challenge):
        response = HttpResponse(
            json.dumps(public_evaluation.export_body(request, challenge)),
            content_type="application/json",
        )
        return _attachment(response, challenge, "json")
    board_id = freeze.board_id(challenge=challenge, user=request.user)

    def chunks() -> Iterator[str]:
        head = {
            "challenge": challenge.slug,
            "version": version.number if version else None,
            "score_unit": display.score_unit((version or challenge).scoring_strategy),
        }
        yield json.dumps(head)[:-1] + ', "results": ['
        first = True
        for *row, scores in _export_rows(challenge, board_id):
            item = dict(zip(EXPORT_COLUMNS, row, strict=True))
            if scores is not None:
                item["scores"] = scores
            item = json.dumps(item)
            yield item if first else ", " + item
            first = False
        yield "]}"

    response = StreamingHttpResponse(chunks(), content_type="application/json")
    return _attachment(response, challenge, "json")
