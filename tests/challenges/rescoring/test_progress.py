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


@pytest.mark.parametrize(
    ("per_row_s", "sizes"),
    [
        (1e-6, [10, rescoring.STREAM_BATCH, rescoring.STREAM_BATCH]),  # a built-in plugin
        (0.05, [10, 20, 20]),  # a slow snippet: about BATCH_TARGET_S per batch
        (1 / 512, [10, 40, 160, 512, 512]),  # 20 ms for the first 10: step by step
    ],
)
def test_batches_grow_to_the_scorers_pace(per_row_s, sizes, monkeypatch):
    """A fast scorer's second batch is a full one (no ramp of small transactions each
    chunk); a slow one grows at most four times a batch, towards BATCH_TARGET_S."""
    clock = [0.0]
    monkeypatch.setattr(rescoring.time, "perf_counter", lambda: clock[0])
    batches = rescoring._Batches(0, first_id=0, last_id=0, every=[(i,) for i in range(10**5)])
    seen = []
    with batches.reading() as next_batch:
        for _ in sizes:
            batch = next_batch()
            started = clock[0]
            seen.append(len(batch))
            clock[0] += len(batch) * per_row_s
            batches.took_since(started)
    assert seen == sizes


def test_a_chunk_read_batch_by_batch_scores_its_own_attempts_once(monkeypatch):
    """A plugin's chunk is read a batch at a time (keyset on the id), with another
    challenge's attempts between its own: each of its attempts is scored once, and none
    of the other's."""
    from challenges.leaderboards import bulk
    from challenges.models import AttemptScore

    ours, theirs = make_challenge(**WEIGHTED_SEED), make_challenge(**WEIGHTED_SEED)
    for i in range(30):
        record(ours, attempt_input(f"p{i}", rating=i % 10))
        record(theirs, attempt_input(f"q{i}", rating=i % 10))
    monkeypatch.setattr(rescoring, "_send", lambda job: None)
    monkeypatch.setattr(rescoring, "STREAM_BATCH", 7)
    reads = []
    real = bulk.attempt_rows

    def spy(**kwargs):
        reads.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(bulk, "attempt_rows", spy)
    job = setup_services.challenge_rescore(challenge=ours)
    for chunk in job.chunks.all():
        rescoring.chunk_run(chunk_id=chunk.pk, finalize=False)
    assert [r["limit"] for r in reads] == [10, 7, 7, 7]  # 10 + 7 + 7 + the last 6
    assert {r["challenge_id"] for r in reads} == {ours.pk}
    scored = AttemptScore.objects.filter(version=job.version)
    assert scored.count() == 30
    assert set(scored.values_list("attempt__challenge_id", flat=True)) == {ours.pk}
