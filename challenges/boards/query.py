"""What a reader asks of a board (``BoardQuery``), from a query string or a worker's
build ahead: every read of a board (``boards.read.board_read``) takes one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from challenges.leaderboards.evaluation import is_aggregate
from challenges.models import Challenge
from challenges.permissions import is_staff_member
from challenges.text import page_number

SEARCH_MAX = 100  # characters of a name search: display names are at most 200
PUBLIC, MEMBER, STAFF = "public", "member", "staff"


@dataclass(frozen=True)
class BoardQuery:
    """What a reader asks of a board. The minute, the phase and the freeze follow from the
    clock and the challenge: ``board_read`` derives them (and keys by them). The viewer
    decides the board read (staff: the live one in a freeze) and who may ask a worker."""

    challenge: Challenge
    shape: str  # "page", "board" (its live fragment), "json" (the API), "csv", "export"
    page: int = 1  # the page's and fragment's page, name search and player
    search: str = ""
    player: str = ""  # the page holding this player; the API: this player's row alone
    offset: int = 0  # the API's window of rows
    limit: int = 50
    viewer: str = PUBLIC  # PUBLIC, MEMBER (signed in) or STAFF
    slice: str = ""  # an aggregate board's slice and metric column (boards/aggregate.py)
    metric: str = ""


def viewer_of(user: Any) -> str:
    if is_staff_member(user):
        return STAFF
    return MEMBER if user is not None and user.is_authenticated else PUBLIC


def board_query(challenge: Challenge, shape: str, params: Any, viewer: str) -> BoardQuery:
    """The query of a page, fragment or export from its query string's ``page``, ``q``,
    ``player`` and an aggregate board's ``slice`` (ignored on a board without slices) and
    ``metric``."""
    aggregate = is_aggregate(challenge)
    return BoardQuery(
        challenge,
        shape,
        page=page_number(params.get("page")),
        search=(params.get("q") or "").strip()[:SEARCH_MAX],
        player=(params.get("player") or "").strip()[:255],
        viewer=viewer,
        slice=(params.get("slice") or "")[:200] if aggregate and challenge.slice_by else "",
        metric=(params.get("metric") or "")[:200] if aggregate else "",
    )


def query_string(query: BoardQuery) -> str:
    """The query string as the board reads it, defaults left out: what its refresh link
    repeats and a worker is asked to build (``?utm_source=…`` makes no cache entry)."""
    pairs = [("page", query.page if query.page > 1 else ""), ("q", query.search)]
    pairs.append(("player", query.player))
    return urlencode([(name, value) for name, value in pairs if value])
