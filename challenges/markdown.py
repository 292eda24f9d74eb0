"""Markdown to safe HTML: rendered by Markdown, then sanitised by nh3 (no scripts, no
event handlers, no javascript: links; links get rel="noopener noreferrer")."""

from __future__ import annotations

import markdown as md
import nh3
from django.utils.safestring import SafeString, mark_safe


def render_markdown(text: str) -> SafeString:
    html = md.markdown(text or "", extensions=["extra", "sane_lists"], output_format="html")
    return mark_safe(nh3.clean(html, link_rel="noopener noreferrer"))  # noqa: S308 - sanitised
