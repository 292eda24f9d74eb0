"""Values in the unit the strategy or scorer defines; medals only above the lowest
possible value (issue 15, "Text that fits")."""

from __future__ import annotations

import re

import pytest

from challenges.boards import display
from scoring import sandbox
from tests.factories import attempt_input, make_challenge, record
from tests.urls import page_url

pytestmark = pytest.mark.django_db


def test_snippet_scores_are_plain_numbers_not_points():
    assert display.format_value(1.0, "python") == "1"
    assert display.format_value(0.0, "python") == "0"
    assert display.format_value(0.3333333, "python") == "0.3333"
    assert display.format_value(1234.5, "python") == "1,234.5"
    assert display.format_value(145.0, "custom") == "145.00 pts"


def test_no_medal_for_a_zero_score_on_a_higher_is_better_board(client):
    if not sandbox.availability().available:
        pytest.skip(sandbox.availability().message)
    challenge = make_challenge(
        name="Binary",
        scoring_strategy="python",
        scoring_code='def compute_scores(sample):\n    return {"ok": sample.get("x") == 1}\n',
    )
    record(
        challenge,
        attempt_input("a", player_name="Yes", sample={"x": 1}),
        attempt_input("b", player_name="No", sample={"x": 2}),
    )
    html = client.get(page_url(challenge.slug)).content.decode()
    assert " pts<" not in html and ".00 pts" not in html
    medals = re.findall(r'aria-label="(\w+) medal"', html)
    assert medals == ["gold"]  # "No" scored 0, the lowest possible value: no silver


def test_fastest_keeps_medals_for_any_time():
    challenge = make_challenge(name="Speed", scoring_strategy="fastest")
    assert display.medal(2, 0.0, challenge) == display.MEDALS[2]


def test_snippet_chart_axis_names_the_score_not_points(client):
    if not sandbox.availability().available:
        pytest.skip(sandbox.availability().message)
    challenge = make_challenge(
        name="Binary",
        scoring_strategy="python",
        scoring_code='def compute_scores(sample):\n    return {"is_ok": sample.get("x") == 1}\n',
        score_key="is_ok",
    )
    record(challenge, attempt_input("a", sample={"x": 1}))
    data = client.get(page_url(challenge.slug, "charts")).json()
    assert data["axis"] == "Is ok"


def test_frequency_metric_reads_as_labelled_value_to_count():
    from challenges.templatetags.podium_metrics import metric_display

    shown = metric_display({"type": "frequency", "value": {"1.0": 3, "0.0": 12}})
    assert shown == "0 → 12 · 1 → 3"
    assert metric_display({"type": "frequency", "value": {}}) == "no data"
    assert metric_display({"type": "mean", "value": 0.333333}) == "0.3333"
