"""The rescore's batch writer on PostgreSQL (issue 16): batches that queue while it writes
go in one transaction, and none is lost, doubled or left out of the chunk's count; the
GIL switch interval it shortens is given back."""

from __future__ import annotations

import sys
import time

import pytest
from django.db import connection

from challenges.leaderboards import scores
from challenges.models import AttemptScore, RescoreJob
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from tests.factories import attempt_input, make_challenge, record

pytestmark = pytest.mark.django_db(transaction=True)


def test_queued_batches_are_written_together_and_every_attempt_once(monkeypatch, settings):
    if connection.vendor != "postgresql":
        pytest.skip("the threaded writer is PostgreSQL's: this run uses sqlite")
    settings.PODIUM_SCORING_CHUNK = 5000
    challenge = make_challenge(
        scoring_strategy="custom", scoring_plugin_id="builtin.weighted_scorer"
    )
    record(challenge, *[attempt_input(f"p{i % 97}", tokens_total=i) for i in range(3000)])
    monkeypatch.setattr(rescoring, "_send", lambda job: None)
    monkeypatch.setattr(rescoring, "FIRST_BATCH", 50)
    monkeypatch.setattr(rescoring, "STREAM_BATCH", 100)  # many small batches
    writes: list[int] = []
    put = scores.scores_put

    def slow_put(*, batches):  # a slow database: the scoring thread queues batches meanwhile
        writes.append(len(batches))
        time.sleep(0.05)
        return put(batches=batches)

    monkeypatch.setattr(scores, "scores_put", slow_put)
    interval = sys.getswitchinterval()
    job = setup_services.challenge_rescore(challenge=challenge)
    for chunk_id in job.chunks.values_list("pk", flat=True):
        rescoring.chunk_run(chunk_id=chunk_id)

    assert max(writes) > 1, writes  # queued batches went in one transaction
    assert sys.getswitchinterval() == interval
    job.refresh_from_db()
    assert job.status == RescoreJob.Status.SUCCEEDED and job.processed == 3000
    rows = AttemptScore.objects.filter(version=job.version)
    assert rows.count() == 3000 == rows.values("attempt_id").distinct().count()
