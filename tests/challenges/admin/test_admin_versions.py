"""Scoring versions in the admin: the history page with readable diffs, "Make active
again" (instant when the scores are kept, catching up attempts recorded since, a
background rescore otherwise), who may do it; and the /admin/ dashboard."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from challenges.leaderboards import selectors
from challenges.models import AttemptScore, Challenge, RescoreJob
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from challenges.setup import versions
from scoring.project_registry import registry
from tests.factories import WEIGHTED_SEED, attempt_input, make_challenge, record
from tests.urls import admin_url, change_url

pytestmark = pytest.mark.django_db
WEIGHTED = {k: v for k, v in WEIGHTED_SEED.items() if k != "name"}


def versions_url(challenge: Challenge) -> str:
    return admin_url("challenge", "versions", challenge.pk)


def activate_url(challenge: Challenge, version) -> str:
    return admin_url("challenge", "activate", challenge.pk, version.pk)


def board(challenge):
    challenge.refresh_from_db()
    page = selectors.leaderboard_page(challenge=challenge, limit=50, offset=0)
    return page.version.number, [(r.player_external_id, r.score) for r in page.rows]


def change(challenge, by=None, **data):
    """A setup change through the service, its rescore run to the end."""
    update = setup_services.challenge_update(challenge=challenge, data=data, by=by)
    rescoring.job_run_inline(job=update.job)
    challenge.refresh_from_db()
    return update.new_version


@pytest.fixture
def history(admin):
    """Version 1: weighted (rating_weight 15); version 2: rating_weight 0; v2 active."""
    challenge = make_challenge(**WEIGHTED)
    record(
        challenge,
        attempt_input("a", rating=10, elapsed_ms=60_000, tokens_total=1000, created_at=1),
        attempt_input("b", rating=1, elapsed_ms=2_000, tokens_total=100, created_at=2),
    )
    change(challenge, by=admin, scoring_config={**challenge.scoring_config, "rating_weight": 0.0})
    return challenge


# --- diffs and history --------------------------------------------------------------------
def test_version_diff_is_readable():
    before = {
        "scoring_strategy": "custom",
        "scoring_plugin_id": "builtin.weighted_scorer",
        "scoring_config": {"rating_weight": 15.0, "time_penalty": 0.5},
        "scoring_code": "",
        "timeout_ms": 5000,
    }
    after = {
        **before,
        "scoring_config": {"rating_weight": 20.0, "token_penalty": 1},
        "timeout_ms": 2000,
    }
    assert [(c.label, c.before, c.after) for c in versions.version_diff(before, after)] == [
        ("Config rating_weight", "15.0", "20.0"),
        ("Config time_penalty", "0.5", "(unset)"),
        ("Config token_penalty", "(unset)", "1"),
        ("Timeout", "5000 ms", "2000 ms"),
    ]
    to_fastest = {**before, "scoring_strategy": "fastest", "scoring_plugin_id": ""}
    assert [(c.label, c.before, c.after) for c in versions.version_diff(before, to_fastest)] == [
        ("Strategy", "Scorer plugin", "Fastest success"),
        ("Plugin", "builtin.weighted_scorer", "—"),
    ]
    code = versions.version_diff(
        {"scoring_code": "a = 1\nb = 2\n"}, {"scoring_code": "a = 1\nb = 3\n"}
    )
    assert code[0].label == "Code" and "-b = 2" in code[0].lines and "+b = 3" in code[0].lines
    assert versions.version_diff(None, after) == []


def test_setup_summary():
    assert versions.setup_summary({"scoring_strategy": "fastest"}) == "Fastest success"
    assert versions.setup_summary(
        {
            "scoring_strategy": "custom",
            "scoring_plugin_id": "builtin.weighted_scorer",
            "scoring_config": {"rating_weight": 2, "a": "x"},
        }
    ) == ("Scorer plugin builtin.weighted_scorer: a x, rating_weight 2")
    assert versions.setup_summary(
        {"scoring_strategy": "python", "scoring_code": "x\ny\n", "score_key": "acc"}
    ) == ("Python snippet, 2 lines, ranked by acc")


def test_history_page_shows_who_when_setup_and_diff(admin_client, history):
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(versions_url(history))
    assert response.status_code == 200
    html = response.content.decode()
    assert html.index('data-version="2"') < html.index('data-version="1"')  # newest first
    assert "Changes from version 1" in html
    assert "Config rating_weight" in html and "15.0" in html and "0.0" in html
    assert "admin," in html  # who made version 2
    assert html.count("Make active again") == 1  # not on the active version
    assert "The first version." in html
    assert len(queries) < 15  # no query per version


def test_change_page_links_to_the_versions(admin_client, history):
    html = admin_client.get(change_url(history)).content.decode()
    assert f'href="{versions_url(history)}"' in html


# --- make active again --------------------------------------------------------------------
def test_make_active_again_is_instant_when_scores_are_kept(admin_client, history):
    assert board(history) == (2, [("b", 100.0 - 1 - 2), ("a", 100.0 - 30 - 20)])
    v1 = history.versions.get(number=1)
    response = admin_client.post(activate_url(history, v1), follow=True)
    assert response.status_code == 200
    assert "Version 1 is active again (its scores were kept)." in response.content.decode()
    assert board(history) == (1, [("a", 200.0), ("b", 112.0)])
    history.refresh_from_db()
    assert history.setup_dict() == v1.setup_dict()  # the form shows what is active
    assert history.versions.count() == 2  # no new version, no job
    assert RescoreJob.objects.filter(version=v1).count() == 0


def test_make_active_again_scores_attempts_recorded_since(history):
    record(history, attempt_input("c", rating=10, elapsed_ms=1_000, tokens_total=0, created_at=3))
    v1 = history.versions.get(number=1)
    assert not AttemptScore.objects.filter(version=v1, attempt__player__external_id="c").exists()
    done = versions.version_activate(version=v1)
    assert (done.scored, done.failed, done.job) == (1, 0, None)
    assert board(history) == (1, [("c", 249.5), ("a", 200.0), ("b", 112.0)])


def test_make_active_again_scores_an_attempt_recorded_during_the_rebuild(history, monkeypatch):
    """The switch scores only attempts above the id seen under the lock at the start;
    one recorded between the catch-up and the switch is among them."""
    from challenges.leaderboards import scores

    v1 = history.versions.get(number=1)
    rebuild = scores.entries_rebuild

    def rebuild_then_record(*, version):
        rebuild(version=version)
        record(history, attempt_input("late", rating=10, elapsed_ms=0, tokens_total=0))

    monkeypatch.setattr(scores, "entries_rebuild", rebuild_then_record)
    done = versions.version_activate(version=v1)
    assert done.scored == 1  # the late one, under the lock
    late = AttemptScore.objects.get(version=v1, attempt__player__external_id="late")
    assert late.score is not None
    assert board(history)[1][0][0] == "late"


def test_make_active_again_cancels_a_running_rescore(history, monkeypatch):
    monkeypatch.setattr(rescoring, "_send", lambda job: None)  # the job stays queued
    update = setup_services.challenge_update(
        challenge=history, data={"scoring_config": {**history.scoring_config, "time_penalty": 9}}
    )
    versions.version_activate(version=history.versions.get(number=1))
    update.job.refresh_from_db()
    assert update.job.status == RescoreJob.Status.CANCELLED
    assert "version 1 was made active again" in update.job.error
    assert board(history)[0] == 1


def test_a_version_never_fully_scored_is_rescored_in_the_background(history, monkeypatch):
    monkeypatch.setattr(rescoring, "_send", lambda job: None)
    update = setup_services.challenge_update(
        challenge=history, data={"scoring_config": {**history.scoring_config, "time_penalty": 9}}
    )
    rescoring.job_cancel(job=update.job)  # version 3 was never scored
    history.refresh_from_db()
    v3 = update.new_version
    done = versions.version_activate(version=v3)
    assert done.job is not None and done.job.version == v3
    assert board(history)[0] == 2  # until the job is done
    rescoring.job_run_inline(job=done.job)
    assert board(history)[0] == 3


def test_many_missing_scores_go_to_a_background_job(history, monkeypatch):
    monkeypatch.setattr(versions, "INLINE_MISSING_MAX", 0)
    monkeypatch.setattr(rescoring, "_send", lambda job: None)
    record(history, attempt_input("c", rating=1, created_at=3))
    done = versions.version_activate(version=history.versions.get(number=1))
    assert done.job is not None and done.job.status == RescoreJob.Status.QUEUED
    rescoring.job_run_inline(job=done.job)
    assert board(history)[0] == 1


def test_activation_is_refused_for_the_active_or_a_broken_version(admin_client, history):
    v2 = history.versions.get(number=2)
    response = admin_client.post(activate_url(history, v2), follow=True)
    assert "Version 2 is already active." in response.content.decode()
    with registry().temporarily("t.tokens", "tests.plugins:TokensScorer"):
        broken = change(
            history,
            scoring_plugin_id="t.tokens",
            scoring_entrypoint="tests.plugins:TokensScorer",
            scoring_config={},
        )
    # t.tokens is no longer registered: version 3 cannot run again.
    history.refresh_from_db()
    change(history, scoring_strategy="fastest")
    response = admin_client.post(activate_url(history, broken), follow=True)
    assert "Version 3 can no longer run" in response.content.decode()
    assert board(history)[0] == 4


def test_staff_see_the_history_but_cannot_activate(scoring_staff_client, history):
    html = scoring_staff_client.get(versions_url(history)).content.decode()
    assert "Version 1" in html and "Make active again" not in html
    v1 = history.versions.get(number=1)
    assert scoring_staff_client.post(activate_url(history, v1)).status_code == 403
    assert board(history)[0] == 2


def test_activate_needs_post_and_a_version_of_the_challenge(admin_client, history):
    v1 = history.versions.get(number=1)
    assert admin_client.get(activate_url(history, v1)).status_code == 405
    other = make_challenge()
    stranger = other.versions.get()
    assert admin_client.post(activate_url(history, stranger)).status_code == 404


# --- the dashboard ------------------------------------------------------------------------
def test_dashboard_lists_each_challenge_in_a_bounded_number_of_queries(admin_client, monkeypatch):
    monkeypatch.setattr(rescoring, "_send", lambda job: None)

    def dashboard_queries():
        with CaptureQueriesContext(connection) as queries:
            response = admin_client.get(reverse("admin:index"))
        assert response.status_code == 200
        return response, len(queries)

    first = make_challenge(name="Alpha", scoring_strategy="fastest")
    record(first, attempt_input("a", elapsed_ms=3), attempt_input("a", elapsed_ms=2, created_at=9))
    record(first, attempt_input("b", elapsed_ms=5))
    _, few = dashboard_queries()
    for n in range(5):
        more = make_challenge(name=f"Beta {n}")
        record(more, attempt_input(f"p{n}"))
        setup_services.challenge_rescore(challenge=more)  # queued: shown with its progress
    response, many = dashboard_queries()
    assert many == few  # not one query per challenge
    html = response.content.decode()
    row = html.split('data-challenge="alpha"')[1].split("</tr>")[0]
    assert '<td class="num" data-label="Attempts">3</td>' in row
    assert '<td class="num" data-label="Players with attempts">2</td>' in row
    assert "version 1" in row and "2026-01-01 00:00:09 UTC" in row
    beta = html.split('data-challenge="beta-0"')[1].split("</tr>")[0]
    assert "rescore-progress" in beta and "0/1" in beta


def test_dashboard_is_hidden_from_staff_without_challenge_rights(staff_client):
    make_challenge(name="Secret")
    html = staff_client.get(reverse("admin:index")).content.decode()
    assert "podium-dashboard" not in html


def test_dashboard_counts_scoring_failures_of_the_active_version(admin_client):
    with (
        registry().temporarily("t.const", "tests.plugins:Constant"),
        registry().temporarily("t.boom", "tests.config.test_logging:Boom"),
    ):
        boom = make_challenge(
            name="Gamma",
            scoring_strategy="custom",
            scoring_plugin_id="t.boom",
            scoring_entrypoint="tests.config.test_logging:Boom",
        )
        record(boom, attempt_input("a"), attempt_input("b"))
        fine = make_challenge(name="Delta", scoring_strategy="fastest")
        record(fine, attempt_input("a", elapsed_ms=1))
        html = admin_client.get(reverse("admin:index")).content.decode()
    gamma = html.split('data-challenge="gamma"')[1].split("</tr>")[0]
    assert 'data-failures="2"' in gamma
    link = admin_url("attemptscore") + f"?version={boom.active_version_id}&amp;has_error=yes"
    assert link in gamma
    delta = html.split('data-challenge="delta"')[1].split("</tr>")[0]
    assert 'data-failures="0"' in delta and "0 failures" in delta


def test_deleting_an_attempt_in_the_admin_repairs_the_leaderboard(admin_client):
    challenge = make_challenge(name="Eps", scoring_strategy="fastest")
    record(challenge, attempt_input("a", elapsed_ms=5), attempt_input("a", elapsed_ms=9))
    best = challenge.attempts.get(elapsed_ms=5)
    response = admin_client.post(admin_url("attempt", "delete", best.pk), {"post": "yes"})
    assert response.status_code == 302
    challenge.refresh_from_db()
    page = selectors.leaderboard_page(challenge=challenge, limit=10, offset=0)
    assert [(r.player_external_id, r.score) for r in page.rows] == [("a", 9.0)]
    response = admin_client.post(
        admin_url("attempt"),
        {
            "action": "delete_selected",
            "_selected_action": [challenge.attempts.get().pk],
            "post": "yes",
        },
    )
    assert response.status_code == 302
    assert selectors.leaderboard_page(challenge=challenge, limit=10, offset=0).rows == []
