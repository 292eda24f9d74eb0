"""The rescore watchdog (issue 13, finding 4): jobs whose progress stopped are resumed
without waiting for a worker restart or the broker's visibility timeout; jobs in
progress are not sent twice."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from challenges.models import RescoreChunk, RescoreJob
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from challenges.tasks import rescore_watchdog
from tests.factories import attempt_input, make_challenge, record

pytestmark = pytest.mark.django_db
Status = RescoreJob.Status


def _job(monkeypatch, n: int = 3) -> RescoreJob:
    monkeypatch.setattr(rescoring, "_send", lambda job: None)  # the broker was away
    challenge = make_challenge(scoring_strategy="fewest_tokens")
    record(challenge, *[attempt_input(f"p{i}", tokens_total=i) for i in range(n)])
    return setup_services.challenge_rescore(challenge=challenge)


def _age(job: RescoreJob, seconds: float) -> None:
    past = timezone.now() - timedelta(seconds=seconds)
    RescoreJob.objects.filter(pk=job.pk).update(created_at=past)
    RescoreChunk.objects.filter(job=job).update(heartbeat_at=past)


def test_a_job_queued_while_the_broker_was_down_is_sent_once_it_is_stale(monkeypatch):
    job = _job(monkeypatch)
    sent: list[int] = []
    assert rescoring.jobs_resume(send_dispatch=sent.append, stalled_for_s=60) == []
    _age(job, 61)
    assert rescoring.jobs_resume(send_dispatch=sent.append, stalled_for_s=60) == [job.pk]
    assert sent == [job.pk]


def test_a_running_job_with_a_recent_heartbeat_is_left_alone(monkeypatch):
    job = _job(monkeypatch)
    _age(job, 600)
    RescoreJob.objects.filter(pk=job.pk).update(status=Status.RUNNING)
    RescoreChunk.objects.filter(job=job).update(heartbeat_at=timezone.now())  # a batch
    assert rescoring.jobs_resume(send_dispatch=lambda pk: None, stalled_for_s=60) == []
    RescoreChunk.objects.filter(job=job).update(heartbeat_at=timezone.now() - timedelta(0, 61))
    assert rescoring.jobs_resume(send_dispatch=lambda pk: None, stalled_for_s=60) == [job.pk]


def test_the_watchdog_task_finishes_a_stalled_job(monkeypatch):
    job = _job(monkeypatch)
    _age(job, settings.PODIUM_RESCORE_STALL_S + 1)
    rescore_watchdog.delay()  # eager: dispatch, chunks and the switch run here
    job.refresh_from_db()
    assert job.status == Status.SUCCEEDED, job.error
    assert job.challenge.active_version_id == job.version_id


def test_the_watchdog_is_scheduled():
    entry = settings.CELERY_BEAT_SCHEDULE["rescore-watchdog"]
    assert entry["task"] == "challenges.tasks.rescore_watchdog"
    assert entry["schedule"] <= settings.PODIUM_RESCORE_STALL_S
