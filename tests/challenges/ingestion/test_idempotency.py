"""Issue 13, finding 6: Idempotency-Key on attempts POSTs (docs/api.md):
a retry returns the first response and writes nothing; another body → 409."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from challenges.models import Attempt, AttemptScore, IdempotencyRecord, Player
from challenges.tasks import idempotency_purge
from tests.factories import make_challenge
from tests.urls import attempts_url

pytestmark = pytest.mark.django_db
ONE = {"player": "u1", "succeeded": True, "tokens_total": 10}
MANY = [ONE, {"player": "u2", "succeeded": True, "tokens_total": 20, "player_name": "Two"}]


def post(api, challenge, body, key=None):
    headers = {} if key is None else {"HTTP_IDEMPOTENCY_KEY": key}
    return api.post(attempts_url(challenge.pk), body, format="json", **headers)


def counts():
    return (Attempt.objects.count(), AttemptScore.objects.count(), Player.objects.count())


@pytest.mark.parametrize("body", [ONE, MANY], ids=["single", "bulk"])
def test_a_retry_with_the_same_key_returns_the_first_response_and_writes_nothing(
    integration_api, body
):
    challenge = make_challenge(scoring_strategy="fewest_tokens")
    first = post(integration_api, challenge, body, key="k-1")
    assert first.status_code == 201, first.content
    after_first = counts()
    again = post(integration_api, challenge, body, key="k-1")
    assert again.status_code == 201
    assert again.json() == first.json()  # same ids, scores, everything
    assert again["Idempotent-Replayed"] == "true"
    assert counts() == after_first
    # Without a key, the same body is a new attempt (the key is the opt-in).
    assert post(integration_api, challenge, body).status_code == 201
    assert counts()[0] == after_first[0] * 2


def test_the_same_key_with_another_body_is_409_and_writes_nothing(integration_api):
    challenge = make_challenge()
    assert post(integration_api, challenge, ONE, key="k").status_code == 201
    before = counts()
    other = post(integration_api, challenge, {**ONE, "tokens_total": 11}, key="k")
    assert other.status_code == 409
    assert "Idempotency-Key" in other.json()
    assert counts() == before


def test_keys_are_per_challenge_and_per_user(integration_api, admin_api):
    one, two = make_challenge(), make_challenge()
    assert post(integration_api, one, ONE, key="k").status_code == 201
    assert post(integration_api, two, ONE, key="k").status_code == 201
    assert post(admin_api, one, ONE, key="k").status_code == 201
    assert Attempt.objects.count() == 3


def test_a_failed_request_keeps_no_key(integration_api):
    challenge = make_challenge()
    bad = post(integration_api, challenge, {"player": "u1", "succeeded": "maybe"}, key="k")
    assert bad.status_code == 400
    assert not IdempotencyRecord.objects.exists()
    assert post(integration_api, challenge, ONE, key="k").status_code == 201


@pytest.mark.parametrize("key", ["", "x" * 201, "tab\\there".replace("\\t", "\t")])
def test_an_unusable_key_is_400_naming_the_header(integration_api, key):
    response = post(integration_api, make_challenge(), ONE, key=key)
    assert response.status_code == 400
    assert "Idempotency-Key" in response.json()
    assert not Attempt.objects.exists()


def test_keys_are_kept_24_hours_at_least_then_purged(integration_api, settings):
    assert settings.PODIUM_IDEMPOTENCY_KEEP_H >= 24
    challenge = make_challenge()
    assert post(integration_api, challenge, ONE, key="k").status_code == 201
    IdempotencyRecord.objects.update(created_at=timezone.now() - timedelta(hours=23, minutes=59))
    idempotency_purge.delay()
    assert post(integration_api, challenge, ONE, key="k")["Idempotent-Replayed"] == "true"
    IdempotencyRecord.objects.update(
        created_at=timezone.now() - timedelta(hours=settings.PODIUM_IDEMPOTENCY_KEEP_H, seconds=1)
    )
    idempotency_purge.delay()
    assert not IdempotencyRecord.objects.exists()


def test_the_schema_documents_the_header_and_the_409(anon_api):
    schema = anon_api.get(reverse("schema"), {"format": "json"}).json()
    operation = schema["paths"]["/api/challenges/{id}/attempts/"]["post"]
    assert any(
        p["name"] == "Idempotency-Key" and p["in"] == "header" for p in operation["parameters"]
    )
    assert "Idempotency-Key" in operation["responses"]["409"]["description"]
    assert "Retry-After" in operation["responses"]["503"]["headers"]


@pytest.mark.django_db(transaction=True)
def test_two_requests_racing_with_one_key_write_once(integration):
    """PostgreSQL: both pass the lookup, the second waits on the key's unique index and
    then replays the first."""
    if connection.vendor != "postgresql":
        pytest.skip("concurrent sessions: PostgreSQL")
    from rest_framework.test import APIClient

    from tests.challenges.rescoring._threads import Session

    challenge = make_challenge()
    start = threading.Barrier(2)

    def one_request():
        client = APIClient()
        client.force_authenticate(integration)
        start.wait(10)
        return post(client, challenge, MANY, key="race")

    sessions = [Session(one_request) for _ in range(2)]
    for s in sessions:
        s.start()
    responses = [s.outcome() for s in sessions]
    assert [r.status_code for r in responses] == [201, 201]
    assert responses[0].json() == responses[1].json()
    assert Attempt.objects.count() == 2
