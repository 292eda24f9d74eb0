"""Public pages: server-rendered, read-only, no login."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from . import selectors
from .markdown import render_markdown

PAGE_SIZE = 50


def challenge_list(request: HttpRequest) -> HttpResponse:
    challenges = selectors.challenge_list().annotate(players=Count("active_version__entries"))
    return render(request, "challenges/list.html", {"challenges": challenges})


def challenge_detail(request: HttpRequest, slug: str) -> HttpResponse:
    challenge = get_object_or_404(selectors.challenge_list(), slug=slug)
    try:
        page_number = max(1, int(request.GET.get("page", "1")))
    except ValueError:
        page_number = 1
    first = selectors.leaderboard_page(
        challenge=challenge, limit=PAGE_SIZE, offset=(page_number - 1) * PAGE_SIZE
    )
    paginator = Paginator(range(first.count), PAGE_SIZE)
    return render(
        request,
        "challenges/detail.html",
        {
            "challenge": challenge,
            "description": render_markdown(challenge.description),
            "board": first,
            "page": paginator.get_page(page_number) if first.count else None,
        },
    )
