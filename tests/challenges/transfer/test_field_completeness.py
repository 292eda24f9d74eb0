"""The issue's field-completeness example, exactly: the YAML file and
completeness_scorer.py applied with challenge_apply, three attempts, and the values on
the page, the API and the exports."""

from __future__ import annotations

import csv
import io
import json
from io import StringIO

import pytest
from django.core.management import call_command

from challenges.models import Challenge
from tests.challenges.transfer.test_definitions import COMPLETENESS, YAML, write
from tests.urls import attempts_url, leaderboard_url, metrics_url, page_url

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


@pytest.fixture(autouse=True)
def _needs_the_sandbox():
    from tests.scoring.test_snippet import sandbox_or_skip

    sandbox_or_skip()


def body(response) -> str:
    return b"".join(response.streaming_content).decode()


def test_field_completeness_through_the_command_api_pages_and_exports(
    tmp_path, integration_api, anon_api, client
):
    out = StringIO()
    call_command("challenge_apply", str(write(tmp_path, YAML, COMPLETENESS)), stdout=out)
    challenge = Challenge.objects.get(slug="field-completeness")

    samples = [("paris", {"answer": "Paris"}), ("blank", {"answer": ""}), ("none", {})]
    attempts = [
        {"player": p, "succeeded": True, "sample": s, "created_at": 1000 + i}
        for i, (p, s) in enumerate(samples)
    ]
    response = integration_api.post(attempts_url(challenge.pk), attempts, format="json")
    assert response.status_code == 201, response.content
    triples = [
        (s["is_complete"], s["has_field"], s["empty_field"])
        for s in (a["details"]["scores"] for a in response.json())
    ]
    assert triples == [(1.0, 1.0, 0.0), (0.0, 1.0, 1.0), (0.0, 0.0, 0.0)]

    # The API: the metric, and every score of the ranking scorer on each row.
    metrics = anon_api.get(metrics_url(challenge.pk)).json()
    assert metrics == [
        {
            "name": "Field Completeness",
            "type": "mean",
            "value": pytest.approx(1 / 3),
            "scorer": "completeness",
            "scorer_name": "Completeness",
        }
    ]
    board = anon_api.get(leaderboard_url(challenge.pk)).json()
    rows = {r["player"]: r for r in board["results"]}
    assert rows["paris"]["scores"] == {"is_complete": 1.0, "has_field": 1.0, "empty_field": 0.0}
    assert rows["blank"]["scores"] == {"is_complete": 0.0, "has_field": 1.0, "empty_field": 1.0}
    assert rows["none"]["scores"] == {"is_complete": 0.0, "has_field": 0.0, "empty_field": 0.0}
    assert next(iter(rows["paris"]["scores"])) == "is_complete"  # the ranking one first

    # The page: the metric and the score columns.
    page = client.get(page_url(challenge.slug)).content.decode()
    assert "Field Completeness" in page and "0.3333" in page
    assert "Completeness:" in page  # metrics grouped by scorer
    header = page[page.index("<thead>") : page.index("</thead>")]
    # Issue 31: scores in words, the ranking one only as the value (not a second column).
    assert header.index("Best value") < header.index("has field") < header.index("empty field")
    assert "is_complete" not in header and "is complete" not in header
    assert "<dt>Is complete</dt>" not in page and "<dt>Has field</dt>" in page

    # The exports.
    data = json.loads(body(client.get(page_url(challenge.slug, "export-json"))))
    exported = {r["player"]: r["scores"] for r in data["results"]}
    assert exported == {p: rows[p]["scores"] for p in rows}
    table = list(
        csv.DictReader(io.StringIO(body(client.get(page_url(challenge.slug, "export-csv")))))
    )
    assert [
        (r["player"], r["scores.is_complete"], r["scores.has_field"], r["scores.empty_field"])
        for r in table
    ] == [
        ("paris", "1.0", "1.0", "0.0"),
        ("blank", "0.0", "1.0", "1.0"),
        ("none", "0.0", "0.0", "0.0"),
    ]
    mean = sum(float(r["scores.is_complete"]) for r in table) / len(table)
    assert mean == pytest.approx(1 / 3)
