"""The Celery app. The broker comes from settings (CELERY_BROKER_URL).

A worker process, once started, freezes what loading the app made (as config/wsgi.py
does) and runs the cyclic collector between tasks, never inside one: a rescore chunk's
hundreds of thousands of short-lived tuples cost the collector a tenth of a rescore."""

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("podium")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.worker_process_init.connect
def process_setup(**_: object) -> None:
    gc.freeze()
    signals.task_prerun.connect(_collector_off, weak=False)
    signals.task_postrun.connect(_collector_on, weak=False)


def _collector_off(**_: object) -> None:
    gc.disable()


def _collector_on(**_: object) -> None:
    gc.enable()


@contextmanager
def as_a_task() -> Iterator[None]:
    """The collector as a worker has it during a task, for work run in a process of its
    own outside Celery (``manage.py rescore --inline``, bench/rescore.py)."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
