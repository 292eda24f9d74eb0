"""Dates read the same in the admin as on the public pages (issue 15)."""

from __future__ import annotations

from datetime import UTC, datetime

from django.utils import formats

from challenges.boards import display


def test_admin_datetime_format_matches_the_public_pages():
    moment = datetime(2026, 1, 31, 14, 5, 9, tzinfo=UTC)
    assert formats.date_format(moment, "DATETIME_FORMAT") == "2026-01-31 14:05:09 UTC"
    assert formats.date_format(moment, "DATETIME_FORMAT") == display.exact_time(moment)
    assert formats.date_format(moment.date()) == "2026-01-31"
