"""What readers build from a board (HTML, JSON), kept in the cache under a key that names
everything it shows: identical content is built once, changed content is a new key and
never served stale. The keys come from ``selectors.board_settled`` (the board's rows by
their ranking) or from the rows themselves (``public.views.BoardView``)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, TypeVar

from django.core.cache import cache

KEPT_TTL = 300  # seconds: the key changes with the content, so this only bounds memory
T = TypeVar("T")


def kept(kind: str, parts: tuple[Any, ...], build: Callable[[], T]) -> T:
    """``build()``'s result for content named by ``parts``, built once and kept."""
    key = f"podium:{kind}:" + hashlib.sha256(repr(parts).encode()).hexdigest()
    found = cache.get(key)
    if found is None:
        found = build()
        cache.set(key, found, KEPT_TTL)
    return found
