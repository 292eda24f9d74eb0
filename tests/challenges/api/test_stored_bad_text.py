"""Nothing already stored can make a page, an export or the API fail (issue 12, finding
5): rows written by an older version with lone surrogates (SQLite kept them in JSON
columns) or NUL characters are inserted directly, then every reader is opened."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.db import connection
from django.urls import reverse

from challenges.models import Attempt, AttemptScore, Challenge, Player, ScoringVersion
from tests.factories import WEIGHTED_SEED, attempt_input, make_challenge, record
from tests.urls import (
    admin_url,
    challenges_url,
    change_url,
    detail_url,
    leaderboard_url,
    metrics_url,
    page_url,
)

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        connection.vendor != "sqlite", reason="PostgreSQL never stored these characters"
    ),
]

BAD_CONFIG = {"success_bonus": 1.0, "note\ud800": ["x\udfff", {"\ud83d": "\u0000"}]}


@pytest.fixture
def stored():
    challenge = make_challenge(slug="old", **WEIGHTED_SEED)
    (recorded,) = record(challenge, attempt_input("p1", rating=5, elapsed_ms=10))
    attempt = recorded.attempt
    Challenge.objects.filter(pk=challenge.pk).update(
        scoring_config=BAD_CONFIG,
        metrics=[{"type": "mean", "field": "s\ud800", "name": "m\udc00"}],
        description="Old \u0000 text",
    )
    ScoringVersion.objects.filter(challenge=challenge).update(scoring_config=BAD_CONFIG)
    Attempt.objects.filter(pk=attempt.pk).update(
        sample={"q\ud800": "a\udfff", "deep": [[{"k": "\ud83d"}]]},
        messages=[{"role": "user", "content": "\udc00"}],
        output="nul \u0000 here",
    )
    AttemptScore.objects.filter(attempt=attempt).update(details={"why\ud800": "\ud800"})
    Player.objects.filter(pk=attempt.player_id).update(display_name="Pat \u0000")
    # The rows really hold the characters (as the JSON escapes SQLite keeps).
    with connection.cursor() as cursor:
        cursor.execute("SELECT sample FROM challenges_attempt WHERE id = %s", [attempt.pk])
        assert "\\ud800" in cursor.fetchone()[0]
    challenge.refresh_from_db()
    return challenge, attempt


def _ok(response, url):
    assert response.status_code == 200, (url, response.status_code)
    content = (
        b"".join(response.streaming_content)
        if getattr(response, "streaming", False)
        else response.content
    )
    content.decode("utf-8")
    return content


def test_admin_pages(admin_client, stored):
    challenge, attempt = stored
    version = challenge.active_version
    score = AttemptScore.objects.get(attempt=attempt)
    for url in (
        admin_url("attempt", "change", attempt.pk),
        admin_url("attempt"),
        change_url(challenge),
        admin_url("challenge"),
        admin_url("challenge", "versions", challenge.pk),
        admin_url("scoringversion", "change", version.pk),
        admin_url("attemptscore", "change", score.pk),
        admin_url("attemptscore"),
        admin_url("player"),
        reverse("admin:index"),
    ):
        _ok(admin_client.get(url), url)


def test_api(admin_api, anon_api, stored):
    challenge, _ = stored
    for api in (admin_api, anon_api):
        for url in (
            challenges_url(),
            detail_url(challenge.pk),
            leaderboard_url(challenge.pk),
            metrics_url(challenge.pk),
        ):
            body = json.loads(_ok(api.get(url), url))
    assert body is not None
    detail = json.loads(_ok(admin_api.get(detail_url(challenge.pk)), "detail"))
    assert detail["scoring_config"]["note\ufffd"][0] == "x\ufffd"  # shown, made safe


def test_public_pages(client, stored):
    challenge, _ = stored
    slug = challenge.slug
    for url in (
        reverse("challenges:home"),
        reverse("challenges:list"),
        page_url(slug),
        page_url(slug, "board"),
        page_url(slug, "charts"),
        page_url(slug, "export-csv"),
        page_url(slug, "export-json"),
    ):
        _ok(client.get(url), url)


def test_export_challenge(stored, tmp_path):
    challenge, _ = stored
    path = tmp_path / "old.jsonl"
    call_command("export_challenge", challenge.slug, "-o", str(path), stderr=open("/dev/null", "w"))
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    samples = [item["sample"] for item in lines if "sample" in item]
    assert samples == [{"q\ufffd": "a\ufffd", "deep": [[{"k": "\ufffd"}]]}]


def test_reads_of_the_models_are_safe(stored):
    challenge, attempt = stored
    attempt = Attempt.objects.get(pk=attempt.pk)
    json.dumps(attempt.sample, ensure_ascii=False).encode("utf-8")
    assert attempt.messages == [{"role": "user", "content": "\ufffd"}]
    assert Challenge.objects.values_list("scoring_config", flat=True).get(pk=challenge.pk) == {
        "success_bonus": 1.0,
        "note\ufffd": ["x\ufffd", {"\ufffd": "\u0000"}],
    }
