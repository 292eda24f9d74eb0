"""build_scorer + score_many: built-in strategies and every failure rule of docs/scorers.md.

Third-party plugins run isolated (a child process); a built-in that declares itself pure
runs in process. The failure rules are checked on both paths: the test plugins are
registered once as third-party and once (``InProcess*``) as built-ins.
"""

from __future__ import annotations

import json
import os
import sys
import time
import types

import pytest

from scoring.engine.outcome import Outcome
from scoring.engine.protocol import AttemptMetrics, ConfigError, ScoringContext
from scoring.engine.registry import WEIGHTED_ID, ScorerRegistry, builtin_registry
from scoring.engine.runner import ScoringSetup, build_scorer

TIMEOUT_MS = 1000

ISOLATED = {
    "t.weird": "tests.plugins:Weird",
    "t.tokens": "tests.plugins:TokensScorer",
    "t.sleeper": "tests.plugins:Sleeper",
    "t.stubborn": "tests.plugins:StubbornReportsPid",
    "t.crasher": "tests.plugins:Crasher",
    "t.printer": "tests.plugins:Printer",
    "t.huge": "tests.plugins:HugeDetails",
    "t.pid": "tests.plugins:ReportsPid",
    "t.echo": "tests.plugins:EchoContext",
    "t.const": "tests.plugins:Constant",
    "t.wide": "tests.plugins:WideDetails",
    "t.bigint": "tests.plugins:BigIntDetails",
}
IN_PROCESS = {
    "b.weird": "tests.plugins:InProcessWeird",
    "b.tokens": "tests.plugins:InProcessTokensScorer",
    "b.sleeper": "tests.plugins:InProcessSleeper",
    "b.pid": "tests.plugins:ReportsPid",
    "b.wide": "tests.plugins:InProcessWideDetails",
    "b.bigint": "tests.plugins:InProcessBigIntDetails",
}
# failure-rule plugin per path: (weird, tokens)
PATHS = {
    "isolated": ("t.weird", "t.tokens"),
    "in-process": ("b.weird", "b.tokens"),
}


@pytest.fixture
def registry() -> ScorerRegistry:
    reg = builtin_registry()
    for plugin_id, entrypoint in ISOLATED.items():
        reg.register(plugin_id, entrypoint)
    for plugin_id, entrypoint in IN_PROCESS.items():
        reg.register(plugin_id, entrypoint, builtin=True)
    return reg


def ctx(timeout_ms: int = TIMEOUT_MS, **kw) -> ScoringContext:
    return ScoringContext(timeout_ms=timeout_ms, **kw)


def items(*ms: AttemptMetrics, timeout_ms: int = TIMEOUT_MS):
    return [(m, ctx(timeout_ms)) for m in ms]


def rated(*ratings):
    return items(*(AttemptMetrics(succeeded=True, rating=r) for r in ratings))


def build(registry, plugin_id, config=None, timeout_ms=TIMEOUT_MS):
    setup = ScoringSetup(
        strategy="custom",
        plugin_id=plugin_id,
        config=config or {},
        timeout_ms=timeout_ms,
    )
    return build_scorer(setup, registry)


def assert_failed(outcome: Outcome, *words: str) -> None:
    assert outcome.score is None
    assert outcome.error
    assert outcome.details == {"error": outcome.error}
    for word in words:
        assert word.lower() in outcome.error.lower(), (word, outcome.error)


def test_paths_are_what_the_tests_assume(registry):
    for plugin_id in IN_PROCESS:
        assert registry.info(plugin_id).runs_in_process is True
    for plugin_id in ISOLATED:
        assert registry.info(plugin_id).runs_in_process is False


@pytest.mark.parametrize(("plugin_id", "same_process"), [("t.pid", False), ("b.pid", True)])
def test_third_party_runs_isolated_even_if_it_claims_otherwise(registry, plugin_id, same_process):
    # ReportsPid sets runs_in_process = True: honoured only for a built-in registration.
    [outcome] = build(registry, plugin_id).score_many(rated(1))
    assert outcome.score == 1.0
    assert (outcome.details["pid"] == os.getpid()) is same_process


# -- failure rules -------------------------------------------------------------------
GOOD = 10  # Weird's rating that scores 7.5 with details {"ok": True}
WEIRD_CASES = [
    # rating, expected score (None: failed), expected details or error words
    pytest.param(0, None, ("score",), id="returns-None"),
    pytest.param(1, None, ("score",), id="no-score"),
    pytest.param(2, None, ("str",), id="string-score"),
    pytest.param(3, None, ("nan",), id="nan"),
    pytest.param(4, None, ("inf",), id="inf"),
    pytest.param(5, None, ("bool",), id="bool-score"),
    pytest.param(6, 0.0, {"why": "negative"}, id="negative-clamped"),
    pytest.param(7, None, ("float",), id="overflowing-int"),
    pytest.param(8, None, ("details",), id="details-not-a-dict"),
    pytest.param(9, None, ("json",), id="details-not-json"),
    pytest.param(GOOD, 7.5, {"ok": True}, id="good"),
]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("rating", "score", "expected"), WEIRD_CASES)
def test_weird_results(registry, path, rating, score, expected):
    scorer = build(registry, PATHS[path][0])
    out = scorer.score_many(rated(GOOD, rating, GOOD))
    assert len(out) == 3
    if score is None:
        assert_failed(out[1], *expected)
    else:
        clamped_from = -5.0 if rating == 6 else None  # the outcome remembers the clamp
        assert out[1] == Outcome(score, expected, "", clamped_from)
        assert isinstance(out[1].score, float)
    # The neighbours in the same batch are scored normally.
    assert out[0] == out[2] == Outcome(7.5, {"ok": True}, "")


@pytest.mark.parametrize("path", PATHS)
def test_weird_results_all_in_one_batch(registry, path):
    out = build(registry, PATHS[path][0]).score_many(rated(*range(11), GOOD))
    assert [o.score for o in out] == [None] * 6 + [0.0] + [None] * 3 + [7.5, 7.5]
    assert [bool(o.error) for o in out] == [True] * 6 + [False] + [True] * 3 + [False] * 2
    for outcome in out:  # every outcome's details can be stored as plain JSON
        json.dumps(outcome.details, allow_nan=False)


@pytest.mark.parametrize("path", PATHS)
def test_exception_is_recorded(registry, path):
    scorer = build(registry, PATHS[path][1])
    batch = items(*(AttemptMetrics(tokens_total=t) for t in (5, 13, None, 13, 7)))
    out = scorer.score_many(batch)
    assert [o.score for o in out] == [5.0, None, 0.0, None, 7.0]
    for failed in (out[1], out[3]):
        assert_failed(failed, "ValueError", "unlucky")
    assert out[0] == Outcome(5.0, None, "")


@pytest.mark.parametrize(
    "plugin_id",
    [
        pytest.param("t.huge", id="one-big-string"),
        pytest.param(
            "t.wide",
            id="many-short-strings-isolated",
        ),
        pytest.param(
            "b.wide",
            id="many-short-strings-in-process",
        ),
    ],
)
def test_details_over_the_size_cap(registry, plugin_id):
    out = build(registry, plugin_id).score_many(rated(1, 2))
    for outcome in out:
        assert_failed(outcome, "details")


@pytest.mark.parametrize(
    "plugin_id",
    [
        pytest.param("t.bigint", id="isolated"),
        pytest.param(
            "b.bigint",
            id="in-process",
        ),
    ],
)
def test_details_that_json_cannot_encode(registry, plugin_id):
    [outcome] = build(registry, plugin_id).score_many(rated(1))
    assert_failed(outcome, "JSON")
    json.dumps(outcome.details, allow_nan=False)


@pytest.mark.parametrize("plugin_id", ["t.weird", "b.weird", "t.sleeper", WEIGHTED_ID])
def test_empty_batch(registry, plugin_id):
    assert build(registry, plugin_id).score_many([]) == []


def test_isolated_plugin_gets_metrics_context_and_defaults(registry):
    metrics = AttemptMetrics(
        succeeded=True, tokens_total=2**53 - 1, elapsed_ms=0, rating=None, created_at=17
    )
    context = ScoringContext(
        challenge_id=9,
        end_user_id="player-1",
        tenant_id="t",
        app_id="a",
        workflow_id="w",
        timeout_ms=TIMEOUT_MS,
    )
    [outcome] = build(registry, "t.echo", {"extra": [1, "x"]}).score_many([(metrics, context)])
    assert outcome.error == ""
    assert outcome.details == {
        "metrics": metrics.as_dict(),
        "config": {"extra": [1, "x"], "k": 7},
        "ctx": context.as_dict(),
    }


def test_config_validated_at_build_time(registry):
    with pytest.raises(ConfigError) as info:
        build(registry, "t.const", {"value": "high"})
    assert "value" in info.value.errors
    [outcome] = build(registry, "t.const", {"value": 3}).score_many(rated(1))
    assert outcome == Outcome(3.0, {"value": 3}, "")


def test_invalid_plugin_schema_is_a_value_error(registry):
    registry.register("t.badschema", "tests.plugins:BadSchema")
    with pytest.raises(ValueError, match="config_schema"):
        build(registry, "t.badschema")


# -- timeouts, crashes, prints ---------------------------------------------------------
@pytest.mark.slow
def test_sleeping_plugin_is_stopped(registry):
    scorer = build(registry, "t.sleeper")
    started = time.monotonic()
    out = scorer.score_many(rated(1, 0, 2, 3))
    took = time.monotonic() - started
    assert took < TIMEOUT_MS / 1000 + 1.0, took
    assert out[0] == out[2] == out[3] == Outcome(1.0, None, "")
    assert_failed(out[1], "timed out")
    # The same scorer keeps working afterwards.
    started = time.monotonic()
    assert scorer.score_many(rated(5, 6)) == [Outcome(1.0, None, "")] * 2
    assert time.monotonic() - started < 1.0


@pytest.mark.slow
def test_stubborn_plugin_is_killed_and_replaced(registry):
    scorer = build(registry, "t.stubborn")
    [warm] = scorer.score_many(rated(1))
    old_pid = warm.details["pid"]
    assert old_pid != os.getpid()

    started = time.monotonic()
    out = scorer.score_many(rated(0, 1, 2))
    took = time.monotonic() - started
    assert took < TIMEOUT_MS / 1000 + 1.0, took
    assert_failed(out[0], "timed out")
    assert [o.score for o in out[1:]] == [2.0, 2.0]
    new_pid = out[1].details["pid"]
    assert new_pid == out[2].details["pid"]
    assert new_pid not in (old_pid, os.getpid())
    with pytest.raises(ProcessLookupError):  # the stubborn process is gone
        os.kill(old_pid, 0)

    # A following call is served by the healthy replacement.
    [after] = scorer.score_many(rated(3))
    assert after == Outcome(2.0, {"pid": new_pid}, "")


@pytest.mark.slow
def test_in_process_overrun_is_recorded(registry):
    # A built-in cannot be stopped, but running past timeout_ms still means no score.
    scorer = build(registry, "b.sleeper", {"seconds": 0.2}, timeout_ms=50)
    out = scorer.score_many(items(*(AttemptMetrics(rating=r) for r in (1, 0, 2)), timeout_ms=50))
    assert out[0] == out[2] == Outcome(1.0, None, "")
    assert_failed(out[1], "50 ms")


def test_crashing_plugin(registry):
    scorer = build(registry, "t.crasher")
    out = scorer.score_many(rated(1, 0, 2, 0, 3))
    assert [o.score for o in out] == [3.0, None, 3.0, None, 3.0]
    assert_failed(out[1], "died")
    assert_failed(out[3], "died")
    assert scorer.score_many(rated(4)) == [Outcome(3.0, None, "")]


def test_prints_do_not_corrupt_results(registry):
    scorer = build(registry, "t.printer")
    out = scorer.score_many(rated(*range(20)))
    assert out == [Outcome(4.0, None, "")] * 20
    assert scorer.score_many(rated(1)) == [Outcome(4.0, None, "")]


def test_unimportable_isolated_plugin_gives_error_outcomes(registry, monkeypatch):
    # The module exists only in this process (as if installed here but broken in the
    # scoring process): building works, the child cannot import it.
    module = types.ModuleType("podium_parent_only")

    class Ghost:
        def score(self, metrics, config, ctx):
            return {"score": 1.0}

    module.Ghost = Ghost
    monkeypatch.setitem(sys.modules, "podium_parent_only", module)
    registry.register("t.ghost", "podium_parent_only:Ghost")
    scorer = build(registry, "t.ghost")
    out = scorer.score_many(rated(1, 2, 3))
    assert len(out) == 3
    for outcome in out:
        assert_failed(outcome, "podium_parent_only")
    # Still no exception on a second call.
    assert [o.score for o in scorer.score_many(rated(4))] == [None]


# -- built-in strategies ---------------------------------------------------------------
def M(succeeded=True, tokens=None, elapsed=None, rating=None, created=None):
    return AttemptMetrics(
        succeeded=succeeded,
        tokens_total=tokens,
        elapsed_ms=elapsed,
        rating=rating,
        created_at=created,
    )


FULL = dict(tokens=120, elapsed=3400, rating=7, created=1_700_000_000_123)
ZERO = dict(tokens=0, elapsed=0, rating=0, created=0)

STRATEGY_CASES = [
    # first: succeeded counts; value is created_at (success time, epoch ms)
    ("first", M(**FULL), 1_700_000_000_123.0),
    ("first", M(False, **FULL), None),
    ("first", M(**{**FULL, "created": None}), None),
    ("first", M(**ZERO), 0.0),
    ("first", M(created=5), 5.0),
    # fastest: succeeded and elapsed_ms not null
    ("fastest", M(**FULL), 3400.0),
    ("fastest", M(False, **FULL), None),
    ("fastest", M(**{**FULL, "elapsed": None}), None),
    ("fastest", M(**ZERO), 0.0),
    ("fastest", M(elapsed=9), 9.0),
    # fewest_tokens: succeeded and tokens_total not null
    ("fewest_tokens", M(**FULL), 120.0),
    ("fewest_tokens", M(False, **FULL), None),
    ("fewest_tokens", M(**{**FULL, "tokens": None}), None),
    ("fewest_tokens", M(**ZERO), 0.0),
    ("fewest_tokens", M(tokens=2**53 - 1), float(2**53 - 1)),
    # highest_rating: succeeded and rating not null
    ("highest_rating", M(**FULL), 7.0),
    ("highest_rating", M(False, **FULL), None),
    ("highest_rating", M(**{**FULL, "rating": None}), None),
    ("highest_rating", M(**ZERO), 0.0),
    ("highest_rating", M(rating=10), 10.0),
]


@pytest.mark.parametrize(("strategy", "metrics", "expected"), STRATEGY_CASES)
def test_builtin_strategy_value(registry, strategy, metrics, expected):
    scorer = build_scorer(ScoringSetup(strategy=strategy), registry)
    [outcome] = scorer.score_many([(metrics, ctx())])
    assert outcome == Outcome(expected, None, "")
    if expected is not None:
        assert isinstance(outcome.score, float)


@pytest.mark.parametrize(
    ("strategy", "descending"),
    [
        ("first", False),
        ("fastest", False),
        ("fewest_tokens", False),
        ("highest_rating", True),
        ("custom", True),
    ],
)
def test_ranking_direction(registry, strategy, descending):
    plugin_id = WEIGHTED_ID if strategy == "custom" else ""
    scorer = build_scorer(ScoringSetup(strategy=strategy, plugin_id=plugin_id), registry)
    assert scorer.strategy.name == strategy
    assert scorer.strategy.descending is descending


def test_builtin_strategy_batch_keeps_order(registry):
    scorer = build_scorer(ScoringSetup(strategy="fastest"), registry)
    batch = [M(elapsed=30), M(False, elapsed=1), M(elapsed=None), M(elapsed=10)]
    out = scorer.score_many([(m, ctx()) for m in batch])
    assert [o.score for o in out] == [30.0, None, None, 10.0]


def test_builtin_strategy_ignores_plugin_fields(registry):
    # A built-in strategy never runs a plugin, even if the setup names one.
    setup = ScoringSetup(strategy="highest_rating", plugin_id="t.crasher", config={"x": 1})
    [outcome] = build_scorer(setup, registry).score_many([(M(rating=0), ctx())])
    assert outcome == Outcome(0.0, None, "")


def test_python_strategy_refused_without_a_sandbox(registry):
    # The engine never runs a snippet itself: without a sandbox passed in, it refuses.
    setup = ScoringSetup(
        strategy="python",
        code="def compute_scores(sample):\n    return {'a': 1}\n",
        score_key="a",
    )
    with pytest.raises(ValueError, match="sandbox"):
        build_scorer(setup, registry)


@pytest.mark.parametrize("strategy", ["", "best", "Fastest", "weighted"])
def test_unknown_strategy_refused(registry, strategy):
    with pytest.raises(ValueError, match="Unknown strategy"):
        build_scorer(ScoringSetup(strategy=strategy), registry)


def test_in_process_batch_that_raises_falls_back_to_one_by_one():
    from scoring.engine.registry import builtin_registry

    registry = builtin_registry()
    registry.register("b.batchfail", "tests.plugins:BatchRaises", builtin=True)
    scorer = build_scorer(ScoringSetup("custom", "b.batchfail"), registry)
    out = scorer.score_many(
        [(AttemptMetrics(tokens_total=t), ScoringContext()) for t in (1, 13, 2)]
    )
    assert [o.score for o in out] == [1.0, None, 2.0]
    assert "unlucky" in out[1].error


def test_in_process_batch_results_still_follow_the_rules():
    from scoring.engine.registry import builtin_registry

    registry = builtin_registry()
    registry.register("b.batchweird", "tests.plugins:BatchWeird", builtin=True)
    scorer = build_scorer(ScoringSetup("custom", "b.batchweird"), registry)
    out = scorer.score_many([(AttemptMetrics(), ScoringContext())] * 3)
    assert [o.score for o in out] == [None, 0.0, 5.0]
    assert "nan" in out[0].error


def test_builtin_batch_fast_lane_hands_odd_shapes_to_the_full_rules():
    from scoring.engine.registry import builtin_registry

    registry = builtin_registry()
    registry.register("b.batchodd", "tests.plugins:BatchOdd", builtin=True)
    scorer = build_scorer(ScoringSetup("custom", "b.batchodd"), registry)
    out = scorer.score_many([(AttemptMetrics(), ScoringContext())] * 4)
    assert out[0] == Outcome(2.0, None, "")
    assert [o.score for o in out[1:]] == [None, None, None]
    assert "details" in out[1].error and "inf" in out[2].error and "str" in out[3].error
