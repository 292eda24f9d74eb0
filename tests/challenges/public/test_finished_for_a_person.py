"""Issue 31, the public pages: ``?page=`` past the end is a 404 (docs/pages.md)."""

from __future__ import annotations

import pytest

from tests.factories import attempt_input, make_challenge, record

pytestmark = pytest.mark.django_db


@pytest.fixture
def speed():
    challenge = make_challenge(name="Speed", slug="speed", scoring_strategy="fastest")
    record(challenge, *[attempt_input(f"p{i}", elapsed_ms=100 + i) for i in range(3)])
    return challenge


@pytest.mark.parametrize("path", ["/challenges/speed/", "/challenges/speed/board/"])
def test_page_past_the_end_is_a_404(client, speed, path):
    assert client.get(path + "?page=1").status_code == 200
    gone = client.get(path + "?page=2")
    assert gone.status_code == 404
    assert "this list has 1 page" in gone.text and 'href="?page=1"' in gone.text
    assert client.get(path + "?page=abc").status_code == 200  # not a number: page 1


def test_player_history_page_past_the_end_is_a_404(client, speed):
    url = "/challenges/speed/players/p1/"
    assert client.get(url + "?page=1").status_code == 200
    assert client.get(url + "?page=5").status_code == 404


def test_exports_say_the_scores_unit(client, speed):
    import csv
    import io
    import json

    def text(response):
        return b"".join(response.streaming_content).decode()

    rows = list(csv.DictReader(io.StringIO(text(client.get("/challenges/speed/leaderboard.csv")))))
    assert rows[0]["score"] == "100.0" and rows[0]["score_unit"] == "ms"
    data = json.loads(text(client.get("/challenges/speed/leaderboard.json")))
    assert data["score_unit"] == "ms" and data["results"][0]["score_unit"] == "ms"
