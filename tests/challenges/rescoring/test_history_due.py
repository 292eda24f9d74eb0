"""A switch's history record is written after the switch commits, outside its lock: the
switch notes it as due (``HistoryDue``) in its transaction, its process writes it right
after, and the rescore watchdog writes any left due by a process that died. A due
record is written exactly once."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections

from challenges import tasks
from challenges.leaderboards import history
from challenges.models import HistoryDue, HistoryRecord
from challenges.rescoring import switch
from challenges.setup import versions
from tests.challenges.rescoring.test_history_records import (
    assert_matches,
    expected_record,
    rescore_to,
    seeded,
)

pytestmark = pytest.mark.django_db


def _dies_before_the_record(monkeypatch):
    def crash(**kwargs):
        raise RuntimeError("the worker died after the switch committed")

    monkeypatch.setattr(history, "records_write_due", crash)


def test_a_record_left_due_by_a_process_that_died_is_written_by_the_watchdog(monkeypatch):
    challenge = seeded()
    v1 = challenge.active_version
    real = history.records_write_due
    _dies_before_the_record(monkeypatch)
    v2 = rescore_to(challenge, "fewest_tokens")
    assert challenge.active_version == v2  # the switch itself is done
    assert not HistoryRecord.objects.filter(challenge=challenge).exists()
    due = HistoryDue.objects.get(challenge=challenge)
    assert (due.version, due.previous_version, due.reason) == (v2, v1, "rescore")

    monkeypatch.setattr(history, "records_write_due", real)
    tasks.rescore_watchdog()  # too young: the switching process may be writing it now
    assert HistoryDue.objects.filter(challenge=challenge).exists()
    monkeypatch.setattr(tasks, "HISTORY_DUE_GRACE_S", 0.0)
    tasks.rescore_watchdog()

    found = HistoryRecord.objects.get(challenge=challenge)
    assert (found.version, found.previous_version, found.reason) == (v2, v1, "rescore")
    assert found.switched_at == challenge.updated_at
    assert_matches(found, expected_record(v1.pk, v2.pk))
    assert not HistoryDue.objects.exists()
    tasks.rescore_watchdog()
    assert HistoryRecord.objects.filter(challenge=challenge).count() == 1


def test_a_rollback_whose_record_failed_is_written_later(monkeypatch):
    challenge = seeded()
    v1 = challenge.active_version
    v2 = rescore_to(challenge, "fewest_tokens")
    real = history.records_write_due
    _dies_before_the_record(monkeypatch)
    versions.version_activate(version=v1)
    assert HistoryRecord.objects.filter(challenge=challenge).count() == 1
    monkeypatch.setattr(history, "records_write_due", real)
    assert len(history.records_write_due(challenge_id=challenge.pk)) == 1
    newest = HistoryRecord.objects.filter(challenge=challenge).first()
    assert (newest.version, newest.previous_version, newest.reason) == (v1, v2, "rollback")
    assert_matches(newest, expected_record(v2.pk, v1.pk))


@pytest.mark.django_db(transaction=True)
def test_the_record_is_computed_after_the_switch_commits(monkeypatch):
    """Outside any transaction: no lock of the switch is held while the diff runs."""
    challenge = seeded()
    seen = []
    real = history.pairs_diff

    def spy(pairs):
        seen.append(connection.in_atomic_block)
        return real(pairs)

    monkeypatch.setattr(history, "pairs_diff", spy)
    rescore_to(challenge, "fewest_tokens")
    assert seen == [False]
    assert HistoryRecord.objects.filter(challenge=challenge).count() == 1
    assert not HistoryDue.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_two_writers_of_one_due_record_write_it_once(monkeypatch):
    if connection.vendor != "postgresql":
        pytest.skip("threads on their own connections: PostgreSQL (SQLite: one writer)")
    challenge = seeded()
    monkeypatch.setattr(switch.history, "records_write_due", lambda **kwargs: [])
    rescore_to(challenge, "fewest_tokens")
    monkeypatch.undo()
    assert HistoryDue.objects.count() == 1
    barrier = threading.Barrier(2)
    real = history.pairs_diff
    written, errors = [], []

    def slow(pairs):
        found = real(pairs)
        barrier.wait(timeout=10)  # both have computed it before either stores it
        return found

    monkeypatch.setattr(history, "pairs_diff", slow)

    def writer():
        try:
            written.append(len(history.records_write_due(challenge_id=challenge.pk)))
        except Exception as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=writer) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    assert sorted(written) == [0, 1]
    assert HistoryRecord.objects.filter(challenge=challenge).count() == 1
    assert not HistoryDue.objects.exists()
