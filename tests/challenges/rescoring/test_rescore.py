"""Scoring versions and rescore jobs (run inline here; tests/realworker runs them on a
real Celery worker): a setup change makes a version, its job switches atomically,
history is never rewritten, no attempt is left without a score, nothing is written twice.
"""

from __future__ import annotations

import pytest

from challenges.leaderboards import selectors
from challenges.models import (
    AttemptScore,
    LeaderboardEntry,
    RescoreChunk,
    RescoreJob,
    ScoringVersion,
)
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from scoring.project_registry import registry
from tests.factories import WEIGHTED_SEED, attempt_input, make_challenge, record

pytestmark = pytest.mark.django_db
Status = RescoreJob.Status


def board(challenge):
    challenge.refresh_from_db()
    page = selectors.leaderboard_page(challenge=challenge, limit=100, offset=0)
    return page.version.number, [(r.player_external_id, r.score) for r in page.rows]


def test_create_makes_version_one_active():
    challenge = make_challenge(scoring_strategy="fastest")
    assert challenge.active_version.number == 1
    assert challenge.active_version.scored_at is not None
    assert challenge.active_version.scoring_strategy == "fastest"


def test_setup_change_switches_only_when_rescored():
    challenge = make_challenge(**{k: v for k, v in WEIGHTED_SEED.items() if k != "name"})
    record(challenge, attempt_input("a", tokens_total=1200, elapsed_ms=12000, rating=5))
    assert board(challenge) == (1, [("a", 145.0)])

    update = setup_services.challenge_update(
        challenge=challenge, data={"scoring_config": {"success_bonus": 10.0}}
    )
    assert update.new_version.number == 2 and update.new_version.scored_at is None
    assert update.job.status == Status.QUEUED and update.job.total == 1
    # Not rescored yet: the public board still shows version 1.
    assert board(challenge) == (1, [("a", 145.0)])

    job = rescoring.job_run_inline(job=update.job)
    assert (job.status, job.processed, job.total, job.failed) == (Status.SUCCEEDED, 1, 1, 0)
    # defaults: rating_weight 10, time_penalty 1, token_penalty 0.01
    assert board(challenge) == (2, [("a", 10.0 + 50.0 - 12.0 - 12.0)])
    # History kept: version 1's scores are untouched.
    v1_scores = AttemptScore.objects.filter(version__number=1, version__challenge=challenge)
    assert list(v1_scores.values_list("score", flat=True)) == [145.0]


def test_info_change_makes_no_version():
    challenge = make_challenge()
    update = setup_services.challenge_update(challenge=challenge, data={"name": "Renamed"})
    assert update.new_version is None and update.job is None
    assert challenge.versions.count() == 1


def test_same_setup_makes_no_version():
    challenge = make_challenge(scoring_strategy="fastest")
    update = setup_services.challenge_update(
        challenge=challenge, data={"scoring_strategy": "fastest"}
    )
    assert update.new_version is None


def test_rescore_of_the_same_setup_makes_a_new_version():
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, attempt_input("a", elapsed_ms=5))
    job = setup_services.challenge_rescore(challenge=challenge)
    assert job.version.number == 2 and job.version.reason == "rescore"
    rescoring.job_run_inline(job=job)
    assert board(challenge) == (2, [("a", 5.0)])


def test_chunks_cover_every_attempt_once(settings, monkeypatch):
    settings.PODIUM_SCORING_CHUNK = 7
    monkeypatch.setattr(rescoring, "FAST_CHUNK_FACTOR", 1)
    monkeypatch.setattr(rescoring, "SQL_CHUNK_FACTOR", 1)
    challenge = make_challenge(scoring_strategy="fastest")
    other = make_challenge(scoring_strategy="fastest")
    for i in range(30):  # interleave ids with another challenge's attempts
        record(challenge, attempt_input(f"p{i}", elapsed_ms=i + 1))
        record(other, attempt_input(f"q{i}", elapsed_ms=i + 1))
    job = setup_services.challenge_rescore(challenge=challenge)
    chunks = list(job.chunks.order_by("number"))
    assert [c.number for c in chunks] == [1, 2, 3, 4, 5]
    assert job.total == 30 and job.chunks_total == 5
    ids = sorted(challenge.attempts.values_list("pk", flat=True))
    covered = [pk for c in chunks for pk in ids if c.first_attempt_id <= pk <= c.last_attempt_id]
    assert covered == ids  # each attempt in exactly one chunk
    sizes = [sum(c.first_attempt_id <= pk <= c.last_attempt_id for pk in ids) for c in chunks]
    assert sizes == [7, 7, 7, 7, 2]  # every 7th attempt starts a chunk
    job = rescoring.job_run_inline(job=job)
    assert (job.status, job.processed, job.chunks_done) == (Status.SUCCEEDED, 30, 5)
    assert AttemptScore.objects.filter(version=job.version).count() == 30
    assert board(challenge)[1][:2] == [("p0", 1.0), ("p1", 2.0)]


def test_attempts_recorded_during_a_rescore_are_scored_under_the_new_version():
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, attempt_input("a", elapsed_ms=500))
    update = setup_services.challenge_update(
        challenge=challenge, data={"scoring_strategy": "fewest_tokens"}
    )
    # Recorded while version 2's job is queued: scored under both versions.
    [recorded] = record(challenge, attempt_input("b", elapsed_ms=900, tokens_total=7))
    assert recorded.score.score == 900.0  # the active version (fastest)
    assert recorded.version_number == 1
    new_score = AttemptScore.objects.get(version=update.new_version, attempt=recorded.attempt)
    assert new_score.score == 7.0
    job = rescoring.job_run_inline(job=update.job)
    assert board(challenge) == (2, [("b", 7.0)])  # a has no tokens: not counted
    assert job.total == 2 and job.processed == 2  # the late attempt is counted too


def test_finalize_catches_up_attempts_no_one_scored():
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, attempt_input("a", elapsed_ms=50))
    job = setup_services.challenge_rescore(challenge=challenge)
    rescoring.job_run_inline(job=job)  # done; now simulate an attempt the job missed
    late_job = setup_services.challenge_rescore(challenge=challenge)
    record(challenge, attempt_input("b", elapsed_ms=10))
    AttemptScore.objects.filter(version=late_job.version).delete()  # as if never scored
    late_job = rescoring.job_run_inline(job=late_job)
    assert late_job.status == Status.SUCCEEDED
    assert AttemptScore.objects.filter(version=late_job.version).count() == 2
    assert board(challenge) == (3, [("b", 10.0), ("a", 50.0)])


def test_a_retried_chunk_writes_nothing_twice():
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, *[attempt_input(f"p{i}", elapsed_ms=100 * i) for i in range(5)])
    job = setup_services.challenge_rescore(challenge=challenge)
    [chunk] = job.chunks.all()
    assert rescoring.chunk_run(chunk_id=chunk.pk) is True
    assert rescoring.chunk_run(chunk_id=chunk.pk) is False  # a redelivered task
    job.refresh_from_db()
    assert (job.status, job.processed, job.chunks_done) == (Status.SUCCEEDED, 5, 1)
    assert AttemptScore.objects.filter(version=job.version).count() == 5
    assert LeaderboardEntry.objects.filter(version=job.version).count() == 5
    rescoring.job_run_inline(job=job)  # and a late dispatch of the whole job
    assert AttemptScore.objects.filter(version=job.version).count() == 5


def test_newer_job_supersedes_older():
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, attempt_input("a", elapsed_ms=5, tokens_total=3, rating=4))
    old = setup_services.challenge_update(
        challenge=challenge, data={"scoring_strategy": "fewest_tokens"}
    ).job
    new = setup_services.challenge_update(
        challenge=challenge, data={"scoring_strategy": "highest_rating"}
    ).job
    old.refresh_from_db()
    assert old.status == Status.CANCELLED and "Superseded" in old.error
    assert rescoring.job_run_inline(job=old).status == Status.CANCELLED
    assert board(challenge) == (1, [("a", 5.0)])  # nothing switched
    assert rescoring.job_run_inline(job=new).status == Status.SUCCEEDED
    assert board(challenge) == (3, [("a", 4.0)])
    rescoring.job_run_inline(job=old)  # a late retry of the old one changes nothing
    assert board(challenge)[0] == 3


def test_cancel_keeps_the_active_version():
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, *[attempt_input(f"p{i}", elapsed_ms=i) for i in range(3)])
    job = setup_services.challenge_rescore(challenge=challenge)
    job = rescoring.job_cancel(job=job)
    assert job.status == Status.CANCELLED and job.finished_at is not None
    rescoring.job_run_inline(job=job)
    assert board(challenge)[0] == 1
    assert AttemptScore.objects.filter(version=job.version).count() == 0
    with pytest.raises(rescoring.JobStateError, match="cancelled"):
        rescoring.job_cancel(job=job)


def test_cancel_mid_run_shows_no_partial_scores(settings, monkeypatch):
    settings.PODIUM_SCORING_CHUNK = 2
    monkeypatch.setattr(rescoring, "FAST_CHUNK_FACTOR", 1)
    monkeypatch.setattr(rescoring, "SQL_CHUNK_FACTOR", 1)
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, *[attempt_input(f"p{i}", elapsed_ms=i + 10) for i in range(6)])
    job = setup_services.challenge_rescore(challenge=challenge)
    first = job.chunks.order_by("number").first()
    rescoring.chunk_run(chunk_id=first.pk)
    rescoring.job_cancel(job=job)
    for chunk in job.chunks.all():
        rescoring.chunk_run(chunk_id=chunk.pk)
    job.refresh_from_db()
    assert job.status == Status.CANCELLED and job.chunks_done == 1
    assert board(challenge)[0] == 1  # the public board never saw version 2


def test_job_for_an_empty_challenge_succeeds_at_once():
    challenge = make_challenge(scoring_strategy="fastest")
    job = rescoring.job_run_inline(job=setup_services.challenge_rescore(challenge=challenge))
    assert (job.status, job.total, job.chunks_total) == (Status.SUCCEEDED, 0, 0)
    assert board(challenge) == (2, [])


def test_resume_requeues_unfinished_jobs_only():
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, attempt_input("a", elapsed_ms=1))
    running = setup_services.challenge_rescore(challenge=challenge)
    other = make_challenge(scoring_strategy="fastest")
    finished = rescoring.job_run_inline(job=setup_services.challenge_rescore(challenge=other))
    sent: list[int] = []
    assert rescoring.jobs_resume(send_dispatch=sent.append) == [running.pk]
    assert sent == [running.pk] and finished.pk not in sent


def test_scorer_failures_are_recorded_and_counted():
    with registry().temporarily("t.tokens", "tests.plugins:TokensScorer"):
        challenge = make_challenge(scoring_strategy="custom", scoring_plugin_id="t.tokens")
        results = record(
            challenge,
            attempt_input("a", tokens_total=13),  # TokensScorer raises for 13
            attempt_input("b", tokens_total=20),
        )
        job = rescoring.job_run_inline(job=setup_services.challenge_rescore(challenge=challenge))
    assert results[0].score.score is None
    assert "unlucky" in results[0].score.error
    assert results[0].score.details == {"error": results[0].score.error}
    assert results[1].score.score == 20.0
    assert (job.status, job.processed, job.failed) == (Status.SUCCEEDED, 2, 1)
    assert board(challenge) == (2, [("b", 20.0)])


def test_unregistered_plugin_scores_none_with_reason():
    with registry().temporarily("t.const", "tests.plugins:Constant"):
        challenge = make_challenge(scoring_strategy="custom", scoring_plugin_id="t.const")
    # The plugin is gone (uninstalled): attempts are still recorded, with the reason.
    [result] = record(challenge, attempt_input("a"))
    assert result.score.score is None
    assert "t.const" in result.score.error
    assert result.attempt.pk is not None


def test_version_keeps_the_full_setup_and_author(admin):
    challenge = make_challenge(scoring_strategy="fastest")
    update = setup_services.challenge_update(
        challenge=challenge,
        data={"scoring_strategy": "custom", "scoring_plugin_id": "builtin.weighted_scorer"},
        by=admin,
    )
    stored = ScoringVersion.objects.get(pk=update.new_version.pk)
    assert stored.created_by == admin and update.job.created_by == admin
    assert stored.reason == "setup change"
    assert stored.scoring_entrypoint == "scoring.scorers.weighted:WeightedScorer"
    assert stored.scoring_config == {
        "success_bonus": 100.0,
        "rating_weight": 10.0,
        "time_penalty": 1.0,
        "token_penalty": 0.01,
    }


def test_a_broker_outage_does_not_fail_the_change(
    monkeypatch, django_capture_on_commit_callbacks, caplog
):
    from challenges import tasks

    def broker_down(*args, **kwargs):
        raise ConnectionError("broker unreachable")

    monkeypatch.setattr(tasks.rescore_dispatch, "delay", broker_down)
    challenge = make_challenge(scoring_strategy="fastest")
    with django_capture_on_commit_callbacks(execute=True):
        update = setup_services.challenge_update(
            challenge=challenge, data={"scoring_strategy": "first"}
        )
    assert update.new_version.number == 2  # saved
    update.job.refresh_from_db()
    assert update.job.status == Status.QUEUED  # waits for a resume
    challenge.refresh_from_db()
    assert challenge.active_version.number == 1  # still the old scores, shown consistently
    assert "Could not queue rescore job" in caplog.text


def test_chunk_rows_record_their_counts():
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, attempt_input("a", elapsed_ms=1), attempt_input("b", succeeded=False))
    job = rescoring.job_run_inline(job=setup_services.challenge_rescore(challenge=challenge))
    chunk = RescoreChunk.objects.get(job=job)
    assert (chunk.scored, chunk.failed) == (2, 0) and chunk.done_at is not None


@pytest.mark.parametrize(
    ("total", "most", "size"),
    [
        (0, 20_000, 1000),
        (500, 20_000, 1000),
        (16_000, 20_000, 1000),
        (160_000, 20_000, 10_000),
        (1_000_000, 20_000, 20_000),
        (1_000_000, 5, 5),  # the setting is the ceiling, even below the floor
    ],
)
def test_chunk_size_is_about_a_sixteenth_within_bounds(total, most, size):
    assert rescoring.chunk_size(total=total, most=most) == size


@pytest.mark.parametrize("others_between", [0, 1, 3])
def test_the_plan_counts_as_it_walks_and_walks_again_only_when_ids_are_sparse(
    monkeypatch, others_between
):
    """The plan sizes its chunks from the id span and counts while it walks: one pass over
    the index when the challenge's ids are dense. When other challenges' attempts take
    at least half of the span, that size makes too few chunks: it walks again with the
    size its count gives. Either way, a sixteenth of the attempts a chunk, and every id
    from 1 to the highest in exactly one range."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from challenges.models import Attempt

    monkeypatch.setattr(rescoring, "FEWEST_PER_CHUNK", 1)
    challenge = make_challenge(scoring_strategy="fastest")
    other = make_challenge(name="Other", scoring_strategy="fastest")
    for i in range(64):
        record(challenge, attempt_input(f"p{i}"))
        for j in range(others_between):
            record(other, attempt_input(f"q{i}-{j}"))
    with CaptureQueriesContext(connection) as queries:
        plan = rescoring._plan_chunks(challenge.pk, most=10**6)
    sqls = [query["sql"].upper() for query in queries.captured_queries]
    steps = sum("LIMIT 1 OFFSET" in sql for sql in sqls)
    # No count of all the challenge's attempts besides the walk: only its last chunk's.
    assert [sql for sql in sqls if "COUNT(" in sql and ">=" not in sql] == []
    # Dense: 16 steps (the last finds no next start). One challenge in two: the span's
    # size (8) makes 8 chunks, then 16 of 4. One in four: 4 chunks, then 16.
    assert steps == {0: 16, 1: 8 + 16, 3: 4 + 16}[others_between]
    assert plan.total == 64 and len(plan.ranges) == 16
    ids = list(
        Attempt.objects.filter(challenge=challenge).order_by("pk").values_list("pk", flat=True)
    )
    assert plan.ranges[0][0] == 1 and plan.ranges[-1][1] == ids[-1]
    for (_, end), (start, _) in zip(plan.ranges, plan.ranges[1:], strict=False):
        assert start == end + 1
    for first, last in plan.ranges:
        assert sum(first <= pk <= last for pk in ids) == 4


@pytest.mark.parametrize("strategy", ["fastest", "custom", "custom-isolated"])
def test_scorers_without_python_per_attempt_or_a_sandbox_get_bigger_chunks(
    settings, strategy, monkeypatch
):
    """Scored in SQL (a built-in strategy on PostgreSQL): SQL_CHUNK_FACTOR times
    PODIUM_SCORING_CHUNK attempts a chunk; by a plugin this process runs itself:
    FAST_CHUNK_FACTOR times; anything else (a plugin run isolated, a snippet, a built-in
    strategy on SQLite): PODIUM_SCORING_CHUNK."""
    from challenges.leaderboards import scores
    from scoring import services as scoring

    settings.PODIUM_SCORING_CHUNK = 1
    setup = {"scoring_strategy": strategy.split("-")[0]}
    if strategy.startswith("custom"):
        setup["scoring_plugin_id"] = "builtin.weighted_scorer"
    if strategy == "custom-isolated":
        monkeypatch.setattr(scoring, "runs_in_process", lambda version: False)
    challenge = make_challenge(**setup)
    record(challenge, *[attempt_input(f"p{i}", elapsed_ms=i) for i in range(12)])
    job = setup_services.challenge_rescore(challenge=challenge)
    in_sql = strategy == "fastest" and _on_postgresql()
    factor = {
        "fastest": rescoring.SQL_CHUNK_FACTOR if in_sql else 1,
        "custom": rescoring.FAST_CHUNK_FACTOR,
        "custom-isolated": 1,
    }[strategy]
    assert scores.scored_in_sql(job.version) == in_sql
    assert scoring.runs_in_process(job.version) == (strategy == "custom")
    assert job.chunks_total == -(-12 // factor)
    # Fewer, bigger chunks where a chunk's ends cost more than its scoring.
    per_job = {"fastest": 4 if in_sql else 16, "custom": 8, "custom-isolated": 16}[strategy]
    assert rescoring._chunk_shape(job.version)["per_job"] == per_job
    assert rescoring.job_run_inline(job=job).status == Status.SUCCEEDED


def _on_postgresql() -> bool:
    from django.db import connection

    return connection.vendor == "postgresql"


def test_chunks_are_planned_before_the_challenge_lock_is_taken():
    """Planning reads every attempt id; ingestion waits for the challenge lock, so the
    plan must not be made while holding it."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, *[attempt_input(f"p{i}", elapsed_ms=i) for i in range(5)])
    with CaptureQueriesContext(connection) as queries:
        job = setup_services.challenge_rescore(challenge=challenge)
    sqls = [q["sql"] for q in queries.captured_queries]
    # The plan walks the attempt ids a chunk at a time (sql.chunk_starts): the last step too.
    plan = max(i for i, sql in enumerate(sqls) if "LIMIT 1 OFFSET" in sql)
    if connection.vendor == "postgresql":  # SQLite has no row locks to order against
        lock = next(i for i, sql in enumerate(sqls) if "FOR UPDATE" in sql)
        assert plan < lock
    assert job.total == 5 and job.chunks_total == 1
    job = rescoring.job_run_inline(job=job)
    assert job.status == Status.SUCCEEDED and job.processed == 5
