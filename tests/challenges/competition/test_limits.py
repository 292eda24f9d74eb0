"""Submission caps (docs/competitions.md): attempts per player per rolling
24 hours and in total; over a cap → 429 naming it (Retry-After when waiting helps),
nothing written, a bulk request refused whole; exact under concurrent writers."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.utils import timezone

from challenges.ingestion import admission, services
from challenges.models import Attempt, Challenge, Player
from tests.factories import SEED_ATTEMPT, attempt_input, counts, make_challenge
from tests.urls import attempts_url, detail_url


def _capped(**caps) -> Challenge:
    challenge = make_challenge(scoring_strategy="fastest")
    Challenge.objects.filter(pk=challenge.pk).update(**caps)
    challenge.refresh_from_db()
    return challenge


def _post(api, challenge, *players: str):
    body = [{**SEED_ATTEMPT, "player": p} for p in players]
    return api.post(attempts_url(challenge.pk), body, format="json")


def _age(player: str, age: timedelta) -> None:
    """Make the player's attempts as old as ``age`` (their recording time)."""
    Attempt.objects.filter(player__external_id=player).update(recorded_at=timezone.now() - age)


def test_daily_cap_refuses_naming_it_with_retry_after(db, integration_api):
    challenge = _capped(attempts_per_day=3)
    assert _post(integration_api, challenge, "u1", "u1").status_code == 201
    assert _post(integration_api, challenge, "u1").status_code == 201
    before = counts()
    response = _post(integration_api, challenge, "u1")
    assert response.status_code == 429
    body = response.json()
    assert body["cap"] == "attempts_per_day" and body["player"] == "u1"
    assert "at most 3 attempts" in body["detail"] and "24 hours" in body["detail"]
    # The oldest of the three leaves the window in 24 hours (minus the test's own time).
    assert 86400 - 60 <= int(response["Retry-After"]) <= 86400
    assert counts() == before
    # Another player is not affected.
    assert _post(integration_api, challenge, "u2").status_code == 201


def test_a_bulk_request_over_a_cap_is_refused_whole(db, integration_api):
    challenge = _capped(attempts_per_day=3)
    _post(integration_api, challenge, "u1", "u1")
    before = counts()
    response = _post(integration_api, challenge, "newcomer", "u2", "u1", "u1")
    assert response.status_code == 429 and response.json()["player"] == "u1"
    assert counts() == before  # not the newcomer, not u2: nothing
    assert not Player.objects.filter(external_id="newcomer").exists()


def test_rolling_window_across_the_day_boundary(db, integration_api):
    challenge = _capped(attempts_per_day=2)
    _post(integration_api, challenge, "u1", "u1")
    # 23 h 59 min old: still in the window, and out of it in about a minute.
    _age("u1", timedelta(hours=23, minutes=59))
    response = _post(integration_api, challenge, "u1")
    assert response.status_code == 429
    assert 1 <= int(response["Retry-After"]) <= 61
    # Just over 24 hours old: out of the window, the cap is free again.
    _age("u1", timedelta(hours=24, seconds=1))
    assert _post(integration_api, challenge, "u1", "u1").status_code == 201
    assert _post(integration_api, challenge, "u1").status_code == 429


def test_retry_after_waits_for_enough_attempts_to_leave(db):
    """Three recent attempts, a cap of 3, two sent: the second oldest must leave first."""
    challenge = _capped(attempts_per_day=3)
    now = timezone.now()
    for hours, player in ((20, "u1"), (10, "u1"), (1, "u1")):
        services.attempts_record(challenge=challenge, inputs=[attempt_input(player)])
        last = Attempt.objects.order_by("-pk").first()
        Attempt.objects.filter(pk=last.pk).update(recorded_at=now - timedelta(hours=hours))
    with pytest.raises(admission.LimitExceeded) as refused:
        services.attempts_record(challenge=challenge, inputs=[attempt_input("u1")] * 2)
    # The 10-hour-old attempt leaves in 14 hours.
    assert abs(refused.value.retry_after - 14 * 3600) <= 60


def test_total_cap_has_no_retry_after(db, integration_api):
    challenge = _capped(attempts_total=2, attempts_per_day=10)
    _post(integration_api, challenge, "u1", "u1")
    _age("u1", timedelta(days=3))
    response = _post(integration_api, challenge, "u1")
    assert response.status_code == 429
    assert response.json()["cap"] == "attempts_total"
    assert "at most 2 attempts" in response.json()["detail"]
    assert not response.has_header("Retry-After")  # waiting never helps


def test_a_request_larger_than_the_daily_cap_never_fits(db, integration_api):
    challenge = _capped(attempts_per_day=2)
    response = _post(integration_api, challenge, "u1", "u1", "u1")
    assert response.status_code == 429
    assert not response.has_header("Retry-After")


def test_practice_attempts_count_towards_the_caps(db):
    challenge = _capped(attempts_total=2)
    Challenge.objects.filter(pk=challenge.pk).update(
        closes_at=timezone.now() - timedelta(hours=1), late_attempts="practice"
    )
    challenge.refresh_from_db()
    services.attempts_record(challenge=challenge, inputs=[attempt_input("u1")] * 2)
    with pytest.raises(admission.LimitExceeded):
        services.attempts_record(challenge=challenge, inputs=[attempt_input("u1")])


@pytest.mark.parametrize("body", [{"attempts_per_day": 0}, {"attempts_total": -1}])
def test_bad_caps_are_a_400(db, admin_api, body):
    challenge = make_challenge()
    response = admin_api.patch(detail_url(challenge.pk), body, format="json")
    assert response.status_code == 400 and set(body) <= set(response.json())


# --- concurrency (PostgreSQL: real row locks, real parallel transactions) -----------------
def _race(challenge_id: int, writers: int, per_request: int) -> tuple[int, int]:
    """``writers`` threads record ``per_request`` attempts of one player at once."""
    barrier = threading.Barrier(writers)
    results: list[str] = []
    lock = threading.Lock()

    def write() -> None:
        try:
            challenge = Challenge.objects.get(pk=challenge_id)
            inputs = [attempt_input("racer")] * per_request
            barrier.wait()
            try:
                services.attempts_record(challenge=challenge, inputs=inputs)
                outcome = "ok"
            except admission.LimitExceeded:
                outcome = "refused"
            with lock:
                results.append(outcome)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=write) for _ in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results.count("ok"), results.count("refused")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("caps", "cap"),
    [({"attempts_total": 5}, 5), ({"attempts_per_day": 4}, 4)],
)
def test_parallel_writers_never_pass_the_cap(caps, cap):
    if connection.vendor != "postgresql":
        pytest.skip("row locks and parallel transactions: PostgreSQL")
    challenge = _capped(**caps)
    ok, refused = _race(challenge.pk, writers=12, per_request=1)
    assert ok + refused == 12
    assert ok == cap, (ok, refused)
    assert Attempt.objects.filter(challenge=challenge).count() == cap


@pytest.mark.django_db(transaction=True)
def test_parallel_bulk_writers_of_a_new_player_never_pass_the_cap():
    """The player does not exist yet: every writer creates it in the same instant."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks and parallel transactions: PostgreSQL")
    challenge = _capped(attempts_total=7)
    ok, refused = _race(challenge.pk, writers=8, per_request=3)
    assert ok == 2 and refused == 6  # 3 + 3 fit in 7; a third request would make 9
    assert Attempt.objects.filter(challenge=challenge).count() == 6
