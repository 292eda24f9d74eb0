"""Rescore jobs on a REAL Celery worker (prefork, 2 processes) over Redis and PostgreSQL:
the guarantees of challenges/rescoring/jobs.py when tasks really run twice, concurrently, get
cancelled, superseded or killed.

Attempts are recorded under a cheap built-in strategy (``fewest_tokens``: score =
tokens); the rescore switches to ``t.slow`` (tests.plugins:SlowTokens: score = tokens ×
scale, ``sleep_ms`` per attempt), so every version's scores are known exactly and a job
of 150 attempts in chunks of 25 runs long enough (~2 s) to be interrupted.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from django.db import OperationalError, connection, transaction

from challenges.ingestion import services
from challenges.models import (
    Attempt,
    AttemptScore,
    Challenge,
    LeaderboardEntry,
    RescoreChunk,
    RescoreJob,
    ScoringVersion,
)
from challenges.setup import services as setup_services
from challenges.tasks import rescore_chunk, rescore_dispatch, rescore_resume
from tests.factories import attempt_input, make_challenge, record
from tests.urls import attempts_url, job_cancel_url, job_url, leaderboard_url, rescore_url

from .conftest import CHUNK, SKIP_REASON

pytestmark = [
    pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or ""),
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
]
Status = RescoreJob.Status
FINISHED = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)
DEADLINE_S = 60.0
T = TypeVar("T")


# --- helpers ------------------------------------------------------------------------------
def wait_for(check: Callable[[], T | None], what: str, timeout: float = DEADLINE_S) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout:.0f} s waiting for {what}")
        time.sleep(0.05)


def job_state(job_id: int) -> dict[str, Any]:
    return RescoreJob.objects.filter(pk=job_id).values(
        "status", "processed", "total", "failed", "chunks_done", "chunks_total", "error"
    )[0]


def wait_finished(job_id: int, timeout: float = DEADLINE_S) -> RescoreJob:
    def finished() -> RescoreJob | None:
        job = RescoreJob.objects.select_related("version").get(pk=job_id)
        return job if job.status in FINISHED else None

    try:
        return wait_for(finished, f"job {job_id} to finish", timeout)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the job is {job_state(job_id)}") from None


def wait_mid_run(job_id: int, chunks: int = 1) -> dict[str, Any]:
    """Wait until the job is running with at least ``chunks`` chunks done, and check that
    it is really mid-run (a test about interrupting a job proves nothing otherwise)."""
    state = wait_for(
        lambda: (s := job_state(job_id))["chunks_done"] >= chunks and s,
        f"job {job_id} to finish {chunks} chunk(s)",
    )
    assert state["status"] == Status.RUNNING, state
    assert state["chunks_done"] < state["chunks_total"], f"the job was too fast: {state}"
    return state


def tokens_of(i: int) -> int:
    return 100 + i


def challenge_with_attempts(n: int) -> Challenge:
    """A challenge ranked by fewest tokens (version 1: score = tokens), with n players."""
    challenge = make_challenge(scoring_strategy="fewest_tokens")
    record(
        challenge,
        *[attempt_input(f"p{i}", tokens_total=tokens_of(i), created_at=i) for i in range(n)],
    )
    challenge.refresh_from_db()
    return challenge


def switch_to_slow(challenge: Challenge, *, scale: float, sleep_ms: int = 20) -> RescoreJob:
    """Change the scoring setup (a new version, its job sent to the worker on commit)."""
    update = setup_services.challenge_update(
        challenge=challenge,
        data={
            "scoring_strategy": "custom",
            "scoring_plugin_id": "t.slow",
            "scoring_config": {"scale": scale, "sleep_ms": sleep_ms},
        },
    )
    assert update.job is not None
    return update.job


def tokens_by_attempt(challenge: Challenge) -> dict[int, int]:
    return dict(Attempt.objects.filter(challenge=challenge).values_list("pk", "tokens_total"))


def scores_of(version: ScoringVersion) -> dict[int, tuple[float | None, str]]:
    rows = list(
        AttemptScore.objects.filter(version=version).values_list("attempt_id", "score", "error")
    )
    scores = {attempt_id: (score, error) for attempt_id, score, error in rows}
    assert len(scores) == len(rows), "an attempt has two scores under one version"
    return scores


def assert_scored_exactly(challenge: Challenge, version: ScoringVersion, scale: float) -> None:
    """Every attempt of the challenge has one score under ``version``: tokens × scale."""
    expected = {pk: (tokens * scale, "") for pk, tokens in tokens_by_attempt(challenge).items()}
    assert scores_of(version) == expected


def public_board(client, challenge: Challenge) -> dict[str, Any]:
    response = client.get(leaderboard_url(challenge.pk), {"limit": 500})
    assert response.status_code == 200
    return response.json()


def assert_board_is_one_version(
    board: dict[str, Any], tokens: dict[int, int], scales: dict[int, float]
) -> None:
    """The board shows one of the expected versions, and every row is that version's
    score (never a row of another version)."""
    assert board["version"] in scales, board["version"]
    scale = scales[board["version"]]
    wrong = [r for r in board["results"] if r["score"] != tokens[r["attempt_id"]] * scale]
    assert not wrong, f"version {board['version']} shows other scores: {wrong[:3]}"
    assert board["count"] == len(board["results"])


def entries_of(version: ScoringVersion) -> list[tuple[Any, ...]]:
    return list(
        LeaderboardEntry.objects.filter(version=version)
        .order_by("pk")
        .values_list("pk", "player_id", "attempt_id", "score", "sort_key")
    )


def snapshot(job: RescoreJob) -> dict[str, Any]:
    """Everything a rerun of the job's tasks could write twice."""
    return {
        "job": job_state(job.pk),
        "chunks": list(
            RescoreChunk.objects.filter(job=job)
            .order_by("number")
            .values_list("pk", "done_at", "scored", "failed")
        ),
        "scores": list(
            AttemptScore.objects.filter(version_id=job.version_id)
            .order_by("pk")
            .values_list("pk", "attempt_id", "score", "error")
        ),
        "entries": entries_of(job.version),
        "active": Challenge.objects.get(pk=job.challenge_id).active_version_id,
        "scored_at": ScoringVersion.objects.get(pk=job.version_id).scored_at,
    }


def assert_tasks_ran(worker, log_start: int, task_ids: list[str]) -> None:
    """The worker logged each task as succeeded (so an assertion that nothing changed
    is not vacuous)."""
    log = worker.log_text(log_start)
    missing = [task_id for task_id in task_ids if f"[{task_id}] succeeded" not in log]
    assert not missing, f"tasks not run (or not successfully) by the worker: {missing}"


# --- the tests ------------------------------------------------------------------------------
def test_a_finished_chunk_run_again_writes_the_same_scores_never_duplicates(worker):
    challenge = challenge_with_attempts(60)  # chunks of 25, 25, 10
    job = switch_to_slow(challenge, scale=2.0, sleep_ms=0)
    job = wait_finished(job.pk)
    assert job.status == Status.SUCCEEDED, job_state(job.pk)
    assert_scored_exactly(challenge, job.version, 2.0)
    worker.wait_idle()
    before = snapshot(job)
    assert before["job"]["chunks_done"] == before["job"]["chunks_total"] == 3

    log_start = worker.log_size()
    chunk_ids = [pk for pk, *_ in before["chunks"]]
    sent = [rescore_chunk.delay(pk).id for pk in chunk_ids for _ in range(2)]  # redeliveries
    sent.append(rescore_dispatch.delay(job.pk).id)  # a late dispatch of the whole job
    sent.append(rescore_resume.delay().id)  # and a resume
    worker.wait_idle()

    assert_tasks_ran(worker, log_start, sent)
    assert snapshot(job) == before  # same rows (same ids), same counts, same switch
    assert_scored_exactly(challenge, job.version, 2.0)


def test_chunks_delivered_several_times_during_a_run_score_each_attempt_once(worker):
    challenge = challenge_with_attempts(100)  # 4 chunks
    job = switch_to_slow(challenge, scale=2.0)
    # Each chunk twice more, racing the dispatch's own task for it (two pool processes).
    log_start = worker.log_size()
    sent = [rescore_chunk.delay(chunk.pk).id for chunk in job.chunks.all() for _ in range(2)]

    job = wait_finished(job.pk)
    worker.wait_idle()
    assert_tasks_ran(worker, log_start, sent)
    state = job_state(job.pk)
    assert state == {
        "status": Status.SUCCEEDED,
        "processed": 100,
        "total": 100,
        "failed": 0,
        "chunks_done": 4,
        "chunks_total": 4,
        "error": "",
    }
    assert (
        sorted(RescoreChunk.objects.filter(job=job).values_list("scored", flat=True)) == [CHUNK] * 4
    )
    assert_scored_exactly(challenge, job.version, 2.0)
    challenge.refresh_from_db()
    assert challenge.active_version_id == job.version_id


def test_a_newer_rescore_supersedes_an_older_one_mid_run(worker, anon_api):
    challenge = challenge_with_attempts(150)
    tokens = tokens_by_attempt(challenge)
    older = switch_to_slow(challenge, scale=2.0)  # version 2
    wait_mid_run(older.pk)
    newer = switch_to_slow(challenge, scale=3.0)  # version 3
    assert job_state(older.pk)["status"] == Status.CANCELLED  # at once, by the new start

    # While the newer job runs (and the older one's tasks drain), the public board shows
    # version 1 or version 3, each whole: never version 2, never a mix.
    boards: list[dict[str, Any]] = []

    def newer_finished() -> bool:
        boards.append(public_board(anon_api, challenge))
        return job_state(newer.pk)["status"] in FINISHED

    wait_for(newer_finished, f"job {newer.pk} to finish")
    worker.wait_idle()  # every task of both jobs has run out
    boards.append(public_board(anon_api, challenge))

    assert job_state(newer.pk)["status"] == Status.SUCCEEDED, job_state(newer.pk)
    older_state = job_state(older.pk)
    assert older_state["status"] == Status.CANCELLED
    assert "Superseded" in older_state["error"]
    challenge.refresh_from_db()
    assert challenge.active_version_id == newer.version_id
    assert challenge.active_version.number == 3
    assert ScoringVersion.objects.get(pk=older.version_id).scored_at is None  # never switched
    assert LeaderboardEntry.objects.filter(version_id=older.version_id).count() == 0
    assert_scored_exactly(challenge, newer.version, 3.0)
    for board in boards:
        assert_board_is_one_version(board, tokens, {1: 1.0, 3: 3.0})
    assert boards[-1]["version"] == 3 and boards[-1]["count"] == 150


def test_two_rescores_started_at_once_the_newer_wins(worker):
    challenge = challenge_with_attempts(60)
    setup_services.challenge_update(
        challenge=challenge,
        data={"scoring_strategy": "custom", "scoring_plugin_id": "t.slow"},
    )  # version 2 and its job; then two rescores back to back, before any task has run:
    first = setup_services.challenge_rescore(challenge=challenge)  # version 3
    second = setup_services.challenge_rescore(challenge=challenge)  # version 4
    second = wait_finished(second.pk)
    worker.wait_idle()
    assert second.status == Status.SUCCEEDED, job_state(second.pk)
    assert job_state(first.pk)["status"] == Status.CANCELLED
    assert set(
        RescoreJob.objects.filter(challenge=challenge).values_list("version__number", "status")
    ) == {(2, "cancelled"), (3, "cancelled"), (4, "succeeded")}
    challenge.refresh_from_db()
    assert challenge.active_version.number == 4
    assert_scored_exactly(challenge, second.version, 1.0)
    assert ScoringVersion.objects.filter(challenge=challenge, scored_at__isnull=True).count() == 2


def test_cancel_mid_run_keeps_the_active_version_and_shows_no_partial_scores(
    worker, staff_api, anon_api
):
    challenge = challenge_with_attempts(150)
    tokens = tokens_by_attempt(challenge)
    board_before = public_board(anon_api, challenge)
    assert board_before["version"] == 1 and board_before["count"] == 150
    job = switch_to_slow(challenge, scale=2.0)
    wait_mid_run(job.pk)

    response = staff_api.post(job_cancel_url(job.pk))
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "cancelled"
    boards = [public_board(anon_api, challenge)]
    worker.wait_idle()  # the chunks in flight finish; the rest find the job cancelled
    boards.append(public_board(anon_api, challenge))

    state = job_state(job.pk)
    assert state["status"] == Status.CANCELLED and state["error"] == "Cancelled."
    assert state["chunks_done"] < state["chunks_total"], state  # it was stopped midway
    challenge.refresh_from_db()
    assert challenge.active_version.number == 1
    assert ScoringVersion.objects.get(pk=job.version_id).scored_at is None
    assert LeaderboardEntry.objects.filter(version_id=job.version_id).count() == 0
    for board in boards:
        assert board == board_before  # the very same public board
        assert_board_is_one_version(board, tokens, {1: 1.0})
    detail = staff_api.get(job_url(job.pk)).json()
    assert detail["status"] == "cancelled" and detail["version"] == 2


def test_a_worker_killed_mid_job_finishes_it_after_a_restart(worker, anon_api):
    challenge = challenge_with_attempts(200)  # 8 chunks
    tokens = tokens_by_attempt(challenge)
    job = switch_to_slow(challenge, scale=2.0)
    wait_mid_run(job.pk, chunks=2)

    worker.kill()  # SIGKILL: the worker, its pool and the scorer processes
    state = job_state(job.pk)
    assert state["status"] == Status.RUNNING, state
    assert 2 <= state["chunks_done"] < state["chunks_total"], state
    done_before = dict(
        RescoreChunk.objects.filter(job=job, done_at__isnull=False).values_list("pk", "done_at")
    )
    ranges = RescoreChunk.objects.filter(pk__in=done_before).values_list(
        "first_attempt_id", "last_attempt_id"
    )
    rows_before = {
        attempt_id: pk
        for pk, attempt_id in AttemptScore.objects.filter(version_id=job.version_id).values_list(
            "pk", "attempt_id"
        )
        if any(first <= attempt_id <= last for first, last in ranges)
    }
    assert len(rows_before) == 25 * len(done_before)
    challenge.refresh_from_db()
    assert challenge.active_version.number == 1

    log_start = worker.log_size()
    worker.start()
    job = wait_finished(job.pk)
    worker.wait_idle()

    state = job_state(job.pk)
    assert state == {
        "status": Status.SUCCEEDED,
        "processed": 200,
        "total": 200,
        "failed": 0,
        "chunks_done": 8,
        "chunks_total": 8,
        "error": "",
    }
    resumed = re.search(r"rescore_resume\[[0-9a-f-]+\] succeeded", worker.log_text(log_start))
    assert resumed, "the restarted worker ran no rescore_resume"  # the way back
    assert_scored_exactly(challenge, job.version, 2.0)
    # Finished chunks were never redone: same done_at, same score rows.
    done_after = dict(RescoreChunk.objects.filter(pk__in=done_before).values_list("pk", "done_at"))
    assert done_after == done_before
    rows_after = dict(
        AttemptScore.objects.filter(
            version_id=job.version_id, attempt_id__in=rows_before
        ).values_list("attempt_id", "pk")
    )
    assert rows_after == rows_before
    challenge.refresh_from_db()
    assert challenge.active_version_id == job.version_id
    board = public_board(anon_api, challenge)
    assert board["version"] == 2 and board["count"] == 200
    assert_board_is_one_version(board, tokens, {2: 2.0})


def test_recording_attempts_does_not_wait_for_a_chunk_being_scored(worker):
    challenge = challenge_with_attempts(100)
    job = switch_to_slow(challenge, scale=2.0, sleep_ms=40)  # 4 chunks of ~1 s each

    def ingestion_would_wait() -> bool:
        """Take the lock attempts_record takes, giving up after 100 ms."""
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '100ms'")
                services._lock_challenge_shared(challenge.pk)
        except OperationalError:
            return True
        return False

    probes = waited = 0
    while (state := job_state(job.pk))["status"] not in FINISHED:
        blocked = ingestion_would_wait()
        # Only while chunks are being scored: job_finalize holds the lock, by design.
        if job_state(job.pk)["chunks_done"] < state["chunks_total"]:
            probes += 1
            waited += blocked
        time.sleep(0.02)
    if probes < 10 or job_state(job.pk)["status"] != Status.SUCCEEDED:
        raise RuntimeError(f"inconclusive: {probes} probes, job {job_state(job.pk)}")
    assert waited == 0, f"recording attempts waited for a chunk in {waited} of {probes} probes"


def test_scorer_failures_score_none_with_the_error_and_the_job_succeeds(
    worker, staff_api, anon_api
):
    challenge = make_challenge(scoring_strategy="custom", scoring_plugin_id="t.tokens")
    unlucky = {i for i in range(60) if i % 12 == 0}  # TokensScorer raises for 13 tokens
    record(
        challenge,
        *[
            attempt_input(f"p{i}", tokens_total=13 if i in unlucky else tokens_of(i))
            for i in range(60)
        ],
    )
    response = staff_api.post(rescore_url(challenge.pk))
    assert response.status_code == 202, response.content
    job_id = response.json()["job"]

    def finished() -> dict[str, Any] | None:
        body = staff_api.get(job_url(job_id)).json()
        return body if body["status"] not in ("queued", "running") else None

    body = wait_for(finished, f"job {job_id} to finish")
    assert (body["status"], body["processed"], body["total"], body["failed"]) == (
        "succeeded",
        60,
        60,
        len(unlucky),
    )
    assert (body["version"], body["error"]) == (2, "")

    version = ScoringVersion.objects.get(challenge=challenge, number=2)
    rows = {
        a.player.external_id: a.scores.get(version=version)
        for a in Attempt.objects.filter(challenge=challenge).select_related("player")
    }
    for i in range(60):
        row = rows[f"p{i}"]
        if i in unlucky:
            assert row.score is None and row.sort_key is None
            assert row.error == "ValueError: unlucky"
            assert row.details == {"error": row.error}
        else:
            assert (row.score, row.error) == (float(tokens_of(i)), "")
    board = public_board(anon_api, challenge)
    assert board["version"] == 2 and board["count"] == 60 - len(unlucky)
    assert {r["player"] for r in board["results"]} == {
        f"p{i}" for i in range(60) if i not in unlucky
    }
    assert "unlucky" not in str(board)


def test_attempts_recorded_through_the_api_during_a_job_are_all_scored_under_the_new_version(
    worker, integration_api, anon_api
):
    challenge = challenge_with_attempts(150)
    job = switch_to_slow(challenge, scale=2.0)
    url = attempts_url(challenge.pk)
    versions: list[int] = []
    deadlocked: list[int] = []
    n = 0

    def post_some() -> None:
        nonlocal n
        body = [
            {"player": f"late{n}", "tokens_total": 500 + n, "succeeded": True},
            {"player": f"p{n % 150}", "tokens_total": 1000 + n, "succeeded": True},
        ]
        try:
            response = integration_api.post(url, body, format="json")
        except OperationalError as exc:  # an HTTP 500 outside tests: must not happen
            if "deadlock detected" not in str(exc):
                raise
            deadlocked.append(n)
            # All or nothing: none of the request's attempts was written.
            assert not Attempt.objects.filter(tokens_total__in=[500 + n, 1000 + n]).exists()
        else:
            assert response.status_code == 201, response.content
            versions.extend(item["version"] for item in response.json())
        n += 1

    while job_state(job.pk)["status"] not in FINISHED:  # until the switch, then once more
        post_some()
        assert n < 2000, "the job did not finish"
    post_some()
    worker.wait_idle()

    state = job_state(job.pk)
    assert state["status"] == Status.SUCCEEDED, state
    during = versions.count(1)
    assert during >= 4, f"only {during} attempts were recorded during the job"
    assert versions == [1] * during + [2] * (len(versions) - during)  # one switch, for good
    assert_scored_exactly(challenge, job.version, 2.0)  # none missing, none twice
    # The job counts every attempt recorded before it switched.
    assert state["processed"] == state["total"] == 150 + during
    challenge.refresh_from_db()
    assert challenge.active_version_id == job.version_id
    tokens = tokens_by_attempt(challenge)
    board = public_board(anon_api, challenge)
    assert_board_is_one_version(board, tokens, {2: 2.0})
    best: dict[str, float] = {}
    for attempt in Attempt.objects.filter(challenge=challenge).select_related("player"):
        ext = attempt.player.external_id
        best[ext] = max(best.get(ext, 0.0), attempt.tokens_total * 2.0)
    assert {r["player"]: r["score"] for r in board["results"]} == best
    assert board["count"] == len(best)
    assert not deadlocked, f"{len(deadlocked)} of {n} POSTs died in a deadlock with a chunk"


def test_an_ingestion_under_way_when_a_chunk_starts_is_no_deadlock_victim(worker):
    challenge = challenge_with_attempts(100)
    job = switch_to_slow(challenge, scale=2.0)
    wait_mid_run(job.pk)
    with connection.cursor() as cursor:
        cursor.execute("SELECT setting::int FROM pg_settings WHERE name = 'deadlock_timeout'")
        deadlock_timeout_ms = cursor.fetchone()[0]  # the unit is ms

    def someone_waits_for_a_lock() -> bool:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_stat_clear_snapshot()")  # else cached per transaction
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
            )
            return cursor.fetchone()[0] > 0

    # An ingestion, slowed down inside its transaction (as a big batch would be): it
    # takes the share lock attempts_record takes first, a chunk starts meanwhile...
    with transaction.atomic():
        services._lock_challenge_shared(challenge.pk)
        deadline = time.monotonic() + 5
        while not someone_waits_for_a_lock() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(deadlock_timeout_ms / 1000 + 0.3)  # the chunk's own deadlock check ran
        [recorded] = services.attempts_record(
            challenge=challenge, inputs=[attempt_input("late", tokens_total=7)]
        )
    # ...and the ingestion commits: the attempt is recorded, and scored by the new version.
    job = wait_finished(job.pk)
    assert job.status == Status.SUCCEEDED, job_state(job.pk)
    assert scores_of(job.version)[recorded.attempt.pk] == (14.0, "")
    assert_scored_exactly(challenge, job.version, 2.0)
