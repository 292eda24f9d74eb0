"""The webhooks' admin: adding an endpoint shows its secret once, the delivery log reads
and redelivers, a disabled endpoint shows why and is enabled again; admins only."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.db import transaction
from django.urls import reverse

from challenges import tasks
from challenges.events import log, outbound, webhook_delivery
from challenges.models import WebhookDelivery, WebhookEndpoint
from tests.factories import make_challenge

pytestmark = pytest.mark.django_db

ADD = "admin:challenges_webhookendpoint_add"
ENDPOINTS = "admin:challenges_webhookendpoint_changelist"
DELIVERIES = "admin:challenges_webhookdelivery_changelist"


def test_adding_an_endpoint_shows_its_secret_once(admin_client):
    challenge = make_challenge()
    response = admin_client.post(
        reverse(ADD),
        {
            "challenge": challenge.pk,
            "url": "https://hooks.example.com/x",
            "events": ["record.beaten", "board.changed"],
            "description": "chat",
        },
        follow=True,
    )
    assert response.status_code == 200
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.events == ["board.changed", "record.beaten"]
    shown = [str(m) for m in get_messages(response.wsgi_request)]
    assert any(endpoint.secret in m for m in shown), shown
    change = admin_client.get(
        reverse("admin:challenges_webhookendpoint_change", args=[endpoint.pk])
    )
    assert change.status_code == 200
    assert endpoint.secret not in change.content.decode()


def test_a_bad_url_is_a_form_error(admin_client):
    challenge = make_challenge()
    for url in ("ftp://example.com/x", "javascript:alert(1)"):
        response = admin_client.post(reverse(ADD), {"challenge": challenge.pk, "url": url})
        assert response.status_code == 200  # the form again, with its error
        assert "url" in response.context["adminform"].form.errors
    assert not WebhookEndpoint.objects.exists()


def test_staff_do_not_see_webhooks(staff_client):
    assert staff_client.get(reverse(ENDPOINTS)).status_code == 403
    assert staff_client.get(reverse(DELIVERIES)).status_code == 403


def test_the_delivery_log_and_redeliver(
    admin_client, django_capture_on_commit_callbacks, monkeypatch
):
    challenge = make_challenge()
    endpoint = webhook_delivery.endpoint_create(
        challenge=challenge, url="https://hooks.example.com/"
    )
    with transaction.atomic():
        log.live_locked(challenge=challenge)
        event = log.event_write(challenge=challenge, type="board.changed", data={"top": []})
    [delivery_id] = webhook_delivery.deliveries_create(event_ids=[event.pk])

    def fails(url, **kwargs):
        return outbound.Answer(502, "bad gateway", "", 12.5)

    webhook_delivery.delivery_try(delivery_id=delivery_id, post=fails)
    page = admin_client.get(reverse(DELIVERIES)).content.decode()
    assert "board.changed" in page and "502" in page
    detail = admin_client.get(
        reverse("admin:challenges_webhookdelivery_change", args=[delivery_id])
    ).content.decode()
    assert "bad gateway" in detail
    sent = []
    monkeypatch.setattr(tasks.webhook_deliver, "delay", lambda pk: sent.append(pk))
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(
            reverse(DELIVERIES),
            {"action": "redeliver_selected", "_selected_action": [delivery_id]},
        )
    assert sent == [delivery_id]
    delivery = WebhookDelivery.objects.get(pk=delivery_id)
    assert delivery.status == "pending" and delivery.tries_left == webhook_delivery.TRIES
    # A disabled endpoint shows why, and is enabled again by the action.
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
        is_active=False, disabled_reason="100 deliveries in a row failed"
    )
    assert "100 deliveries in a row failed" in admin_client.get(reverse(ENDPOINTS)).content.decode()
    admin_client.post(
        reverse(ENDPOINTS), {"action": "enable_selected", "_selected_action": [endpoint.pk]}
    )
    assert WebhookEndpoint.objects.get(pk=endpoint.pk).is_active
