"""Every read of a challenge's board goes through ``board_read`` with a ``BoardQuery``: the
public page and its live fragment, the API's leaderboard, the exports, and what a worker
builds ahead (a new ranking, a new minute). Entry points parse their input into the query
and call it; none builds a board on its own, and none passes an HttpRequest.

The key of what is kept is derived, never listed: from the query, the board's ranking
state (``selectors.board_settled``) or its rows, the challenge as saved (every field of
its row) and the code that renders it (``RENDERER``). docs/caching.md says how long what
is kept may be served."""

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
from django.dispatch import Signal
from django.utils import timezone

from challenges.boards import schedule, shapes
from challenges.boards.query import PUBLIC, STAFF, BoardQuery, board_query, query_string
from challenges.leaderboards import freeze, selectors
from challenges.leaderboards.kept import kept, kept_board

logger = logging.getLogger(__name__)


class PageOutOfRange(Exception):
    """``?page=`` past a board's last page: a 404 (docs/pages.md), never page 1 again."""


def code_digest() -> str:
    """The templates and this package's code (which words what the board shows), read
    once at process start: a deploy that renders differently never serves a build kept
    by the previous code."""
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
        return (
            value._meta.label,
            *(getattr(value, f.attname) for f in value._meta.concrete_fields),
        )
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
    (bytes), or an export's chunks (an iterator of str, streamed and never kept).
    ``ahead``: built by a worker (a new ranking, a new minute) unless what is kept is
    current; None when the board is not a settled one (nothing to build ahead).
    Raises PageOutOfRange for a page past the last."""
    board_id = _board_id(query)
    challenge = query.challenge
    if query.shape == "csv":
        return shapes.export_csv(challenge, board_id)
    if query.shape == "export":
        return shapes.export_json(challenge, board_id)
    settled = selectors.board_settled(challenge, board_id)
    if query.shape == "json":  # while the ranking is current, a poll reads no row
        json = lambda: shapes.leaderboard_json(query, board_id)  # noqa: E731
        key = _digest(query, board_id)
        return json() if settled is None else kept_board("api-board", settled, (key,), json)
    if settled is None:
        return None if ahead else _html(query, board_id)  # kept by its rows
    now = timezone.now()
    minute = now.replace(second=0, microsecond=0)  # relative times are worded for it
    # a window opening or closing, a freeze starting: a new key at once
    key = _digest(
        query,
        board_id,
        freeze.is_frozen(challenge, now),
        schedule.phase(challenge=challenge, now=now),
    )

    def refresh() -> bool:
        return _rebuild_ask(query, minute)

    return kept_board(
        f"{query.shape}-settled",
        settled,
        (key,),
        lambda: _html(query, board_id),
        activity=challenge.last_activity,
        ahead=ahead,
        minute=minute,
        refresh=refresh if query.viewer == PUBLIC else None,
    )


def _html(query: BoardQuery, board_id: int | None) -> str:
    """A page or fragment from the board's rows, kept by them (what the rows show)."""
    challenge = query.challenge
    frozen = board_id is not None and board_id != challenge.active_version_id
    if frozen:
        challenge.last_activity = freeze.last_activity(challenge, challenge.last_activity)
    board = selectors.board_page(
        challenge=challenge,
        board_id=board_id,
        page=query.page,
        query=query.search,
        player=query.player,
    )
    if not query.search and not query.player and query.page > board.pages:
        raise PageOutOfRange(board.pages)
    asked = query_string(query)
    detail_url = f"/challenges/{challenge.slug}/"  # == reverse("challenges:detail")
    shown = {
        "minute": timezone.now().replace(second=0, microsecond=0),
        "frozen": frozen,
        "frozen_live": not frozen and freeze.is_frozen(challenge),
        "detail_url": detail_url,
        "refresh_url": f"{detail_url}board/" + (f"?{asked}" if asked else ""),
    }
    key = _digest(query, board_id, board, challenge.last_activity, sorted(shown.items()))
    return kept(query.shape, (key,), lambda: shapes.board_html(query, board, shown))


# --- building ahead ------------------------------------------------------------------------
# Sent (kind, slug, query) when the public's board was served as built for the previous
# minute; the tasks connect a Celery task to it (``board_rebuild``). At most this many a
# minute per challenge: each query string is a build, and public reads must not flood
# the workers (past it, readers build, as without them).
board_rebuild_requested = Signal()
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
        board_rebuild_requested.send(
            sender=None, kind=query.shape, slug=challenge.slug, query=query_string(query)
        )
    except Exception:  # a broker away must not fail a read
        logger.warning("board rebuild not queued", extra={"challenge_id": challenge.pk})
        return False
    return True


def board_rebuild(*, kind: str, slug: str, query: str) -> None:
    """Build the public's page or fragment (``kind``) of a challenge, for this query
    string and this minute (a worker, after ``board_rebuild_requested``)."""
    challenge = selectors.challenge_public(slug=slug)
    if challenge is None or kind not in ("page", "board"):
        return
    try:
        board_read(board_query(challenge, kind, dict(parse_qsl(query)), PUBLIC), ahead=True)
    except PageOutOfRange:
        return  # the page is gone (fewer players now): its readers get a 404


def boards_build_ahead(*, version_id: int) -> None:
    """Build the public's page and live fragment of the board whose ranking a worker has
    just recomputed (the ``ranking_refresh`` task), so that under steady ingestion no
    reader builds them: until they are kept, readers serve what was built from the
    previous ranking (``kept.kept_board``). Nothing when the version is no public
    challenge's live board."""
    slug = selectors.challenge_slug(version_id=version_id)
    if slug is None:
        return
    for shape in ("page", "board"):
        challenge = selectors.challenge_public(slug=slug)  # read as a request reads it
        if challenge is None or challenge.active_version_id != version_id:
            return
        board_read(BoardQuery(challenge, shape), ahead=True)
