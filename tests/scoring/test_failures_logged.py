"""Every scorer failure is logged with its challenge, version, scorer, attempt id and
error; a burst of one failure repeated is summarised (issue 20)."""

from __future__ import annotations

import logging

import pytest

from challenges.ingestion import services
from challenges.models import Attempt
from scoring import failures
from scoring.project_registry import registry
from tests.factories import attempt_input, make_challenge


@pytest.fixture(autouse=True)
def _fresh_bursts():
    failures._bursts.clear()
    yield
    failures._bursts.clear()


def _records(caplog):
    return [r for r in caplog.records if r.name == "podium.scoring" and "failed" in r.msg]


def test_a_plugin_raising_is_logged_with_what_an_admin_needs(db, caplog):
    with registry().temporarily("t.tokens", "tests.plugins:TokensScorer"):
        challenge = make_challenge(scoring_strategy="custom", scoring_plugin_id="t.tokens")
        with caplog.at_level(logging.WARNING, logger="podium.scoring"):
            services.attempts_record(
                challenge=challenge,
                inputs=[attempt_input("a", tokens_total=13), attempt_input("b", tokens_total=2)],
            )

    [record] = _records(caplog)
    failed = Attempt.objects.get(player__external_id="a")
    assert record.levelno == logging.WARNING
    assert record.challenge_id == challenge.pk
    assert record.version == 1
    assert record.scorer == "custom:t.tokens"
    assert record.attempt_id == failed.pk
    assert record.error == "ValueError: unlucky"


def test_a_burst_is_summarised_not_logged_once_per_attempt(db, caplog):
    with registry().temporarily("t.tokens", "tests.plugins:TokensScorer"):
        challenge = make_challenge(scoring_strategy="custom", scoring_plugin_id="t.tokens")
        inputs = [attempt_input(f"p{i}", tokens_total=13) for i in range(50)]
        with caplog.at_level(logging.WARNING, logger="podium.scoring"):
            services.attempts_record(challenge=challenge, inputs=inputs)
            failures.failures_flush()

    records = _records(caplog)
    singles = [r for r in records if r.msg == "scorer failed"]
    [summary] = [r for r in records if "summary" in r.msg]
    assert len(singles) == failures.LIMIT
    assert summary.more_failures == 50 - failures.LIMIT
    assert summary.error == "ValueError: unlucky" and summary.challenge_id == challenge.pk


def test_a_summary_is_logged_when_the_window_ends(db, caplog, monkeypatch):
    with registry().temporarily("t.tokens", "tests.plugins:TokensScorer"):
        challenge = make_challenge(scoring_strategy="custom", scoring_plugin_id="t.tokens")
        clock = [1000.0]
        monkeypatch.setattr(failures, "_clock", lambda: clock[0])
        with caplog.at_level(logging.WARNING, logger="podium.scoring"):
            inputs = [attempt_input(f"p{i}", tokens_total=13) for i in range(10)]
            services.attempts_record(challenge=challenge, inputs=inputs)
            clock[0] += failures.WINDOW_S + 1
            services.attempts_record(challenge=challenge, inputs=[attempt_input("q")])

    [summary] = [r for r in _records(caplog) if "summary" in r.msg]
    assert summary.more_failures == 10 - failures.LIMIT
