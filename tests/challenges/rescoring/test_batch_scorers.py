"""Batch scorers (issue 14): ranked by the rank-normalised answer length, a burst of
200 attempts costs one run, and a run switches the leaderboard atomically."""

from __future__ import annotations

import pytest

from challenges.models import AttemptScore, BatchState, Challenge, LeaderboardEntry
from challenges.rescoring import batch as batch_scoring
from tests.urls import attempts_url, challenges_url, detail_url, leaderboard_url, page_url

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

RANK_NORMALISED = """\
from bisect import bisect_left


def compute_batch_scores(samples):
    lengths = [len(s.get("answer", "")) for s in samples]
    ordered = sorted(lengths)
    top = max(len(lengths) - 1, 1)
    return [{"rank_norm": bisect_left(ordered, n) / top, "length": n} for n in lengths]
"""
PER_ATTEMPT = """\
def compute_scores(sample):
    return {"has_answer": bool(sample.get("answer"))}
"""
BODY = {
    "name": "Longest answer",
    "scoring_strategy": "python",
    "scorers": [
        {"key": "basic", "compute_scores_snippet": PER_ATTEMPT},
        {
            "key": "relative",
            "type": "python_batch",
            "display_name": "Relative length",
            "compute_scores_snippet": RANK_NORMALISED,
        },
    ],
    "rank_by": "relative.rank_norm",
}


@pytest.fixture(autouse=True)
def _needs_the_sandbox():
    from tests.scoring.test_snippet import sandbox_or_skip

    sandbox_or_skip()


@pytest.fixture
def challenge(admin_api) -> Challenge:
    response = admin_api.post(challenges_url(), BODY, format="json")
    assert response.status_code == 201, response.content
    return Challenge.objects.get(pk=response.json()["id"])


def post(api, challenge, player, answer, when):
    body = {"player": player, "succeeded": True, "sample": {"answer": answer}, "created_at": when}
    response = api.post(attempts_url(challenge.pk), body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def board(api, challenge):
    return api.get(leaderboard_url(challenge.pk) + "?limit=500").json()


def test_burst_of_200_attempts_is_one_run(
    challenge, integration_api, anon_api, client, runs_queued, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        first = post(integration_api, challenge, "p000", "x", 1000)
        for i in range(1, 200):
            post(integration_api, challenge, f"p{i:03d}", "x" * (i % 50), 1000 + i)
    assert len(runs_queued) == 1  # debounced: one run for the burst
    assert runs_queued[0][0] == (challenge.pk,)
    # Pending until the run: stored, scored by the per-attempt scorer, not ranked.
    assert first["score"] is None and first["details"]["pending"] is True
    assert first["details"]["scorers"]["basic"]["scores"] == {"has_answer": 1.0}
    assert board(anon_api, challenge)["count"] == 0
    page = client.get(page_url(challenge.slug)).content.decode()
    assert 'data-covered="0" data-total="200"' in page

    run = batch_scoring.batch_run(challenge_id=challenge.pk)
    assert run.covered == 200 and run.error == ""
    state = BatchState.objects.get(pk=challenge.pk)
    assert (state.runs, state.covered, state.scheduled) == (1, 200, False)
    result = board(anon_api, challenge)
    assert result["count"] == 200
    top = result["results"][0]
    assert top["score"] == pytest.approx(196 / 199)  # length 49, four of them: ties
    assert top["scores"]["rank_norm"] == top["score"] and top["scores"]["length"] == 49.0
    # Equal scores: the earlier attempt first (docs/ranking.md, "The tie rule").
    assert [r["player"] for r in result["results"][:4]] == ["p049", "p099", "p149", "p199"]
    row = AttemptScore.objects.get(attempt_id=first["id"], version=challenge.active_version)
    assert row.details["scorers"]["basic"]["scores"] == {"has_answer": 1.0}
    assert "pending" not in row.details
    page = client.get(page_url(challenge.slug)).content.decode()
    assert 'data-covered="200" data-total="200"' in page
    # Nothing new: a second request schedules one more run, no more.
    with django_capture_on_commit_callbacks(execute=True):
        post(integration_api, challenge, "late", "yy", 5000)
        post(integration_api, challenge, "later", "yyy", 5001)
    assert len(runs_queued) == 2


def test_the_switch_is_atomic(
    challenge,
    integration_api,
    anon_api,
    runs_queued,
    monkeypatch,
    django_capture_on_commit_callbacks,
):
    with django_capture_on_commit_callbacks(execute=True):
        for i in range(10):
            post(integration_api, challenge, f"p{i}", "a" * i, 1000 + i)
    batch_scoring.batch_run(challenge_id=challenge.pk)
    before = board(anon_api, challenge)
    scores_before = list(
        AttemptScore.objects.order_by("attempt_id").values_list("score", "details")
    )
    with django_capture_on_commit_callbacks(execute=True):
        for i in range(10, 15):
            post(integration_api, challenge, f"p{i}", "b" * (20 + i), 2000 + i)

    # A run that dies after writing the scores, before the leaderboard is rebuilt: the
    # transaction rolls back and readers keep the previous run's leaderboard, whole.
    from challenges.leaderboards import scores

    def broken(**kwargs):
        raise RuntimeError("killed mid-switch")

    monkeypatch.setattr(scores, "entries_rebuild", broken)
    with pytest.raises(RuntimeError):
        batch_scoring.batch_run(challenge_id=challenge.pk)
    assert board(anon_api, challenge) == before
    assert (
        list(AttemptScore.objects.order_by("attempt_id").values_list("score", "details"))[:10]
        == scores_before
    )
    assert AttemptScore.objects.filter(score=None).count() == 5  # still pending
    monkeypatch.undo()

    # An attempt recorded while the sandbox computes is after the snapshot: it stays
    # pending (not half-scored) and schedules the next run.
    real = batch_scoring._compute

    def compute_while_recording(version, last_id):
        post(integration_api, challenge, "during", "c" * 99, 3000)
        return real(version, last_id)

    monkeypatch.setattr(batch_scoring, "_compute", compute_while_recording)
    run = batch_scoring.batch_run(challenge_id=challenge.pk)
    assert run.covered == 15
    after = board(anon_api, challenge)
    assert after["count"] == 15 and after["results"][0]["player"] == "p14"
    during = AttemptScore.objects.get(attempt__player__external_id="during")
    assert during.score is None and during.details["pending"] is True
    assert BatchState.objects.get(pk=challenge.pk).scheduled
    assert LeaderboardEntry.objects.filter(version=challenge.active_version).count() == 15


def test_a_failing_batch_call_fails_every_attempt_with_its_error(
    admin_api, integration_api, runs_queued, django_capture_on_commit_callbacks
):
    broken = RANK_NORMALISED.replace("return [", "return [1 / 0] + [")
    body = {
        **BODY,
        "scorers": [BODY["scorers"][0], {**BODY["scorers"][1], "compute_scores_snippet": broken}],
    }
    response = admin_api.post(challenges_url(), body, format="json")
    challenge = Challenge.objects.get(pk=response.json()["id"])
    with django_capture_on_commit_callbacks(execute=True):
        for i in range(3):
            post(integration_api, challenge, f"p{i}", "a" * i, 1000 + i)
    batch_scoring.batch_run(challenge_id=challenge.pk)
    rows = AttemptScore.objects.filter(version=challenge.active_version)
    assert all(r.score is None and "ZeroDivisionError" in r.error for r in rows)
    # The per-attempt scorer's results are kept.
    assert all(r.details["scorers"]["basic"]["scores"] for r in rows)


def test_too_large_a_batch_is_refused_with_the_reason(
    challenge, integration_api, runs_queued, settings, django_capture_on_commit_callbacks
):
    settings.PODIUM_BATCH_MAX_ATTEMPTS = 2
    with django_capture_on_commit_callbacks(execute=True):
        for i in range(3):
            post(integration_api, challenge, f"p{i}", "a", 1000 + i)
    run = batch_scoring.batch_run(challenge_id=challenge.pk)
    assert "over the 2 one batch call may take" in run.error
    assert "PODIUM_BATCH_MAX_ATTEMPTS" in BatchState.objects.get(pk=challenge.pk).error
    assert AttemptScore.objects.filter(score=None).count() == 3


def test_a_rescore_runs_the_batch_before_it_switches(
    challenge, admin_api, integration_api, anon_api, runs_queued, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        for i in range(4):
            post(integration_api, challenge, f"p{i}", "a" * (4 - i), 1000 + i)
    batch_scoring.batch_run(challenge_id=challenge.pk)
    scorers = [dict(s) for s in BODY["scorers"]]
    scorers[1]["compute_scores_snippet"] = RANK_NORMALISED.replace(
        "bisect_left(ordered, n) / top", "1 - bisect_left(ordered, n) / top"
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_api.patch(detail_url(challenge.pk), {"scorers": scorers}, format="json")
    assert response.status_code == 200
    challenge.refresh_from_db()
    assert challenge.active_version.number == 2
    result = board(anon_api, challenge)
    assert result["count"] == 4  # never went live with pending scores
    assert [r["player"] for r in result["results"]] == ["p3", "p2", "p1", "p0"]


def _on_postgresql() -> bool:
    from django.conf import settings

    return settings.DATABASES["default"]["ENGINE"].endswith("postgresql")


@pytest.mark.skipif(not _on_postgresql(), reason="concurrent readers need PostgreSQL")
@pytest.mark.django_db(transaction=True)
def test_readers_never_see_a_half_switched_run(admin_api, monkeypatch):
    """PostgreSQL: while a run's transaction has written every score and rebuilt the
    leaderboard but not committed, another connection still reads the previous run's
    leaderboard, whole; right after the commit, the new one, whole."""
    import threading

    from django.db import connections

    from challenges import tasks
    from challenges.leaderboards import scores

    monkeypatch.setattr(tasks.batch_score, "apply_async", lambda args, countdown: None)
    response = admin_api.post(challenges_url(), BODY, format="json")
    challenge = Challenge.objects.get(pk=response.json()["id"])
    for i in range(6):
        post(admin_api, challenge, f"p{i}", "a" * i, 1000 + i)
    batch_scoring.batch_run(challenge_id=challenge.pk)
    version_id = challenge.active_version_id

    def snapshot() -> list[tuple]:
        rows = LeaderboardEntry.objects.filter(version_id=version_id).order_by("player_id")
        return list(rows.values_list("player_id", "attempt_id", "score"))

    before = snapshot()
    for i in range(6, 9):
        post(admin_api, challenge, f"p{i}", "b" * (10 + i), 2000 + i)
    seen: list[list[tuple]] = []
    real = scores.entries_rebuild

    def rebuild_then_look(**kwargs):
        real(**kwargs)

        def read():
            try:
                seen.append(snapshot())
            finally:
                connections.close_all()

        reader = threading.Thread(target=read)
        reader.start()
        reader.join()

    monkeypatch.setattr(scores, "entries_rebuild", rebuild_then_look)
    run = batch_scoring.batch_run(challenge_id=challenge.pk)
    assert run.covered == 9
    assert seen == [before]  # mid-transaction: the previous run's leaderboard, whole
    after = snapshot()
    assert len(after) == 9 and after != before


def test_try_it_runs_the_batch_scorer_over_the_tried_attempts(
    challenge, integration_api, runs_queued, django_capture_on_commit_callbacks
):
    from challenges.admin import preview

    with django_capture_on_commit_callbacks(execute=True):
        for i in range(3):
            post(integration_api, challenge, f"p{i}", "a" * (i + 1), 1000 + i)
    result = preview.try_setup(challenge=challenge, setup=challenge.setup_dict())
    by_player = {r.attempt.player.external_id: r for r in result.rows}
    assert {p: r.score for p, r in by_player.items()} == {"p0": 0.0, "p1": 0.5, "p2": 1.0}
    assert by_player["p2"].details["scorers"]["basic"]["scores"] == {"has_answer": 1.0}
    assert "pending" not in by_player["p2"].details


def test_a_batch_ranking_scorer_ranks_the_way_the_setup_says(
    admin_api, integration_api, anon_api, runs_queued, django_capture_on_commit_callbacks
):
    """lower_is_better holds for a batch ranking scorer as for any other: the shortest
    answer first (the batch run used to rank every batch score highest first)."""
    response = admin_api.post(
        challenges_url(),
        {**BODY, "name": "Shortest answer", "lower_is_better": True},
        format="json",
    )
    assert response.status_code == 201, response.content
    challenge = Challenge.objects.get(pk=response.json()["id"])
    with django_capture_on_commit_callbacks(execute=True):
        for i, answer in enumerate(["aaaa", "a", "aaa", "aa"]):
            post(integration_api, challenge, f"p{len(answer)}", answer, 1000 + i)
    batch_scoring.batch_run(challenge_id=challenge.pk)
    ranked = [r["player"] for r in board(anon_api, challenge)["results"]]
    assert ranked == ["p1", "p2", "p3", "p4"]


def test_an_attempt_waiting_for_the_batch_run_is_answered_pending(
    challenge, integration_api, runs_queued
):
    """Issue 28, finding 15: stored, scored by the per-attempt scorer, but its batch
    part waits for the next run — `pending`, as docs/writing-scorers.md and docs/api.md say, not
    `scored` with a null score. Once the run has covered it, it is `scored`."""
    first = post(integration_api, challenge, "p1", "abc", 1000)
    assert first["details"]["pending"] is True
    assert first["score_status"] == "pending"
    batch_scoring.batch_run(challenge_id=challenge.pk)
    again = post(integration_api, challenge, "p2", "abcd", 1001)
    assert again["score_status"] == "pending"  # this one waits for the next run


def test_a_metric_read_while_pending_follows_the_batch_run(admin_api, integration_api, runs_queued):
    """Issue 28, finding 3: a batch run rewrites scores in place (same count, same ids):
    a python metric read while they were pending must not be served after it."""
    from tests.urls import metrics_url

    total = 'def compute_metric(scores):\n    return sum(s.get("length", 0) for s in scores)\n'
    relative = {
        **BODY["scorers"][1],
        "metrics": [{"type": "python", "name": "Total length", "compute_metric_snippet": total}],
    }
    body = {**BODY, "scorers": [BODY["scorers"][0], relative]}
    response = admin_api.post(challenges_url(), body, format="json")
    assert response.status_code == 201, response.content
    challenge = Challenge.objects.get(pk=response.json()["id"])
    post(integration_api, challenge, "a", "abc", 1000)
    post(integration_api, challenge, "b", "abcdefg", 1001)

    def value():
        found = admin_api.get(metrics_url(challenge.pk)).json()
        return next(m["value"] for m in found if m["name"] == "Total length")

    assert value() == 0  # pending: no batch scores yet
    batch_scoring.batch_run(challenge_id=challenge.pk)
    assert value() == 10.0
