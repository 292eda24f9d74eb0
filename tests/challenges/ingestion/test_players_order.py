"""Issue 13, finding 5: two requests naming the same players in different orders (new
players and renames) never deadlock: players are upserted in external-id order."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from challenges.models import Attempt, Player
from tests.challenges.rescoring._threads import Session
from tests.factories import attempt_input, make_challenge, record

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
ROUNDS = 12
PLAYERS = 400


def test_concurrent_bulk_requests_renaming_the_same_players_never_deadlock():
    if connection.vendor != "postgresql":
        pytest.skip("concurrent sessions: PostgreSQL")
    challenge = make_challenge(scoring_strategy="fewest_tokens")
    names = [f"u{i:03d}" for i in range(PLAYERS)]
    record(challenge, *[attempt_input(n, tokens_total=1) for n in names[::2]])  # half exist
    for round_no in range(ROUNDS):
        start = threading.Barrier(2)

        def post(order: list[str], tag: str, round_no: int = round_no, start=start) -> None:
            inputs = [
                attempt_input(n, tokens_total=2, player_name=f"{n}-{tag}{round_no}") for n in order
            ] + [attempt_input(f"new{round_no}-{n}", tokens_total=3) for n in order]
            start.wait(10)
            record(challenge, *inputs)

        a = Session(lambda: post(names, "a"))
        b = Session(lambda: post(names[::-1], "b"))
        a.start()
        b.start()
        a.outcome()  # a deadlock victim raises here
        b.outcome()
    assert (
        Attempt.objects.filter(challenge=challenge).count()
        == PLAYERS // 2 + ROUNDS * 2 * 2 * PLAYERS
    )
    last = ROUNDS - 1
    for player in Player.objects.filter(external_id__in=names):
        assert player.display_name in {
            f"{player.external_id}-a{last}",
            f"{player.external_id}-b{last}",
        }
