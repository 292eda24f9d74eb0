"""Text that can be stored and shown everywhere (docs/api.md).

A lone surrogate (U+D800–U+DFFF without its pair) cannot be encoded as UTF-8, so it makes
a page, an export or an API answer fail; PostgreSQL refuses it and NUL (U+0000) in text
and jsonb. Requests carrying either are refused (``text_problem``); rows written before
that rule are repaired as they are read (``text_clean``, ``TextSafeJSONDecoder``).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, tzinfo
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone
from django.utils.text import slugify

from scoring.engine.outcome import Outcome

# Surrogates and NUL, as decoded text, and as the JSON escapes that produce them.
BAD_CHAR = re.compile("[\ud800-\udfff\x00]")
BAD_ESCAPE = re.compile(r"\\u(?:[dD][89abcdefABCDEF][0-9a-fA-F]{2}|0000)")
SURROGATE = re.compile("[\ud800-\udfff]")
LINE_BREAK = re.compile("\r\n?")
REPLACEMENT = "\ufffd"

Path = tuple[str | int, ...]


def _describe(char: str) -> str:
    if char == "\x00":
        return "a NUL character (U+0000)"
    return f"a lone surrogate (U+{ord(char):04X})"


def key_label(key: str) -> str:
    """A key as it can be shown in an answer: JSON-escaped when it is not valid text."""
    return json.dumps(key)[1:-1] if BAD_CHAR.search(key) else key


def path_label(path: Path) -> str:
    """``sample["a"][3]``: where in the body a value is."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not out:
            out = key_label(part)
        else:
            out += f"[{json.dumps(part)}]"
    return out or "the body"


def text_problem(value: Any) -> tuple[Path, str] | None:
    """The first place in a JSON value (keys included) holding a surrogate or a NUL, with
    what is there; None when all its text is valid. Iterative: depth costs no stack."""
    stack: list[tuple[Path, Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            found = BAD_CHAR.search(item)
            if found:
                return path, f"{_describe(found.group())} at position {found.start()}"
        elif isinstance(item, dict):
            children = []
            for key, child in item.items():
                found = BAD_CHAR.search(key) if isinstance(key, str) else None
                if found:
                    return (*path, key), f"{_describe(found.group())} in a key"
                children.append(((*path, key), child))
            stack.extend(reversed(children))
        elif isinstance(item, list):
            stack.extend(((*path, i), child) for i, child in reversed(list(enumerate(item))))
    return None


def text_error(path: Path, what: str) -> dict[str, Any]:
    """A 400 body naming the field (and, in a list body, the item index first), with the
    full path in the message."""
    message = f"Text must be valid Unicode: {what}, at {path_label(path)}."
    field_at = 1 if path and isinstance(path[0], int) else 0
    if len(path) <= field_at:
        errors: Any = {"non_field_errors": [message]}
    else:
        errors = {key_label(str(path[field_at])): [message]}
    if field_at:
        errors = {str(path[0]): errors}
    return errors


def text_clean(value: Any, *, chars: re.Pattern[str] = SURROGATE) -> Any:
    """``value`` with every lone surrogate (or every match of ``chars``) replaced by
    U+FFFD, keys included. For reading rows stored before the rule."""
    if isinstance(value, str):
        return chars.sub(REPLACEMENT, value) if chars.search(value) else value
    if isinstance(value, dict):
        return {text_clean(k, chars=chars): text_clean(v, chars=chars) for k, v in value.items()}
    if isinstance(value, list):
        return [text_clean(v, chars=chars) for v in value]
    return value


def exact_time(value: datetime) -> str:
    """A moment as every page, the admin and exports write it: 2026-11-26 14:05:09 UTC."""
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def iso_z(value: datetime, zone: tzinfo | None = None) -> str:
    """A moment as the API, the event log and webhooks write it (DRF's DateTimeField's
    format): ISO 8601 in ``zone`` (default: the current time zone, UTC), UTC written Z,
    microseconds only when it has some; a naive moment as it is. The one ISO formatter."""
    if value.tzinfo is not None:
        value = value.astimezone(zone or timezone.get_current_timezone())
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


ROW_ID_MAX = 2**63 - 1  # the largest id any of our integer columns can hold
PAGE_MAX = 10**6  # past any board's last page (a board shows 50 rows a page)


def page_number(raw: str | None) -> int:
    """A page number from a query string (``?page=``): 1 for anything that is not a
    number, or is below 1; at most PAGE_MAX (a page past the last one is the page's own
    business: a board answers 404). The one page-number parser of the public pages."""
    try:
        return min(max(1, int(raw or "1")), PAGE_MAX)
    except ValueError:
        return 1


def row_id(value: Any) -> int | None:
    """A row id from a URL or a query: an int, or text of ASCII digits, from 1 to what
    the columns hold; None otherwise (SQLite raises OverflowError past it). The one id
    parser of the admin, the API and the selectors."""
    if isinstance(value, str):
        if not (value.isascii() and value.isdigit()):
            return None
        value = int(value)
    elif type(value) is not int:
        return None
    return value if 0 < value <= ROW_ID_MAX else None


def line_breaks_normalised(value: Any) -> Any:
    """``value`` with every CRLF or lone CR in its text (keys aside) turned into LF. A
    browser posts a textarea's line breaks as CRLF whatever it showed, so a challenge's
    text is normalised once, on input (admin, API, files): a save that changes nothing
    else then changes nothing."""
    if isinstance(value, str):
        return LINE_BREAK.sub("\n", value) if "\r" in value else value
    if isinstance(value, dict):
        return {k: line_breaks_normalised(v) for k, v in value.items()}
    if isinstance(value, list):
        return [line_breaks_normalised(v) for v in value]
    return value


def text_storable(value: Any) -> Any:
    """``value`` (a scorer's details or error) with lone surrogates and NUL replaced by
    U+FFFD; the same object when there is none. What a scorer returns is never refused
    (it is not the client's fault), only made safe to store and to show."""
    if value is None or (isinstance(value, str) and not BAD_CHAR.search(value)):
        return value
    if isinstance(value, dict):
        for key, item in value.items():  # flat dicts of numbers: one cheap pass
            kind = type(item)
            if BAD_CHAR.search(key) or kind is dict or kind is list:
                break
            if kind is str and BAD_CHAR.search(item):
                break
        else:
            return value
        if text_problem(value) is None:
            return value
    return text_clean(value, chars=BAD_CHAR)


def outcome_storable(outcome: Outcome) -> Outcome:
    """The outcome with its details and error safe to store (the same object if they
    are already)."""
    details, error = text_storable(outcome.details), text_storable(outcome.error)
    if details is outcome.details and error is outcome.error:
        return outcome
    return outcome._replace(details=details, error=error)


class TextSafeJSONDecoder(json.JSONDecoder):
    """Reads JSON columns; a surrogate escape written by an older version (SQLite kept
    them) comes back as U+FFFD, so no page, export or answer fails to encode."""

    def decode(self, s: str, *args: Any, **kwargs: Any) -> Any:
        value = super().decode(s, *args, **kwargs)
        if "\\u" in s and BAD_ESCAPE.search(s):
            return text_clean(value)
        return value


def unique_slug(name: str, taken: QuerySet[Any], fallback: str) -> str:
    """``name`` as a slug that no row of ``taken`` has, "-2", "-3"… added as needed
    (``fallback`` when the name makes no slug)."""
    base = slugify(name)[:190] or fallback
    slug, n = base, 1
    while taken.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug
