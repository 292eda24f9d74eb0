"""The schedule (docs/competitions.md): outside [opens_at, closes_at) an
attempt gets 409 naming the window, or is recorded as practice: stored, scored, never
ranked (not by ingestion, not by a rescore's rebuild)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from challenges.ingestion import admission, services
from challenges.models import Attempt, AttemptScore, Challenge, LeaderboardEntry
from tests.factories import SEED_ATTEMPT, attempt_input, counts, make_challenge
from tests.urls import (
    attempts_url,
    challenges_url,
    detail_url,
    leaderboard_url,
    page_url,
    rescore_url,
)

HOUR = timedelta(hours=1)


def _window(challenge: Challenge, **fields) -> Challenge:
    Challenge.objects.filter(pk=challenge.pk).update(**fields)
    challenge.refresh_from_db()
    return challenge


@pytest.fixture
def challenge(db) -> Challenge:
    return make_challenge(scoring_strategy="fastest")


def _attempt(player: str = "u1", elapsed_ms: int = 1000) -> dict:
    return {**SEED_ATTEMPT, "player": player, "elapsed_ms": elapsed_ms}


@pytest.mark.parametrize(
    ("opens", "closes", "words"),
    [(1, None, "has not opened yet"), (None, -1, "is closed"), (-2, -1, "is closed")],
)
def test_refused_outside_the_window_naming_it(challenge, integration_api, opens, closes, words):
    now = timezone.now()
    _window(
        challenge,
        opens_at=now + opens * HOUR if opens is not None else None,
        closes_at=now + closes * HOUR if closes is not None else None,
    )
    before = counts()
    response = integration_api.post(
        attempts_url(challenge.pk), [_attempt("a"), _attempt("b")], format="json"
    )
    assert response.status_code == 409, response.content
    body = response.json()
    assert words in body["detail"]
    window = admission.window_text(challenge)
    assert window in body["detail"] and "UTC" in window
    assert body["opens_at"] == (challenge.opens_at.isoformat() if challenge.opens_at else None)
    assert body["closes_at"] == (challenge.closes_at.isoformat() if challenge.closes_at else None)
    assert counts() == before  # nothing written, players included


def test_open_window_accepts(challenge, integration_api):
    now = timezone.now()
    _window(challenge, opens_at=now - HOUR, closes_at=now + HOUR)
    response = integration_api.post(attempts_url(challenge.pk), _attempt(), format="json")
    assert response.status_code == 201
    assert Attempt.objects.get().practice is False
    assert integration_api.get(leaderboard_url(challenge.pk)).json()["count"] == 1


def test_the_recording_time_counts_not_the_clients_created_at(challenge, integration_api):
    now = timezone.now()
    _window(challenge, opens_at=now - 2 * HOUR, closes_at=now - HOUR)
    backdated = {**_attempt(), "created_at": (now - 90 * timedelta(minutes=1)).isoformat()}
    response = integration_api.post(attempts_url(challenge.pk), backdated, format="json")
    assert response.status_code == 409


def test_closes_at_is_exclusive(challenge):
    now = timezone.now()
    _window(challenge, closes_at=now)
    assert admission.schedule_phase(challenge=challenge, now=now) == admission.Phase.ENDED
    assert admission.schedule_phase(challenge=challenge, now=now - timedelta(microseconds=1)) == (
        admission.Phase.OPEN
    )
    _window(challenge, opens_at=now - HOUR, closes_at=now + HOUR)
    assert admission.schedule_phase(challenge=challenge, now=now - HOUR) == admission.Phase.OPEN


def test_practice_is_stored_scored_never_ranked(challenge, integration_api, staff_api, anon_api):
    integration_api.post(attempts_url(challenge.pk), _attempt("ranked", 5000), format="json")
    _window(challenge, closes_at=timezone.now() - HOUR, late_attempts="practice")
    response = integration_api.post(
        attempts_url(challenge.pk),
        [_attempt("late", 10), _attempt("ranked", 1)],
        format="json",
    )
    assert response.status_code == 201, response.content
    late = Attempt.objects.filter(practice=True)
    assert late.count() == 2
    # Scored like any attempt...
    scores = AttemptScore.objects.filter(attempt__in=late, version=challenge.active_version_id)
    assert sorted(s.score for s in scores) == [1.0, 10.0]
    assert [r["score"] for r in response.json()] == [10.0, 1.0]

    # ...never ranked: the board is still the one attempt made in the window.
    def board() -> list[tuple[str, float]]:
        rows = anon_api.get(leaderboard_url(challenge.pk)).json()["results"]
        return [(r["player"], r["score"]) for r in rows]

    assert board() == [("ranked", 5000.0)]
    export = anon_api.get(page_url(challenge.slug, "export-json"))
    exported = json.loads(b"".join(export.streaming_content))["results"]
    assert [(r["player"], r["score"]) for r in exported] == [("ranked", 5000.0)]
    # A rescore rebuilds the entries from the scores alone: practice stays out.
    assert staff_api.post(rescore_url(challenge.pk)).status_code == 202
    challenge.refresh_from_db()
    assert board() == [("ranked", 5000.0)]
    assert LeaderboardEntry.objects.filter(version=challenge.active_version).count() == 1


def test_practice_through_the_service_too(challenge):
    """One rule for every entry point: the service itself refuses or marks practice."""
    _window(challenge, opens_at=timezone.now() + HOUR)
    with pytest.raises(admission.ScheduleClosed):
        services.attempts_record(challenge=challenge, inputs=[attempt_input("x")])
    _window(challenge, late_attempts="practice")
    services.attempts_record(challenge=challenge, inputs=[attempt_input("x")])
    assert Attempt.objects.get().practice is True


def test_api_sets_and_shows_the_schedule(challenge, admin_api, anon_api):
    opens, closes = "2030-01-01T00:00:00Z", "2030-02-01T00:00:00Z"
    response = admin_api.patch(
        detail_url(challenge.pk),
        {"opens_at": opens, "closes_at": closes, "late_attempts": "practice"},
        format="json",
    )
    assert response.status_code == 200, response.content
    body = anon_api.get(detail_url(challenge.pk)).json()
    assert body["opens_at"].startswith("2030-01-01T00:00:00")
    assert body["late_attempts"] == "practice"
    assert body["schedule_status"] == "upcoming"
    admin_api.patch(detail_url(challenge.pk), {"opens_at": None, "closes_at": None}, format="json")
    assert anon_api.get(detail_url(challenge.pk)).json()["schedule_status"] == "open"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"opens_at": "2030-02-01T00:00:00Z", "closes_at": "2030-01-01T00:00:00Z"}, "closes_at"),
        ({"opens_at": "2030-01-01T00:00:00Z", "closes_at": "2030-01-01T00:00:00Z"}, "closes_at"),
        ({"late_attempts": "sometimes"}, "late_attempts"),
        ({"opens_at": "yesterday"}, "opens_at"),
    ],
)
def test_bad_schedule_is_a_400_naming_the_field(challenge, admin_api, body, field):
    before = Challenge.objects.values().get(pk=challenge.pk)
    response = admin_api.patch(detail_url(challenge.pk), body, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert Challenge.objects.values().get(pk=challenge.pk) == before


def test_bad_window_on_create_writes_nothing(admin_api):
    response = admin_api.post(
        challenges_url(),
        {"name": "W", "opens_at": "2030-02-01T00:00:00Z", "closes_at": "2030-01-01T00:00:00Z"},
        format="json",
    )
    assert response.status_code == 400 and "closes_at" in response.json()
    assert not Challenge.objects.exists()


# --- the banner on the cards and the challenge page -------------------------------------
def test_duration_words():
    from challenges.boards.schedule import duration_words

    assert duration_words(30) == "less than a minute"
    assert duration_words(5 * 60 + 7) == "5 minutes"
    assert duration_words(2 * 86400 + 3 * 3600 + 60) == "2 days 3 hours"
    assert duration_words(86400 + 5 * 60) == "1 day"
    assert duration_words(3600 + 60) == "1 hour 1 minute"


@pytest.mark.parametrize(
    ("opens", "closes", "late", "phase", "words"),
    [
        (3, None, "refuse", "upcoming", "Opens in 3 hours"),
        (-1, 50, "refuse", "open", "Open · closes in 2 days 2 hours"),
        (-3, -2, "practice", "ended", "Ended 2 hours ago"),
    ],
)
def test_banner_on_cards_and_page(client, challenge, opens, closes, late, phase, words):
    now = timezone.now().replace(second=0, microsecond=0)
    _window(
        challenge,
        opens_at=now + opens * HOUR,
        closes_at=now + closes * HOUR if closes is not None else None,
        late_attempts=late,
    )
    for url in (reverse("challenges:list"), page_url(challenge.slug)):
        html = client.get(url).content.decode()
        assert f'data-phase="{phase}"' in html, url
        assert words in html, url
    if late == "practice":
        assert "practice" in client.get(page_url(challenge.slug)).content.decode()


def test_no_banner_without_a_schedule(client, challenge):
    assert "data-phase" not in client.get(page_url(challenge.slug)).content.decode()
