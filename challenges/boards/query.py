"""The question a reader asks of a challenge's board (``BoardQuery``), whoever asks it:
a page view, the API, an export or a worker building ahead (``boards.read.board_read``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from challenges.models import Challenge
from challenges.permissions import is_staff_member
from challenges.text import page_number

SEARCH_MAX = 100  # characters of a name search: display names are at most 200
PUBLIC, MEMBER, STAFF = "public", "member", "staff"


@dataclass(frozen=True)
class BoardQuery:
    """What a reader asks of a challenge's board. The minute, the schedule's phase and
    the freeze are not fields: they follow from the clock and the challenge, so
    ``board_read`` derives them (and keys by them); the same question asked in two
    minutes is the same query. The viewer matters for the board read (staff read the
    live board during a freeze) and for who may ask a worker for a build."""

    challenge: Challenge
    shape: str  # "page", "board" (its live fragment), "json" (the API), "csv", "export"
    page: int = 1  # the page's and fragment's page, name search and player
    search: str = ""
    player: str = ""  # the page holding this player; the API: this player's row alone
    offset: int = 0  # the API's window of rows
    limit: int = 50
    viewer: str = PUBLIC  # PUBLIC, MEMBER (signed in) or STAFF


def viewer_of(user: Any) -> str:
    if is_staff_member(user):
        return STAFF
    return MEMBER if user is not None and user.is_authenticated else PUBLIC


def board_query(challenge: Challenge, shape: str, params: Any, viewer: str) -> BoardQuery:
    """The query of a page or fragment from its query string's ``page``, ``q``, ``player``."""
    return BoardQuery(
        challenge,
        shape,
        page=page_number(params.get("page")),
        search=(params.get("q") or "").strip()[:SEARCH_MAX],
        player=(params.get("player") or "").strip()[:255],
        viewer=viewer,
    )


def query_string(query: BoardQuery) -> str:
    """The query string as the board reads it, defaults left out: what its refresh link
    repeats and a worker is asked to build, so a parameter the board does not read
    (``?utm_source=…``) shows the same page and makes no cache entry."""
    pairs = [
        ("page", query.page if query.page > 1 else ""),
        ("q", query.search),
        ("player", query.player),
    ]
    return urlencode([(name, value) for name, value in pairs if value])
