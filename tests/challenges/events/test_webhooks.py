"""Webhooks from real flows (docs/events.md): an endpoint added through the API gets
the challenge's events, signed per Standard Webhooks (verified with the reference
library, ``standardwebhooks``); tries with backoff, the give-up, redelivery, disabling
after 100 failures in a row, and the refusals of URLs that are not public."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from standardwebhooks import Webhook

from challenges.events import log, outbound, webhook_delivery
from challenges.models import Event, WebhookDelivery, WebhookEndpoint
from tests.factories import SEED_ATTEMPT, make_challenge
from tests.urls import attempts_url

from . import receiver as local

pytestmark = pytest.mark.django_db


@pytest.fixture
def hook(settings):
    settings.PODIUM_WEBHOOK_ALLOW_PRIVATE = True  # the receiver is on 127.0.0.1
    receiver, server = local.start()
    yield receiver
    server.shutdown()
    server.server_close()


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    def run(call, *args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return call(*args, **kwargs)

    return run


def webhooks_url(challenge) -> str:
    return reverse("webhook-list", args=[challenge.pk])


def deliveries_url(endpoint) -> str:
    return reverse("webhook-deliveries", args=[endpoint.challenge_id, endpoint.pk])


def redeliver_url(delivery) -> str:
    endpoint = delivery.endpoint
    return reverse("webhook-redeliver", args=[endpoint.challenge_id, endpoint.pk, delivery.pk])


def add(admin_api, challenge, url, **body):
    response = admin_api.post(webhooks_url(challenge), {"url": url, **body}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def record(committed, api, challenge, player, ms):
    body = {**SEED_ATTEMPT, "player": player, "elapsed_ms": ms}
    response = committed(api.post, attempts_url(challenge.pk), body, format="json")
    assert response.status_code == 201, response.content


def verified(secret: str, request) -> dict:
    """The reference library's verification (it raises on a bad signature)."""
    return Webhook(secret).verify(request.body, request.headers)


# --- the API --------------------------------------------------------------------------------
def test_the_secret_is_shown_once(admin_api):
    challenge = make_challenge()
    created = add(admin_api, challenge, "https://hooks.example.com/podium", description="chat")
    assert created["secret"].startswith("whsec_")
    assert created["events"] == [] and created["is_active"] is True
    listed = admin_api.get(webhooks_url(challenge)).json()
    assert [e["id"] for e in listed] == [created["id"]]
    assert "secret" not in listed[0]
    assert created["secret"] not in json.dumps(listed)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "ftp://example.com/x"}, "url"),
        ({"url": "not a url"}, "url"),
        ({"url": "javascript:alert(1)"}, "url"),
        ({}, "url"),
        ({"url": "https://example.com", "events": ["attempt.first_blood", "nope"]}, "events"),
        ({"url": "https://example.com", "events": "board.changed"}, "events"),
        ({"url": "https://example.com", "description": 5}, "description"),
        ({"url": "https://example.com", "secret": "whsec_mine"}, "secret"),
        ({"url": "https://example.com/" + "a" * 2000}, "url"),
    ],
)
def test_bad_endpoints_are_a_400_naming_the_field(admin_api, body, field):
    challenge = make_challenge()
    response = admin_api.post(webhooks_url(challenge), body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ('{"url": "https://x.example", "description": "a\\u0000b"}', "description"),
        ('{"url": "https://x.example/\\ud800"}', "url"),
        ('{"url": "https://x.example", "events": ["board.changed\\u0000"]}', "events"),
        ("[1, 2]", "non_field_errors"),
    ],
)
def test_hostile_text_is_a_400_naming_the_field(admin_api, raw, field):
    challenge = make_challenge()
    response = admin_api.post(webhooks_url(challenge), raw, content_type="application/json")
    assert response.status_code == 400, response.content
    assert field in response.json()
    assert not WebhookEndpoint.objects.exists()


def test_only_admins_manage_webhooks(anon_api, staff_api, integration_api):
    challenge = make_challenge()
    for api in (anon_api, staff_api, integration_api):
        assert api.post(webhooks_url(challenge), {"url": "https://x.example"}).status_code in (
            401,
            403,
        )
        assert api.get(webhooks_url(challenge)).status_code in (401, 403)


def test_unknown_ids_are_404(admin_api):
    challenge = make_challenge()
    assert admin_api.get("/api/challenges/999999/webhooks/").status_code == 404
    assert admin_api.get(f"/api/challenges/{'9' * 30}/webhooks/").status_code == 404
    assert (
        admin_api.get(f"/api/challenges/{challenge.pk}/webhooks/77/deliveries/").status_code == 404
    )
    other = make_challenge()
    endpoint = add(admin_api, other, "https://x.example")
    # An endpoint of another challenge is not found under this one.
    url = f"/api/challenges/{challenge.pk}/webhooks/{endpoint['id']}/deliveries/"
    assert admin_api.get(url).status_code == 404


# --- deliveries from real flows ------------------------------------------------------------
def test_events_are_delivered_signed(hook, committed, admin_api, integration_api):
    challenge = make_challenge(scoring_strategy="fastest")
    created = add(admin_api, challenge, hook.url)
    record(committed, integration_api, challenge, "ada", 500)
    assert len(hook.requests) == 2
    sent = list(Event.objects.filter(challenge=challenge).order_by("pk"))
    for request, event in zip(hook.requests, sent, strict=True):
        payload = verified(created["secret"], request)
        assert payload == log.event_json(event)
        assert request.headers["webhook-id"] == f"evt_{event.pk}"
        assert request.headers["content-type"] == "application/json"
    assert [json.loads(r.body)["type"] for r in hook.requests] == [
        "attempt.first_blood",
        "board.changed",
    ]
    first = json.loads(hook.requests[0].body)
    assert first["challenge"] == {"id": challenge.pk, "slug": challenge.slug}
    # A tampered body or another secret fails the reference verification.
    with pytest.raises(Exception):  # noqa: B017 - the library's own error type
        Webhook(created["secret"]).verify(hook.requests[0].body + b" ", hook.requests[0].headers)
    other = add(admin_api, challenge, hook.url)["secret"]
    with pytest.raises(Exception):  # noqa: B017
        Webhook(other).verify(hook.requests[0].body, hook.requests[0].headers)
    log_rows = admin_api.get(deliveries_url(WebhookEndpoint.objects.get(pk=created["id"])))
    rows = log_rows.json()
    assert {r["status"] for r in rows} == {"succeeded"}
    assert all(r["attempts"] == 1 and r["status_codes"] == [200] for r in rows)
    assert rows[0]["response_excerpt"] == "answer 200"


def test_an_endpoint_gets_only_the_types_it_wants(hook, committed, admin_api, integration_api):
    challenge = make_challenge(scoring_strategy="fastest")
    add(admin_api, challenge, hook.url, events=["record.beaten"])
    record(committed, integration_api, challenge, "ada", 500)
    record(committed, integration_api, challenge, "bob", 100)
    assert [json.loads(r.body)["type"] for r in hook.requests] == ["record.beaten"]


def test_another_challenges_events_are_not_sent(hook, committed, admin_api, integration_api):
    mine, other = make_challenge(scoring_strategy="fastest"), make_challenge()
    add(admin_api, other, hook.url)
    record(committed, integration_api, mine, "ada", 500)
    assert hook.requests == []


# --- tries ----------------------------------------------------------------------------------
def _one_delivery(hook, admin_api, *, plan=()):
    challenge = make_challenge()
    created = add(admin_api, challenge, hook.url)
    with_lock = log.event_write  # written as the board does, under the row lock
    from django.db import transaction

    with transaction.atomic():
        log.live_locked(challenge=challenge)
        event = with_lock(challenge=challenge, type="board.changed", data={"top": []})
    hook.plan = list(plan)
    [delivery_id] = webhook_delivery.deliveries_create(event_ids=[event.pk])
    return created, delivery_id


def test_a_failed_try_is_retried_with_the_same_id_then_never_again(hook, admin_api):
    created, delivery_id = _one_delivery(hook, admin_api, plan=[500, 503])
    now = timezone.now()
    first = webhook_delivery.delivery_try(delivery_id=delivery_id, now=now)
    assert first is not None and first < 60  # the first retry within a minute
    # Not due yet: nothing sent.
    assert webhook_delivery.delivery_try(delivery_id=delivery_id, now=now) is None
    assert len(hook.requests) == 1
    second = webhook_delivery.delivery_try(
        delivery_id=delivery_id, now=now + timedelta(seconds=first + 1)
    )
    assert second is not None and second > first
    later = now + timedelta(seconds=first + second + 2)
    assert webhook_delivery.delivery_try(delivery_id=delivery_id, now=later) is None  # a 200
    assert len(hook.requests) == 3
    assert len({r.headers["webhook-id"] for r in hook.requests}) == 1
    for request in hook.requests:
        verified(created["secret"], request)
    # Succeeded: never sent again, however often it is asked.
    for hours in (1, 10, 100):
        webhook_delivery.delivery_try(delivery_id=delivery_id, now=later + timedelta(hours=hours))
    assert len(hook.requests) == 3
    delivery = WebhookDelivery.objects.get(pk=delivery_id)
    assert delivery.status == "succeeded" and delivery.tries == 3
    assert [t["status_code"] for t in delivery.log] == [500, 503, 200]


def test_the_retry_schedule_spans_half_an_hour_in_six_tries_or_more():
    assert webhook_delivery.TRIES >= 6
    assert webhook_delivery.RETRY_AFTER_S[0] < 60
    assert sum(webhook_delivery.RETRY_AFTER_S[: webhook_delivery.TRIES - 1]) >= 30 * 60
    assert list(webhook_delivery.RETRY_AFTER_S) == sorted(
        webhook_delivery.RETRY_AFTER_S
    )  # exponential-ish


def test_a_delivery_gives_up_after_its_last_try(hook, admin_api):
    created, delivery_id = _one_delivery(hook, admin_api, plan=[500] * 50)
    moment = timezone.now()
    waited = 0.0
    while True:
        retry_in = webhook_delivery.delivery_try(delivery_id=delivery_id, now=moment)
        if retry_in is None:
            break
        waited += retry_in
        moment += timedelta(seconds=retry_in + 1)  # counted from the end of the try
    delivery = WebhookDelivery.objects.get(pk=delivery_id)
    assert delivery.status == "failed" and delivery.tries == webhook_delivery.TRIES
    assert len(hook.requests) == webhook_delivery.TRIES
    assert waited >= 30 * 60 * 0.9  # the jitter may shorten each wait by a tenth
    assert WebhookEndpoint.objects.get(pk=created["id"]).failures_in_row == 1


def test_a_timeout_is_a_failed_try(hook, admin_api, monkeypatch):
    monkeypatch.setattr(webhook_delivery, "TIMEOUT_S", 0.2)
    hook.delay_s = 1.0
    _, delivery_id = _one_delivery(hook, admin_api)
    assert webhook_delivery.delivery_try(delivery_id=delivery_id) is not None
    delivery = WebhookDelivery.objects.get(pk=delivery_id)
    assert delivery.status == "pending" and delivery.last_status_code is None
    assert "No answer within 0.2 s" in delivery.last_error
    assert delivery.duration_ms < 900


def test_a_try_under_way_is_not_made_twice_and_a_dead_one_resumes(hook, admin_api):
    _, delivery_id = _one_delivery(hook, admin_api)
    now = timezone.now()
    # A worker claimed it and died mid-try.
    WebhookDelivery.objects.filter(pk=delivery_id).update(
        claimed_until=now + timedelta(seconds=webhook_delivery.CLAIM_S)
    )
    assert webhook_delivery.delivery_try(delivery_id=delivery_id, now=now) is None
    assert delivery_id not in webhook_delivery.deliveries_due(now=now)
    later = now + timedelta(seconds=webhook_delivery.CLAIM_S + 1)
    assert delivery_id in webhook_delivery.deliveries_due(now=later)
    webhook_delivery.delivery_try(delivery_id=delivery_id, now=later)
    assert WebhookDelivery.objects.get(pk=delivery_id).status == "succeeded"


def test_redeliver_sends_it_again(hook, committed, admin_api):
    created, delivery_id = _one_delivery(hook, admin_api)
    webhook_delivery.delivery_try(delivery_id=delivery_id)
    delivery = WebhookDelivery.objects.select_related("endpoint").get(pk=delivery_id)
    response = committed(admin_api.post, redeliver_url(delivery))
    assert response.status_code == 202, response.content
    assert len(hook.requests) == 2
    assert hook.requests[0].headers["webhook-id"] == hook.requests[1].headers["webhook-id"]
    verified(created["secret"], hook.requests[1])
    row = admin_api.get(deliveries_url(delivery.endpoint)).json()[0]
    assert row["attempts"] == 2 and row["status_codes"] == [200, 200]
    # Unknown delivery ids are 404.
    bad = reverse("webhook-redeliver", args=[delivery.endpoint.challenge_id, created["id"], 999])
    assert admin_api.post(bad).status_code == 404


def test_an_endpoint_failing_100_deliveries_in_a_row_is_disabled(hook, admin_api):
    created, delivery_id = _one_delivery(hook, admin_api, plan=[500] * 20)
    WebhookEndpoint.objects.filter(pk=created["id"]).update(failures_in_row=99)
    WebhookDelivery.objects.filter(pk=delivery_id).update(tries_left=1)
    webhook_delivery.delivery_try(delivery_id=delivery_id)
    endpoint = WebhookEndpoint.objects.get(pk=created["id"])
    assert not endpoint.is_active
    assert "100 deliveries in a row failed" in endpoint.disabled_reason
    assert "HTTP 500" in endpoint.disabled_reason
    listed = admin_api.get(webhooks_url(endpoint.challenge)).json()
    assert listed[0]["disabled_reason"] == endpoint.disabled_reason
    # No more deliveries are made for it; a redeliver is refused until it is enabled.
    delivery = WebhookDelivery.objects.select_related("endpoint").get(pk=delivery_id)
    assert admin_api.post(redeliver_url(delivery)).status_code == 409
    with_lock = log.event_write
    from django.db import transaction

    with transaction.atomic():
        log.live_locked(challenge=endpoint.challenge)
        event = with_lock(challenge=endpoint.challenge, type="board.changed", data={})
    assert webhook_delivery.deliveries_create(event_ids=[event.pk]) == []
    webhook_delivery.endpoint_enable(endpoint=endpoint)
    endpoint.refresh_from_db()
    assert endpoint.is_active and endpoint.failures_in_row == 0


def test_a_success_resets_the_count_of_failures(hook, admin_api):
    created, delivery_id = _one_delivery(hook, admin_api)
    WebhookEndpoint.objects.filter(pk=created["id"]).update(failures_in_row=42)
    webhook_delivery.delivery_try(delivery_id=delivery_id)
    assert WebhookEndpoint.objects.get(pk=created["id"]).failures_in_row == 0


def test_fan_out_is_idempotent(hook, admin_api):
    _, delivery_id = _one_delivery(hook, admin_api)
    event_id = WebhookDelivery.objects.get(pk=delivery_id).event_id
    assert webhook_delivery.deliveries_create(event_ids=[event_id]) == []
    assert WebhookDelivery.objects.count() == 1


def test_the_tick_makes_what_a_broker_outage_lost(
    hook, committed, admin_api, integration_api, monkeypatch
):
    from challenges import tasks

    challenge = make_challenge(scoring_strategy="fastest")
    add(admin_api, challenge, hook.url)

    def away(*args, **kwargs):
        raise ConnectionError("broker away")

    monkeypatch.setattr(tasks.webhooks_fan_out, "delay", away)
    record(committed, integration_api, challenge, "ada", 500)
    assert hook.requests == [] and Event.objects.filter(fanned_out=False).count() == 2
    monkeypatch.undo()
    Event.objects.update(occurred_at=timezone.now() - timedelta(seconds=10))
    committed(tasks.events_tick)
    assert len(hook.requests) == 2


# --- refusals of URLs that are not public --------------------------------------------------
@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/x",
        "http://localhost:8000/x",
        "http://10.1.2.3/x",
        "http://192.168.0.1/x",
        "http://172.16.5.4/x",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/x",
        "http://[fe80::1]/x",
        "http://[::ffff:127.0.0.1]/x",
        "http://0.0.0.0/x",
        "http://100.64.0.1/x",
        "http://224.0.0.1/x",
    ],
)
def test_addresses_that_are_not_public_are_refused(url):
    with pytest.raises(outbound.Refused, match="not public"):
        outbound.resolve(url, allow_private=False)
    answer = outbound.post(url, body=b"{}", headers={}, timeout=1, allow_private=False)
    assert answer.status_code is None and "not public" in answer.error


def test_a_name_is_checked_after_it_resolves(monkeypatch):
    # A public-looking name that resolves to a private address (DNS rebinding, a
    # wildcard record): refused by the address, not the name.
    def resolves_private(host, port, *args, **kwargs):
        return [(2, 1, 6, "", ("10.0.0.7", port))]

    monkeypatch.setattr(outbound.socket, "getaddrinfo", resolves_private)
    with pytest.raises(outbound.Refused, match=r"10\.0\.0\.7"):
        outbound.resolve("https://hooks.example.com/x", allow_private=False)
    assert outbound.resolve("https://hooks.example.com/x", allow_private=True)[3] == "10.0.0.7"


def test_public_addresses_pass(monkeypatch):
    monkeypatch.setattr(
        outbound.socket,
        "getaddrinfo",
        lambda host, port, *a, **k: [(2, 1, 6, "", ("93.184.215.14", port))],
    )
    assert outbound.resolve("https://example.com/x", allow_private=False) == (
        "https",
        "example.com",
        443,
        "93.184.215.14",
    )


@pytest.mark.parametrize("url", ["ftp://example.com/", "file:///etc/passwd", "gopher://x/"])
def test_only_http_and_https(url):
    with pytest.raises(outbound.Refused, match="Only http and https"):
        outbound.resolve(url, allow_private=True)


def test_a_private_endpoint_fails_its_delivery_by_default(hook, admin_api, settings):
    _, delivery_id = _one_delivery(hook, admin_api)
    settings.PODIUM_WEBHOOK_ALLOW_PRIVATE = False
    webhook_delivery.delivery_try(delivery_id=delivery_id)
    delivery = WebhookDelivery.objects.get(pk=delivery_id)
    assert hook.requests == []
    assert "not public" in delivery.last_error and delivery.status == "pending"


def test_events_without_endpoints_need_no_task(committed, integration_api, monkeypatch):
    from challenges import tasks

    sent = []
    monkeypatch.setattr(tasks.webhooks_fan_out, "delay", lambda ids: sent.append(ids))
    challenge = make_challenge(scoring_strategy="fastest")
    record(committed, integration_api, challenge, "ada", 500)
    assert sent == []
    assert not Event.objects.filter(fanned_out=False).exists()
