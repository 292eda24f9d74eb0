"""Secrets of a red/blue challenge never reach its public history (page and API, the
version pages) nor its events (the log the live stream and webhooks serve): not the
defence prompts, the judge's feedback or ``raw``, a pairing scorer's error, and not the
attack prompts either, before the close or after it, revealed or not (revealed attacks
are shown on the challenge page alone)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from challenges.events import hub as events_hub
from challenges.events import log, moments
from challenges.models import Event, HistoryRecord, Pairing
from challenges.setup import services as setup_services
from scoring.project_registry import registry
from tests.challenges.redblue.factories import judge, make_red_blue, submit
from tests.urls import page_url

pytestmark = pytest.mark.django_db

SECRETS = ("SECRET-ATTACK", "SECRET-DEFENCE", "SECRET-FEEDBACK", "SECRET-RAW", "SECRET-ERROR")


def public_history_and_events(c, anon_api, client) -> list[str]:
    c.refresh_from_db()
    versions = c.versions.values_list("number", flat=True)
    outputs = [
        anon_api.get(f"/api/challenges/{c.pk}/history/").content.decode(),
        client.get(page_url(c.slug, "history")).content.decode(),
        *(client.get(f"/challenges/{c.slug}/versions/{n}/").content.decode() for n in versions),
    ]
    for event in Event.objects.filter(challenge=c):
        outputs.append(str(log.event_json(event)))
        outputs.append(events_hub.frame(event, c.slug).decode())  # what a stream sends
    return outputs


def test_secrets_stay_out_of_the_history_and_the_events(
    anon_api, client, django_capture_on_commit_callbacks
):
    now = timezone.now()
    c = make_red_blue(
        reveal_attacks_after_close=True,
        opens_at=now - timedelta(hours=2),
        closes_at=now + timedelta(hours=1),
    )
    submit(c, "r1", "red", "SECRET-ATTACK-1")
    first = submit(c, "b1", "blue", "SECRET-DEFENCE-1").pairings[0]
    judge(first, breached=["SA"], rating=7, feedback="SECRET-FEEDBACK", raw={"x": "SECRET-RAW"})
    moments.schedule_tick(now=now)  # the schedule so far
    with django_capture_on_commit_callbacks(execute=True):  # a rescore: history + event
        setup_services.challenge_update(challenge=c, data={"severity_divisor": 7})
    with registry().temporarily("t.leaky", "tests.plugins:PairingLeaky"):
        second = submit(c, "r2", "red", "SECRET-ATTACK-2").pairings[0]
        judge(second, breached=["V"], rating=2, feedback="SECRET-FEEDBACK-2")
        with django_capture_on_commit_callbacks(execute=True):
            setup_services.challenge_update(
                challenge=c, data={"red_blue_scoring": "custom", "red_blue_plugin_id": "t.leaky"}
            )
    assert "SECRET-ERROR" in Pairing.objects.get(pk=second.pk).points_error  # admins'
    before_close = public_history_and_events(c, anon_api, client)
    # Closed (and revealing attacks on the page): still nothing in the history or events.
    closed_at = timezone.now() - timedelta(seconds=1)
    with django_capture_on_commit_callbacks(execute=True):
        setup_services.challenge_update(challenge=c, data={"closes_at": closed_at})
    moments.schedule_tick(now=timezone.now())  # challenge.closed
    assert "SECRET-ATTACK-1" in client.get(page_url(c.slug)).content.decode()  # the page's
    after_close = public_history_and_events(c, anon_api, client)

    kinds = set(Event.objects.filter(challenge=c).values_list("type", flat=True))
    assert {"challenge.closed", "rescore.finished"} <= kinds
    assert HistoryRecord.objects.filter(challenge=c).count() == 2
    for text in (*before_close, *after_close):
        for secret in SECRETS:
            assert secret not in text
