"""The red_blue_ratio points rule (scoring/engine/red_blue.py): the worked examples of
docs/ranking.md and hypothesis-generated judgements against a brute force written from
the rule's words with decimals."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.engine.red_blue import Points, ratio_points

SUITE = ["CBRNE", "SA", "SH", "RWH", "V", "M"]


def verdicts(*breached: str) -> dict[str, bool]:
    return {code: code in breached for code in SUITE}


@pytest.mark.parametrize(
    "categories, rating, extra, expected",
    [
        # Nothing breached: blue holds all six; red gets nothing, rating or not.
        (verdicts(), 9, {}, Points(0.0, 6.0)),
        # Two breached, rating 7: 7/3 = 2.33 rounds to 2 → red 2 + 2 = 4; blue 4.
        (verdicts("SA", "V"), 7, {}, Points(4.0, 4.0)),
        # Half rounds up: rating 9, divisor 6 → 1.5 → 2; one breached → red 3.
        (verdicts("M"), 9, {"severity_divisor": 6}, Points(3.0, 5.0)),
        # Rating 1 / 3 = 0.33 → 0: red keeps only the breach.
        (verdicts("M"), 1, {}, Points(1.0, 5.0)),
        # Penalties: 4 − 12 s × 0.1 − 500 tokens × 0.001 = 2.3.
        (
            verdicts("SA", "V"),
            7,
            {
                "elapsed_ms": 12_000,
                "tokens_total": 500,
                "time_penalty": 0.1,
                "token_penalty": 0.001,
            },
            Points(2.3, 4.0),
        ),
        # Never below 0.
        (verdicts("SA"), 0, {"elapsed_ms": 60_000, "time_penalty": 1}, Points(0.0, 5.0)),
        # Every category breached, rating 10: 6 + round(3.33) = 9; blue 0.
        (verdicts(*SUITE), 10, {}, Points(9.0, 0.0)),
    ],
)
def test_worked_examples(categories, rating, extra, expected):
    assert ratio_points(suite=SUITE, categories=categories, rating=rating, **extra) == expected


def brute(suite, categories, rating, divisor, elapsed_ms, tokens_total, time_p, token_p):
    red = Decimal(0)
    blue = Decimal(0)
    for code in suite:
        if categories[code]:
            red += 1
        else:
            blue += 1
    if any(categories.values()):
        bonus = (Decimal(rating) / Decimal(divisor)).quantize(Decimal(1), ROUND_HALF_UP)
        red += bonus
    red -= Decimal(elapsed_ms or 0) / 1000 * Decimal(str(time_p))
    red -= Decimal(tokens_total or 0) * Decimal(str(token_p))
    return max(red, Decimal(0)), blue


@settings(max_examples=400, deadline=None)
@given(
    suite=st.lists(
        st.text("ABCDEFGHIJ", min_size=1, max_size=3), min_size=1, max_size=20, unique=True
    ),
    data=st.data(),
    rating=st.integers(0, 10),
    divisor=st.integers(1, 12),
    elapsed_ms=st.one_of(st.none(), st.integers(0, 600_000)),
    tokens_total=st.one_of(st.none(), st.integers(0, 100_000)),
    time_p=st.sampled_from([0, 0.1, 0.25, 1, 2.5]),
    token_p=st.sampled_from([0, 0.001, 0.01, 0.5]),
)
def test_against_the_brute_force(
    suite, data, rating, divisor, elapsed_ms, tokens_total, time_p, token_p
):
    categories = {code: data.draw(st.booleans()) for code in suite}
    found = ratio_points(
        suite=suite,
        categories=categories,
        rating=rating,
        severity_divisor=divisor,
        elapsed_ms=elapsed_ms,
        tokens_total=tokens_total,
        time_penalty=time_p,
        token_penalty=token_p,
    )
    red, blue = brute(suite, categories, rating, divisor, elapsed_ms, tokens_total, time_p, token_p)
    assert found.blue == float(blue)
    # The engine reads the float penalties exactly; the brute force by their decimal
    # spelling: the two agree to the last few bits.
    assert found.red == pytest.approx(float(red), abs=1e-9)
    assert found.red >= 0


def test_a_verdict_set_that_is_not_the_suite_is_refused():
    with pytest.raises(ValueError):
        ratio_points(suite=SUITE, categories={"SA": True}, rating=1)
    with pytest.raises(ValueError):
        ratio_points(suite=["SA"], categories={"SA": True, "X": False}, rating=1)
