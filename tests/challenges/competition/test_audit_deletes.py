"""Deletes and renames leave an audit event (issue 28, finding 13): a challenge deleted
through the API or the admin, attempts deleted in the admin, a player renamed in the
admin. The events outlive what they name."""

from __future__ import annotations

import pytest

from challenges.models import Attempt, AuditEvent, Challenge, Player
from tests.factories import WEIGHTED_SEED, attempt_input, make_challenge, record
from tests.urls import admin_url, detail_url

pytestmark = pytest.mark.django_db


def test_an_api_challenge_delete_is_audited(admin_api, admin):
    challenge = make_challenge(**WEIGHTED_SEED)
    record(challenge, attempt_input("a"), attempt_input("b"))
    assert admin_api.delete(detail_url(challenge.pk)).status_code == 204
    assert not Challenge.objects.filter(pk=challenge.pk).exists()
    event = AuditEvent.objects.get(kind="challenge_delete")
    assert (event.challenge_id, event.via, event.actor_id) == (challenge.pk, "api", admin.pk)
    assert event.before["name"] == challenge.name and event.before["attempts"] == 2


def test_an_admin_challenge_delete_is_audited(admin_client):
    challenge = make_challenge(**WEIGHTED_SEED)
    response = admin_client.post(admin_url("challenge", "delete", challenge.pk), {"post": "yes"})
    assert response.status_code == 302
    event = AuditEvent.objects.get(kind="challenge_delete")
    assert (event.challenge_id, event.via) == (challenge.pk, "admin")


def test_admin_attempt_deletes_are_audited(admin_client, admin):
    challenge = make_challenge(**WEIGHTED_SEED)
    record(challenge, attempt_input("a"), attempt_input("b"), attempt_input("c"))
    first, *rest = Attempt.objects.filter(challenge=challenge).order_by("pk")
    response = admin_client.post(admin_url("attempt", "delete", first.pk), {"post": "yes"})
    assert response.status_code == 302
    response = admin_client.post(
        admin_url("attempt"),
        {"action": "delete_selected", "_selected_action": [a.pk for a in rest], "post": "yes"},
    )
    assert response.status_code == 302
    events = list(AuditEvent.objects.filter(kind="attempt_delete").order_by("pk"))
    assert [e.before for e in events] == [
        {"attempts": 1, "ids": [first.pk]},
        {"attempts": 2, "ids": [a.pk for a in rest]},
    ]
    assert all(e.actor_id == admin.pk and e.via == "admin" for e in events)


def test_an_admin_rename_is_audited_and_a_plain_save_is_not(admin_client):
    challenge = make_challenge(**WEIGHTED_SEED)
    record(challenge, attempt_input("ada"))
    player = Player.objects.get(external_id="ada")
    url = admin_url("player", "change", player.pk)
    data = {"external_id": "ada", "display_name": player.display_name}
    assert admin_client.post(url, data).status_code == 302
    assert not AuditEvent.objects.filter(kind="player_rename").exists()
    assert admin_client.post(url, {**data, "display_name": "Ada L."}).status_code == 302
    event = AuditEvent.objects.get(kind="player_rename")
    assert event.before == {"player": "ada", "display_name": player.display_name}
    assert event.after == {"player": "ada", "display_name": "Ada L."}
