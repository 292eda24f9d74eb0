"""What "updated" and "last activity" say (issue 28, finding 13): when the newest
attempt the public may see was recorded, by the server's clock. A hidden player's
attempt, a hidden attempt or a practice attempt is no public activity, and a client's
chosen created_at (2100) is not "in the future"."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from challenges.models import Attempt, PlayerHide
from tests.factories import WEIGHTED_SEED, attempt_input, make_challenge, record
from tests.urls import page_url

pytestmark = pytest.mark.django_db

LONG_AGO = timezone.now() - timedelta(days=3)


@pytest.fixture
def challenge():
    challenge = make_challenge(**WEIGHTED_SEED)
    record(challenge, attempt_input("ada", created_at=LONG_AGO))
    Attempt.objects.filter(challenge=challenge).update(recorded_at=LONG_AGO)
    return challenge


def card(client, challenge):
    html = client.get(reverse("challenges:list")).content.decode()
    return html.split(f'href="/challenges/{challenge.slug}/"')[1][:3000]


def test_a_hidden_players_attempt_is_no_activity(client, challenge):
    record(challenge, attempt_input("cheater", created_at=timezone.now()))
    player = Attempt.objects.filter(player__external_id="cheater").first().player
    PlayerHide.objects.create(player=player, challenge=challenge, reason="test")
    assert "3 days ago" in card(client, challenge)
    assert f'datetime="{LONG_AGO.isoformat()}"' in client.get(page_url(challenge.slug)).text


def test_hidden_and_practice_attempts_are_no_activity(client, challenge):
    now = timezone.now()
    record(challenge, attempt_input("bob", created_at=now), attempt_input("cy", created_at=now))
    Attempt.objects.filter(player__external_id="bob").update(hidden=True)
    Attempt.objects.filter(player__external_id="cy").update(practice=True)
    assert "3 days ago" in card(client, challenge)
    assert f'datetime="{LONG_AGO.isoformat()}"' in client.get(page_url(challenge.slug)).text


def test_a_chosen_created_at_in_2100_is_not_in_the_future(client, challenge):
    record(challenge, attempt_input("zed", created_at=datetime(2100, 1, 1, tzinfo=UTC)))
    shown = card(client, challenge)
    assert "in the future" not in shown and "just now" in shown
