"""A pairing scorer's answer through the failure rules (scoring/engine/red_blue.py),
and the isolated process running ``score_pairing``: no database, no Django."""

from __future__ import annotations

import math
from collections import OrderedDict

import pytest

from scoring.engine.isolated import IsolatedScorer
from scoring.engine.red_blue import Points, pairing_judgement, pairing_result

SUITE = ["SA", "V"]


@pytest.mark.parametrize(
    "result, points",
    [
        ({"red": 2, "blue": 1.5}, Points(2.0, 1.5)),
        ({"red": -1, "blue": 0}, Points(0.0, 0.0)),  # negative counts 0
        (OrderedDict(red=1.0, blue=2.0, extra="ignored"), Points(1.0, 2.0)),
    ],
)
def test_good_answers(result, points):
    assert pairing_result(result).points == points and pairing_result(result).error == ""


@pytest.mark.parametrize(
    "result, words",
    [
        (None, "not NoneType"),
        ([1, 2], "not list"),
        ({"red": 1}, "'blue' must be a number, not NoneType"),
        ({"red": True, "blue": 1}, "not bool"),
        ({"red": "1", "blue": 1}, "not str"),
        ({"red": math.nan, "blue": 1}, "finite"),
        ({"red": 1, "blue": -math.inf}, "finite"),
        ({"red": 10**400, "blue": 1}, "too large"),
        ({"red": 1e13, "blue": 1}, "finite number of at most"),
    ],
)
def test_garbage_fails_with_the_reason(result, words):
    outcome = pairing_result(result)
    assert outcome.points is None and words in outcome.error


def test_the_isolated_process_runs_score_pairing():
    scorer = IsolatedScorer("tests.plugins:PairingWeird")
    try:
        judgements = [
            pairing_judgement(
                suite=SUITE,
                categories={"SA": True, "V": False},
                rating=rating,
                elapsed_ms=None,
                tokens_total=None,
            )
            for rating in (10, 0, 2, 9, 6)
        ]
        got = scorer.run_pairings(judgements, {}, timeout_ms=300)
    finally:
        scorer.stop()
    assert got[0].points == Points(5.0, 1.0)
    assert "ValueError: no verdict for me" in got[1].error
    assert "not str" in got[2].error
    assert "timed out after 300 ms" in got[3].error
    assert got[4].points == Points(0.0, 2.0)  # the process went on after the timeout
