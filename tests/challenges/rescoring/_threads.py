"""Helpers for tests that race database sessions (PostgreSQL): threads with their own
connections, and a way to see that one session waits for another's lock."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from django.db import connection, connections


class Session(threading.Thread):
    """Run ``target`` in a thread with its own database connection; keep its result or
    exception for the test to check."""

    def __init__(self, target: Callable[[], Any]):
        super().__init__(daemon=True)
        self.target = target
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.target()
        except BaseException as exc:  # handed to the test
            self.error = exc
        finally:
            connections.close_all()

    def outcome(self, timeout: float = 30.0) -> Any:
        self.join(timeout)
        assert not self.is_alive(), "the session did not finish"
        if self.error is not None:
            raise self.error
        return self.result


def someone_waits_for_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0] > 0


def wait_until_someone_waits(timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not someone_waits_for_a_lock():
        assert time.monotonic() < deadline, "no session waited for a lock"
        time.sleep(0.01)
