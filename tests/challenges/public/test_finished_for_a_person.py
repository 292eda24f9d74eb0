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


# --- accessibility leftovers ------------------------------------------------------------
def _contrast(a: str, b: str) -> float:
    def lum(hex_: str) -> float:
        rgb = [int(hex_[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        c = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in rgb]
        return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _css_var(css: str, name: str) -> str:
    import re

    return re.search(rf"--{name}:\s*(#[0-9a-fA-F]{{6}})", css).group(1)


def test_light_focus_ring_has_3_to_1_against_the_page():
    from pathlib import Path

    css = (Path(__file__).resolve().parents[3] / "static/css/site.css").read_text()
    light = css[: css.index("@media (prefers-color-scheme: dark)")]
    assert "--card: #fff;" in light  # the cards are white
    assert _contrast(_css_var(light, "focus"), _css_var(light, "bg")) >= 3
    assert _contrast(_css_var(light, "focus"), "#ffffff") >= 3


def test_admin_breadcrumbs_are_readable():
    from pathlib import Path

    css = (Path(__file__).resolve().parents[3] / "static/css/admin.css").read_text()
    bg = _css_var(css, "breadcrumbs-bg")
    assert _contrast(_css_var(css, "breadcrumbs-link-fg"), bg) >= 4.5
    assert _contrast(_css_var(css, "breadcrumbs-fg"), bg) >= 4.5


def test_public_pages_have_a_meta_description(client, speed):
    for url in ("/", "/challenges/", "/challenges/speed/", "/challenges/speed/players/p1/"):
        html = client.get(url).text
        assert '<meta name="description" content="' in html, url
    assert 'content="Speed: the public leaderboard' in client.get("/challenges/speed/").text


def test_a_skip_link_reaches_the_pager_before_the_row_toggles(client):
    challenge = make_challenge(name="Many", slug="many", scoring_strategy="fastest")
    record(challenge, *[attempt_input(f"p{i}", elapsed_ms=100 + i) for i in range(51)])
    html = client.get("/challenges/many/").text
    skip = html.index('href="#board-pages"')
    assert skip < html.index('<details class="why"') and 'id="board-pages"' in html
