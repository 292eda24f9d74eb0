"""The admin's live rescore progress in a real browser: htmx (vendored) loads, the block
polls the fragment view and stops when the job has finished."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from challenges.models import RescoreJob
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from tests.factories import attempt_input, make_challenge, record
from tests.urls import admin_url, change_url

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
]
Status = RescoreJob.Status


def log_in(page, live_server, *, username: str, password: str) -> None:
    page.goto(live_server.url + reverse("admin:login"))
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_url(live_server.url + reverse("admin:index"))


def test_challenge_page_shows_live_progress_of_a_queued_job(page, live_server, admin, monkeypatch):
    # Keep the job queued: nothing is sent to a worker.
    monkeypatch.setattr(rescoring, "_send", lambda job: None)
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, attempt_input("a", elapsed_ms=5), attempt_input("b", elapsed_ms=7))
    job = setup_services.challenge_rescore(challenge=challenge)
    assert job.status == Status.QUEUED

    log_in(page, live_server, username="admin", password="pw")
    page.goto(live_server.url + change_url(challenge))
    block = page.locator(f"#rescore-job-{job.pk}")
    block.wait_for(state="visible")
    assert block.locator("progress").is_visible()
    assert "0/2" in block.inner_text() and "queued" in block.inner_text().lower()
    assert page.locator("button", has_text="Rescore now").is_visible()
    assert page.evaluate("typeof htmx === 'object' && htmx.version").startswith("2.")

    # The block polls its fragment view (every 2 s) and swaps the answer in.
    progress_path = admin_url("rescorejob", "progress", job.pk)
    RescoreJob.objects.filter(pk=job.pk).update(
        status=Status.RUNNING, processed=1, started_at=timezone.now() - timedelta(seconds=2)
    )
    with page.expect_response(lambda r: progress_path in r.url and r.status == 200):
        pass
    block.get_by_text("1/2").wait_for()
    assert block.get_attribute("hx-trigger") == "every 2s"

    # Finished: the last fragment has no hx-trigger, so polling stops.
    RescoreJob.objects.filter(pk=job.pk).update(
        status=Status.SUCCEEDED, processed=2, finished_at=timezone.now()
    )
    page.wait_for_selector(f"#rescore-job-{job.pk}[data-status=succeeded]")
    assert block.get_attribute("hx-trigger") is None
    assert "2/2" in block.inner_text()
    polls = []
    page.on("request", lambda r: progress_path in r.url and polls.append(r.url))
    page.wait_for_timeout(2500)
    assert polls == []

    assert page.errors == []
