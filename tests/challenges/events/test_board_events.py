"""Events from real flows (docs/events.md): attempts recorded through the API, a rescore,
the freeze and the reveal, moderation and the schedule. Each event follows what the
public may see: nothing during a freeze that the frozen board does not show, never a
hidden player or a practice attempt."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from challenges.events import board as event_board
from challenges.events import moments
from challenges.models import Challenge, Event, LiveBoard
from challenges.setup import services as setup_services
from tests.factories import SEED_ATTEMPT, attempt_input, make_challenge
from tests.factories import record as record_service
from tests.urls import attempts_url, detail_url, rescore_url, reveal_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """Run what happens once a transaction commits (looks at boards, announcements)."""

    def run(call, *args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return call(*args, **kwargs)

    return run


def events(challenge: Challenge, *types: str) -> list[tuple[str, dict]]:
    found = Event.objects.filter(challenge=challenge).order_by("pk")
    if types:
        found = found.filter(type__in=types)
    return [(e.type, e.data) for e in found]


def record(committed, api, challenge, player, ms, **extra):
    body = {**SEED_ATTEMPT, "player": player, "elapsed_ms": ms, **extra}
    response = committed(api.post, attempts_url(challenge.pk), body, format="json")
    assert response.status_code == 201, response.content
    return response


def top_players(data: dict) -> list[str]:
    return [row["player"] for row in data["top"]]


def test_first_blood_record_beaten_and_board_changed_from_the_api(committed, integration_api):
    challenge = make_challenge(scoring_strategy="fastest")
    record(committed, integration_api, challenge, "ada", 500, player_name="Ada")
    assert [t for t, _ in events(challenge)] == ["attempt.first_blood", "board.changed"]
    first = events(challenge, "attempt.first_blood")[0][1]
    assert first == {"rank": 1, "player": "ada", "display_name": "Ada", "score": 500.0}
    board = events(challenge, "board.changed")[0][1]
    assert board["top"] == [{"rank": 1, "player": "ada", "display_name": "Ada", "score": 500.0}]

    record(committed, integration_api, challenge, "bob", 900)  # second place: no record
    assert events(challenge, "record.beaten") == []
    record(committed, integration_api, challenge, "cyd", 100, player_name="Cyd")
    beaten = events(challenge, "record.beaten")
    assert beaten == [
        (
            "record.beaten",
            {
                "previous": {"player": "ada", "display_name": "Ada", "score": 500.0},
                "new": {"player": "cyd", "display_name": "Cyd", "score": 100.0},
            },
        )
    ]
    assert top_players(events(challenge, "board.changed")[-1][1]) == ["cyd", "ada", "bob"]
    # An attempt that changes nothing on the top 10 (a worse one) announces nothing.
    before = Event.objects.count()
    record(committed, integration_api, challenge, "ada", 5000)
    assert Event.objects.count() == before
    # First blood once, ever.
    assert len(events(challenge, "attempt.first_blood")) == 1


def test_a_failed_attempt_is_no_first_blood(committed, integration_api):
    challenge = make_challenge(scoring_strategy="fastest")
    record(committed, integration_api, challenge, "ada", 500, succeeded=False)
    assert events(challenge) == []  # "fastest" does not rank a failed attempt


def test_practice_attempts_announce_nothing(committed, integration_api):
    challenge = make_challenge(
        scoring_strategy="fastest",
        closes_at=timezone.now() - timedelta(minutes=1),
        opens_at=timezone.now() - timedelta(hours=1),
        late_attempts="practice",
    )
    record(committed, integration_api, challenge, "ada", 500)
    assert events(challenge, "attempt.first_blood", "board.changed", "record.beaten") == []


def test_hidden_players_are_never_named(committed, integration_api, staff_api):
    challenge = make_challenge(scoring_strategy="fastest")
    record(committed, integration_api, challenge, "cheat", 1)
    record(committed, integration_api, challenge, "ada", 500)
    hide = reverse("player-hide", args=[challenge.pk, "cheat"])
    response = committed(staff_api.post, hide, {"reason": "bot"}, format="json")
    assert response.status_code == 200, response.content
    last = events(challenge)[-1]
    assert last[0] == "board.changed" and top_players(last[1]) == ["ada"]
    # The hidden holder is not "beaten": no record.beaten names them.
    assert events(challenge, "record.beaten") == []
    record(committed, integration_api, challenge, "cheat", 1)  # still hidden
    record(committed, integration_api, challenge, "bob", 100)
    for type_, data in events(challenge)[3:]:
        assert "cheat" not in repr(data), (type_, data)
    assert events(challenge, "record.beaten")[-1][1]["new"]["player"] == "bob"


def test_a_hidden_attempt_hands_first_place_back(committed, integration_api, staff_api):
    challenge = make_challenge(scoring_strategy="fastest")
    record(committed, integration_api, challenge, "ada", 500)
    attempt_id = record(committed, integration_api, challenge, "bob", 100).json()["id"]
    hide = reverse("attempt-hide", args=[attempt_id])
    assert committed(staff_api.post, hide, {"reason": "x"}, format="json").status_code == 200
    beaten = events(challenge, "record.beaten")
    assert [b["new"]["player"] for _, b in beaten] == ["bob", "ada"]


def test_rescore_finished_carries_the_history_record(committed, integration_api, admin_api):
    challenge = make_challenge(scoring_strategy="fastest")
    record(committed, integration_api, challenge, "ada", 500, tokens_total=10)
    record(committed, integration_api, challenge, "bob", 100, tokens_total=90)
    response = committed(
        admin_api.patch,
        detail_url(challenge.pk),
        {"scoring_strategy": "fewest_tokens"},
        format="json",
    )
    assert response.status_code == 200, response.content
    finished = events(challenge, "rescore.finished")
    assert len(finished) == 1
    data = finished[0][1]
    assert data["version"] == 2 and data["previous_version"] == 1
    assert data["reason"] == "rescore"
    assert data["players_ranked"] == {"before": 2, "after": 2}
    assert {p["external_id"] for p in data["largest_moves"]} == {"ada", "bob"}
    assert all("player_id" not in p for p in data["largest_moves"])
    # The new #1 under the new version: a record beaten, and no second first blood.
    assert events(challenge, "record.beaten")[-1][1]["new"]["player"] == "ada"
    assert len(events(challenge, "attempt.first_blood")) == 1
    # Rescoring the same setup: a switch that moves nobody is still announced.
    assert committed(admin_api.post, rescore_url(challenge.pk)).status_code == 202
    assert len(events(challenge, "rescore.finished")) == 2


def test_the_freeze_holds_events_back_until_the_reveal(committed, integration_api, admin_api):
    challenge = make_challenge(scoring_strategy="fastest")
    record(committed, integration_api, challenge, "ada", 500)
    freeze_at = timezone.now()
    setup_services.challenge_update(challenge=challenge, data={"freeze_at": freeze_at})
    assert [e.type for e in committed(moments.schedule_tick)] == ["challenge.frozen"]
    assert committed(moments.schedule_tick) == []  # announced once
    count = Event.objects.count()

    # During the freeze: new first place, a rescore: nothing the frozen board hides.
    record(committed, integration_api, challenge, "bob", 100)
    record(committed, integration_api, challenge, "cyd", 50)
    response = committed(
        admin_api.patch, detail_url(challenge.pk), {"timeout_ms": 2000}, format="json"
    )
    assert response.status_code == 200
    committed(event_board.board_check, challenge_id=challenge.pk)
    assert Event.objects.count() == count

    # The reveal: announced first, then the held-back switch, then the board.
    assert committed(admin_api.post, reveal_url(challenge.pk)).status_code == 200
    after = [(t, d) for t, d in events(challenge)][count:]
    assert [t for t, _ in after] == [
        "challenge.revealed",
        "rescore.finished",
        "record.beaten",
        "board.changed",
    ]
    assert after[2][1]["previous"]["player"] == "ada"
    assert after[2][1]["new"]["player"] == "cyd"
    assert top_players(after[3][1]) == ["cyd", "bob", "ada"]


def test_first_blood_during_a_freeze_waits_for_the_reveal(committed, integration_api, admin_api):
    challenge = make_challenge(scoring_strategy="fastest")
    setup_services.challenge_update(challenge=challenge, data={"freeze_at": timezone.now()})
    record(committed, integration_api, challenge, "ada", 500)
    assert events(challenge, "attempt.first_blood", "board.changed") == []
    committed(admin_api.post, reveal_url(challenge.pk))
    assert [t for t, _ in events(challenge, "attempt.first_blood")] == ["attempt.first_blood"]


def test_the_admin_reveal_action_announces_it(committed, admin_client):
    challenge = make_challenge(scoring_strategy="fastest")
    setup_services.challenge_update(challenge=challenge, data={"freeze_at": timezone.now()})
    url = reverse("admin:challenges_challenge_changelist")
    response = committed(
        admin_client.post,
        url,
        {"action": "reveal_selected", "_selected_action": [challenge.pk]},
    )
    assert response.status_code == 302
    assert [t for t, _ in events(challenge)] == ["challenge.revealed"]


def test_opened_and_closed_within_a_tick(committed):
    now = timezone.now()
    challenge = make_challenge(opens_at=now + timedelta(seconds=10), closes_at=now + timedelta(1))
    assert committed(moments.schedule_tick, now=now) == []
    opened = committed(moments.schedule_tick, now=now + timedelta(seconds=11))
    assert [(e.type, e.challenge_id) for e in opened] == [("challenge.opened", challenge.pk)]
    assert opened[0].data["opens_at"] == challenge.opens_at.isoformat().replace("+00:00", "Z")
    assert committed(moments.schedule_tick, now=now + timedelta(seconds=20)) == []
    closed = committed(moments.schedule_tick, now=now + timedelta(days=1, seconds=1))
    assert [e.type for e in closed] == ["challenge.closed"]
    # Moving the window opens it again (a new opens_at is a new moment).
    later = now + timedelta(days=2)
    setup_services.challenge_update(
        challenge=challenge, data={"opens_at": later, "closes_at": later + timedelta(days=1)}
    )
    again = committed(moments.schedule_tick, now=later + timedelta(seconds=1))
    assert [e.type for e in again] == ["challenge.opened"]


def test_moments_before_a_challenge_existed_are_not_announced(committed):
    past = timezone.now() - timedelta(days=3)
    make_challenge(opens_at=past, closes_at=past + timedelta(days=1), freeze_at=past)
    assert committed(moments.schedule_tick) == []


def test_inactive_challenges_announce_nothing(committed, integration_api, admin_api):
    challenge = make_challenge(scoring_strategy="fastest", is_active=False)
    record(committed, integration_api, challenge, "ada", 500)
    assert events(challenge) == []


def test_a_challenge_older_than_events_starts_from_a_baseline(committed, integration_api):
    challenge = make_challenge(scoring_strategy="fastest")
    record(committed, integration_api, challenge, "ada", 500)
    Event.objects.all().delete()
    LiveBoard.objects.filter(challenge=challenge).update(top=None)  # as the migration leaves it
    record(committed, integration_api, challenge, "bob", 100)
    assert events(challenge) == []  # the baseline look
    record(committed, integration_api, challenge, "cyd", 50)
    assert [t for t, _ in events(challenge)] == ["record.beaten", "board.changed"]


def test_looks_are_coalesced_to_one_per_second():
    sent: list[tuple[int, float]] = []

    def send(challenge_id, countdown):
        sent.append((challenge_id, countdown))

    assert event_board.board_check_request(challenge_id=7, send=send, now=100.0)
    # Pending: later changes ride on the look already asked for.
    assert not event_board.board_check_request(challenge_id=7, send=send, now=100.1)
    assert not event_board.board_check_request(challenge_id=7, send=send, now=100.2)
    assert event_board.board_check_request(challenge_id=8, send=send, now=100.2)
    assert sent == [(7, 0.0), (8, 0.0)]


def test_a_look_waits_a_second_after_the_previous_one(db):
    challenge = make_challenge()
    sent: list[tuple[int, float]] = []
    event_board.board_check(challenge_id=challenge.pk)  # a look now: pending cleared
    event_board.board_check_request(
        challenge_id=challenge.pk, send=lambda c, d: sent.append((c, d)), now=time.time()
    )
    assert len(sent) == 1 and 0.9 <= sent[0][1] <= 1.0


def test_a_lost_send_is_asked_again(db):
    def broken(challenge_id, countdown):
        raise ConnectionError("broker away")

    with pytest.raises(ConnectionError):
        event_board.board_check_request(challenge_id=3, send=broken, now=1.0)
    sent = []
    assert event_board.board_check_request(
        challenge_id=3, send=lambda c, d: sent.append(c), now=2.0
    )
    assert sent == [3]


def test_a_broker_outage_never_fails_the_request(committed, integration_api, monkeypatch, settings):
    from challenges import tasks

    def away(*args, **kwargs):
        raise ConnectionError("broker away")

    monkeypatch.setattr(tasks.events_board_check, "apply_async", away)
    challenge = make_challenge(scoring_strategy="fastest")
    record(committed, integration_api, challenge, "ada", 500)  # a 201, not a 500
    assert events(challenge) == []
    monkeypatch.undo()
    committed(tasks.events_tick)  # the tick looks again
    assert [t for t, _ in events(challenge)] == ["attempt.first_blood", "board.changed"]


def test_a_look_reads_the_board_now_not_lagging_checkpoints(committed, settings):
    # Under steady ingestion page checkpoints may lag (PODIUM_RANKING_MAX_AGE_MS): a
    # look that read them would miss the last change of a burst for good.
    settings.PODIUM_RANKING_MAX_AGE_MS = 60_000
    challenge = make_challenge(scoring_strategy="fastest")
    committed(record_service, challenge, attempt_input("ada", elapsed_ms=500))
    for i, ms in enumerate([400, 300, 200]):
        committed(record_service, challenge, attempt_input(f"p{i}", elapsed_ms=ms))
    last = events(challenge, "board.changed")[-1][1]
    assert top_players(last) == ["p2", "p1", "p0", "ada"]
    assert events(challenge, "record.beaten")[-1][1]["new"]["player"] == "p2"


def test_a_challenge_made_inactive_announces_nothing(committed, integration_api, admin_api):
    challenge = make_challenge(scoring_strategy="fastest")
    record(committed, integration_api, challenge, "ada", 500)
    count = Event.objects.count()
    response = committed(
        admin_api.patch, detail_url(challenge.pk), {"is_active": False}, format="json"
    )
    assert response.status_code == 200
    record(committed, integration_api, challenge, "bob", 100)
    committed(event_board.board_check, challenge_id=challenge.pk)
    assert Event.objects.count() == count  # not even an empty board
    committed(admin_api.patch, detail_url(challenge.pk), {"is_active": True}, format="json")
    record(committed, integration_api, challenge, "cyd", 50)
    assert events(challenge, "record.beaten")[-1][1]["previous"]["player"] == "ada"
