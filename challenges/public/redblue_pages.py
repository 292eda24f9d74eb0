"""The public page of a red/blue challenge: the instructions, the points rule, the two
teams' totals and ratio, a board per team, and (after the close, if the challenge says
so) the attacks. Never a defence, the judge's feedback or its output."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.utils import timezone

from challenges.boards import display, schedule
from challenges.boards.markdown import render_markdown
from challenges.leaderboards.selectors import PAGE
from challenges.models import Challenge, RedBlueScoring
from challenges.redblue import selectors, standings_cache
from challenges.text import page_number

POLICY_WORDS = {
    "latest_best": "the newest",
    "random_active": "a random active one",
    "round_robin": "the one met least often so far",
    "request_new_if_none": "the newest not met yet (or it waits for a new one)",
}


def _board(rows: list[selectors.PlayerPoints], page: int) -> dict[str, Any]:
    pages = max(1, -(-len(rows) // PAGE))
    page = min(page, pages)
    shown = rows[(page - 1) * PAGE : page * PAGE]
    ranks = [r.rank for r in rows]
    return {
        "rows": [
            {
                "rank": r.rank,
                "shared": ranks.count(r.rank) > 1,
                "name": r.display_name,
                "points": display.format_value(r.points, "python"),
            }
            for r in shown
        ],
        "count": len(rows),
        "page": page,
        "pages": pages,
    }


def _percent(ratio: float | None) -> str:
    return "—" if ratio is None else f"{ratio * 100:.1f} %"


def points_sentence(challenge: Challenge) -> str:
    if challenge.red_blue_scoring == RedBlueScoring.CUSTOM:
        return (
            "For each pairing the judge rules on every category of the suite, and the "
            f"scorer plugin {challenge.red_blue_plugin_id} turns the verdict into red and "
            "blue points."
        )
    divisor = display.format_value(challenge.severity_divisor, "python")
    sentence = (
        "For each pairing the judge rules on every category of the suite: red scores 1 per "
        "category breached, blue 1 per category held; when anything was breached, red "
        f"also scores the judge's rating (0–10) divided by {divisor}, rounded half up."
    )
    if challenge.time_penalty or challenge.token_penalty:
        sentence += " Red loses points for the judge's time and tokens, never going below 0."
    return sentence


def red_blue_page(request: HttpRequest, challenge: Challenge) -> HttpResponse:
    """The page, kept until the standings change (``redblue.standings_cache``): its key names the
    challenge as saved, the standings' generation, the boards' pages, and what of the
    clock the page shows (the schedule's words, whether the attacks are out)."""
    now = timezone.now()
    banner = schedule.banner(challenge=challenge, now=now)
    revealed = (
        challenge.reveal_attacks_after_close
        and challenge.closes_at is not None
        and now >= challenge.closes_at
    )
    red_page = page_number(request.GET.get("red_page"))
    blue_page = page_number(request.GET.get("blue_page"))
    key = (
        "page",
        challenge.pk,
        challenge.updated_at.isoformat(),
        standings_cache.generation(challenge.pk),
        red_page,
        blue_page,
        repr(banner),
        revealed,
    )
    html = standings_cache.kept(
        key, lambda: _html(request, challenge, red_page, blue_page, banner, now)
    )
    return HttpResponse(html)


def _html(
    request: HttpRequest, challenge: Challenge, red_page: int, blue_page: int, banner: Any, now: Any
) -> str:
    found = selectors.standings_read(challenge=challenge)
    context = {
        "challenge": challenge,
        "description": render_markdown(challenge.description),
        "instructions": render_markdown(challenge.instructions),
        "schedule": banner,
        "points_sentence": points_sentence(challenge),
        "attack_policy": POLICY_WORDS[challenge.defense_selection_policy],
        "defense_policy": POLICY_WORDS[challenge.attack_selection_policy],
        "red": {
            "points": display.format_value(found.red, "python"),
            "ratio": _percent(found.ratio("red")),
        },
        "blue": {
            "points": display.format_value(found.blue, "python"),
            "ratio": _percent(found.ratio("blue")),
        },
        "red_board": _board(found.red_players, red_page),
        "blue_board": _board(found.blue_players, blue_page),
        "attacks": selectors.attacks_revealed(challenge=challenge, now=now),
    }
    return render_to_string("challenges/red_blue.html", context, request=request)


def card_red_blue(*, card: Challenge) -> None:
    """A challenge card of a red/blue challenge: its teams' points and players, from
    the kept standings (never an attempts board: it has none)."""
    found = selectors.standings_read(challenge=card)
    card.red_blue = {
        "red": display.format_value(found.red, "python"),
        "blue": display.format_value(found.blue, "python"),
        "ratio": _percent(found.ratio("red")),
        "players": len(found.red_players) + len(found.blue_players),
    }
