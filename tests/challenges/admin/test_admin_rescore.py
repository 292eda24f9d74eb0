"""Rescoring from the admin: the list action, the "Rescore now" button, the jobs pages,
the live progress fragment, cancelling, and the per-attempt failures (admin only)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from challenges.admin.views import duration_display, job_progress
from challenges.models import Challenge, RescoreJob
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from scoring.project_registry import registry
from tests.factories import attempt_input, make_challenge, record
from tests.urls import admin_url, change_url

pytestmark = pytest.mark.django_db
Status = RescoreJob.Status


def rescore_url(challenge: Challenge) -> str:
    return admin_url("challenge", "rescore", challenge.pk)


def job_url(job: RescoreJob) -> str:
    return admin_url("rescorejob", "change", job.pk)


def progress_url(job: RescoreJob) -> str:
    return admin_url("rescorejob", "progress", job.pk)


def cancel_url(job: RescoreJob) -> str:
    return admin_url("rescorejob", "cancel", job.pk)


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def make_running(job: RescoreJob, *, processed: int, total: int, seconds: float) -> RescoreJob:
    RescoreJob.objects.filter(pk=job.pk).update(
        status=Status.RUNNING,
        processed=processed,
        total=total,
        started_at=timezone.now() - timedelta(seconds=seconds),
    )
    job.refresh_from_db()
    return job


@pytest.fixture
def challenge():
    made = make_challenge(scoring_strategy="fastest")
    record(made, attempt_input("a", elapsed_ms=30), attempt_input("b", elapsed_ms=20))
    return made


# --- the list action ------------------------------------------------------------------
@pytest.mark.parametrize("who", ["admin_client", "scoring_staff_client"])
def test_action_rescores_the_selected_challenges(request, who, django_capture_on_commit_callbacks):
    client = request.getfixturevalue(who)
    first, second = make_challenge(), make_challenge()
    record(first, attempt_input("a"))
    record(second, attempt_input("b"), attempt_input("c"))
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            admin_url("challenge"),
            {"action": "rescore_selected", "_selected_action": [first.pk, second.pk]},
            follow=True,
        )
    assert response.status_code == 200
    jobs = list(RescoreJob.objects.order_by("pk"))
    assert [job.challenge_id for job in jobs] == [first.pk, second.pk]
    assert [(job.status, job.processed, job.total) for job in jobs] == [
        (Status.SUCCEEDED, 1, 1),
        (Status.SUCCEEDED, 2, 2),
    ]
    for made in (first, second):
        made.refresh_from_db()
        assert made.active_version.number == 2  # rescored (eager Celery) and switched
    [message] = messages_of(response)
    assert message.startswith("Queued rescore jobs:")
    for job in jobs:
        assert f"job #{job.pk}" in message and f"{job.challenge.name}, version 2" in message


def test_the_action_is_offered_to_staff_and_delete_is_not(scoring_staff_client, challenge):
    response = scoring_staff_client.get(admin_url("challenge"))
    assert response.status_code == 200
    assert 'value="rescore_selected"' in response.text
    assert "delete_selected" not in response.text  # view-only: no delete


def test_staff_outside_the_group_cannot_see_the_challenge_list(staff_client, challenge):
    assert staff_client.get(admin_url("challenge")).status_code == 403


# --- the "Rescore now" button -----------------------------------------------------------
def test_button_rescores_for_scoring_staff(
    scoring_staff_client, scoring_staff, challenge, django_capture_on_commit_callbacks
):
    page = scoring_staff_client.get(change_url(challenge))
    assert page.status_code == 200
    assert f'action="{rescore_url(challenge)}"' in page.text and "Rescore now" in page.text
    assert "htmx.min.js" in page.text and "css/admin.css" in page.text

    with django_capture_on_commit_callbacks(execute=True):
        response = scoring_staff_client.post(rescore_url(challenge))
    assert response.status_code == 302 and response.url == change_url(challenge)
    job = RescoreJob.objects.get(challenge=challenge)
    assert (job.status, job.created_by, job.processed) == (Status.SUCCEEDED, scoring_staff, 2)
    challenge.refresh_from_db()
    assert challenge.active_version == job.version

    page = scoring_staff_client.get(response.url)
    assert any(f"job #{job.pk}" in m for m in messages_of(page))
    # The finished job's block is shown, without polling.
    assert f'id="rescore-job-{job.pk}"' in page.text and "hx-trigger" not in page.text


def test_button_queues_and_the_page_shows_live_progress(admin_client, challenge):
    # No on_commit callbacks run here: the job stays queued, as with a busy worker.
    response = admin_client.post(rescore_url(challenge), follow=True)
    job = RescoreJob.objects.get(challenge=challenge)
    assert job.status == Status.QUEUED
    assert f'id="rescore-job-{job.pk}"' in response.text
    assert f'hx-get="{progress_url(job)}"' in response.text
    assert 'hx-trigger="every 2s"' in response.text


@pytest.mark.parametrize("who", ["anonymous", "plain_client"])
def test_button_is_refused_to_non_staff(request, who, challenge):
    client = Client() if who == "anonymous" else request.getfixturevalue(who)
    response = client.post(rescore_url(challenge))
    assert response.status_code in (302, 403)
    if response.status_code == 302:
        assert response.url.startswith(reverse("admin:login"))
    assert not RescoreJob.objects.exists()


def test_button_needs_post_and_a_csrf_token(scoring_staff, challenge):
    client = Client(enforce_csrf_checks=True)
    client.force_login(scoring_staff)
    assert client.get(rescore_url(challenge)).status_code == 405
    assert client.post(rescore_url(challenge)).status_code == 403  # no CSRF token
    assert not RescoreJob.objects.exists()


def test_button_on_an_unknown_challenge_redirects_with_a_message(admin_client):
    response = admin_client.post(admin_url("challenge", "rescore", 999999), follow=True)
    assert response.status_code == 200
    assert any("doesn’t exist" in m for m in messages_of(response))


def test_staff_cannot_change_the_scoring_setup(scoring_staff_client, challenge):
    page = scoring_staff_client.get(change_url(challenge))
    assert page.context["has_change_permission"] is False
    assert 'name="_save"' not in page.text
    response = scoring_staff_client.post(
        change_url(challenge),
        {"name": challenge.name, "slug": challenge.slug, "scoring_strategy": "first"},
    )
    assert response.status_code == 403
    challenge.refresh_from_db()
    assert challenge.scoring_strategy == "fastest" and challenge.versions.count() == 1


def test_the_group_grants_view_permissions_only():
    codenames = set(
        Group.objects.get(name="Scoring staff").permissions.values_list("codename", flat=True)
    )
    assert codenames == {
        "view_challenge",
        "view_attempt",
        "view_player",
        "view_scoringversion",
        "view_attemptscore",
        "view_rescorejob",
    }


# --- the jobs pages ---------------------------------------------------------------------
def test_jobs_list_renders_in_a_bounded_number_of_queries(
    admin_client, django_assert_max_num_queries
):
    challenges = [make_challenge() for _ in range(4)]
    for made in challenges:
        record(made, attempt_input("a"))
    for i in range(20):
        setup_services.challenge_rescore(challenge=challenges[i % 4])
    make_running(RescoreJob.objects.first(), processed=1, total=2, seconds=3)
    with django_assert_max_num_queries(6):
        response = admin_client.get(admin_url("rescorejob"))
    assert response.status_code == 200
    assert response.context["cl"].result_count == 20
    assert response.text.count('class="rescore-progress ') == 20
    assert response.text.count("hx-trigger=") == 4  # the newest job of each challenge
    assert "htmx.min.js" in response.text


@pytest.mark.parametrize("who", ["admin_client", "scoring_staff_client"])
def test_job_page_renders_with_progress_and_cancel(request, who, challenge):
    client = request.getfixturevalue(who)
    job = make_running(
        setup_services.challenge_rescore(challenge=challenge), processed=1, total=2, seconds=2
    )
    for url in (
        admin_url("rescorejob"),
        admin_url("rescorejob") + "?status__exact=running",
        admin_url("rescorejob") + f"?challenge__id__exact={challenge.pk}",
    ):
        assert client.get(url).status_code == 200, url
    page = client.get(job_url(job))
    assert page.status_code == 200
    assert f'id="rescore-job-{job.pk}"' in page.text and "1/2" in page.text
    assert f'action="{cancel_url(job)}"' in page.text and "Cancel job" in page.text
    assert 'name="_save"' not in page.text  # read-only


def test_jobs_cannot_be_added_changed_or_deleted(admin_client, challenge):
    job = setup_services.challenge_rescore(challenge=challenge)
    assert admin_client.get(admin_url("rescorejob", "add")).status_code == 403
    assert admin_client.post(job_url(job), {"status": "succeeded"}).status_code == 403
    assert (
        admin_client.post(admin_url("rescorejob", "delete", job.pk), {"post": "yes"}).status_code
        == 403
    )
    job.refresh_from_db()
    assert job.status == Status.QUEUED


def test_deleting_a_challenge_takes_its_jobs_along(admin_client, challenge):
    setup_services.challenge_rescore(challenge=challenge)
    response = admin_client.post(admin_url("challenge", "delete", challenge.pk), {"post": "yes"})
    assert response.status_code == 302
    assert not Challenge.objects.filter(pk=challenge.pk).exists()
    assert not RescoreJob.objects.exists()


# --- the progress fragment ----------------------------------------------------------------
def test_progress_fragment_polls_while_running_and_stops_when_finished(admin_client, challenge):
    job = make_running(
        setup_services.challenge_rescore(challenge=challenge), processed=300, total=1000, seconds=10
    )
    response = admin_client.get(progress_url(job))
    assert response.status_code == 200
    assert response["Cache-Control"].startswith("max-age=0")
    html = response.text
    assert "<html" not in html  # a fragment, not a page
    assert "<progress" in html and 'value="30"' in html
    assert "300/1,000" in html
    assert re.search(r"30\.\d/s|29\.\d/s|30/s", html)  # ≈ 300 attempts in 10 s
    assert "ETA 2" in html  # ≈ 700 left at 30/s: 23 s
    assert 'hx-trigger="every 2s"' in html and f'hx-get="{progress_url(job)}"' in html
    assert 'hx-swap="outerHTML"' in html

    rescoring.job_cancel(job=job)
    html = admin_client.get(progress_url(job)).text
    assert "hx-trigger" not in html and "hx-get" not in html
    assert "Cancelled" in html


def test_progress_fragment_of_a_finished_job(
    admin_client, challenge, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = setup_services.challenge_rescore(challenge=challenge)
    job.refresh_from_db()
    html = admin_client.get(progress_url(job)).text
    assert job.status == Status.SUCCEEDED
    assert "2/2" in html and 'value="100"' in html and "took" in html
    assert f"Version {job.version.number} is now active" in html
    assert "hx-trigger" not in html


def test_progress_fragment_compact_and_gone(admin_client, challenge):
    job = setup_services.challenge_rescore(challenge=challenge)
    html = admin_client.get(progress_url(job) + "?compact=1").text
    assert "rescore-progress--compact" in html and "0/2" in html
    assert 'hx-get="' + progress_url(job) + '?compact=1"' in html
    gone = admin_client.get(admin_url("rescorejob", "progress", 999999))
    assert gone.status_code == 200 and "no longer exists" in gone.text
    assert "hx-trigger" not in gone.text


@pytest.mark.parametrize("who", ["anonymous", "plain_client"])
def test_progress_fragment_is_for_staff_only(request, who, challenge):
    client = Client() if who == "anonymous" else request.getfixturevalue(who)
    job = setup_services.challenge_rescore(challenge=challenge)
    response = client.get(progress_url(job))
    assert response.status_code == 403  # not a redirect: htmx would swap the login page in


def test_rate_and_eta():
    now = timezone.now()
    job = RescoreJob(
        status=Status.RUNNING, processed=50, total=200, started_at=now - timedelta(seconds=25)
    )
    progress = job_progress(job, now=now)
    assert (progress.percent, progress.rate, progress.eta_seconds) == (25, 2.0, 75.0)
    assert (progress.rate_display, progress.eta_display) == ("2.0/s", "1 min 15 s")
    queued = job_progress(RescoreJob(status=Status.QUEUED, total=10), now=now)
    assert (queued.rate, queued.eta_seconds, queued.rate_display) == (None, None, "– /s")
    started = job_progress(RescoreJob(status=Status.RUNNING, total=10, started_at=now), now=now)
    assert started.rate is None and started.eta_display == "–"
    done = RescoreJob(
        status=Status.SUCCEEDED,
        processed=0,
        total=0,
        started_at=now - timedelta(seconds=4),
        finished_at=now - timedelta(seconds=1),
    )
    assert job_progress(done, now=now).percent == 100
    assert job_progress(done, now=now).elapsed_display == "3 s"
    assert duration_display(3725) == "1 h 02 min"


# --- cancelling -------------------------------------------------------------------------
def test_cancel_button_then_a_second_cancel_is_an_error_message(scoring_staff_client, challenge):
    job = setup_services.challenge_rescore(challenge=challenge)
    response = scoring_staff_client.post(cancel_url(job), follow=True)
    assert response.status_code == 200
    assert f"Cancelled rescore job #{job.pk}." in messages_of(response)
    job.refresh_from_db()
    assert job.status == Status.CANCELLED
    assert "Cancel job" not in response.text  # no button for a finished job
    challenge.refresh_from_db()
    assert challenge.active_version.number == 1  # unchanged

    again = scoring_staff_client.post(cancel_url(job), follow=True)
    assert again.status_code == 200
    [message] = messages_of(again)
    assert "only a queued or running job can be cancelled" in message
    assert [m.level_tag for m in again.context["messages"]] == ["error"]


def test_cancel_action_reports_finished_jobs(admin_client, challenge):
    old = setup_services.challenge_rescore(challenge=challenge)
    new = setup_services.challenge_rescore(challenge=challenge)  # supersedes (cancels) the old one
    response = admin_client.post(
        admin_url("rescorejob"),
        {"action": "cancel_selected", "_selected_action": [old.pk, new.pk]},
        follow=True,
    )
    assert response.status_code == 200
    texts = messages_of(response)
    ended = f"Rescore job {old.pk} has already been cancelled"
    assert any(t.startswith(ended) for t in texts), texts
    assert any(t.startswith("Cancelled") and f">job #{new.pk}</a>" in t for t in texts), texts
    new.refresh_from_db()
    assert new.status == Status.CANCELLED


def test_cancel_is_refused_to_non_staff(plain_client, challenge):
    job = setup_services.challenge_rescore(challenge=challenge)
    for client in (Client(), plain_client):
        response = client.post(cancel_url(job))
        assert response.status_code == 302 and response.url.startswith(reverse("admin:login"))
    job.refresh_from_db()
    assert job.status == Status.QUEUED


# --- failures ---------------------------------------------------------------------------
def test_failures_link_lists_the_failed_attempts_with_their_error(
    admin_client, django_capture_on_commit_callbacks
):
    with registry().temporarily("t.tokens", "tests.plugins:TokensScorer"):
        made = make_challenge(scoring_strategy="custom", scoring_plugin_id="t.tokens")
        [bad, good] = record(
            made, attempt_input("a", tokens_total=13), attempt_input("b", tokens_total=5)
        )
        with django_capture_on_commit_callbacks(execute=True):
            admin_client.post(
                admin_url("challenge"),
                {"action": "rescore_selected", "_selected_action": [made.pk]},
            )
        job = RescoreJob.objects.get(challenge=made)
        assert (job.status, job.processed, job.failed) == (Status.SUCCEEDED, 2, 1)

        failures = admin_url("attemptscore") + f"?version={job.version_id}&amp;has_error=yes"
        jobs_page = admin_client.get(admin_url("rescorejob")).text
        assert f'<a href="{failures}">1 failure</a>' in jobs_page
        assert f'href="{failures}"' in admin_client.get(job_url(job)).text
        versions_page = admin_client.get(admin_url("scoringversion")).text
        assert f'<a href="{failures}">1 failure</a>' in versions_page

        listing = admin_client.get(
            admin_url("attemptscore"), {"version": job.version_id, "has_error": "yes"}
        )
    assert listing.status_code == 200
    rows = list(listing.context["cl"].result_list)
    assert [row.attempt_id for row in rows] == [bad.attempt.pk]
    assert "unlucky" in rows[0].error and "unlucky" in listing.text
    assert admin_url("attempt", "change", bad.attempt.pk) in listing.text
    assert f"{made.name} v{job.version.number}" in listing.text  # the version filter
    page = admin_client.get(admin_url("attemptscore", "change", rows[0].pk))
    assert page.status_code == 200 and "unlucky" in page.text
    assert good.attempt.pk not in [r.attempt_id for r in rows]


def test_failures_are_not_linked_without_permission_to_see_them(
    admin_client, client, django_user_model, challenge
):
    job = setup_services.challenge_rescore(challenge=challenge)
    RescoreJob.objects.filter(pk=job.pk).update(failed=3)
    watcher = django_user_model.objects.create_user("watcher", password="pw", is_staff=True)
    watcher.user_permissions.add(
        *Group.objects.get(name="Scoring staff").permissions.exclude(codename="view_attemptscore")
    )
    client.force_login(watcher)
    page = client.get(admin_url("rescorejob")).text
    assert "3 failures" in page and "attemptscore" not in page
    failures = {"version": job.version_id, "has_error": "yes"}
    assert client.get(admin_url("attemptscore"), failures).status_code == 403


def test_scores_list_filters_do_not_break_on_bad_input(admin_client, challenge):
    version = challenge.active_version
    for query in (
        "?version=nope",
        f"?version={version.pk}",
        f"?version__challenge__id__exact={challenge.pk}",
        "?has_error=no",
        "?has_error=yes",
    ):
        response = admin_client.get(admin_url("attemptscore") + query)
        assert response.status_code in (200, 302), query
    response = admin_client.get(admin_url("attemptscore") + f"?has_error=no&version={version.pk}")
    assert response.context["cl"].result_count == 2


def test_scores_and_versions_lists_render_in_a_bounded_number_of_queries(
    admin_client, django_assert_max_num_queries
):
    made = make_challenge(scoring_strategy="fastest")
    record(made, *(attempt_input(f"p{i}", elapsed_ms=i + 1) for i in range(25)))
    for _ in range(3):
        rescoring.job_run_inline(job=setup_services.challenge_rescore(challenge=made))
    version = made.versions.order_by("-number").first()
    with django_assert_max_num_queries(8):
        scores = admin_client.get(admin_url("attemptscore") + f"?version={version.pk}")
    assert scores.context["cl"].result_count == 25
    with django_assert_max_num_queries(6):
        versions = admin_client.get(admin_url("scoringversion"))
    assert versions.context["cl"].result_count == 4
