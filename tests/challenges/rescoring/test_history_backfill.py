"""The back-fill of history records for switches made before they existed (migration
0019): rescores and "make active again" replayed from the jobs and the audit trail give
the records the switches would have written."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from challenges.models import HistoryRecord
from challenges.setup import versions
from tests.challenges.rescoring.test_history_records import rescore_to, seeded

pytestmark = pytest.mark.django_db
migration = importlib.import_module("challenges.migrations.0021_history_backfill")

FIELDS = (
    "version_id",
    "previous_version_id",
    "reason",
    "players_before",
    "players_after",
    "moved",
    "entered_top",
    "left_top",
    "largest_moves",
    "kendall_tau",
)


def test_the_backfill_rebuilds_the_records_of_rescores_and_rollbacks():
    challenge = seeded(20)
    v1 = challenge.active_version
    rescore_to(challenge, "fewest_tokens")
    rescore_to(challenge, "first")
    versions.version_activate(version=v1)
    written = list(HistoryRecord.objects.filter(challenge=challenge).values(*FIELDS))
    assert [w["reason"] for w in written] == ["rollback", "rescore", "rescore"]
    HistoryRecord.objects.all()._raw_delete(HistoryRecord.objects.db)  # as before 0018

    migration.backfill(apps, None)

    rebuilt = HistoryRecord.objects.filter(challenge=challenge)
    assert list(rebuilt.values(*FIELDS)) == written
    assert all(r.backfilled for r in rebuilt)
    # Run again: a challenge that has records is left alone.
    migration.backfill(apps, None)
    assert rebuilt.count() == 3
