"""Issue 15 item 7: no float noise reaches users (the policy: 12 significant digits,
challenges/leaderboards/precision.py), in the API, the CSV and JSON exports, the pages."""

from __future__ import annotations

import csv
import io
import json

import pytest

from challenges.leaderboards import precision
from tests.factories import attempt_input, make_challenge, record
from tests.urls import attempts_url, leaderboard_url, page_url

pytestmark = pytest.mark.django_db
NOISY_METRICS = {"rating": 9, "tokens_total": 896, "elapsed_ms": 12000}

NOISY = 0.1 * 3  # 0.30000000000000004


def test_policy_rounds_noise_and_keeps_meaningful_digits():
    assert repr(NOISY) == "0.30000000000000004"
    assert precision.served(NOISY) == 0.3
    assert precision.served(211.07999999999998) == 211.08
    assert precision.served(1234567.89012) == 1234567.89012
    assert precision.served(0.1 + 0.2) == 0.3
    assert precision.served(5) == 5 and precision.served(None) is None
    assert precision.served_json({"a": [0.1 + 0.2, "x", True]}) == {"a": [0.3, "x", True]}


@pytest.fixture
def noisy(settings):
    """A weighted challenge whose one score is 211.07999999999998 as computed."""
    challenge = make_challenge(
        name="Noisy",
        scoring_strategy="custom",
        scoring_plugin_id="builtin.weighted_scorer",
        scoring_config={
            "success_bonus": 100.0,
            "rating_weight": 15.0,
            "time_penalty": 0.5,
            "token_penalty": 0.02,
        },
    )
    [done] = record(challenge, attempt_input("u1", player_name="Ada", **NOISY_METRICS))
    assert repr(done.score.score) == "211.07999999999998"  # stored as computed
    return challenge


def test_api_leaderboard_serves_the_rounded_score(client, noisy):
    body = client.get(leaderboard_url(noisy.pk)).content.decode()
    assert "211.07999999999998" not in body
    assert json.loads(body)["results"][0]["score"] == 211.08


def test_api_attempt_response_serves_rounded_score_and_details(noisy, integration_api):
    response = integration_api.post(
        attempts_url(noisy.pk),
        {"player": "u2", "succeeded": True, **NOISY_METRICS},
        format="json",
    )
    assert response.status_code == 201, response.content
    assert "99999999" not in response.content.decode()
    assert response.json()["score"] == 211.08


def test_csv_and_json_exports_serve_the_rounded_score(client, noisy):
    text = b"".join(client.get(page_url(noisy.slug, "export-csv")).streaming_content)
    [row] = list(csv.DictReader(io.StringIO(text.decode())))
    assert row["score"] == "211.08"
    raw = b"".join(client.get(page_url(noisy.slug, "export-json")).streaming_content)
    assert "211.07999999999998" not in raw.decode()
    assert json.loads(raw)["results"][0]["score"] == 211.08


def test_charts_serve_no_noise(client, noisy):
    body = client.get(page_url(noisy.slug, "charts")).content.decode()
    assert "99999999" not in body
