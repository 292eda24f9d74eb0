"""The public scoring history (issue 30): every switch of a challenge's active version in
words, and the permalinked board of each version that was once the active one."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.utils import timezone
from django.views.decorators.http import require_safe

from challenges.boards import display
from challenges.boards.shapes import board_rows
from challenges.leaderboards import history, selectors
from challenges.leaderboards.kept import kept
from challenges.leaderboards.tie_rule import TIE_RULE
from challenges.public.views import not_found
from challenges.text import page_number


@require_safe
def history_page(request: HttpRequest, slug: str) -> HttpResponse:
    challenge = selectors.challenge_public(slug=slug)
    if challenge is None:
        return not_found(request, slug=slug)

    def build() -> str:
        records = history.history_public(challenge=challenge, user=request.user)
        items = [
            {
                "record": r,
                "sentence": display.switch_sentence(r),
                "summary": display.switch_summary(
                    version=r.version, previous=r.previous_version, reason=r.reason
                ),
                "when_iso": r.switched_at.isoformat(),
            }
            for r in records
        ]
        context = {"challenge": challenge, "items": items}
        return render_to_string("challenges/history.html", context, request=request)

    # The page shows the challenge's name and its records: kept until either changes.
    stamp = history.history_stamp(challenge=challenge, user=request.user)
    parts = (challenge.pk, challenge.slug, challenge.updated_at, stamp)
    return HttpResponse(kept("history-page", parts, build))


@require_safe
def version_page(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    challenge = selectors.challenge_public(slug=slug)
    if challenge is None:
        return not_found(request, slug=slug)
    found = history.version_board(challenge=challenge, number=number, user=request.user)
    if found is None:
        return not_found(request, "version", slug=slug, challenge=challenge)
    page = page_number(request.GET.get("page"))

    def build() -> str:
        version = found.version
        board = selectors.board_page(challenge=challenge, page=page, board_id=found.board_id)
        now = timezone.now()
        rows = board_rows(board, version, {}, now, challenge.slug)
        context = {
            "challenge": challenge,
            "version": version,
            "current": found.current,
            "board": board,
            "rows": rows,
            "numbers": selectors.page_numbers(board.page, board.pages),
            "strategy_words": display.strategy_words(version),
            "scoring_sentence": display.scoring_sentence(version),
            "tie_rule": TIE_RULE,
        }
        return render_to_string("challenges/version.html", context, request=request)

    # A past version's board changes only with its ranking (a hide or a rename marks it
    # stale): kept under its token, for the minute its relative times are worded in.
    if found.token is None:
        return HttpResponse(build())
    minute = timezone.now().replace(second=0, microsecond=0)
    board = (found.version_id, found.board_id, found.current)
    parts = (challenge.pk, challenge.slug, challenge.updated_at, board, found.token, page, minute)
    return HttpResponse(kept("version-page", parts, build))
