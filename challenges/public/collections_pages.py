"""The public page of a collection: its standings, one column per member challenge.
The view parses the page number, calls one selector and formats every cell once here."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_safe

from challenges.boards import display
from challenges.boards.markdown import render_markdown
from challenges.collections import selectors
from challenges.collections.standings import Standing
from challenges.leaderboards.selectors import PAGE, page_numbers
from challenges.models import Challenge
from challenges.public.views import not_found
from challenges.text import page_number


def _cells(row: Standing, challenges: list[Challenge]) -> list[dict[str, Any]]:
    cells = []
    for challenge, cell, counted in zip(challenges, row.cells, row.counted, strict=True):
        if cell is None:
            cells.append({"missing": True})
            continue
        strategy = challenge.active_version.scoring_strategy
        cells.append(
            {
                "missing": False,
                "rank": cell.rank,
                "value": display.format_value(cell.score, strategy),
                "counted": counted,
                "url": reverse("challenges:player", args=[challenge.slug, row.player]),
            }
        )
    return cells


@require_safe
def collection_detail(request: HttpRequest, slug: str) -> HttpResponse:
    collection = selectors.collection_by_slug(slug)
    if collection is None:
        return not_found(request, "collection", slug=slug)
    board = selectors.collection_board(collection=collection)
    pages = max(1, -(-len(board.standings) // PAGE))
    page = page_number(request.GET.get("page"))
    if page > pages:
        return not_found(request, "page", pages=pages)
    n = len(board.challenges)
    rows = [
        {
            "rank": r.rank,
            "shared": (i > 0 and board.standings[i - 1].rank == r.rank)
            or (i + 1 < len(board.standings) and board.standings[i + 1].rank == r.rank),
            "name": r.display_name,
            "player": r.player,
            "value": display.collection_value(r.value, collection.strategy),
            "completed": r.completed,
            "of": n,
            "cells": _cells(r, board.challenges),
            "when_exact": display.exact_time(r.completed_at),
            "when_iso": r.completed_at.isoformat(),
        }
        for i, r in enumerate(board.standings)
        if (page - 1) * PAGE <= i < page * PAGE
    ]
    context = {
        "collection": collection,
        "description": render_markdown(collection.description),
        "strategy_words": display.COLLECTION_WORDS[collection.strategy],
        "challenges": board.challenges,
        "rows": rows,
        "count": len(board.standings),
        "page": page,
        "pages": pages,
        "numbers": page_numbers(page, pages),
    }
    return render(request, "challenges/collection.html", context)
