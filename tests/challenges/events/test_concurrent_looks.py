"""Looks at one board from many workers at once (PostgreSQL: real row locks): each
change is announced once, and a stream that resumes after any id misses nothing (ids
follow commit order within a challenge)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from challenges.events import board as event_board
from challenges.ingestion import services
from challenges.models import Event, LiveBoard
from tests.factories import attempt_input, make_challenge

pytestmark = pytest.mark.django_db(transaction=True)


def test_concurrent_looks_announce_each_change_once():
    if connection.vendor != "postgresql":
        pytest.skip("concurrent sessions: PostgreSQL")
    challenge = make_challenge(scoring_strategy="fastest")
    services.attempts_record(challenge=challenge, inputs=[attempt_input("ada", elapsed_ms=500)])
    errors: list[BaseException] = []
    start = threading.Barrier(6)

    def look() -> None:
        try:
            start.wait()
            event_board.board_check(challenge_id=challenge.pk)
        except BaseException as error:  # raised in the test's thread below
            errors.append(error)
        finally:
            connection.close()

    services.attempts_record(challenge=challenge, inputs=[attempt_input("bob", elapsed_ms=100)])
    Event.objects.all().delete()  # whatever the eager looks wrote: start from ada's board
    LiveBoard.objects.filter(challenge=challenge).update(
        top=[{"rank": 1, "player": "ada", "display_name": "ada", "score": 500.0}]
    )
    threads = [threading.Thread(target=look) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert sorted(Event.objects.values_list("type", flat=True)) == [
        "board.changed",
        "record.beaten",
    ]
