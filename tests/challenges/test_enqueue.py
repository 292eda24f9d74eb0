"""Handing work to the workers (``challenges.enqueue``): each function queues its task by
name with its arguments, and a broker that refuses a task never fails the caller."""

from __future__ import annotations

import logging

import pytest
from celery import Celery, current_app
from kombu.exceptions import OperationalError as BrokerError

from challenges import enqueue, tasks
from challenges.models import BatchState
from challenges.rescoring import batch
from config.celery import app
from tests.factories import make_challenge

CALLS = [
    (enqueue.rescore_dispatch, {"job_id": 7}, "rescore_dispatch", (7,), None),
    (
        enqueue.attempts_score_pending,
        {"challenge_id": 3, "attempt_ids": [1, 2]},
        "attempts_score_pending",
        (3, [1, 2]),
        None,
    ),
    (enqueue.batch_score, {"challenge_id": 3, "countdown": 2.0}, "batch_score", (3,), 2.0),
    (enqueue.ranking_refresh, {"version_id": 5}, "ranking_refresh", (5,), None),
    (enqueue.evaluation_refresh, {"challenge_id": 3}, "evaluation_refresh", (3,), None),
    (
        enqueue.board_rebuild,
        {"kind": "page", "slug": "s", "query": "q=1"},
        "board_rebuild",
        ("page", "s", "q=1"),
        None,
    ),
    (enqueue.webhook_deliver, {"delivery_id": 9}, "webhook_deliver", (9,), None),
]


def _task(name: str):
    return app.tasks[f"challenges.tasks.{name}"]


@pytest.mark.parametrize(("send", "kwargs", "name", "args", "countdown"), CALLS)
def test_each_function_queues_its_task_by_name(monkeypatch, send, kwargs, name, args, countdown):
    sent = []
    monkeypatch.setattr(_task(name), "apply_async", lambda a, **o: sent.append((tuple(a), o)))
    monkeypatch.setattr(_task(name), "delay", lambda *a: sent.append((a, {})))
    assert send(**kwargs) is True
    assert sent == [(args, {"countdown": countdown} if countdown else {})]


@pytest.mark.parametrize(("send", "kwargs", "name", "args", "countdown"), CALLS)
def test_a_broker_refusal_is_logged_never_raised(
    monkeypatch, caplog, send, kwargs, name, args, countdown
):
    def refused(*args, **kwargs):
        raise BrokerError("broker unreachable")

    monkeypatch.setattr(_task(name), "apply_async", refused)
    monkeypatch.setattr(_task(name), "delay", refused)
    with caplog.at_level(logging.WARNING, logger="challenges.enqueue"):
        assert send(**kwargs) is False
    assert "Could not queue" in caplog.text and name in caplog.text


@pytest.mark.parametrize(
    ("send", "name", "method", "args"),
    [
        (lambda: enqueue.ranking_refresh(version_id=5), "ranking_refresh", "delay", (5,)),
        # a web process's receiver sends this one from tasks.py itself
        (lambda: tasks._send_board_check(3, 1.0), "events_board_check", "apply_async", ((3,),)),
    ],
)
def test_tasks_go_through_podiums_app_whichever_app_is_current(
    monkeypatch, send, name, method, args
):
    """Any Celery() made in the process becomes Celery's current app (bench/_worker.py's
    ping did, and a board's rebuild requests went to a queue no worker read): a task
    still goes through Podium's app, to its broker and queue."""
    sent = []
    monkeypatch.setattr(_task(name), method, lambda *a, **kw: sent.append(a))
    elsewhere = Celery("elsewhere", broker="memory://")
    try:
        assert current_app.main == "elsewhere"  # the case this test is about
        send()
    finally:
        app.set_current()
        elsewhere.close()
    assert sent == [args]


@pytest.mark.django_db
def test_a_refused_batch_run_releases_its_claim(monkeypatch, django_capture_on_commit_callbacks):
    """Before, the refusal escaped the commit and the run stayed scheduled for ever: no
    later attempt could schedule it again."""
    challenge = make_challenge()
    monkeypatch.setattr(enqueue, "batch_score", lambda **kwargs: False)
    with django_capture_on_commit_callbacks(execute=True):
        assert batch.batch_request(challenge_id=challenge.pk)
    assert not BatchState.objects.get(pk=challenge.pk).scheduled
    sent = []
    monkeypatch.setattr(enqueue, "batch_score", lambda **kwargs: sent.append(kwargs) or True)
    with django_capture_on_commit_callbacks(execute=True):
        assert batch.batch_request(challenge_id=challenge.pk)  # scheduled again
    assert [kwargs["challenge_id"] for kwargs in sent] == [challenge.pk]
