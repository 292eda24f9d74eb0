"""Every scorer failure is logged (docs/scorers.md, "Failure rules"), a burst summarised.

One WARNING line per failed attempt — challenge, version, scorer, attempt id, the error
(truncated) — for the first ``LIMIT`` attempts failing with the same error under the
same version in a ``WINDOW_S`` window; past that the attempts are counted and one
summary line says how many more failed alike (logged when the window ends, at the next
call). A rescore of a million attempts against a broken plugin writes a handful of
lines, not a million. The error also stays on the attempt's score row, for admins.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from scoring.engine.outcome import Outcome

logger = logging.getLogger("podium.scoring")

LIMIT = 3  # full lines per (version, error) and window
WINDOW_S = 60.0
MAX_ERROR_CHARS = 500
MAX_TRACKED = 1000


@dataclass
class _Burst:
    started: float
    fields: dict[str, Any]
    logged: int = 0
    suppressed: int = 0
    last_attempt_id: int | None = None


_bursts: dict[tuple[int | None, str], _Burst] = {}
_lock = threading.Lock()


def _clock() -> float:
    """The bursts' clock (monotonic), one name for tests to move without moving every
    other module's ``time.monotonic``."""
    return time.monotonic()


def scorer_name(version: Any) -> str:
    strategy = version.scoring_strategy
    plugin = getattr(version, "scoring_plugin_id", "")
    return f"{strategy}:{plugin}" if plugin else strategy


def failures_log(
    *, version: Any, attempt_ids: Iterable[int | None], outcomes: Sequence[Outcome]
) -> None:
    """Log the failed outcomes among ``outcomes`` (one per attempt id, in order)."""
    now = _clock()
    lines: list[dict[str, Any]] = []
    summaries: list[dict[str, Any]] = []
    with _lock:
        _sweep(now, summaries)
        for attempt_id, outcome in zip(attempt_ids, outcomes, strict=True):
            if not outcome.error:
                continue
            error = outcome.error[:MAX_ERROR_CHARS]
            key = (version.pk, error)
            burst = _bursts.get(key)
            if burst is None:
                if len(_bursts) >= MAX_TRACKED:  # the oldest burst makes room
                    _close(min(_bursts, key=lambda k: _bursts[k].started), summaries)
                burst = _bursts[key] = _Burst(now, _fields(version, error))
            if burst.logged < LIMIT:
                burst.logged += 1
                lines.append({**burst.fields, "attempt_id": attempt_id})
            else:
                burst.suppressed += 1
                burst.last_attempt_id = attempt_id
    for fields in lines:
        logger.warning("scorer failed", extra=fields)
    for fields in summaries:
        logger.warning("scorer failed repeatedly (summary)", extra=fields)


def failures_tick() -> None:
    """Called where nothing failed: logs the summaries of bursts whose window ended
    (a dict check when there are none)."""
    if not _bursts:
        return
    summaries: list[dict[str, Any]] = []
    with _lock:
        _sweep(_clock(), summaries)
    for fields in summaries:
        logger.warning("scorer failed repeatedly (summary)", extra=fields)


def failures_flush() -> None:
    """Log the summaries of every burst now (tests, the end of a job)."""
    summaries: list[dict[str, Any]] = []
    with _lock:
        for key in list(_bursts):
            _close(key, summaries)
    for fields in summaries:
        logger.warning("scorer failed repeatedly (summary)", extra=fields)


def _fields(version: Any, error: str) -> dict[str, Any]:
    return {
        "challenge_id": getattr(version, "challenge_id", None),
        "version": getattr(version, "number", None),
        "version_id": version.pk,
        "scorer": scorer_name(version),
        "error": error,
    }


def _sweep(now: float, summaries: list[dict[str, Any]]) -> None:
    for key, burst in list(_bursts.items()):
        if now - burst.started >= WINDOW_S:
            _close(key, summaries)


def _close(key: tuple[int | None, str], summaries: list[dict[str, Any]]) -> None:
    burst = _bursts.pop(key)
    if burst.suppressed:
        summaries.append(
            {
                **burst.fields,
                "more_failures": burst.suppressed,
                "last_attempt_id": burst.last_attempt_id,
                "window_s": WINDOW_S,
            }
        )
