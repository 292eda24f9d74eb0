"""An admin save keeps text exactly as entered (issue 28, finding 14).

A browser submits a textarea's line breaks as CRLF (the HTML standard's form encoding),
whatever the text held: saving a challenge whose description (or snippet) was written
with LF through the API or a YAML file must not rewrite it, log an edit whose before and
after differ only in line endings, or change the public card's summary. Line breaks are
normalised to LF once, on input, everywhere (admin, API, files); a save that changes
nothing records nothing."""

from __future__ import annotations

import pytest

from challenges.models import AuditEvent, Challenge
from tests.challenges.admin.admin_pages import WEIGHTS, page_data
from tests.factories import WEIGHTED_SEED, make_challenge
from tests.urls import change_url, detail_url

pytestmark = pytest.mark.django_db

DESCRIPTION = "First line.\n\nSecond paragraph,\nwith a break."
SNIPPET = 'def compute_scores(sample):\n    return {"ok": 1.0}\n'


def as_browser(data):
    """Every textarea value as a browser posts it: CRLF line breaks."""
    return {k: v.replace("\n", "\r\n") if isinstance(v, str) else v for k, v in data.items()}


def test_a_weights_only_save_keeps_the_description(admin_client):
    challenge = make_challenge(**WEIGHTED_SEED, description=DESCRIPTION)
    before_events = AuditEvent.objects.count()
    url = change_url(challenge)
    data = as_browser(page_data(admin_client, url, **{f"{WEIGHTS}rating_weight": "20"}))
    assert "\r\n" in data["description"]
    response = admin_client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:3000]
    challenge.refresh_from_db()
    assert challenge.description == DESCRIPTION
    kinds = list(AuditEvent.objects.order_by("pk")[before_events:].values_list("kind", flat=True))
    assert "challenge_edit" not in kinds  # no edit of line endings
    assert "scoring_change" in kinds


def test_a_save_that_changes_nothing_records_nothing(admin_client):
    challenge = make_challenge(**WEIGHTED_SEED, description=DESCRIPTION)
    updated_at, events = challenge.updated_at, AuditEvent.objects.count()
    url = change_url(challenge)
    response = admin_client.post(url, as_browser(page_data(admin_client, url)))
    assert response.status_code == 302, response.content.decode()[:3000]
    challenge.refresh_from_db()
    assert challenge.description == DESCRIPTION
    assert AuditEvent.objects.count() == events
    assert challenge.updated_at == updated_at  # the public "updated" time stays
    assert challenge.active_version.number == 1


def test_a_snippet_saved_from_the_browser_is_not_a_new_setup(admin_client, admin_api):
    response = admin_api.post(
        "/api/challenges/",
        {"name": "Snippet", "scoring_strategy": "python", "scoring_code": SNIPPET},
        format="json",
    )
    assert response.status_code == 201, response.content
    challenge = Challenge.objects.get(pk=response.json()["id"])
    url = change_url(challenge)
    response = admin_client.post(url, as_browser(page_data(admin_client, url)))
    assert response.status_code == 302, response.content.decode()[:3000]
    challenge.refresh_from_db()
    assert challenge.scoring_code == SNIPPET
    assert challenge.active_version.number == 1  # no version of line endings


def test_the_api_stores_lf_line_breaks(admin_api):
    body = {"name": "Crlf", "description": "a\r\nb\rc", "scoring_strategy": "first"}
    response = admin_api.post("/api/challenges/", body, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["description"] == "a\nb\nc"
    pk = response.json()["id"]
    response = admin_api.patch(detail_url(pk), {"description": "x\r\ny"}, format="json")
    assert response.status_code == 200, response.content
    assert Challenge.objects.get(pk=pk).description == "x\ny"
