"""The built-in weighted scorer, exactly as docs/scorers.md states it.

score = success_bonus (only if succeeded) + rating × rating_weight
        − elapsed_ms/1000 × time_penalty − tokens_total × token_penalty,
null metrics count as 0, clamped to ≥ 0; details show each term.
"""

from __future__ import annotations

import json
import math

import pytest

from scoring.engine.config import schema_defaults
from scoring.engine.protocol import AttemptMetrics, ConfigError, ScoringContext
from scoring.engine.registry import (
    WEIGHTED_ENTRYPOINT,
    WEIGHTED_ID,
    WEIGHTED_LEGACY_ENTRYPOINT,
    builtin_registry,
)
from scoring.engine.runner import ScoringSetup, build_scorer
from scoring.scorers.weighted import WeightedScorer

DEFAULTS = {
    "success_bonus": 100.0,
    "rating_weight": 10.0,
    "time_penalty": 1.0,
    "token_penalty": 0.01,
}
SEED = {
    "success_bonus": 100.0,
    "rating_weight": 15.0,
    "time_penalty": 0.5,
    "token_penalty": 0.02,
}
TERMS = ("base", "rating_contribution", "time_penalty", "token_penalty")
# The original project's signs: penalties are stored as the (positive) amounts taken off.
SIGNS = (1.0, 1.0, -1.0, -1.0)


def signed(details):
    """Each term as what it adds to the score."""
    return {t: details[t] * sign for t, sign in zip(TERMS, SIGNS, strict=True)}


CTX = ScoringContext()


def metrics(succeeded=False, tokens=None, elapsed=None, rating=None):
    return AttemptMetrics(
        succeeded=succeeded, tokens_total=tokens, elapsed_ms=elapsed, rating=rating
    )


def score(m: AttemptMetrics, config: dict) -> dict:
    return WeightedScorer().score(m, config, CTX)


# (config, metrics, expected score, expected terms (bonus, rating, -time, -tokens))
CASES = [
    pytest.param(
        DEFAULTS,
        metrics(True, 1000, 5000, 8),
        165.0,
        (100.0, 80.0, -5.0, -10.0),
        id="defaults-succeeded",
    ),
    pytest.param(
        DEFAULTS,
        metrics(False, 1000, 5000, 8),
        65.0,
        (0.0, 80.0, -5.0, -10.0),
        id="defaults-failed-no-bonus",
    ),
    pytest.param(
        DEFAULTS,
        metrics(True, 250, 1500, 3),
        100.0 + 30.0 - 1.5 - 2.5,
        (100.0, 30.0, -1.5, -2.5),
        id="defaults-fractional-seconds",
    ),
    pytest.param(
        SEED,
        metrics(True, 1200, 12000, 5),
        145.0,
        (100.0, 75.0, -6.0, -24.0),
        id="seed-succeeded",
    ),
    pytest.param(
        SEED,
        metrics(False, 1200, 12000, 5),
        45.0,
        (0.0, 75.0, -6.0, -24.0),
        id="seed-failed-no-bonus",
    ),
    pytest.param(
        SEED,
        metrics(True, None, None, 10),
        250.0,
        (100.0, 150.0, 0.0, 0.0),
        id="seed-null-time-and-tokens",
    ),
    pytest.param(
        SEED,
        metrics(True, 0, 0, 0),
        100.0,
        (100.0, 0.0, 0.0, 0.0),
        id="seed-zeros",
    ),
    pytest.param(
        DEFAULTS,
        metrics(True),
        100.0,
        (100.0, 0.0, 0.0, 0.0),
        id="defaults-all-null-succeeded",
    ),
    pytest.param(
        DEFAULTS,
        metrics(False),
        0.0,
        (0.0, 0.0, 0.0, 0.0),
        id="defaults-all-null-failed",
    ),
    pytest.param(
        DEFAULTS,
        metrics(False, 0, 0, 0),
        0.0,
        (0.0, 0.0, 0.0, 0.0),
        id="defaults-all-zero-failed",
    ),
]


@pytest.mark.parametrize(("config", "m", "expected", "terms"), CASES)
def test_formula(config, m, expected, terms):
    result = score(m, config)
    assert result["score"] == pytest.approx(expected, rel=1e-12, abs=1e-12)
    details = result["details"]
    assert set(details) == set(TERMS)
    assert all(details[t] >= 0 for t in TERMS)
    for name, value in zip(TERMS, terms, strict=True):
        assert signed(details)[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name
    # The terms add up to the score.
    assert sum(signed(details).values()) == pytest.approx(result["score"], rel=1e-12)


@pytest.mark.parametrize("config", [DEFAULTS, SEED], ids=["defaults", "seed"])
def test_null_metrics_count_as_zero(config):
    none = score(metrics(True), config)
    zero = score(metrics(True, 0, 0, 0), config)
    assert none == zero
    assert none["score"] == config["success_bonus"]


@pytest.mark.parametrize("config", [DEFAULTS, SEED], ids=["defaults", "seed"])
def test_zero_terms_are_positive_zero(config):
    # A null metric gives a term of 0.0, never -0.0 (shown as "-0" in a breakdown).
    details = score(metrics(False), config)["details"]
    for name in TERMS:
        assert details[name] == 0.0
        assert math.copysign(1.0, details[name]) == 1.0, name


@pytest.mark.parametrize("succeeded", [True, False])
def test_success_bonus_only_if_succeeded(succeeded):
    result = score(metrics(succeeded, 0, 0, 0), {**DEFAULTS, "success_bonus": 42.0})
    assert result["details"]["base"] == (42.0 if succeeded else 0.0)
    assert result["score"] == (42.0 if succeeded else 0.0)


@pytest.mark.parametrize(
    ("config", "m", "unclamped", "terms"),
    [
        pytest.param(
            DEFAULTS,
            metrics(False, 500, 10_000, 0),
            -15.0,
            (0.0, 0.0, -10.0, -5.0),
            id="defaults",
        ),
        pytest.param(
            SEED,
            metrics(False, 0, 60_000, None),
            -30.0,
            (0.0, 0.0, -30.0, 0.0),
            id="seed",
        ),
        pytest.param(
            DEFAULTS,
            metrics(True, 20_000, 30_000, 1),
            100.0 + 10.0 - 30.0 - 200.0,
            (100.0, 10.0, -30.0, -200.0),
            id="succeeded-but-penalties-win",
        ),
    ],
)
def test_negative_total_is_clamped_and_details_keep_terms(config, m, unclamped, terms):
    result = score(m, config)
    assert result["score"] == 0.0
    details = result["details"]
    for name, value in zip(TERMS, terms, strict=True):
        assert signed(details)[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name
    assert sum(signed(details).values()) == pytest.approx(unclamped, rel=1e-12)
    # Besides the terms, the breakdown says what the score was clamped from.
    assert set(details) - set(TERMS) == {"clamped_from"}
    assert details["clamped_from"] == pytest.approx(unclamped, rel=1e-12)


def test_not_clamped_when_exactly_zero():
    # 10 rating points minus 10 seconds: exactly 0, nothing to clamp.
    result = score(metrics(False, 0, 10_000, 1), DEFAULTS)
    assert result["score"] == 0.0
    assert set(result["details"]) == set(TERMS)


BIG = 2**53 - 1
MAX_WEIGHTS = {k: 1e9 for k in DEFAULTS}


@pytest.mark.parametrize(
    ("config", "m"),
    [
        pytest.param(DEFAULTS, metrics(True, BIG, BIG, 10), id="defaults-2^53-1"),
        pytest.param(SEED, metrics(False, BIG, BIG, BIG), id="seed-2^53-1"),
        pytest.param(MAX_WEIGHTS, metrics(True, BIG, BIG, 10), id="max-weights"),
        pytest.param(MAX_WEIGHTS, metrics(True, 2**63 - 1, 2**63 - 1, 10), id="max-weights-int64"),
        pytest.param(MAX_WEIGHTS, metrics(True, 0, 0, BIG), id="huge-positive"),
    ],
)
def test_huge_values_stay_finite(config, m):
    result = score(m, config)
    assert math.isfinite(result["score"])
    assert result["score"] >= 0.0
    assert all(math.isfinite(v) for v in result["details"].values())
    json.dumps(result, allow_nan=False)  # storable as plain JSON


def test_huge_tokens_value():
    result = score(metrics(True, BIG, 0, 0), DEFAULTS)
    assert result["details"]["token_penalty"] == pytest.approx(BIG * 0.01, rel=1e-12)
    assert result["score"] == 0.0


def test_huge_positive_value():
    result = score(metrics(False, 0, 0, BIG), MAX_WEIGHTS)
    assert result["score"] == pytest.approx(BIG * 1e9, rel=1e-12)


def test_schema_defaults_are_the_documented_ones():
    assert schema_defaults(WeightedScorer.config_schema) == DEFAULTS
    assert WeightedScorer.config_schema["additionalProperties"] is False


def test_scorer_keeps_no_state_between_calls():
    scorer = WeightedScorer()
    first = scorer.score(metrics(True, 1200, 12000, 5), SEED, CTX)
    scorer.score(metrics(False, 10**6, 10**6, 0), SEED, CTX)
    again = scorer.score(metrics(True, 1200, 12000, 5), SEED, CTX)
    assert first == again


# -- through the runner: config_schema defaults filled in, config validated ----------
def run(config: dict, *ms: AttemptMetrics, entrypoint: str = WEIGHTED_ENTRYPOINT):
    setup = ScoringSetup(
        strategy="custom", plugin_id=WEIGHTED_ID, entrypoint=entrypoint, config=config
    )
    scorer = build_scorer(setup, builtin_registry())
    return scorer.score_many([(m, CTX) for m in ms])


def test_runner_applies_defaults():
    [outcome] = run({}, metrics(True, 1000, 5000, 8))
    assert outcome.score == pytest.approx(165.0, rel=1e-12)
    assert outcome.error == ""
    assert outcome.details == pytest.approx(
        {
            "base": 100.0,
            "rating_contribution": 80.0,
            "time_penalty": 5.0,
            "token_penalty": 10.0,
        },
        rel=1e-12,
    )


def test_runner_with_seed_weights():
    out = run(
        SEED,
        metrics(True, 1200, 12000, 5),
        metrics(False, 1200, 12000, 5),
        metrics(False),
        metrics(False, 0, 60_000, None),
    )
    assert [o.score for o in out] == pytest.approx([145.0, 45.0, 0.0, 0.0], rel=1e-12)
    assert all(o.error == "" for o in out)
    assert out[3].details["clamped_from"] == pytest.approx(-30.0, rel=1e-12)


def test_runner_fills_only_missing_keys():
    # rating_weight given, the other three from the schema's defaults.
    [outcome] = run({"rating_weight": 15}, metrics(True, 1200, 12000, 5))
    assert outcome.score == pytest.approx(100.0 + 75.0 - 12.0 - 12.0, rel=1e-12)


def test_runner_accepts_legacy_entrypoint():
    [outcome] = run(SEED, metrics(True, 1200, 12000, 5), entrypoint=WEIGHTED_LEGACY_ENTRYPOINT)
    assert outcome.score == pytest.approx(145.0, rel=1e-12)


def test_runner_huge_values_finite():
    [outcome] = run({}, metrics(True, BIG, BIG, 10))
    assert outcome.score == 0.0
    assert all(math.isfinite(v) for v in outcome.details.values())


@pytest.mark.parametrize(
    ("config", "key"),
    [
        pytest.param({"rating_weight": -1}, "rating_weight", id="negative-weight"),
        pytest.param({"time_penalty": "1"}, "time_penalty", id="string-weight"),
        pytest.param({"success_bonus": True}, "success_bonus", id="bool-weight"),
        pytest.param({"token_penalty": 1e10}, "token_penalty", id="over-maximum"),
        pytest.param({"token_penalty": math.nan}, "token_penalty", id="nan"),
        pytest.param({"bonus": 5}, "bonus", id="unknown-key"),
    ],
)
def test_runner_refuses_bad_config_naming_the_key(config, key):
    with pytest.raises(ConfigError) as info:
        run(config, metrics(True))
    assert key in info.value.errors


def test_batch_path_gives_exactly_the_single_results():
    import random

    from scoring.engine.protocol import AttemptMetrics, ScoringContext
    from scoring.scorers.weighted import WeightedScorer

    rng = random.Random(11)
    scorer = WeightedScorer()
    config = {
        "success_bonus": 100.0,
        "rating_weight": 15.0,
        "time_penalty": 0.5,
        "token_penalty": 0.02,
    }
    items = [
        (
            AttemptMetrics(
                rng.random() < 0.5,
                rng.choice([None, 0, rng.randint(0, 5000), 2**53 - 1]),
                rng.choice([None, 0, rng.randint(0, 10**6)]),
                rng.choice([None, rng.randint(0, 10)]),
                0,
            ),
            ScoringContext(),
        )
        for _ in range(5000)
    ]
    assert scorer.score_many(items, config) == [scorer.score(m, config, c) for m, c in items]


# --- issue 20: the original project's own test values, with partial configs ---------------
@pytest.mark.parametrize(
    ("config"),
    [
        {"success_bonus": 100, "rating_weight": 10, "time_penalty": 1.0, "token_penalty": 0.01},
        {},  # every weight from its default
        {"rating_weight": 10},  # partial: the rest from the defaults
    ],
    ids=["full", "empty", "partial"],
)
def test_original_projects_values_with_partial_configs(config):
    from scoring.scorers.weighted import WeightedScorer

    cases = [
        (AttemptMetrics(succeeded=True, tokens_total=1000, elapsed_ms=5000, rating=8), 165.0),
        (AttemptMetrics(succeeded=False, tokens_total=500, elapsed_ms=2000, rating=3), 23.0),
        (AttemptMetrics(succeeded=False, tokens_total=10_000, elapsed_ms=30_000, rating=1), 0.0),
    ]
    scorer = WeightedScorer()
    assert [scorer.score(m, config, CTX)["score"] for m, _ in cases] == [e for _, e in cases]
    batch = scorer.score_many([(m, CTX) for m, _ in cases], config)
    assert [r["score"] for r in batch] == [e for _, e in cases]
