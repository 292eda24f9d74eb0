"""Helpers of the finalize tests: a job whose chunks are all done, not yet finalized."""

from __future__ import annotations

import pytest
from django.db import connection

from challenges.models import RescoreJob
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services


def job_with_chunks_done(challenge, monkeypatch) -> RescoreJob:
    monkeypatch.setattr(rescoring, "_send", lambda job: None)  # no eager run on commit
    job = setup_services.challenge_rescore(challenge=challenge)
    for chunk in job.chunks.all():
        rescoring.chunk_run(chunk_id=chunk.pk, finalize=False)
    job.refresh_from_db()
    assert job.status == RescoreJob.Status.RUNNING and job.chunks_done == job.chunks_total
    return job


def postgres_only(why: str = "concurrent sessions: PostgreSQL") -> None:
    if connection.vendor != "postgresql":
        pytest.skip(why)
