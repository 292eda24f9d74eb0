"""Markdown to safe HTML: rendered by Markdown, then sanitised by nh3 (no scripts, no
event handlers, no javascript: links; links get rel="noopener noreferrer").

Results are kept in this process by their text (the same text renders the same), so a
page view does not run Markdown and the sanitiser again.
"""

from __future__ import annotations

import html
from collections import OrderedDict
from collections.abc import Callable, Hashable

import markdown as md
import nh3
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator

CACHE_SIZE = 256
SUMMARY_CHARS = 140
_cache: OrderedDict[Hashable, str] = OrderedDict()


def _remembered(key: Hashable, compute: Callable[[], str]) -> str:
    if key in _cache:
        _cache.move_to_end(key)
        return _cache[key]
    value = _cache[key] = compute()
    if len(_cache) > CACHE_SIZE:
        _cache.popitem(last=False)
    return value


def _sanitised(text: str) -> str:
    rendered = md.markdown(text or "", extensions=["extra", "sane_lists"], output_format="html")
    return nh3.clean(rendered, link_rel="noopener noreferrer")


def render_markdown(text: str) -> SafeString:
    safe = _remembered(("html", text), lambda: _sanitised(text))
    return mark_safe(safe)  # noqa: S308 - sanitised by nh3


def summary(text: str) -> str:
    """The description's first paragraph as plain text, cut to one line's worth."""

    def compute() -> str:
        first = next((p for p in (text or "").split("\n\n") if p.strip()), "")
        plain = nh3.clean(md.markdown(first), tags=set())  # text only (entities escaped)
        # Autoescaping escapes it again on output: hand over plain characters.
        return Truncator(html.unescape(" ".join(plain.split()))).chars(SUMMARY_CHARS)

    return _remembered(("summary", text), compute)
