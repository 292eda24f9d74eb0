"""What readers build from a board (HTML, JSON), kept in the cache under a key that names
everything it shows: identical content is built once, changed content is a new key and
never served stale. docs/caching.md says what is kept, under which key, for how long, and
what this process keeps itself (``_Local``, one switch: ``local_on``)."""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from challenges.leaderboards import ranking

if TYPE_CHECKING:
    from challenges.leaderboards.selectors import Settled

KEPT_TTL = 300  # seconds: the key changes with the content, so this only bounds memory
MINUTE = timedelta(minutes=1)
T = TypeVar("T")


def _key(kind: str, parts: tuple[Any, ...]) -> str:
    return f"podium:{kind}:" + hashlib.sha256(repr(parts).encode()).hexdigest()


def local_on() -> bool:
    """The in-process layer (``_Local``): on unless settings.PODIUM_KEPT_LOCAL is False,
    the one switch a benchmark turns to measure without it (docs/caching.md)."""
    return settings.PODIUM_KEPT_LOCAL


def kept(
    kind: str,
    parts: tuple[Any, ...],
    build: Callable[[], T],
    *,
    ttl: int = KEPT_TTL,
    local: bool = False,
) -> T:
    """``build()``'s result for content named by ``parts``, built once and kept; with
    ``local``, kept in this process too (``parts`` must name the content wholly: a
    generation, every ranking's token), so a repeated read skips the cache's round trip."""
    key = _key(kind, parts)
    found = _plain.recall(key) if local else None
    if found is None:
        found = cache.get(key)
        if found is None:
            found = build()
            cache.set(key, found, ttl)
        if local:
            _plain.put(key, found)
    return found


def kept_recomputed(
    kind: str,
    parts: tuple[Any, ...],
    family: tuple[Any, ...],
    build: Callable[[], T],
    *,
    fresh: bool,
    ahead: bool = False,
) -> T:
    """``build()``'s result for content named by ``parts``, kept, for content a worker
    recomputes now and then (an aggregate board's intervals): ``family`` names the same
    content but for the computation (the names, the hides, the challenge as saved).

    While nothing is kept for ``parts`` yet and the computation they name is ``fresh``
    (made less than ``ranking.reuse_bound()`` ago), the last build of the family is
    served: the previous computation's, which says when it was made. The worker that
    made the new one builds the common reads ahead (``ahead``), so that under steady
    ingestion no reader waits for a build; past the bound a reader builds."""
    key = _key(kind, parts)
    latest = _key(f"{kind}-latest", family)
    if not ahead:
        found = cache.get(key)
        if found is None and fresh:
            found = cache.get(latest)
        if found is not None:
            return found
    result = build()
    cache.set_many({key: result, latest: result}, KEPT_TTL)
    return result


class _Built(NamedTuple):
    """A board's build as kept by ``kept_board``, with what it was built from."""

    token: str  # the ranking's
    lineage: str
    ranked_at: datetime
    activity: Any  # the newest activity it shows (None: it shows none)
    built_at: datetime
    minute: datetime | None  # the minute its relative times are worded for (None: none)
    result: Any


def kept_board(
    kind: str,
    settled: Settled,
    parts: tuple[Any, ...],
    build: Callable[[], T],
    *,
    activity: Any = None,
    ahead: bool = False,
    minute: datetime | None = None,
    refresh: Callable[[], bool] | None = None,
) -> T:
    """``build()``'s result for a settled board (``selectors.board_settled``), what else
    it shows (``parts``) and the newest activity it shows (``activity``), kept.

    Served again while it shows the board's rows as they are or as they were no longer
    than ``ranking.reuse_bound()`` ago (PODIUM_RANKING_MAX_AGE_MS × REFRESH_WAIT):
    - a current board: built from its ranking, showing the same newest activity or
      built less than the bound ago (new attempts that changed no entry);
    - a lagging board: built from a ranking of the same lineage (no row removed since:
      a deletion, a hide or a rename starts a new one) computed less than the bound ago;
    and worded for this ``minute``, or for the one before while ``refresh()`` (called
    once per key and minute) has a worker build it for this one; when ``refresh()``
    returns False (not asked), the reader builds it.
    ``ahead``: a worker building (the ranking it just computed, or a new minute) builds
    unless what is kept was built from this ranking for this minute already."""
    key = _key(
        f"{kind}-board", (settled.challenge_id, settled.updated_at, settled.version_id, *parts)
    )
    if not ahead:
        local = _local.get(key, settled, activity, minute)
        if local is not None:
            return local.result
    found = _built(cache.get(key))
    if found is not None and _usable(found, settled, activity, ahead=ahead):
        if found.minute == minute:
            _local.put(key, found, recheck=not _exact(found, settled, activity, minute))
            return found.result
        if (
            not ahead
            and refresh is not None
            and minute is not None
            and found.minute == minute - MINUTE
        ):
            if not cache.add(f"{key}:refresh:{minute.isoformat()}", 1, timeout=60) or refresh():
                _local.put(key, found, recheck=True)
                return found.result  # asked for already, or now (else: build it here)
    result = build()
    built = _Built(
        settled.token,
        settled.lineage,
        settled.ranked_at,
        activity,
        timezone.now(),
        minute,
        result,
    )
    cache.set(key, tuple(built), KEPT_TTL)
    _local.put(key, built)
    return result


LOCAL_SIZE = 64  # builds kept per process (a page is about 40 KB)
LOCAL_RECHECK_S = 1.0  # how long a build the cache served by its rules is served again


class _Local:
    """The process's last builds, by cache key (bounded, least recently used out).

    A build that is exactly what a read would build is served for as long as it is. One
    the cache served by its other rules (a lagging board's, whose newest activity moves
    with every attempt; a minute old while a worker builds the new minute's) is served
    again, by the same rules, for LOCAL_RECHECK_S, then the cache is asked again: so each
    process asks the cache at most once a second for such a read, and serves what the
    cache holds no more than a second late (within the bound the rules keep)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.builds: OrderedDict[str, tuple[Any, float | None]] = OrderedDict()
        self.lock = threading.Lock()  # threaded web processes share it

    def _found(self, key: str) -> tuple[Any, float | None] | None:
        """The entry under ``key``, now the most recently used (None: none, or not kept)."""
        if not local_on():
            return None
        with self.lock:
            found = self.builds.get(key)
            if found is not None:
                self.builds.move_to_end(key)
        return found

    def get(
        self, key: str, settled: Settled, activity: Any, minute: datetime | None
    ) -> _Built | None:
        """The build kept under ``key`` if it is what this read would serve."""
        found = self._found(key)
        if found is None:
            return None
        built, recheck_at = found
        if _exact(built, settled, activity, minute):
            return built
        if recheck_at is None or time.monotonic() >= recheck_at:
            return None
        if not _usable(built, settled, activity, ahead=False):
            return None
        if built.minute == minute or (minute is not None and built.minute == minute - MINUTE):
            return built  # a minute old: a worker was asked for the new one (see put)
        return None

    def recall(self, key: str) -> Any:
        """What ``put`` kept under ``key`` as it is (a plain ``kept(local=True)`` value)."""
        found = self._found(key)
        return None if found is None else found[0]

    def put(self, key: str, built: Any, *, recheck: bool = False) -> None:
        """Keep ``built``; ``recheck``: served by the cache's rules other than an exact
        match (a minute-old build only once a worker was asked for the new minute's)."""
        if not local_on():
            return
        with self.lock:
            self.builds[key] = (built, time.monotonic() + LOCAL_RECHECK_S if recheck else None)
            self.builds.move_to_end(key)
            while len(self.builds) > self.size:
                self.builds.popitem(last=False)

    def clear(self) -> None:
        with self.lock:
            self.builds.clear()


_local = _Local(LOCAL_SIZE)
_plain = _Local(512)  # kept(local=True): red/blue standings and pages, collections' standings


def local_clear() -> None:
    """Forget this process's copies (tests that clear the cache to make a reader build)."""
    _local.clear()
    _plain.clear()


def _exact(found: _Built, settled: Settled, activity: Any, minute: datetime | None) -> bool:
    """Whether ``found`` is what a read of this board would build now."""
    return found.token == settled.token and found.activity == activity and found.minute == minute


def _built(found: Any) -> _Built | None:
    """What the cache holds, if it is a build (an old process's value, say, is not)."""
    if not (isinstance(found, tuple) and len(found) == len(_Built._fields)):
        return None
    built = _Built(*found)
    if not (isinstance(built.ranked_at, datetime) and isinstance(built.built_at, datetime)):
        return None
    if not (built.minute is None or isinstance(built.minute, datetime)):
        return None
    return built


def _usable(found: _Built, settled: Settled, activity: Any, *, ahead: bool) -> bool:
    if found.token == settled.token:  # built from this ranking (a lagging one is recent)
        return ahead or found.activity == activity or _recent(found.built_at)
    if ahead or not settled.lagging:
        return False
    return found.lineage == settled.lineage and _recent(found.ranked_at)


def _recent(moment: datetime) -> bool:
    return moment > timezone.now() - ranking.reuse_bound()
