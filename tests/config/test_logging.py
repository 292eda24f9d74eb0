"""Structured logs: events carry challenge, job and plugin ids and durations, in text or
JSON lines, and never a scorer's error text or the attempt's output."""

from __future__ import annotations

import io
import json
import logging

import pytest

from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from config.logging import TextFormatter, json_formatter
from scoring.project_registry import registry
from tests.factories import WEIGHTED_SEED, attempt_input, make_challenge, record


class Boom:
    def score(self, metrics, config, ctx):
        raise RuntimeError("SECRET-api-key-abc123 leaked in an exception")


def capture(formatter: logging.Formatter):
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.addHandler(handler)
    old_level = root.level
    root.setLevel(logging.INFO)
    return stream, lambda: (root.removeHandler(handler), root.setLevel(old_level))


@pytest.mark.django_db
def test_rescore_events_as_json_lines():
    stream, done = capture(json_formatter())
    try:
        setup = {k: v for k, v in WEIGHTED_SEED.items() if k != "name"}
        challenge = make_challenge(**setup)
        record(challenge, attempt_input("a", rating=5, output="private model output"))
        update = setup_services.challenge_update(
            challenge=challenge, data={"scoring_config": {"success_bonus": 5.0}}
        )
        rescoring.job_run_inline(job=update.job)
    finally:
        done()
    events = [json.loads(line) for line in stream.getvalue().splitlines()]
    by_message = {e["message"]: e for e in events if e["logger"].startswith("challenges")}
    queued = by_message["rescore queued"]
    assert queued["challenge_id"] == challenge.pk
    assert queued["job_id"] == update.job.pk
    assert queued["plugin_id"] == "builtin.weighted_scorer"
    assert queued["total"] == 1 and queued["level"] == "INFO" and queued["time"]
    chunk = by_message["rescore chunk done"]
    assert chunk["job_id"] == update.job.pk and chunk["duration_ms"] >= 0
    switched = by_message["rescore switched"]
    assert switched["processed"] == 1 and switched["failed"] == 0
    assert switched["rebuild_ms"] >= 0 and switched["switch_ms"] >= 0
    recorded = by_message["attempts recorded"]
    assert recorded["challenge_id"] == challenge.pk and recorded["attempts"] == 1
    assert "private model output" not in stream.getvalue()


@pytest.mark.django_db
def test_scorer_errors_are_counted_never_logged():
    stream, done = capture(TextFormatter())
    try:
        with registry().temporarily("t.boom", "tests.config.test_logging:Boom"):
            challenge = make_challenge(
                scoring_strategy="custom",
                scoring_plugin_id="t.boom",
                scoring_entrypoint="tests.config.test_logging:Boom",
            )
            (row,) = record(challenge, attempt_input("a"))
    finally:
        done()
    assert row.score.score is None  # recorded as a failure, with its error kept for admins
    text = stream.getvalue()
    assert f"attempts recorded challenge_id={challenge.pk} attempts=1 failed=1" in text
    assert "SECRET-api-key" not in text


def test_text_formatter_appends_fields():
    record = logging.LogRecord("x", logging.INFO, "f", 1, "hello", None, None)
    record.job_id = 7
    record.duration_ms = 1.5
    line = TextFormatter().format(record)
    assert line.endswith("INFO x hello job_id=7 duration_ms=1.5")


def test_settings_refuse_an_unknown_log_format(monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    from config.settings import env_choice

    monkeypatch.setenv("LOG_FORMAT", "xml")
    with pytest.raises(ImproperlyConfigured, match="LOG_FORMAT='xml' must be one of: text, json"):
        env_choice("LOG_FORMAT", "text", ("text", "json"))
