"""Process-wide switches are set at a process's edge (issue 27): a Celery worker process
freezes what loading made and runs the cyclic collector between tasks, never inside one;
the GIL switch interval is short only while a rescore's writer thread runs."""

from __future__ import annotations

import ast
import gc
import sys
from pathlib import Path

import pytest
from celery import signals

from challenges.leaderboards import bulk
from config import celery as celery_config

APP = Path(__file__).resolve().parents[2] / "challenges"
SWITCHES = {("gc", "disable"), ("gc", "enable"), ("gc", "freeze"), ("sys", "setswitchinterval")}


def test_a_worker_process_freezes_and_runs_the_collector_between_tasks(monkeypatch):
    frozen = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(1))
    was_enabled = gc.isenabled()
    try:
        celery_config.process_setup()
        assert frozen == [1]
        signals.task_prerun.send(sender=None)
        assert not gc.isenabled()  # inside a task
        signals.task_postrun.send(sender=None)
        assert gc.isenabled()  # between tasks
    finally:
        signals.task_prerun.disconnect(celery_config._collector_off)
        signals.task_postrun.disconnect(celery_config._collector_on)
        (gc.enable if was_enabled else gc.disable)()


@pytest.mark.django_db(transaction=True)  # the thread connects as it starts
def test_the_writer_switch_interval_is_short_only_while_it_runs():
    was = sys.getswitchinterval()
    with bulk.writer_thread(lambda: None):
        assert sys.getswitchinterval() == min(was, bulk.WRITER_SWITCH_INTERVAL_S)
    assert sys.getswitchinterval() == was


def test_no_job_sets_a_process_wide_switch():
    """gc.disable/enable/freeze and sys.setswitchinterval: at a process edge (config/) or
    in the one named helper of the database module (bulk.writer_thread)."""
    found = []
    for path in sorted(APP.rglob("*.py")):
        if path == APP / "leaderboards" / "bulk.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and (node.value.id, node.attr)
                in {
                    ("gc", "disable"),
                    ("gc", "enable"),
                    ("gc", "freeze"),
                    ("sys", "setswitchinterval"),
                }
            ):
                found.append(f"{path.relative_to(APP)}:{node.lineno}: {node.value.id}.{node.attr}")
    assert found == []
