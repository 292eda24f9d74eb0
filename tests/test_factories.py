"""The test helpers that stand in for what a deployment does differently."""

from __future__ import annotations

import threading

import pytest
from django.db import OperationalError, connection, connections

from challenges.models import Attempt
from tests.factories import attempt_input, make_challenge, record, record_beside_readers


@pytest.mark.django_db(transaction=True)
def test_record_beside_readers_waits_for_a_reader_of_the_in_memory_database():
    """A thread of ours holds a read of challenges_attempt open, as a server thread's
    request does: ``record`` fails at once, ``record_beside_readers`` waits its turn."""
    if connection.vendor != "sqlite" or not connection.is_in_memory_db():
        pytest.skip("only SQLite's in-memory test database locks a table being read")
    challenge = make_challenge()
    record(challenge, attempt_input("a"), attempt_input("b"))
    reading, done = threading.Event(), threading.Event()

    def reader() -> None:
        with connections["default"].cursor() as cursor:  # this thread's own connection
            cursor.execute("SELECT id FROM challenges_attempt")
            cursor.fetchone()  # a row left unread: the statement, and its lock, stay
            reading.set()
            done.wait(10)
        connections.close_all()

    thread = threading.Thread(target=reader)
    thread.start()
    assert reading.wait(10)
    with pytest.raises(OperationalError, match="table is locked"):
        record(challenge, attempt_input("blocked"))
    threading.Timer(0.3, done.set).start()
    record_beside_readers(challenge, attempt_input("waited"))
    thread.join(10)
    players = set(Attempt.objects.values_list("player__external_id", flat=True))
    assert players == {"a", "b", "waited"}  # the failed try left nothing behind
