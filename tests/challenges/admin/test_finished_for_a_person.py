"""Issue 31, the admin: every date through the one formatter ("… 14:05:09 UTC"), Try it's
numbers with two decimals, the lockout page's command."""

from __future__ import annotations

import re

import pytest
from django.template.loader import render_to_string

from challenges.admin import preview
from challenges.admin.views import TRY_TEMPLATE, when_html
from challenges.boards.display import exact_time
from challenges.models import RescoreJob
from challenges.setup import services as setup_services
from tests.factories import WEIGHTED_SEED, attempt_input, make_challenge, record
from tests.urls import admin_url

pytestmark = pytest.mark.django_db
EXACT = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")
SHORT = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d(?!:\d\d UTC)")  # a date without seconds or zone


@pytest.fixture
def weighted():
    challenge = make_challenge(**WEIGHTED_SEED)
    record(challenge, attempt_input("a", rating=5, elapsed_ms=12_345, tokens_total=1200))
    return challenge


def test_versions_page_writes_dates_with_seconds_and_zone(admin_client, weighted):
    html = admin_client.get(admin_url("challenge", "versions", weighted.pk)).text
    version = weighted.versions.get()
    assert exact_time(version.created_at) in html
    assert not SHORT.search(html)


def test_rescore_box_writes_dates_with_seconds_and_zone(
    admin_client, weighted, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = setup_services.challenge_rescore(challenge=weighted)
    job.refresh_from_db()
    assert job.status == RescoreJob.Status.SUCCEEDED
    html = admin_client.get(admin_url("rescorejob", "progress", job.pk)).text
    assert f"(since {exact_time(job.finished_at)})" in html
    # The jobs list: the full date, or on the job's own day the time with its zone.
    assert EXACT.search(when_html(job.created_at))
    assert re.search(r">\d\d:\d\d:\d\d UTC<", when_html(job.finished_at, day_of=job.created_at))


def test_try_it_writes_dates_with_seconds_and_zone(weighted):
    result = preview.try_setup(challenge=weighted, setup=weighted.setup_dict())
    html = render_to_string(TRY_TEMPLATE, {"result": result, "challenge": weighted})
    attempt = weighted.attempts.get()
    assert exact_time(attempt.created_at) in html
    assert not SHORT.search(html)


def test_dashboard_writes_the_last_attempt_with_seconds(admin_client, weighted):
    html = admin_client.get("/admin/").text
    assert exact_time(weighted.attempts.get().created_at) in html


def test_try_it_and_preview_numbers_have_two_decimals():
    from challenges.templatetags.podium_admin import detail_text, score_text, signed

    assert [score_text(227.1), score_text(0.0), score_text(1234.5)] == [
        "227.10",
        "0.00",
        "1,234.50",
    ]
    assert [signed(27.1), signed(-3), signed(0.001), signed(None)] == [
        "+27.10",
        "−3.00",
        "0.00",
        "",
    ]
    assert detail_text(94.1) == "94.10"


def test_rescore_now_on_an_unchanged_setup_makes_a_new_version_and_switches_whole(
    admin_client, weighted
):
    """Item 8, decided (docs/ranking.md): a new number, the board on the old one until
    the new one is complete, the version marked "rescore"."""
    from challenges.leaderboards import selectors

    before = weighted.active_version
    response = admin_client.post(admin_url("challenge", "rescore", weighted.pk))
    assert response.status_code == 302
    weighted.refresh_from_db()
    new = weighted.versions.order_by("-number").first()
    assert (new.number, new.reason) == (before.number + 1, "rescore")
    assert (new.scoring_strategy, new.scoring_config) == (
        before.scoring_strategy,
        before.scoring_config,
    )
    page = selectors.leaderboard_page(challenge=weighted, limit=50, offset=0)
    assert page.version.number == before.number  # the job has not run: v1 still shows
    html = admin_client.get(admin_url("challenge", "versions", weighted.pk)).text
    assert "· rescore" in html
    from pathlib import Path

    docs = (Path(__file__).resolve().parents[3] / "docs" / "ranking.md").read_text()
    assert '"Rescore now" on an unchanged setup also makes a new version number' in docs
