"""Issue 13: rescoring survives faults, on a REAL Celery worker over Redis and
PostgreSQL. Each scenario ends with the same checks: every attempt sent is stored once,
every attempt has exactly one score under the active version, the public leaderboard
equals a brute-force reference, and the job ended within a bound.

Sizes are small (a few hundred attempts, chunks of 25) so the suite stays short; the
watchdog runs every second and resumes a job silent for 3 s (tests/realworker/conftest).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any

import pytest
from django.db import connection, transaction

from challenges.ingestion import services
from challenges.models import Attempt, AttemptScore, Challenge, RescoreJob
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from tests.factories import attempt_input, record
from tests.relay import Relay
from tests.urls import attempts_url

from .conftest import SKIP_REASON
from .test_rescore_worker import (
    FINISHED,
    challenge_with_attempts,
    job_state,
    public_board,
    switch_to_slow,
    wait_finished,
    wait_for,
    wait_mid_run,
)

pytestmark = [
    pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or ""),
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
]
Status = RescoreJob.Status
BOUND_S = 60.0  # every job here ends well within this, faults included


# --- the checks every scenario ends with ----------------------------------------------------
def assert_whole(
    client, challenge: Challenge, *, job_id: int, sent: int, scale: float, started: float
) -> None:
    took = time.monotonic() - started
    state = job_state(job_id)
    assert state["status"] == Status.SUCCEEDED, state
    assert took < BOUND_S, f"the job took {took:.0f} s"
    challenge = Challenge.objects.get(pk=challenge.pk)
    job = RescoreJob.objects.get(pk=job_id)
    assert challenge.active_version_id == job.version_id
    tokens = dict(Attempt.objects.filter(challenge=challenge).values_list("pk", "tokens_total"))
    assert len(tokens) == sent, f"{len(tokens)} attempts stored, {sent} sent"
    rows = list(
        AttemptScore.objects.filter(version_id=job.version_id).values_list("attempt_id", "score")
    )
    assert len(rows) == len({a for a, _ in rows}), "an attempt has two scores"
    assert dict(rows) == {pk: t * scale for pk, t in tokens.items()}, "scores missing or wrong"
    best: dict[str, float] = {}
    for ext, t in Attempt.objects.filter(challenge=challenge).values_list(
        "player__external_id", "tokens_total"
    ):
        best[ext] = max(best.get(ext, float("-inf")), t * scale)
    board = public_board(client, challenge)
    assert board["version"] == job.version.number
    assert {r["player"]: r["score"] for r in board["results"]} == best
    assert board["count"] == len(best)


def worker_sessions() -> list[int]:
    """Backend pids of the worker's database sessions (everyone's but ours)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
        )
        return [row[0] for row in cursor.fetchall()]


def terminate(pids: list[int]) -> int:
    with connection.cursor() as cursor:
        for pid in pids:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    return len(pids)


def children_of(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return sorted(found)


# --- processes -------------------------------------------------------------------------------
def test_one_pool_process_killed_mid_chunk_the_job_still_finishes(worker, anon_api):
    challenge = challenge_with_attempts(200)
    started = time.monotonic()
    job = switch_to_slow(challenge, scale=2.0)
    wait_mid_run(job.pk)
    children = children_of(worker.proc.pid)
    assert children, "no pool process"
    os.kill(children[0], signal.SIGKILL)  # one worker process, mid-chunk
    wait_finished(job.pk, timeout=BOUND_S)
    worker.wait_idle()
    assert_whole(anon_api, challenge, job_id=job.pk, sent=200, scale=2.0, started=started)


def test_all_workers_killed_and_back_at_once_the_watchdog_resumes_the_job(worker, anon_api):
    """Restarted at once: the job's chunks look fresh to the start-up resume; the
    watchdog sends them again once the job is silent, not after the broker's one-hour
    visibility timeout."""
    challenge = challenge_with_attempts(200)
    started = time.monotonic()
    job = switch_to_slow(challenge, scale=2.0)
    wait_mid_run(job.pk, chunks=2)
    worker.kill()
    worker.start()
    wait_finished(job.pk, timeout=BOUND_S)
    worker.wait_idle()
    assert_whole(anon_api, challenge, job_id=job.pk, sent=200, scale=2.0, started=started)


# --- the database -------------------------------------------------------------------------------
def test_database_connections_terminated_mid_chunk(worker, anon_api):
    challenge = challenge_with_attempts(200)
    started = time.monotonic()
    job = switch_to_slow(challenge, scale=2.0)
    wait_mid_run(job.pk)
    killed = 0
    for _ in range(3):  # three times, a moment apart
        killed += terminate(worker_sessions())
        time.sleep(0.4)
    assert killed, "no worker session to terminate"
    wait_finished(job.pk, timeout=BOUND_S)
    worker.wait_idle()
    state = job_state(job.pk)
    assert "failed" not in state["error"].lower(), state
    assert_whole(anon_api, challenge, job_id=job.pk, sent=200, scale=2.0, started=started)


def test_database_connection_terminated_mid_finalize(worker, anon_api):
    """An ingestion holds the challenge in share mode, so the finalize waits at the switch
    with its claim held; its session is terminated there; the task retries and the job
    ends once the ingestion commits."""
    challenge = challenge_with_attempts(100)
    started = time.monotonic()
    job = switch_to_slow(challenge, scale=2.0, sleep_ms=5)
    with transaction.atomic():
        services._lock_challenge_shared(challenge.pk)
        finalizer = wait_for(lambda: _finalizer_pid(), "the finalize to claim the job", 30)
        terminate([finalizer])
        time.sleep(0.5)
        [late] = services.attempts_record(
            challenge=challenge, inputs=[attempt_input("late", tokens_total=7)]
        )
    wait_finished(job.pk, timeout=BOUND_S)
    worker.wait_idle()
    assert AttemptScore.objects.get(version_id=job.version_id, attempt=late.attempt).score == 14.0
    assert_whole(anon_api, challenge, job_id=job.pk, sent=101, scale=2.0, started=started)


def _finalizer_pid() -> int | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND classid = %s AND granted",
            [rescoring._FINALIZE_LOCK],
        )
        row = cursor.fetchone()
    return row[0] if row else None


# --- writers during the switch ---------------------------------------------------------------
def test_writers_posting_during_the_whole_job_and_the_switch(worker, integration, anon_api):
    challenge = challenge_with_attempts(150)
    started = time.monotonic()
    job = switch_to_slow(challenge, scale=2.0, sleep_ms=10)
    url = attempts_url(challenge.pk)
    statuses: list[int] = []
    sent = [150]
    lock = threading.Lock()
    stop = threading.Event()

    def writer(name: str) -> None:
        from django.db import connections
        from rest_framework.test import APIClient

        client = APIClient()
        client.force_authenticate(integration)
        n = 0
        try:
            while not stop.is_set():
                # New players and old ones, in opposite orders in the two writers.
                body = [
                    {"player": f"{name}{n}", "tokens_total": 300 + n, "succeeded": True},
                    {"player": f"p{(n * 7) % 150}", "tokens_total": 1000 + n, "succeeded": True},
                ]
                if name == "b":
                    body.reverse()
                response = client.post(url, body, format="json")
                with lock:
                    statuses.append(response.status_code)
                    if response.status_code == 201:
                        sent[0] += 2
                n += 1
        finally:
            connections.close_all()

    threads = [threading.Thread(target=writer, args=(name,)) for name in "ab"]
    for t in threads:
        t.start()
    try:
        wait_for(lambda: job_state(job.pk)["status"] in FINISHED, "the job to end", BOUND_S)
        time.sleep(0.3)  # and a little after the switch
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    worker.wait_idle()
    assert set(statuses) == {201}, f"not all 201: {sorted(set(statuses))}"
    assert len(statuses) >= 10, f"only {len(statuses)} writes during the job"
    assert_whole(anon_api, challenge, job_id=job.pk, sent=sent[0], scale=2.0, started=started)


# --- the plan race ------------------------------------------------------------------------------
def test_a_bulk_transaction_open_when_the_rescore_is_planned(worker, anon_api):
    """A bulk POST still in its transaction (lower ids) and a single attempt committed
    after it (a higher id): the plan sees only the single one. Before: the bulk's
    attempts were in no chunk and had no score under the new version."""
    from tests.challenges.rescoring._threads import Session, wait_until_someone_waits

    for _ in range(3):
        challenge = challenge_with_attempts(0)
        bulk_in, commit = threading.Event(), threading.Event()

        def bulk(challenge=challenge, bulk_in=bulk_in, commit=commit) -> None:
            with transaction.atomic():
                record(
                    challenge,
                    *[attempt_input(f"b{i}", tokens_total=100 + i) for i in range(60)],
                )
                bulk_in.set()
                assert commit.wait(20)

        writer = Session(bulk)
        writer.start()
        assert bulk_in.wait(20)
        record(challenge, attempt_input("single", tokens_total=7))
        started = time.monotonic()
        # "Rescore now" (API, admin): plans before it takes the challenge lock.
        starter = Session(
            lambda challenge=challenge: setup_services.challenge_rescore(challenge=challenge)
        )
        starter.start()
        wait_until_someone_waits()
        commit.set()
        writer.outcome()
        job = starter.outcome()
        wait_finished(job.pk, timeout=BOUND_S)
        assert_whole(anon_api, challenge, job_id=job.pk, sent=61, scale=1.0, started=started)
    worker.wait_idle()


BROKER_CUT_S = 30
BACK_WITHIN_S = 120


# --- the broker -------------------------------------------------------------------------------
def test_broker_unreachable_for_a_while(worker, anon_api, settings):
    """The worker and this process reach Redis through a relay; it is cut for 30 s
    mid-job, and a rescore of another challenge is requested meanwhile (it cannot be
    sent). The worker process lives through it (config/broker.py), and both jobs end
    within 120 s of the broker's return, without a worker restart."""
    from urllib.parse import urlsplit, urlunsplit

    from config.celery import app

    from .conftest import Worker

    real = urlsplit(str(settings.CELERY_BROKER_URL))
    relay = Relay((real.hostname or "127.0.0.1", real.port or 6379))
    relay.up()
    relayed = urlunsplit(real._replace(netloc=f"127.0.0.1:{relay.port}"))
    worker.kill()  # the session's worker talks to Redis directly: this test uses its own
    env = {**worker.env, "CELERY_BROKER_URL": relayed}
    own = Worker(worker.log_path.parent / "relayed-worker.log", env)
    saved = app.conf.broker_url
    _use_broker(app, relayed)
    try:
        own.start()
        one = challenge_with_attempts(150)
        two = challenge_with_attempts(60)
        started = time.monotonic()
        job = switch_to_slow(one, scale=2.0)
        wait_mid_run(job.pk)
        relay.down()
        requested = switch_to_slow(two, scale=3.0)  # sent nowhere: the broker is away
        for _ in range(BROKER_CUT_S):
            time.sleep(1)
            assert own.alive, f"the worker died with the broker away:\n{own.log_tail()}"
        assert job_state(requested.pk)["status"] == Status.QUEUED
        relay.up()
        back = time.monotonic()
        wait_finished(job.pk, timeout=BACK_WITHIN_S)
        wait_finished(requested.pk, timeout=max(1.0, BACK_WITHIN_S - (time.monotonic() - back)))
        assert own.alive and own.starts == 1
        assert_whole(anon_api, one, job_id=job.pk, sent=150, scale=2.0, started=started)
        assert_whole(anon_api, two, job_id=requested.pk, sent=60, scale=3.0, started=started)
        own.wait_idle()
    finally:
        own.kill()
        relay.close()
        _use_broker(app, saved)


def _use_broker(app: Any, url: str) -> None:
    """Point this process's Celery app at another broker URL (drop its pooled
    connections and producers). Celery reads CELERY_BROKER_URL before the app's own
    setting, so the variable changes too (when set, as in the CI's Redis pass, this
    process would otherwise still reach Redis directly)."""
    if "CELERY_BROKER_URL" in os.environ:
        os.environ["CELERY_BROKER_URL"] = url
    app.conf.broker_url = url
    app.conf.broker_write_url = None
    app.conf.broker_read_url = None
    app._pool = None  # the old pool stays cached (kombu.pools) for the URL it belongs to
    app.amqp._producer_pool = None
