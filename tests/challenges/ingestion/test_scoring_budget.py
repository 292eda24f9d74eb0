"""A scoring budget per request (docs/api.md; issue 12, finding 4): an
attempts request scores inline only while PODIUM_SCORING_BUDGET_MS lasts; the rest are
stored, answered ``score_status: "pending"``, scored by a task queued on commit, and on
the leaderboard once scored. No scorer runs inside a database transaction."""

from __future__ import annotations

import time

import pytest

from challenges.ingestion import budget
from challenges.leaderboards import changes
from challenges.models import Attempt, AttemptScore, LeaderboardEntry
from scoring.project_registry import registry
from tests.challenges.ingestion import text_plugins
from tests.factories import make_challenge
from tests.urls import attempts_url, leaderboard_url, schema_url

SLEEP = 0.3


def sleepy_attempts(n: int) -> list[dict]:
    # tests.plugins.Sleeper sleeps config["seconds"] when rating == 0.
    return [{"player": f"p{i}", "succeeded": True, "rating": 0} for i in range(n)]


@pytest.fixture
def sleeper(db):
    with registry().temporarily("t.sleeper", "tests.plugins:Sleeper"):
        yield make_challenge(
            scoring_strategy="custom",
            scoring_plugin_id="t.sleeper",
            scoring_config={"seconds": SLEEP},
        )


@pytest.mark.slow
def scoring_tasks(callbacks: list) -> list:
    """The on-commit callbacks that queue scoring (not the boards' "may have changed"
    notice, which the events capability listens to)."""
    return [c for c in callbacks if not isinstance(c, changes._Touched)]


@pytest.mark.django_db
def test_a_bulk_to_a_slow_plugin_is_answered_within_the_budget(
    settings, integration_api, sleeper, django_capture_on_commit_callbacks
):
    settings.PODIUM_SCORING_BUDGET_MS = 600
    n = 30  # 9 s of scoring without a budget
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        began = time.monotonic()
        response = integration_api.post(attempts_url(sleeper.pk), sleepy_attempts(n), format="json")
        took = time.monotonic() - began
    assert response.status_code == 201, response.content
    body = response.json()
    statuses = [a["score_status"] for a in body]
    scored = statuses.count("scored")
    # Within the budget plus one slice of attempts started before it ran out (the slices
    # are sized from the time per attempt so far) plus request overhead.
    assert took < 0.6 + 2 * SLEEP + 1.0, took
    assert 1 <= scored < n and statuses.count("pending") == n - scored, statuses
    assert statuses == ["scored"] * scored + ["pending"] * (n - scored)  # in order
    for attempt in body:
        if attempt["score_status"] == "pending":
            assert attempt["score"] is None and attempt["details"] is None
    assert Attempt.objects.filter(challenge=sleeper).count() == n  # every attempt stored
    board = integration_api.get(leaderboard_url(sleeper.pk)).json()
    assert board["count"] == scored  # pending attempts are not on the leaderboard

    # The queued task (run here as a worker would, after the commit) scores the rest.
    assert len(scoring_tasks(callbacks)) == 1
    with registry().temporarily("t.sleeper", "tests.plugins:Sleeper"):
        scoring_tasks(callbacks)[0]()
    version = sleeper.active_version
    assert AttemptScore.objects.filter(version=version).count() == n
    assert integration_api.get(leaderboard_url(sleeper.pk)).json()["count"] == n
    assert budget.attempts_pending_count(challenge=sleeper) == 0


@pytest.mark.django_db
def test_a_zero_budget_leaves_plugin_attempts_pending_but_scores_builtins(
    settings, integration_api, sleeper, django_capture_on_commit_callbacks
):
    settings.PODIUM_SCORING_BUDGET_MS = 0
    fast = make_challenge(scoring_strategy="highest_rating")
    body = {"player": "a", "succeeded": True, "rating": 3}
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        plugin = integration_api.post(attempts_url(sleeper.pk), body, format="json").json()
        builtin = integration_api.post(attempts_url(fast.pk), body, format="json").json()
    assert plugin["score_status"] == "pending" and plugin["score"] is None
    assert builtin["score_status"] == "scored" and builtin["score"] == 3.0
    assert len(scoring_tasks(callbacks)) == 1  # only the plugin's attempt waits for a worker


@pytest.mark.django_db
def test_statuses_scored_and_failed(integration_api):
    with registry().temporarily("t.tokens", "tests.plugins:TokensScorer"):
        challenge = make_challenge(scoring_strategy="custom", scoring_plugin_id="t.tokens")
        body = [
            {"player": "a", "succeeded": True, "tokens_total": 13},  # the plugin raises
            {"player": "b", "succeeded": True, "tokens_total": 7},
        ]
        response = integration_api.post(attempts_url(challenge.pk), body, format="json")
    failed, scored = response.json()
    assert (failed["score_status"], failed["score"]) == ("failed", None)
    assert (scored["score_status"], scored["score"]) == ("scored", 7.0)
    one = make_challenge(scoring_strategy="fastest")
    lost = {"player": "c", "succeeded": False}  # not counted by the strategy: still scored
    response = integration_api.post(attempts_url(one.pk), lost, format="json")
    assert response.json()["score_status"] == "scored" and response.json()["score"] is None


@pytest.mark.django_db
def test_the_pending_task_is_idempotent(
    settings, integration_api, sleeper, django_capture_on_commit_callbacks
):
    settings.PODIUM_SCORING_BUDGET_MS = 0
    with django_capture_on_commit_callbacks(execute=False):
        integration_api.post(attempts_url(sleeper.pk), sleepy_attempts(3)[:1], format="json")
    Attempt.objects.update(rating=1)  # fast from here on
    with registry().temporarily("t.sleeper", "tests.plugins:Sleeper"):
        assert budget.attempts_score_pending(challenge_id=sleeper.pk) == 1
        assert budget.attempts_score_pending(challenge_id=sleeper.pk) == 0
    assert AttemptScore.objects.count() == 1
    assert LeaderboardEntry.objects.filter(version=sleeper.active_version).count() == 1


@pytest.mark.django_db(transaction=True)
def test_no_scorer_runs_inside_a_transaction(settings, admin_api):
    """Inline scoring, and the task's: the probe plugin runs in this process and sees
    the connection's state (a transactional test: nothing wraps it in a transaction; the
    admin records, as the Integrations group of a data migration is flushed here)."""
    settings.PODIUM_SCORING_BUDGET_MS = 60_000
    text_plugins.SEEN_IN_TRANSACTION.clear()
    entrypoint = "tests.challenges.ingestion.text_plugins:InProcessTransactionProbe"
    with registry().temporarily("t.probe", entrypoint):
        registry()._builtin.add("t.probe")
        challenge = make_challenge(scoring_strategy="custom", scoring_plugin_id="t.probe")
        body = [{"player": f"p{i}", "succeeded": True, "rating": i} for i in range(5)]
        response = admin_api.post(attempts_url(challenge.pk), body, format="json")
        assert response.status_code == 201
        settings.PODIUM_SCORING_BUDGET_MS = 0
        response = admin_api.post(attempts_url(challenge.pk), body, format="json")
        assert {a["score_status"] for a in response.json()} == {"pending"}
        # The task ran eagerly on commit (CELERY_TASK_ALWAYS_EAGER in tests).
        assert budget.attempts_pending_count(challenge=challenge) == 0
    assert len(text_plugins.SEEN_IN_TRANSACTION) == 10
    assert not any(text_plugins.SEEN_IN_TRANSACTION)


def test_schema_documents_score_status(anon_api):
    schema = anon_api.get(schema_url()).json()
    schemas = schema["components"]["schemas"]
    recorded = schemas["AttemptOut"]
    status = recorded["properties"]["score_status"]
    ref = (status.get("allOf") or [status])[0].get("$ref", "")
    enum = schemas[ref.rsplit("/", 1)[-1]]["enum"] if ref else status["enum"]
    assert enum == ["scored", "failed", "pending"]
    assert "pending" in status["description"]
    assert "score_status" in recorded["required"]


@pytest.mark.django_db
def test_a_broker_outage_leaves_attempts_pending_and_a_sweep_finds_them(
    settings, integration_api, sleeper, monkeypatch, django_capture_on_commit_callbacks, caplog
):
    from challenges import tasks

    def broker_down(*args, **kwargs):
        raise ConnectionError("broker unreachable")

    settings.PODIUM_SCORING_BUDGET_MS = 0
    monkeypatch.setattr(tasks.attempts_score_pending, "delay", broker_down)
    with django_capture_on_commit_callbacks(execute=True):
        response = integration_api.post(attempts_url(sleeper.pk), sleepy_attempts(2), format="json")
    assert response.status_code == 201  # stored, answered; the task could not be queued
    assert [a["score_status"] for a in response.json()] == ["pending", "pending"]
    assert "Could not queue the scoring of 2 pending attempts" in caplog.text
    monkeypatch.undo()
    Attempt.objects.update(rating=1)  # fast from here on
    # A worker's start sweeps every challenge (the task runs eagerly here).
    with registry().temporarily("t.sleeper", "tests.plugins:Sleeper"):
        assert budget.pending_sweep() == 1
    assert budget.attempts_pending_count(challenge=sleeper) == 0
    assert integration_api.get(leaderboard_url(sleeper.pk)).json()["count"] == 2


@pytest.mark.slow
@pytest.mark.django_db
def test_pending_scoring_takes_turns_with_other_challenges(
    settings, integration_api, sleeper, monkeypatch, django_capture_on_commit_callbacks
):
    """Issue 28, finding 10: a task scored a challenge's whole backlog of slow attempts
    (20 × 1.5 s held a worker for 30 s while another challenge's work waited). It now
    scores for a time slice, then queues the rest behind what else is waiting."""
    settings.PODIUM_SCORING_BUDGET_MS = 0
    with django_capture_on_commit_callbacks(execute=False):
        response = integration_api.post(attempts_url(sleeper.pk), sleepy_attempts(8), format="json")
    assert response.status_code == 201
    turns: list[dict] = []
    monkeypatch.setattr(budget, "pending_enqueue", lambda **kw: turns.append(kw))
    with registry().temporarily("t.sleeper", "tests.plugins:Sleeper"):
        began = time.monotonic()
        first = budget.attempts_score_pending(challenge_id=sleeper.pk, seconds=0.5)
        took = time.monotonic() - began
        assert 1 <= first < 8 and took < 0.5 + 2 * SLEEP + 0.5, (first, took)
        assert turns == [{"challenge_id": sleeper.pk, "attempt_ids": None}]  # the rest queued
        done = first
        while turns:
            turns.clear()
            done += budget.attempts_score_pending(challenge_id=sleeper.pk, seconds=0.5)
    assert done == 8 and budget.attempts_pending_count(challenge=sleeper) == 0
    assert turns == []  # nothing left: no further turn


def test_the_task_scores_for_one_slice(settings, monkeypatch):
    from challenges import tasks

    settings.PODIUM_PENDING_SLICE_MS = 1234
    calls: list[dict] = []
    monkeypatch.setattr(budget, "attempts_score_pending", lambda **kw: calls.append(kw))
    tasks.attempts_score_pending(7, [1, 2])
    assert calls == [{"challenge_id": 7, "attempt_ids": [1, 2], "seconds": 1.234}]
