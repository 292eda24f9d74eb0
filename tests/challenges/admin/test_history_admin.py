"""History records in the admin (issue 30): shown with the setup diff, linked from the
audit trail, and never added, changed or deleted."""

from __future__ import annotations

import pytest
from django.urls import reverse

from challenges.models import AuditEvent, HistoryRecord
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from tests.factories import attempt_input, make_challenge, record

pytestmark = pytest.mark.django_db


@pytest.fixture
def switched(admin):
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, attempt_input("a", elapsed_ms=5), attempt_input("b", elapsed_ms=9))
    update = setup_services.challenge_update(
        challenge=challenge, data={"scoring_strategy": "fewest_tokens"}, by=admin
    )
    rescoring.job_run_inline(job=update.job)
    return HistoryRecord.objects.get(challenge=challenge)


def test_the_admin_shows_a_record_with_its_setup_diff(admin_client, switched):
    page = admin_client.get(reverse("admin:challenges_historyrecord_change", args=[switched.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "setup diff" in html.lower() and "Fastest success" in html
    listing = admin_client.get(reverse("admin:challenges_historyrecord_changelist"))
    assert listing.status_code == 200


def test_the_admin_cannot_add_change_or_delete_a_record(admin_client, switched):
    add = admin_client.get(reverse("admin:challenges_historyrecord_add"))
    assert add.status_code == 403
    delete_url = reverse("admin:challenges_historyrecord_delete", args=[switched.pk])
    assert admin_client.post(delete_url, {"post": "yes"}).status_code == 403
    change_url = reverse("admin:challenges_historyrecord_change", args=[switched.pk])
    admin_client.post(change_url, {"moved": 999})
    bulk = admin_client.post(
        reverse("admin:challenges_historyrecord_changelist"),
        {"action": "delete_selected", "_selected_action": [switched.pk], "post": "yes"},
    )
    assert bulk.status_code in (200, 302, 403)
    assert HistoryRecord.objects.get(pk=switched.pk).moved == switched.moved


def test_the_audit_trail_links_the_records(admin_client, switched):
    assert AuditEvent.objects.filter(kind="scoring_change").exists()
    html = admin_client.get(reverse("admin:challenges_auditevent_changelist")).content.decode()
    link = reverse("admin:challenges_historyrecord_changelist")
    assert f"{link}?challenge__id__exact={switched.challenge_id}" in html
