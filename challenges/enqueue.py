"""Handing work to the Celery workers: one function per task that the rooms below the
tasks queue (docs/architecture.md, "Enqueueing").

A task is looked up by name in Podium's app (``config.celery``; not Celery's current
app, which any ``Celery()`` made in the process replaces): this module imports no task
and sits below every room that queues work (tests/test_architecture.py). Not ``send_task``:
the registered task honours CELERY_TASK_ALWAYS_EAGER (the tests) and its own options.

One policy when the broker refuses a task (after Celery's own publishing retries): the
caller never fails. The refusal is logged with what picks the work up instead (each
function says it), and False is returned, so that a caller may release a claim. A caller
inside a transaction queues on commit (``transaction.on_commit``), never before.
"""

from __future__ import annotations

import logging
from typing import Any

from config.celery import app

logger = logging.getLogger(__name__)


def _send(name: str, *args: Any, countdown: float | None = None, lost: str) -> bool:
    task = app.tasks[f"challenges.tasks.{name}"]
    try:
        if countdown is None:
            task.delay(*args)
        else:
            task.apply_async(args, countdown=countdown)
    except Exception as exc:  # the broker is away; what the task does is not lost
        logger.warning("Could not queue %s (%s: %r).", lost, name, exc)
        return False
    return True


def rescore_dispatch(*, job_id: int) -> bool:
    return _send("rescore_dispatch", job_id, lost=f"rescore job {job_id}: the watchdog resumes it")


def attempts_score_pending(*, challenge_id: int, attempt_ids: list[int] | None) -> bool:
    count = "all" if attempt_ids is None else len(attempt_ids)
    lost = f"the scoring of {count} pending attempts of challenge {challenge_id}: swept later"
    return _send("attempts_score_pending", challenge_id, attempt_ids, lost=lost)


def batch_score(*, challenge_id: int, countdown: float) -> bool:
    lost = f"the batch run of challenge {challenge_id}: the next attempt schedules it"
    return _send("batch_score", challenge_id, countdown=countdown, lost=lost)


def ranking_refresh(*, version_id: int) -> bool:
    lost = f"the ranking refresh of version {version_id}: a reader recomputes it later"
    return _send("ranking_refresh", version_id, lost=lost)


def evaluation_refresh(*, challenge_id: int) -> bool:
    lost = f"the evaluation refresh of challenge {challenge_id}: the next reader asks again"
    return _send("evaluation_refresh", challenge_id, lost=lost)


def board_rebuild(*, kind: str, slug: str, query: str) -> bool:
    lost = f"the board rebuild of {slug} ({kind}): its reader builds it"
    return _send("board_rebuild", kind, slug, query, lost=lost)


def webhook_deliver(*, delivery_id: int) -> bool:
    lost = f"webhook delivery {delivery_id}: the periodic tick tries it when due"
    return _send("webhook_deliver", delivery_id, lost=lost)
