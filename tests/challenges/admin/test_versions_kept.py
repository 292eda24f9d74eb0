"""Scoring versions are history: the admin never deletes one (issue 28, finding 5).

Deleting the active version through `/admin/challenges/scoringversion/<id>/delete/`
emptied the public board and wrote no audit event; an older version is what "Make active
again" and the public history need. Versions go only with their challenge."""

from __future__ import annotations

import pytest

from challenges.models import ScoringVersion
from tests.factories import WEIGHTED_SEED, attempt_input, make_challenge, record
from tests.urls import admin_url

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("method", ["get", "post"])
def test_the_active_version_cannot_be_deleted(admin_client, method):
    challenge = make_challenge(**WEIGHTED_SEED)
    record(challenge, attempt_input("a"))
    version = challenge.active_version
    url = admin_url("scoringversion", "delete", version.pk)
    response = getattr(admin_client, method)(url, {"post": "yes"})
    assert response.status_code == 403
    assert ScoringVersion.objects.filter(pk=version.pk).exists()


def test_no_bulk_delete_of_versions(admin_client):
    challenge = make_challenge(**WEIGHTED_SEED)
    page = admin_client.get(admin_url("scoringversion")).content.decode()
    assert "delete_selected" not in page
    response = admin_client.post(
        admin_url("scoringversion"),
        {
            "action": "delete_selected",
            "_selected_action": [challenge.active_version_id],
            "post": "yes",
        },
    )
    assert ScoringVersion.objects.filter(pk=challenge.active_version_id).exists()
    assert response.status_code in (200, 302)
