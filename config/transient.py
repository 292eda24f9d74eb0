"""Transient errors: the ones that succeed when tried again a moment later.

A lost or refused database connection, a deadlock victim, a serialization failure, a
locked SQLite database, an unreachable broker. Django wraps most driver errors, but not
those of a raw psycopg cursor (COPY), so both spellings count; the cause chain is
searched too. Integrity, data and programming errors are never transient.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import InterfaceError, OperationalError, connection

logger = logging.getLogger(__name__)
T = TypeVar("T")


def _importable(module: str, *names: str) -> tuple[type[BaseException], ...]:
    try:
        found = __import__(module, fromlist=list(names))
    except ImportError:  # psycopg on SQLite-only installs
        return ()
    return tuple(getattr(found, name) for name in names)


# A raw psycopg cursor's errors (COPY) are not wrapped by Django: both spellings count.
DATABASE: tuple[type[BaseException], ...] = (
    OperationalError,
    InterfaceError,
    *_importable("psycopg", "OperationalError", "InterfaceError"),
)
TRANSIENT: tuple[type[BaseException], ...] = (
    *DATABASE,
    ConnectionError,
    TimeoutError,
    *_importable("kombu.exceptions", "OperationalError"),
)


def is_transient(exc: BaseException | None, kinds: tuple[type[BaseException], ...] = ()) -> bool:
    """Whether ``exc`` (or an error that caused it) is worth trying again (is one of
    ``kinds``, when given)."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, kinds or TRANSIENT):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def is_database_error(exc: BaseException | None) -> bool:
    """Whether ``exc`` is a transient error of the database (not of the broker)."""
    return is_transient(exc, DATABASE)


def forget_connection() -> None:
    """Drop the database connection after a transient error (outside a transaction), so
    the next try opens a fresh one instead of reusing a broken one."""
    if not connection.in_atomic_block:
        connection.close()


def retry_transient(
    work: Callable[[], T], *, tries: int = 3, first_wait_s: float = 0.5, what: str = ""
) -> T:
    """Run ``work``; after a transient error, wait (doubling each time) and run it again,
    up to ``tries`` times in all. ``work`` must be safe to repeat (one transaction)."""
    wait = first_wait_s
    for attempt in range(1, tries + 1):
        try:
            return work()
        except Exception as exc:
            if attempt == tries or not is_transient(exc):
                raise
            logger.warning(
                "transient error, retrying",
                extra={"what": what, "attempt": attempt, "error": repr(exc)[:300]},
            )
            forget_connection()
            time.sleep(wait)
            wait *= 2
    raise AssertionError("unreachable")
