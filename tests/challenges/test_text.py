"""``challenges.text.iso_z``: the one ISO 8601 writer of the API, the event log and
webhooks (its outputs are held byte for byte by the API and event tests too)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from challenges.text import iso_z

PARIS_SUMMER = timezone(timedelta(hours=2))


@pytest.mark.parametrize(
    ("value", "zone", "written"),
    [
        (datetime(2026, 11, 28, 9, 5, 1, tzinfo=UTC), None, "2026-11-28T09:05:01Z"),
        (datetime(2026, 11, 28, 9, 5, 1, 120000, tzinfo=UTC), None, "2026-11-28T09:05:01.120000Z"),
        (datetime(2026, 11, 28, 9, 5, 1, 7), None, "2026-11-28T09:05:01.000007"),  # naive
        (datetime(2026, 7, 1, 11, 0, tzinfo=PARIS_SUMMER), None, "2026-07-01T09:00:00Z"),
        (datetime(2026, 7, 1, 9, 0, tzinfo=UTC), PARIS_SUMMER, "2026-07-01T11:00:00+02:00"),
    ],
    ids=["utc", "microseconds", "naive", "to-current-zone", "in-a-zone"],
)
def test_iso_z(value, zone, written):
    assert iso_z(value, zone) == written
