"""The public page of one player in one challenge: rank, best attempt, and the attempt
history (paginated) with the same breakdowns as the leaderboard."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_safe

from challenges.boards import aggregate, display
from challenges.leaderboards import history as switch_history
from challenges.leaderboards import selectors
from challenges.leaderboards.player import player_page
from challenges.leaderboards.tie_rule import TIE_RULE
from challenges.public.views import not_found
from challenges.text import page_number


@require_safe
def player_detail(request: HttpRequest, slug: str, external_id: str) -> HttpResponse:
    challenge = selectors.challenge_public(slug=slug)
    if challenge is None:
        return not_found(request, slug=slug)
    asked = page_number(request.GET.get("page"))
    found = player_page(challenge=challenge, external_id=external_id, page=asked, user=request.user)
    if found is not None and asked > found.pages:  # past the last page: 404 (docs/pages.md)
        return not_found(request, "page", slug=slug, pages=found.pages)
    if found is None:
        return not_found(request, "player", slug=slug, challenge=challenge, external_id=external_id)
    setup = challenge.active_version or challenge
    strategy = setup.scoring_strategy
    now = timezone.now()
    history = [
        {
            "id": item.attempt_id,
            "when": display.relative_time(item.created_at, now),
            "when_exact": display.exact_time(item.created_at),
            "when_iso": item.created_at.isoformat(),
            "metrics": display.metric_cells(item.metrics),
            "value": display.format_value(item.score, strategy) if item.score is not None else "",
            "terms": display.breakdown(item.details, {}),  # metrics have a column
            "counts": item.counts,
        }
        for item in found.items
    ]
    row = found.row
    best = None
    if row is not None:
        best = {
            "rank": row.rank,
            "medal": display.medal(row.rank, row.score, setup),
            "value": display.format_value(row.score, strategy),
            "when": display.relative_time(row.created_at, now),
            "when_exact": display.exact_time(row.created_at),
            "when_iso": row.created_at.isoformat(),
            "board_url": f"/challenges/{challenge.slug}/?player={found.player.external_id}",
        }
    return render(
        request,
        "challenges/player.html",
        {
            "challenge": challenge,
            "player": found.player,
            "best": best,
            "ranked": found.ranked,
            "attempts": found.attempts,
            "history": history,
            "page": found.page,
            "pages": found.pages,
            "numbers": selectors.page_numbers(found.page, found.pages),
            "strategy_words": display.strategy_words(setup),
            "tie_rule": TIE_RULE,
            "interval": aggregate.player_context(challenge, request.user, found.player.pk),
            "version_ranks": switch_history.player_version_ranks(
                challenge=challenge, external_id=found.player.external_id, user=request.user
            ),
        },
    )
