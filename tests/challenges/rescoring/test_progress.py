"""A rescore's progress moves with every batch written, not with every chunk (issue 28,
finding 18: "RUNNING 0/400" for ~16 s, then 400/400), with a rate and an estimate of
the time left in the API as in the admin; the count ends exact (no attempt counted
twice when the chunk is done)."""

from __future__ import annotations

import pytest

from challenges.models import RescoreJob
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from tests.factories import WEIGHTED_SEED, attempt_input, make_challenge, record

pytestmark = pytest.mark.django_db


@pytest.fixture
def challenge():
    challenge = make_challenge(**WEIGHTED_SEED)
    record(challenge, *[attempt_input(f"p{i}", rating=i % 10) for i in range(60)])
    return challenge


def test_progress_moves_with_each_batch(challenge, monkeypatch):
    monkeypatch.setattr(rescoring, "_send", lambda job: None)
    monkeypatch.setattr(rescoring, "FIRST_BATCH", 7)
    monkeypatch.setattr(rescoring, "STREAM_BATCH", 7)  # batches of 7: 9 writes
    seen: list[int] = []
    write = rescoring._batch_write

    def spy(chunk_id, batches):
        done = write(chunk_id, batches)
        seen.append(RescoreJob.objects.get(chunks__pk=chunk_id).processed)
        return done

    monkeypatch.setattr(rescoring, "_batch_write", spy)
    job = setup_services.challenge_rescore(challenge=challenge)
    assert job.chunks.count() == 1
    rescoring.chunk_run(chunk_id=job.chunks.get().pk, finalize=False)
    assert seen[:3] == [7, 14, 21]  # before the chunk is done
    job.refresh_from_db()
    assert (job.processed, job.total, job.chunks_done) == (60, 60, 1)


def test_a_chunk_run_twice_counts_its_attempts_once(challenge, monkeypatch):
    monkeypatch.setattr(rescoring, "_send", lambda job: None)
    job = setup_services.challenge_rescore(challenge=challenge)
    chunk = job.chunks.get()
    rescoring.chunk_run(chunk_id=chunk.pk, finalize=False)
    rescoring.chunk_run(chunk_id=chunk.pk, finalize=False)  # a redelivery: nothing to do
    job.refresh_from_db()
    assert job.processed == 60


def test_the_api_gives_a_rate_and_the_time_left(challenge, staff_api, monkeypatch):
    from django.urls import reverse

    monkeypatch.setattr(rescoring, "_send", lambda job: None)
    job = setup_services.challenge_rescore(challenge=challenge)
    body = staff_api.get(reverse("rescore-job-detail", args=[job.pk])).json()
    assert "rate" in body and "eta_seconds" in body
    rescoring.chunk_run(chunk_id=job.chunks.get().pk, finalize=False)
    body = staff_api.get(reverse("rescore-job-detail", args=[job.pk])).json()
    assert body["processed"] == 60 and body["rate"] > 0 and body["eta_seconds"] == 0
