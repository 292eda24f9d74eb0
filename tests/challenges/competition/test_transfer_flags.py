"""Export / import keep what is never ranked: practice and hidden attempts stay out of the
imported leaderboard, and the schedule and caps travel with the challenge."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core.management import call_command

from challenges.ingestion import moderation
from challenges.models import Attempt, Challenge, RescoreJob
from challenges.rescoring import jobs as rescoring
from tests.factories import attempt_input, make_challenge, record

pytestmark = pytest.mark.django_db


def _board(challenge: Challenge) -> list[tuple[str, float]]:
    from challenges.leaderboards import selectors

    challenge.refresh_from_db()
    page = selectors.leaderboard_page(challenge=challenge, limit=50, offset=0)
    return [(r.player_external_id, r.score) for r in page.rows]


def test_round_trip_keeps_practice_hidden_and_the_schedule(tmp_path):
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, attempt_input("a", elapsed_ms=10), attempt_input("b", elapsed_ms=20))
    moderation.attempt_set_hidden(
        attempt=Attempt.objects.get(player__external_id="a"), hidden=True, reason="x"
    )
    closes = datetime(2020, 1, 1, tzinfo=UTC)
    Challenge.objects.filter(pk=challenge.pk).update(
        closes_at=closes, late_attempts="practice", attempts_total=50
    )
    challenge.refresh_from_db()
    record(challenge, attempt_input("c", elapsed_ms=1))  # practice: after the close
    assert _board(challenge) == [("b", 20.0)]

    path = tmp_path / "c.jsonl"
    call_command("export_challenge", challenge.slug, "-o", str(path), stderr=StringIO())
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["closes_at"].startswith("2020-01-01") and lines[0]["attempts_total"] == 50
    call_command("import_challenge", str(path), "--slug", "copy", stdout=StringIO())
    copy = Challenge.objects.get(slug="copy")
    assert copy.closes_at == closes and copy.late_attempts == "practice"
    rescoring.job_run_inline(job=RescoreJob.objects.filter(challenge=copy).latest("pk"))
    assert _board(copy) == [("b", 20.0)]
    assert copy.attempts.filter(practice=True).count() == 1
    assert copy.attempts.filter(hidden=True).count() == 1
