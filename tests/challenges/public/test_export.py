"""CSV and JSON export of the whole leaderboard: streamed, ranked, and safe to open."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.http import StreamingHttpResponse

from challenges.boards.shapes import csv_cell
from challenges.leaderboards import selectors
from tests.factories import attempt_input, make_challenge, record
from tests.urls import page_url

pytestmark = pytest.mark.django_db


def body(response) -> str:
    assert isinstance(response, StreamingHttpResponse)  # never built in memory
    return b"".join(response.streaming_content).decode()


@pytest.fixture
def board():
    challenge = make_challenge(slug="race", scoring_strategy="fastest")
    record(
        challenge,
        attempt_input("a", player_name="=HYPERLINK(1)", elapsed_ms=100),
        attempt_input("b", player_name="+plus", elapsed_ms=200),
        attempt_input("c", player_name="-minus", elapsed_ms=200),
        attempt_input("d", player_name='@at, "quoted"', elapsed_ms=300),
        attempt_input("e", player_name="Plain Pat", elapsed_ms=400, created_at=5),
        attempt_input("f", player_name="Failed Fay", succeeded=False, elapsed_ms=1),
    )
    return challenge


def test_csv_export(client, board):
    response = client.get(page_url("race", "export-csv"))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert 'filename="race-leaderboard.csv"' in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(body(response))))
    assert rows[0] == [
        "rank",
        "player",
        "display_name",
        "score",
        "score_unit",
        "attempt_id",
        "created_at",
    ]
    assert [(r[0], r[1], r[2], r[3]) for r in rows[1:]] == [
        ("1", "a", "'=HYPERLINK(1)", "100.0"),
        ("2", "b", "'+plus", "200.0"),
        ("2", "c", "'-minus", "200.0"),
        ("4", "d", '\'@at, "quoted"', "300.0"),
        ("5", "e", "Plain Pat", "400.0"),
    ]
    assert rows[5][6] == "2026-01-01T00:00:05Z"


def test_csv_cell_escapes_formula_starts_only():
    for risky in ("=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx"):
        assert csv_cell(risky) == "'" + risky
    assert csv_cell("Ann = Bob") == "Ann = Bob"
    assert csv_cell(-1.5) == -1.5  # numbers are numbers, not text


def test_json_export(client, board):
    response = client.get(page_url("race", "export-json"))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    data = json.loads(body(response))
    assert data["challenge"] == "race" and data["version"] == 1
    assert [(r["rank"], r["player"], r["display_name"]) for r in data["results"]] == [
        (1, "a", "=HYPERLINK(1)"),  # JSON is data, not a spreadsheet: no escaping
        (2, "b", "+plus"),
        (2, "c", "-minus"),
        (4, "d", '@at, "quoted"'),
        (5, "e", "Plain Pat"),
    ]
    assert set(data["results"][0]) == {
        "rank",
        "player",
        "display_name",
        "score",
        "score_unit",
        "attempt_id",
        "created_at",
    }


def test_empty_exports(client):
    make_challenge(slug="quiet")
    assert json.loads(body(client.get(page_url("quiet", "export-json"))))["results"] == []
    assert body(client.get(page_url("quiet", "export-csv"))).strip() == (
        "rank,player,display_name,score,score_unit,attempt_id,created_at"
    )


def test_export_reads_in_keyset_batches_across_ties(client, monkeypatch):
    """Batches of 3 rows: ties at batch edges keep their shared rank, nobody twice."""
    monkeypatch.setattr(selectors, "EXPORT_BATCH", 3)
    challenge = make_challenge(slug="ties", scoring_strategy="fastest")
    record(challenge, *[attempt_input(f"p{i:02d}", elapsed_ms=i // 4) for i in range(14)])
    data = json.loads(body(client.get(page_url("ties", "export-json"))))
    assert [r["player"] for r in data["results"]] == [f"p{i:02d}" for i in range(14)]
    assert [r["rank"] for r in data["results"]] == [1] * 4 + [5] * 4 + [9] * 4 + [13] * 2
    api = selectors.leaderboard_page(challenge=challenge, limit=50, offset=0)
    assert [r["rank"] for r in data["results"]] == [r.rank for r in api.rows]


def test_exports_of_hidden_challenges_are_404(client):
    make_challenge(slug="secret", is_active=False)
    assert client.get(page_url("secret", "export-csv")).status_code == 404
    assert client.get(page_url("secret", "export-json")).status_code == 404


def test_exports_refuse_writes(client, board):
    assert client.post(page_url("race", "export-csv")).status_code == 405
