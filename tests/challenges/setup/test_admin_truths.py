"""Issue 15 items 3 and 8: the admin's rescoring box and the versions page say what is
true after "Make active again"."""

from __future__ import annotations

import pytest

from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from challenges.setup import versions
from tests.factories import WEIGHTED_SEED, attempt_input, make_challenge, record
from tests.urls import admin_url, change_url

pytestmark = pytest.mark.django_db
WEIGHTED = {k: v for k, v in WEIGHTED_SEED.items() if k != "name"}


@pytest.fixture
def history(admin):
    """Version 1 and version 2 (rescored, active)."""
    challenge = make_challenge(**WEIGHTED)
    record(challenge, attempt_input("a", rating=10, elapsed_ms=60_000, created_at=1))
    update = setup_services.challenge_update(
        challenge=challenge,
        data={"scoring_config": {**challenge.scoring_config, "rating_weight": 0.0}},
        by=admin,
    )
    rescoring.job_run_inline(job=update.job)
    challenge.refresh_from_db()
    return challenge


def change_page(client, challenge) -> str:
    response = client.get(change_url(challenge))
    assert response.status_code == 200
    return response.content.decode()


def test_rescoring_box_agrees_with_the_active_version_after_make_active_again(
    admin_client, history
):
    assert "Version 2 is now active" in change_page(admin_client, history)
    versions.version_activate(version=history.versions.get(number=1))
    html = change_page(admin_client, history)
    assert "Version 2 is now active" not in html
    assert "version 1 is active now" in html.lower()


def test_make_active_again_on_a_never_scored_version_says_it_will_rescore(
    admin_client, history, monkeypatch
):
    monkeypatch.setattr(rescoring, "_send", lambda job: None)
    update = setup_services.challenge_update(
        challenge=history, data={"scoring_config": {**history.scoring_config, "time_penalty": 9}}
    )
    rescoring.job_cancel(job=update.job)
    html = admin_client.get(admin_url("challenge", "versions", history.pk)).content.decode()
    v3 = html[html.index('id="version-3"') : html.index('id="version-2"')]
    assert "Rescore and make active" in v3
    assert "rescores every attempt" in v3
    v1 = html[html.index('id="version-1"') :]
    assert "Make active again" in v1 and "Rescore and make active" not in v1


def test_cancelling_a_finished_job_reads_naturally(admin):
    challenge = make_challenge(**WEIGHTED)
    job = setup_services.challenge_rescore(challenge=challenge, by=admin)
    rescoring.job_run_inline(job=job)
    job.refresh_from_db()
    with pytest.raises(rescoring.JobStateError) as e:
        rescoring.job_cancel(job=job)
    message = str(e.value)
    assert "is succeeded" not in message
    assert message == (
        f"Rescore job {job.pk} has already succeeded; only a queued or running job can be "
        "cancelled."
    )
