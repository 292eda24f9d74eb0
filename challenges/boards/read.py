"""Every read of a board: the public page and its fragment, the API's leaderboard, the
exports and what a worker builds ahead all call ``board_read`` with a ``BoardQuery``
(never an HttpRequest). What is kept is keyed by a digest derived from the query, the
board's ranking state or rows, the challenge's saved row and the code (docs/caching.md)."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import fields, is_dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from django.conf import settings
from django.core.cache import cache
from django.db.models import Model
from django.utils import timezone
from rest_framework.renderers import JSONRenderer

from challenges import enqueue
from challenges.boards import shapes
from challenges.boards.aggregate import aggregate_read
from challenges.boards.query import PUBLIC, STAFF, BoardQuery, board_query, query_string
from challenges.ingestion.admission import schedule_phase
from challenges.leaderboards import freeze, selectors
from challenges.leaderboards.evaluation import is_aggregate
from challenges.leaderboards.kept import kept, kept_board

logger = logging.getLogger(__name__)


class PageOutOfRange(Exception):
    """``?page=`` past a board's last page: a 404 (docs/pages.md), never page 1 again."""


def code_digest() -> str:
    """The templates and this package's code (its wording), read at process start: a
    deploy that renders differently never serves a build kept by the previous code."""
    digest = hashlib.sha256()
    roots = [Path(d) for engine in settings.TEMPLATES for d in engine.get("DIRS", [])]
    for root in [*roots, Path(__file__).parent]:
        for path in sorted(root.rglob("*")):
            if path.suffix in (".html", ".txt", ".py"):
                digest.update(str(path.relative_to(root)).encode() + path.read_bytes())
    return digest.hexdigest()


RENDERER = code_digest()


def _state(value: Any) -> Any:
    """``value`` as plain data for a key: a model as every field of its row, a dataclass
    as its fields; so a field a template reads is in the key without being named."""
    if isinstance(value, Model):
        meta = value._meta
        return (meta.label, *(getattr(value, f.attname) for f in meta.concrete_fields))
    if is_dataclass(value) and not isinstance(value, type):
        return tuple(_state(getattr(value, f.name)) for f in fields(value))
    if isinstance(value, list | tuple):
        return tuple(_state(v) for v in value)
    return value


def _digest(query: BoardQuery, board_id: int | None, *parts: Any) -> str:
    """The key of what ``query`` is served: the query (its viewer as the board it reads),
    the challenge as saved and as probed (a rescore queued), the code, and ``parts``."""
    asked = replace(query, viewer="")
    seen = (_state(asked), board_id, getattr(query.challenge, "rescoring", None), RENDERER)
    return hashlib.sha256(repr((seen, _state(parts))).encode()).hexdigest()


def _board_id(query: BoardQuery) -> int | None:
    """The board the viewer reads: during a freeze the public reads the frozen one
    (leaderboards/freeze.py), staff the live one."""
    if query.viewer == STAFF:
        return query.challenge.active_version_id
    return freeze.board_id(challenge=query.challenge, user=None)


def board_read(query: BoardQuery, *, ahead: bool = False) -> Any:
    """What ``query`` is served: the HTML of a page or fragment (str), the API's JSON
    (bytes), or an export's chunks (an iterator of str, streamed and never kept; an
    aggregate board's JSON export: its whole body, a str).
    ``ahead``: built by a worker (a new ranking, a new minute) unless what is kept is
    current; None when the board is not a settled one (nothing to build ahead).
    Raises PageOutOfRange for a page past the last."""
    challenge = query.challenge
    if is_aggregate(challenge):
        return aggregate_read(query, ahead=ahead)
    board_id = _board_id(query)
    if query.shape == "csv":
        return shapes.export_csv(challenge, board_id)
    if query.shape == "export":
        return shapes.export_json(challenge, board_id)
    settled = selectors.board_settled(challenge, board_id)
    if query.shape == "json":  # while the ranking is current, a poll reads no row
        asked: dict[str, Any] = {
            "offset": query.offset,
            "limit": query.limit,
            "player": query.player,
        }
        json = lambda: JSONRenderer().render(  # noqa: E731 - the bytes a Response would send
            shapes.leaderboard_body(challenge, board_id=board_id, **asked)
        )
        key = _digest(query, board_id)
        return json() if settled is None else kept_board("api-board", settled, (key,), json)
    if settled is None:
        return None if ahead else _html(query, board_id)  # kept by its rows
    now = timezone.now()
    minute = now.replace(second=0, microsecond=0)  # relative times are worded for it
    phase = schedule_phase(challenge=challenge, now=now)  # a window opening: a new key at once
    key = _digest(query, board_id, freeze.is_frozen(challenge, now), phase)
    return kept_board(
        f"{query.shape}-settled",
        settled,
        (key,),
        lambda: _html(query, board_id),
        activity=challenge.last_activity,
        ahead=ahead,
        minute=minute,
        refresh=(lambda: _rebuild_ask(query, minute)) if query.viewer == PUBLIC else None,
    )


def _html(query: BoardQuery, board_id: int | None) -> str:
    """A page or fragment from the board's rows, kept by them (what the rows show)."""
    challenge = query.challenge
    frozen = board_id is not None and board_id != challenge.active_version_id
    if frozen:
        challenge.last_activity = freeze.last_activity(challenge, challenge.last_activity)
    asked: dict[str, Any] = {"page": query.page, "query": query.search, "player": query.player}
    board = selectors.board_page(challenge=challenge, board_id=board_id, **asked)
    if not query.search and not query.player and query.page > board.pages:
        raise PageOutOfRange(board.pages)
    asked_url = query_string(query)
    detail_url = f"/challenges/{challenge.slug}/"  # == reverse("challenges:detail")
    shown = {
        "minute": timezone.now().replace(second=0, microsecond=0),
        "frozen": frozen,
        "frozen_live": not frozen and freeze.is_frozen(challenge),
        "detail_url": detail_url,
        "refresh_url": f"{detail_url}board/" + (f"?{asked_url}" if asked_url else ""),
    }
    key = _digest(query, board_id, board, challenge.last_activity, sorted(shown.items()))
    return kept(
        query.shape, (key,), lambda: shapes.board_html(challenge, query.shape, board, shown)
    )


# --- building ahead ------------------------------------------------------------------------
# A worker builds the public's board for the new minute (``board_rebuild``) at most this
# many times a minute per challenge (past it, readers build), so that public reads never
# flood the workers.
REBUILDS_PER_MINUTE = 30


def _rebuild_ask(query: BoardQuery, minute: Any) -> bool:
    """Ask a worker for the public's build of the new minute; False: not asked (the
    reader builds it), past REBUILDS_PER_MINUTE for the challenge or with the broker away."""
    challenge = query.challenge
    asked = f"podium:board-rebuilds:{challenge.pk}:{minute.isoformat()}"
    cache.add(asked, 0, timeout=120)
    try:
        if cache.incr(asked) > REBUILDS_PER_MINUTE:
            return False
    except Exception:  # a cache away must not fail a read
        logger.warning("board rebuild not queued", extra={"challenge_id": challenge.pk})
        return False
    slug, text = challenge.slug, query_string(query)
    return enqueue.board_rebuild(kind=query.shape, slug=slug, query=text)


def board_rebuild(*, kind: str, slug: str, query: str) -> None:
    """Build the public's page or fragment (``kind``) of a challenge, for this query
    string and this minute (a worker, asked by a reader served the previous minute's)."""
    challenge = selectors.challenge_public(slug=slug)
    if challenge is None or kind not in ("page", "board"):
        return
    try:
        board_read(board_query(challenge, kind, dict(parse_qsl(query)), PUBLIC), ahead=True)
    except PageOutOfRange:
        return  # the page is gone (fewer players now): its readers get a 404


def boards_build_ahead(*, version_id: int) -> None:
    """Build the public's page and fragment of a board whose ranking a worker has just
    recomputed (``ranking_refresh``), so that no reader builds them; until then readers
    serve the previous ranking's (``kept.kept_board``)."""
    slug = selectors.challenge_slug(version_id=version_id)
    if slug is None:
        return
    for shape in ("page", "board"):
        challenge = selectors.challenge_public(slug=slug)  # read as a request reads it
        if challenge is None or challenge.active_version_id != version_id:
            return
        board_read(BoardQuery(challenge, shape), ahead=True)


def evaluation_build_ahead(*, challenge_id: int) -> None:
    """Build the public's page and live fragment of an aggregate board whose intervals a
    worker has just stored (the ``evaluation_refresh`` task), so that no reader builds
    them: until they are kept, readers serve the previous intervals' (``kept_recomputed``)."""
    slug = selectors.challenge_slug_of(challenge_id=challenge_id)
    challenge = selectors.challenge_public(slug=slug) if slug else None
    if challenge is None or not is_aggregate(challenge):
        return
    for shape in ("page", "board"):
        board_read(BoardQuery(challenge, shape), ahead=True)
