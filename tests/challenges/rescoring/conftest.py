"""Fixtures of the rescoring tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def runs_queued(monkeypatch):
    """Batch runs queued (the task is not run: the tests run it when they choose)."""
    from challenges import tasks

    queued: list[tuple] = []
    monkeypatch.setattr(
        tasks.batch_score, "apply_async", lambda args, countdown: queued.append((args, countdown))
    )
    return queued
