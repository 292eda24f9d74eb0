"""The rescore routes of the API (docs/api.md) and `manage.py rescore`.

Celery is eager here: a job's tasks run inline when its transaction's on-commit
callbacks run (``django_capture_on_commit_callbacks(execute=True)``); without that the
job stays queued. tests/realworker runs jobs on a real worker.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from challenges.models import Challenge, RescoreJob, ScoringVersion
from scoring.project_registry import registry
from tests.factories import attempt_input, make_challenge, record
from tests.urls import job_cancel_url, job_url, leaderboard_url, rescore_url

pytestmark = pytest.mark.django_db
Status = RescoreJob.Status
JOB_FIELDS = {
    "id",
    "challenge",
    "status",
    "processed",
    "total",
    "failed",
    "version",
    "error",
    "created_at",
    "started_at",
    "finished_at",
    "rate",  # attempts/s so far, and the time left at that rate (issue 28, finding 18)
    "eta_seconds",
}


@pytest.fixture
def challenge():
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, attempt_input("a", elapsed_ms=50), attempt_input("b", elapsed_ms=20))
    challenge.refresh_from_db()
    return challenge


@pytest.fixture
def queued_job(challenge, staff_api, django_capture_on_commit_callbacks):
    """A job whose tasks were not sent (its on-commit callback is captured, not run)."""
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = staff_api.post(rescore_url(challenge.pk))
    assert response.status_code == 202
    job = RescoreJob.objects.get(pk=response.json()["job"])
    job.send_tasks = callbacks  # run them to dispatch the job late
    return job


@pytest.fixture
def finished_job(challenge, staff_api, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_api.post(rescore_url(challenge.pk))
    assert response.status_code == 202
    return RescoreJob.objects.get(pk=response.json()["job"])


def active_number(challenge: Challenge) -> int:
    challenge.refresh_from_db()
    return challenge.active_version.number


# --- POST /api/challenges/{id}/rescore/ ---------------------------------------------------
@pytest.mark.parametrize("client_name", ["staff_api", "admin_api", "scorer_admin_api"])
def test_staff_and_admins_start_a_rescore(
    request, client_name, challenge, anon_api, django_capture_on_commit_callbacks
):
    client = request.getfixturevalue(client_name)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(rescore_url(challenge.pk))
    assert response.status_code == 202, response.content
    body = response.json()
    assert set(body) == {"job"}
    job = RescoreJob.objects.get(pk=body["job"])
    # The job's tasks are sent on commit (the request's one callback; the job, run
    # eagerly, then announces its switch: events' callbacks follow).
    assert callbacks[0].__qualname__.startswith("rescore_start")
    assert not any("rescore_start" in getattr(c, "__qualname__", "") for c in callbacks[1:])
    assert job.challenge_id == challenge.pk and job.version.number == 2
    assert job.version.reason == "rescore"
    assert job.created_by is not None and job.created_by.is_authenticated
    assert (job.status, job.processed, job.total, job.failed) == (Status.SUCCEEDED, 2, 2, 0)
    assert active_number(challenge) == 2
    board = anon_api.get(leaderboard_url(challenge.pk)).json()
    assert board["version"] == 2
    assert [(r["player"], r["score"]) for r in board["results"]] == [("b", 20.0), ("a", 50.0)]


def test_staff_may_rescore_an_inactive_challenge(staff_api, django_capture_on_commit_callbacks):
    hidden = make_challenge(scoring_strategy="fastest", is_active=False)
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_api.post(rescore_url(hidden.pk))
    assert response.status_code == 202
    assert active_number(hidden) == 2


def test_anonymous_may_not_start_a_rescore(anon_api, challenge):
    response = anon_api.post(rescore_url(challenge.pk))
    assert response.status_code == 401
    assert RescoreJob.objects.count() == 0
    assert challenge.versions.count() == 1


@pytest.mark.parametrize("client_name", ["integration_api", "plain_api"])
def test_integration_token_and_plain_user_may_not_start_a_rescore(request, client_name, challenge):
    response = request.getfixturevalue(client_name).post(rescore_url(challenge.pk))
    assert response.status_code == 403
    assert RescoreJob.objects.count() == 0
    assert challenge.versions.count() == 1


def test_rescore_of_an_unknown_challenge_is_404(staff_api, challenge):
    response = staff_api.post(rescore_url(challenge.pk + 1000))
    assert response.status_code == 404
    assert RescoreJob.objects.count() == 0


def test_a_new_rescore_supersedes_the_queued_one(staff_api, queued_job, challenge):
    response = staff_api.post(rescore_url(challenge.pk))
    assert response.status_code == 202
    queued_job.refresh_from_db()
    assert queued_job.status == Status.CANCELLED
    newer = RescoreJob.objects.get(pk=response.json()["job"])
    assert newer.status == Status.QUEUED and newer.version.number == 3


# --- GET /api/rescore-jobs/{id}/ ------------------------------------------------------------
def test_staff_reads_a_queued_job(staff_api, queued_job):
    response = staff_api.get(job_url(queued_job.pk))
    assert response.status_code == 200
    body = response.json()
    assert set(body) == JOB_FIELDS
    assert body["id"] == queued_job.pk and body["challenge"] == queued_job.challenge_id
    assert (body["status"], body["processed"], body["total"], body["failed"]) == (
        "queued",
        0,
        2,
        0,
    )
    assert (body["version"], body["error"]) == (2, "")
    assert body["started_at"] is None and body["finished_at"] is None


@pytest.mark.parametrize("client_name", ["staff_api", "admin_api"])
def test_staff_and_admins_read_a_finished_job(request, client_name, finished_job):
    body = request.getfixturevalue(client_name).get(job_url(finished_job.pk)).json()
    assert (body["status"], body["processed"], body["total"], body["failed"]) == (
        "succeeded",
        2,
        2,
        0,
    )
    assert (body["version"], body["error"]) == (2, "")
    assert body["started_at"] is not None and body["finished_at"] is not None


def test_job_counts_scorer_failures(staff_api, django_capture_on_commit_callbacks):
    with registry().temporarily("t.tokens", "tests.plugins:TokensScorer"):
        challenge = make_challenge(scoring_strategy="custom", scoring_plugin_id="t.tokens")
        record(challenge, attempt_input("a", tokens_total=13), attempt_input("b", tokens_total=5))
        with django_capture_on_commit_callbacks(execute=True):
            job_id = staff_api.post(rescore_url(challenge.pk)).json()["job"]
    body = staff_api.get(job_url(job_id)).json()
    assert (body["status"], body["processed"], body["total"], body["failed"]) == (
        "succeeded",
        2,
        2,
        1,
    )
    assert "unlucky" not in str(body)  # per-attempt errors are not in the job's summary


def test_anonymous_may_not_read_a_job(anon_api, finished_job):
    assert anon_api.get(job_url(finished_job.pk)).status_code == 401


@pytest.mark.parametrize("client_name", ["integration_api", "plain_api"])
def test_integration_token_and_plain_user_may_not_read_a_job(request, client_name, finished_job):
    assert request.getfixturevalue(client_name).get(job_url(finished_job.pk)).status_code == 403


def test_unknown_job_is_404(staff_api, finished_job):
    assert staff_api.get(job_url(finished_job.pk + 1000)).status_code == 404
    assert staff_api.post(job_cancel_url(finished_job.pk + 1000)).status_code == 404


# --- POST /api/rescore-jobs/{id}/cancel/ ----------------------------------------------------
@pytest.mark.parametrize("client_name", ["staff_api", "admin_api"])
def test_cancel_a_queued_job(request, client_name, queued_job, challenge):
    response = request.getfixturevalue(client_name).post(job_cancel_url(queued_job.pk))
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == JOB_FIELDS
    assert (body["status"], body["error"], body["version"]) == ("cancelled", "Cancelled.", 2)
    assert body["finished_at"] is not None
    assert active_number(challenge) == 1

    for send in queued_job.send_tasks:  # the job's tasks arrive late: nothing happens
        send()
    queued_job.refresh_from_db()
    assert queued_job.status == Status.CANCELLED and queued_job.processed == 0
    assert active_number(challenge) == 1
    assert ScoringVersion.objects.get(pk=queued_job.version_id).scored_at is None


def test_cancel_a_finished_job_is_409(staff_api, finished_job, challenge):
    response = staff_api.post(job_cancel_url(finished_job.pk))
    assert response.status_code == 409
    assert "succeeded" in response.json()["status"][0]
    finished_job.refresh_from_db()
    assert finished_job.status == Status.SUCCEEDED
    assert active_number(challenge) == 2  # unchanged


def test_cancel_a_cancelled_job_is_409(staff_api, queued_job, challenge):
    assert staff_api.post(job_cancel_url(queued_job.pk)).status_code == 200
    response = staff_api.post(job_cancel_url(queued_job.pk))
    assert response.status_code == 409
    assert "cancelled" in response.json()["status"][0]
    assert active_number(challenge) == 1


def test_anonymous_may_not_cancel(anon_api, queued_job):
    assert anon_api.post(job_cancel_url(queued_job.pk)).status_code == 401
    queued_job.refresh_from_db()
    assert queued_job.status == Status.QUEUED


@pytest.mark.parametrize("client_name", ["integration_api", "plain_api"])
def test_integration_token_and_plain_user_may_not_cancel(request, client_name, queued_job):
    assert (
        request.getfixturevalue(client_name).post(job_cancel_url(queued_job.pk)).status_code == 403
    )
    queued_job.refresh_from_db()
    assert queued_job.status == Status.QUEUED


# --- manage.py rescore ------------------------------------------------------------------------
def test_rescore_command_inline(challenge):
    out = StringIO()
    call_command("rescore", challenge.slug, "--inline", stdout=out)
    text = out.getvalue()
    job = RescoreJob.objects.get(challenge=challenge)
    assert f"Rescore job {job.pk}: version 2 of {challenge.slug}, 2 attempts in 1 chunk." in text
    assert "2/2" in text and "(succeeded)" in text
    assert "Version 2 is active." in text
    assert job.status == Status.SUCCEEDED
    assert active_number(challenge) == 2


def test_rescore_command_without_options_only_queues(challenge):
    out = StringIO()
    call_command("rescore", challenge.slug, stdout=out)
    job = RescoreJob.objects.get(challenge=challenge)
    assert f"Rescore job {job.pk}: version 2" in out.getvalue()
    assert "is active" not in out.getvalue()
    assert job.status == Status.QUEUED
    assert active_number(challenge) == 1


@pytest.mark.parametrize("options", [[], ["--inline"], ["--wait"]])
def test_rescore_command_unknown_slug(options, challenge):
    with pytest.raises(CommandError, match="No challenge with slug 'nope'"):
        call_command("rescore", "nope", *options, stdout=StringIO())
    assert RescoreJob.objects.count() == 0
