"""Transient errors (issue 13, finding 3): retried in tasks, 503 with Retry-After on the
web, never a 500 and never a failed job; connections are health-checked."""

from __future__ import annotations

import psycopg
import pytest
from django.conf import settings
from django.db import IntegrityError, OperationalError, close_old_connections, connection

from challenges.ingestion import services
from challenges.leaderboards import scores
from challenges.models import Attempt, Challenge, RescoreJob
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from challenges.tasks import rescore_chunk
from config.transient import is_database_error, is_transient, retry_transient
from tests.factories import attempt_input, make_challenge, record
from tests.urls import attempts_url, page_url


def test_transient_errors_are_told_from_the_others():
    assert is_transient(OperationalError("server closed the connection unexpectedly"))
    assert is_transient(psycopg.errors.DeadlockDetected("deadlock detected"))
    assert is_transient(psycopg.errors.SerializationFailure("could not serialize"))
    assert is_transient(psycopg.OperationalError("consuming input failed"))
    wrapped = RuntimeError("while writing")
    wrapped.__cause__ = psycopg.OperationalError("terminating connection")
    assert is_transient(wrapped)
    assert not is_transient(IntegrityError("duplicate key"))
    assert not is_transient(ValueError("bad"))


def test_retry_transient_tries_again_and_gives_up_on_other_errors():
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise psycopg.errors.DeadlockDetected("deadlock detected")
        return "done"

    assert retry_transient(flaky, tries=3, first_wait_s=0.001) == "done"
    with pytest.raises(IntegrityError):
        retry_transient(lambda: (_ for _ in ()).throw(IntegrityError("x")), first_wait_s=0.001)


def test_connection_health_checks_are_on():
    assert settings.DATABASES["default"]["CONN_HEALTH_CHECKS"] is True


@pytest.mark.django_db
def test_a_request_meeting_a_deadlock_gets_503_with_retry_after(integration_api, monkeypatch):
    challenge = make_challenge()

    def deadlocked(**kwargs):
        raise OperationalError("deadlock detected")

    monkeypatch.setattr(services, "attempts_record", deadlocked)
    response = integration_api.post(
        attempts_url(challenge.pk), {"player": "a", "succeeded": True}, format="json"
    )
    assert response.status_code == 503
    assert response["Retry-After"] == "1"
    assert "try again" in response.json()["detail"]
    assert not Attempt.objects.exists()


@pytest.mark.django_db
def test_a_page_meeting_a_lost_connection_gets_503(client, monkeypatch):
    from challenges.leaderboards import selectors

    def lost(**kwargs):
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(selectors, "challenges_listed", lost, raising=False)
    monkeypatch.setattr(selectors, "challenge_list", lost, raising=False)
    challenge = make_challenge(is_active=True)
    monkeypatch.setattr(selectors, "leaderboard_page", lost)
    response = client.get(page_url(challenge.slug))
    assert response.status_code == 503
    assert response["Retry-After"] == "1"


@pytest.mark.django_db(transaction=True)
def test_a_request_after_the_database_dropped_the_kept_connection_reconnects():
    """What a web worker does at each request (Django's test client skips it): the
    connection kept since the last request (CONN_MAX_AGE) was closed by the server (a
    database restart); with health checks, the first query reconnects instead of
    failing. Before: the first request of every web worker was a 500."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL: a server-side terminated session")
    make_challenge(is_active=True)
    close_old_connections()  # a request ends
    pid = connection.connection.info.backend_pid  # kept for the next request
    with psycopg.connect(_dsn(), autocommit=True) as other:
        # With a timeout it returns once the session has ended (not when it was only
        # signalled): the next request then finds its FATAL notice on the socket.
        other.execute("SELECT pg_terminate_backend(%s, 5000)", [pid])
    close_old_connections()  # the next request starts (request_started)
    assert Challenge.objects.count() == 1


def _dsn() -> str:
    db = connection.settings_dict
    host, port = db["HOST"] or "127.0.0.1", db["PORT"] or 5432
    return f"host={host} port={port} user={db['USER']} dbname={db['NAME']}"


@pytest.mark.django_db(transaction=True)
def test_a_chunk_meeting_lost_connections_is_retried_not_failed(monkeypatch, settings):
    """A raw psycopg error from the COPY path, more times than the batch's own retries:
    the task retries (eagerly here) and the job succeeds. Before: the job failed."""
    settings.PODIUM_SCORING_CHUNK = 100
    challenge = make_challenge(
        scoring_strategy="custom", scoring_plugin_id="builtin.weighted_scorer"
    )
    record(challenge, *[attempt_input(f"p{i}", tokens_total=10 + i) for i in range(5)])
    monkeypatch.setattr(rescoring, "_send", lambda job: None)
    monkeypatch.setattr("config.transient.time.sleep", lambda s: None)
    job = setup_services.challenge_rescore(challenge=challenge)
    original = scores.scores_put
    calls = []

    def dropping(**kwargs):
        calls.append(1)
        if len(calls) <= 4:
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        return original(**kwargs)

    monkeypatch.setattr(scores, "scores_put", dropping)
    rescore_chunk.apply(args=[job.chunks.get().pk], throw=False)  # eager: retries inline
    assert len(calls) == 5
    job.refresh_from_db()
    assert job.status == RescoreJob.Status.SUCCEEDED, job.error
    assert job.processed == 5


@pytest.mark.django_db
def test_a_read_that_cannot_reach_the_database_is_tried_again_before_a_503(
    client, integration_api, monkeypatch
):
    """A pooler restarting refuses connections for a moment (bench/cluster.py restarts
    PgBouncer): a page or API read is run again after short waits and answered, not
    given a 503; a write is not run again; a database away for longer is still a 503."""
    from challenges.leaderboards import selectors
    from config import middleware

    monkeypatch.setattr(middleware, "READ_RETRY_WAITS_S", (0, 0, 0))
    challenge = make_challenge(is_active=True)
    real, calls = selectors.board_page, []

    def refused_twice(**kwargs):
        calls.append(1)
        if len(calls) <= 2:
            raise psycopg.OperationalError("connection failed: Connection refused")
        return real(**kwargs)

    monkeypatch.setattr(selectors, "board_page", refused_twice)
    assert client.get(page_url(challenge.slug)).status_code == 200
    assert len(calls) == 3

    def refused(**kwargs):
        calls.append(1)
        raise psycopg.OperationalError("connection failed: Connection refused")

    calls.clear()
    monkeypatch.setattr(selectors, "board_page", refused)
    response = client.get(page_url(challenge.slug) + "?page=1")
    assert (response.status_code, response["Retry-After"], len(calls)) == (503, "1", 4)

    calls.clear()
    monkeypatch.setattr(services, "attempts_record", refused)
    body = {"player": "a", "succeeded": True}
    response = integration_api.post(attempts_url(challenge.pk), body, format="json")
    assert (response.status_code, len(calls)) == (503, 1)  # a write: not run again here
    assert not is_database_error(ConnectionError("the broker"))  # nor a read the broker failed


@pytest.mark.django_db(transaction=True)
def test_the_health_check_asks_the_server_nothing_and_sees_a_terminated_session():
    """CONN_HEALTH_CHECKS' check (config/postgresql/base.py) polls the socket: a live
    idle connection passes without a query sent, one the server terminated fails."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL: a server-side terminated session")
    import time

    assert settings.DATABASES["default"]["ENGINE"] == "config.postgresql"
    connection.ensure_connection()
    raw = connection.connection
    sent = []
    raw.add_notice_handler(lambda notice: sent.append(notice))
    real_cursor = raw.cursor
    raw.cursor = lambda *a, **k: sent.append("cursor") or real_cursor(*a, **k)
    try:
        assert connection.is_usable() and sent == []
    finally:
        raw.cursor = real_cursor
    with psycopg.connect(_dsn(), autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [raw.info.backend_pid])
    deadline = time.monotonic() + 5
    while connection.is_usable() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not connection.is_usable()
    connection.close()
