"""The audit trail: each change of what players see is recorded once, with its actor and
where it came from (admin, api, command); admins read it, nobody edits or deletes it."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.urls import reverse

from challenges.models import Attempt, AuditEvent, Challenge, PlayerHide, RescoreJob
from challenges.setup import services as setup_services
from tests.challenges.admin.admin_pages import page_data
from tests.factories import SEED_ATTEMPT, make_challenge
from tests.urls import (
    admin_url,
    attempts_url,
    challenges_url,
    change_url,
    detail_url,
    job_cancel_url,
    rescore_url,
)

pytestmark = pytest.mark.django_db


def only(kind: str) -> AuditEvent:
    events = list(AuditEvent.objects.filter(kind=kind))
    assert len(events) == 1, [(e.kind, e.via) for e in AuditEvent.objects.all()]
    return events[0]


def check(kind: str, via: str, actor: str | None) -> AuditEvent:
    event = only(kind)
    assert event.via == via
    assert event.actor_name == (actor or "")
    return event


@pytest.fixture
def challenge(db) -> Challenge:
    made = make_challenge(scoring_strategy="fastest")
    _clear()
    return made


def _clear() -> None:
    """Forget the events of a test's setup (TRUNCATE: the trigger refuses DELETE)."""
    with connection.cursor() as cursor:
        table = AuditEvent._meta.db_table
        cursor.execute(
            f"TRUNCATE {table}" if connection.vendor == "postgresql" else f"DELETE FROM {table}"  # noqa: S608
        )


# --- through the API ----------------------------------------------------------------------
def test_api_changes_are_recorded_once_each(admin, admin_api, staff_api, integration_api):
    response = admin_api.post(challenges_url(), {"name": "Audited"}, format="json")
    pk = response.json()["id"]
    assert check("challenge_create", "api", "admin").after["name"] == "Audited"

    admin_api.patch(detail_url(pk), {"description": "new words"}, format="json")
    edit = check("challenge_edit", "api", "admin")
    assert edit.before == {"description": ""} and edit.after == {"description": "new words"}

    admin_api.patch(detail_url(pk), {"closes_at": "2030-01-01T00:00:00Z"}, format="json")
    schedule = check("schedule", "api", "admin")
    assert schedule.before == {"closes_at": None}
    assert schedule.after["closes_at"].startswith("2030-01-01T00:00:00")

    admin_api.patch(detail_url(pk), {"attempts_per_day": 5}, format="json")
    assert check("limits", "api", "admin").after == {"attempts_per_day": 5}

    admin_api.patch(detail_url(pk), {"scoring_strategy": "fastest"}, format="json")
    scoring = check("scoring_change", "api", "admin")
    assert scoring.before["scoring_strategy"] == "first"
    assert scoring.after["scoring_strategy"] == "fastest" and scoring.after["version"] == 2
    # The change queued a rescore: recorded as such (once).
    check("rescore_start", "api", "admin")
    assert AuditEvent.objects.filter(challenge_id=pk).count() == 6

    _clear()
    job = setup_services.challenge_rescore(challenge=Challenge.objects.get(pk=pk), by=None)
    _clear()
    # A job still queued (tasks are eager: cancel one made without sending it).
    RescoreJob.objects.filter(pk=job.pk).update(status="queued")
    assert staff_api.post(job_cancel_url(job.pk)).status_code == 200
    check("rescore_cancel", "api", "staff")

    assert staff_api.post(rescore_url(pk)).status_code == 202
    assert only("rescore_start").actor_name == "staff"

    integration_api.post(attempts_url(pk), SEED_ATTEMPT, format="json")
    attempt = Attempt.objects.get()
    body = {"reason": "test"}
    staff_api.post(reverse("player-hide", args=[pk, "u1"]), body, format="json")
    assert check("player_hide", "api", "staff").reason == "test"
    admin_api.post(reverse("player-unhide", args=[pk, "u1"]), body, format="json")
    check("player_unhide", "api", "admin")
    staff_api.post(reverse("attempt-hide", args=[attempt.pk]), body, format="json")
    assert check("attempt_hide", "api", "staff").after["attempt"] == attempt.pk
    admin_api.post(reverse("attempt-unhide", args=[attempt.pk]), body, format="json")
    check("attempt_unhide", "api", "admin")


def test_a_refused_change_records_nothing(admin_api, challenge):
    _clear()
    bad = {"opens_at": "2030-02-01T00:00:00Z", "closes_at": "2030-01-01T00:00:00Z"}
    assert admin_api.patch(detail_url(challenge.pk), bad, format="json").status_code == 400
    assert not AuditEvent.objects.exists()
    # Saving what is there already changes nothing: no event either.
    admin_api.patch(detail_url(challenge.pk), {"name": challenge.name}, format="json")
    assert not AuditEvent.objects.exists()


# --- through the admin ------------------------------------------------------------------
def test_admin_changes_are_recorded_once_each(admin_client, challenge, integration_api):
    _clear()
    url = change_url(challenge)
    data = page_data(admin_client, url, name="Renamed", closes_at_0="2030-01-01")
    data.update({"closes_at_0": "2030-01-01", "closes_at_1": "00:00:00", "attempts_total": "9"})
    data.update({"freeze_at_0": "2020-01-01", "freeze_at_1": "00:00:00"})
    response = admin_client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:3000]
    assert check("challenge_edit", "admin", "admin").after == {"name": "Renamed"}
    check("schedule", "admin", "admin")
    assert check("limits", "admin", "admin").after == {"attempts_total": 9}
    assert check("freeze", "admin", "admin").after["freeze_at"].startswith("2020-01-01")
    response = admin_client.post(
        admin_url("challenge"),
        {"action": "reveal_selected", "_selected_action": [challenge.pk]},
    )
    assert response.status_code == 302
    check("reveal", "admin", "admin")
    _clear()

    response = admin_client.post(
        admin_url("challenge"),
        {"action": "rescore_selected", "_selected_action": [challenge.pk]},
    )
    assert response.status_code == 302
    check("rescore_start", "admin", "admin")
    _clear()

    # The rescore's version 2 (its job not run: tasks are sent on commit) made active.
    v2 = challenge.versions.get(number=2)
    response = admin_client.post(admin_url("challenge", "activate", challenge.pk, v2.pk))
    assert response.status_code == 302
    event = check("version_activate", "admin", "admin")
    assert event.before == {"active_version": 1}
    assert event.after["active_version"] == 2 and "rescore_job" in event.after

    integration_api.post(attempts_url(challenge.pk), SEED_ATTEMPT, format="json")
    attempt = Attempt.objects.get()
    _clear()
    changelist = admin_url("attempt")
    ask = admin_client.post(
        changelist, {"action": "hide_attempts", "_selected_action": [attempt.pk]}
    )
    assert ask.status_code == 200 and b"Reason" in ask.content  # the reason step
    done = admin_client.post(
        changelist,
        {
            "action": "hide_attempts",
            "_selected_action": [attempt.pk],
            "confirm": "1",
            "reason": "spam",
        },
    )
    assert done.status_code == 302
    assert check("attempt_hide", "admin", "admin").reason == "spam"
    admin_client.post(
        changelist,
        {
            "action": "unhide_attempts",
            "_selected_action": [attempt.pk],
            "confirm": "1",
            "reason": "ok",
        },
    )
    check("attempt_unhide", "admin", "admin")

    response = admin_client.post(
        admin_url("playerhide", "add"),
        {"player": attempt.player_id, "challenge": challenge.pk, "reason": "bot"},
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    check("player_hide", "admin", "admin")
    hide = PlayerHide.objects.get()
    admin_client.post(
        admin_url("playerhide"),
        {
            "action": "unhide_players",
            "_selected_action": [hide.pk],
            "confirm": "1",
            "reason": "appeal",
        },
    )
    check("player_unhide", "admin", "admin")
    assert not PlayerHide.objects.exists()


def test_admin_create_is_recorded(admin_client):
    from tests.challenges.admin.test_admin import form

    assert admin_client.post(admin_url("challenge", "add"), form()).status_code == 302
    check("challenge_create", "admin", "admin")


def test_admin_rescore_cancel_is_recorded(admin_client, challenge):
    job = setup_services.challenge_rescore(challenge=challenge)
    RescoreJob.objects.filter(pk=job.pk).update(status="queued")
    _clear()
    response = admin_client.post(admin_url("rescorejob", "cancel", job.pk))
    assert response.status_code in (200, 302)
    check("rescore_cancel", "admin", "admin")


# --- through the commands -----------------------------------------------------------------
def test_command_changes_are_recorded(challenge, tmp_path):
    _clear()
    call_command("rescore", challenge.slug, stdout=StringIO(), stderr=StringIO())
    check("rescore_start", "command", None)
    _clear()
    path = tmp_path / "c.jsonl"
    call_command("export_challenge", challenge.slug, "-o", str(path), stderr=StringIO())
    call_command("import_challenge", str(path), "--slug", "copy", stdout=StringIO())
    event = check("import", "command", None)
    assert event.after["slug"] == "copy"
    check("rescore_start", "command", None)  # the import's rescore of its active version
    _clear()
    call_command("seed_demo", stdout=StringIO())
    creates = AuditEvent.objects.filter(kind="challenge_create")
    assert creates.exists() and set(creates.values_list("via", flat=True)) == {"command"}


# --- reading it; never changing it ----------------------------------------------------------
def test_audit_api_filters_for_admins_only(admin_api, staff_api, anon_api, challenge):
    other = make_challenge()
    admin_api.patch(detail_url(challenge.pk), {"description": "x"}, format="json")
    assert staff_api.get(reverse("audit")).status_code == 403
    assert anon_api.get(reverse("audit")).status_code in (401, 403)
    rows = admin_api.get(reverse("audit"), {"challenge": challenge.pk}).json()
    assert rows and {r["challenge"] for r in rows} == {challenge.pk}
    edits = admin_api.get(reverse("audit"), {"kind": "challenge_edit", "actor": "admin"}).json()
    assert [(r["kind"], r["actor"], r["via"]) for r in edits] == [
        ("challenge_edit", "admin", "api")
    ]
    assert admin_api.get(reverse("audit"), {"actor": "nobody"}).json() == []
    assert other.pk in {r["challenge"] for r in admin_api.get(reverse("audit")).json()}
    for bad in ({"challenge": "x"}, {"kind": "nope"}):
        response = admin_api.get(reverse("audit"), bad)
        assert response.status_code == 400 and set(bad) <= set(response.json())
    for method in ("post", "put", "patch", "delete"):
        assert getattr(admin_api, method)(reverse("audit")).status_code == 405


def test_append_only(admin_client, admin_api, challenge):
    admin_api.patch(detail_url(challenge.pk), {"description": "x"}, format="json")
    event = AuditEvent.objects.filter(kind="challenge_edit").get()
    with pytest.raises(ValueError):
        event.reason = "rewritten"
        event.save()
    with pytest.raises(ValueError):
        event.delete()
    # The admin lists it, offers no add, change or delete.
    assert admin_client.get(admin_url("auditevent")).status_code == 200
    assert admin_client.get(admin_url("auditevent", "add")).status_code == 403
    page = admin_client.get(admin_url("auditevent", "change", event.pk))
    assert page.status_code == 200 and b'name="_save"' not in page.content
    assert admin_client.get(admin_url("auditevent", "delete", event.pk)).status_code == 403
    filtered = admin_client.get(admin_url("auditevent"), {"kind": "challenge_edit"})
    assert filtered.status_code == 200


def test_the_database_refuses_changes_on_postgresql(admin_api, challenge):
    if connection.vendor != "postgresql":
        pytest.skip("the trigger is PostgreSQL's")
    from django.db import DatabaseError, transaction

    admin_api.patch(detail_url(challenge.pk), {"description": "x"}, format="json")
    for change in (
        lambda: AuditEvent.objects.update(reason="rewritten"),
        lambda: AuditEvent.objects.all()._raw_delete(AuditEvent.objects.db),
    ):
        with pytest.raises(DatabaseError), transaction.atomic():
            change()
    assert AuditEvent.objects.filter(reason="rewritten").count() == 0
