"""Log formats: readable text by default, JSON lines with ``LOG_FORMAT=json``.

Podium's events carry their context as ``extra`` fields (``challenge_id``, ``job_id``,
``chunk_id``, ``version``, ``plugin_id``, ``strategy``, counts and ``duration_ms``); both
formats print them. Never log snippet output or secrets. A scorer's failure is logged
with its error text cut to 500 characters (``scoring.failures``: the failure rules say failures
are "caught and logged"); the full text stays in the database, for admins.
"""

from __future__ import annotations

import logging

from pythonjsonlogger.json import JsonFormatter

# Attributes every LogRecord has; anything else on a record came in through ``extra``.
_STANDARD = set(vars(logging.LogRecord("x", logging.INFO, "x", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
}


def extras(record: logging.LogRecord) -> dict[str, object]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}


class TextFormatter(logging.Formatter):
    """``time level logger message key=value …``"""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = extras(record)
        if fields:
            line += " " + " ".join(f"{k}={v}" for k, v in fields.items())
        return line


def json_formatter() -> JsonFormatter:
    """One JSON object per line: time, level, logger, message, then the event's fields."""
    return JsonFormatter(
        "{asctime}{levelname}{name}{message}",
        style="{",
        rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
        timestamp=False,
    )
