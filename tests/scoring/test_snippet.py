"""The snippet contract (DESIGN.md, "Python snippet scorers"), from the engine's side:
checking code on save, filling placeholders, and turning what the sandbox returns into
outcomes. Tests that run code use the real sandbox (tests/scoring/conftest.py)."""

from __future__ import annotations

import json
import math
import os

import pytest

from scoring import sandbox
from scoring.engine.outcome import Outcome
from scoring.engine.protocol import AttemptMetrics, ScoringContext
from scoring.engine.registry import builtin_registry
from scoring.engine.runner import ScoringSetup, build_scorer
from scoring.engine.snippet import (
    AttemptPayload,
    SnippetInvalid,
    SnippetScorer,
    SnippetSetup,
    encode_item,
    interpret,
    prepare,
    render,
)

SIMPLE = "def compute_scores(sample):\n    return {'score': 1.0}\n"


def sandbox_or_skip() -> sandbox.SandboxPool:
    """The process's sandbox pool. Without a sandbox these tests skip on a developer's
    machine and fail in CI (which installs bubblewrap): never a silent pass there."""
    found = sandbox.availability()
    if not found.available:
        if os.environ.get("CI"):
            pytest.fail(found.message)
        pytest.skip(found.message)
    return sandbox.shared_pool()


@pytest.fixture
def sandbox_pool():
    return sandbox_or_skip()


@pytest.fixture
def registry():
    return builtin_registry()


def ok(value, ms=1.0):
    return (True, value, ms)


def outcome(value, score_key=""):
    return interpret(ok(value), score_key).outcome


# --- placeholders ----------------------------------------------------------------------------
def test_placeholder_inside_a_string_gets_the_text():
    code = 'field = "<< config.field >>"\n'
    assert render(code, {"field": "answer"}) == 'field = "answer"\n'


def test_placeholder_outside_a_string_gets_a_python_literal():
    code = "t = << config.threshold >>\nflags = <<config.flags>>\nnone = << config.n >>\n"
    rendered = render(code, {"threshold": 0.5, "flags": [True, False], "n": "x"})
    assert rendered == "t = 0.5\nflags = [True, False]\nnone = 'x'\n"


@pytest.mark.parametrize("value", ['say "hi"', "it's", "back\\slash", "two\nlines", "\u202e"])
def test_placeholder_text_is_escaped_for_any_quote(value):
    for quote in ('"', "'", '"""'):
        code = f"v = {quote}<< config.v >>{quote}\n"
        namespace: dict = {}
        exec(render(code, {"v": value}), namespace)  # noqa: S102 - our own test text
        assert namespace["v"] == value


def test_placeholder_number_inside_a_string_is_its_json_text():
    assert render("v = '<< config.n >>'", {"n": 3}) == "v = '3'"


def test_placeholders_keep_line_numbers():
    code = "a = '<< config.x >>'\nb = 1 +\n"
    with pytest.raises(SnippetInvalid) as caught:
        prepare(code, {"x": "line one\nline two"})
    assert caught.value.errors["scoring_code"].startswith("Line 2:")


@pytest.mark.parametrize("config", [{}, {"field": None}, {"other": "x"}])
def test_placeholder_without_value_is_a_validation_error_naming_it(config):
    code = "def compute_scores(sample):\n    return {'s': sample.get('<< config.field >>')}\n"
    with pytest.raises(SnippetInvalid) as caught:
        prepare(code, config)
    message = caught.value.errors["scoring_config"]
    assert "<< config.field >>" in message
    assert "line 2" in message


# --- checking the code on save -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("code", "line", "text"),
    [
        ("def compute_scores(sample):\n    return {'s': 1\n", 2, "was never closed"),
        ("def compute_scores(sample)\n    return {}\n", 1, "expected ':'"),
        ("def compute_scores(sample):\nreturn 1\n", 2, "expected an indented block"),
        ("x = 1\n  y = 2\n", 2, "unexpected indent"),
    ],
)
def test_syntax_errors_name_line_and_message(code, line, text):
    with pytest.raises(SnippetInvalid) as caught:
        prepare(code, {})
    message = caught.value.errors["scoring_code"]
    assert message.startswith(f"Line {line}:"), message
    assert text in message


def test_syntax_error_beside_a_placeholder_is_on_pythons_line():
    # Issue 31: the tokenizer (placeholder sites) said "Line 4: … EOF in multi-line
    # statement" for a bracket left open on line 3; Python's own line and words now.
    code = 'def compute_scores(sample):\n    f = "<< config.f >>"\n    return {{"a": 1,\n'
    with pytest.raises(SnippetInvalid) as caught:
        prepare(code, {"f": "x"})
    assert caught.value.errors["scoring_code"] == "Line 3: '{' was never closed."


@pytest.mark.parametrize(
    ("code", "text"),
    [
        ("", "Required"),
        ("   \n", "Required"),
        (None, "Required"),
        ("x = 1\n", "Define compute_scores"),
        ("def score(sample):\n    return {}\n", "Define compute_scores"),
        ("compute_scores = lambda s: {}\n", "Define compute_scores"),
        ("def compute_scores():\n    return {}\n", "1 or 2 parameters"),
        ("def compute_scores(a, b, c):\n    return {}\n", "1 or 2 parameters"),
        ("def compute_scores(s, *, k):\n    return {}\n", "keyword-only"),
        ("def compute_scores(s):\n    return {}\n\x00", "null byte"),
        ("x = '" + "a" * 100_001 + "'\n", "At most"),
    ],
)
def test_bad_code_is_refused_with_a_clear_message(code, text):
    with pytest.raises(SnippetInvalid) as caught:
        prepare(code, {})
    assert text in caught.value.errors["scoring_code"]


@pytest.mark.parametrize(
    ("signature", "arity", "is_async"),
    [
        ("def compute_scores(sample)", 1, False),
        ("def compute_scores(sample, solver_output)", 2, False),
        ("def compute_scores(sample, solver_output=None)", 2, False),
        ("def compute_scores(*args)", 2, False),
        ("def compute_scores(sample, /)", 1, False),
        ("async def compute_scores(sample)", 1, True),
        ("async def compute_scores(sample, solver_output)", 2, True),
    ],
)
def test_entry_point_shapes(signature, arity, is_async):
    prepared = prepare(f"{signature}:\n    return {{'s': 1}}\n", {})
    assert (prepared.arity, prepared.is_async) == (arity, is_async)


def test_the_last_definition_wins():
    code = "def compute_scores(a, b):\n    pass\n\nasync def compute_scores(a):\n    pass\n"
    prepared = prepare(code, {})
    assert (prepared.arity, prepared.is_async) == (1, True)


# --- the sandbox's input ----------------------------------------------------------------------
def test_items_are_json_with_metrics_and_payload():
    metrics = AttemptMetrics(True, 12, None, 7, 1_700_000_000_000)
    payload = AttemptPayload('{"q": "2+2"}', 'say "4"', '[{"role": "user"}]')
    assert json.loads(encode_item(metrics, payload, 1)) == [
        {"q": "2+2"},
        [True, 12, None, 7, 1_700_000_000_000],
    ]
    assert json.loads(encode_item(metrics, payload, 2))[2:] == ['say "4"', [{"role": "user"}]]


# --- interpreting what comes back -------------------------------------------------------------
def test_flat_dict_booleans_count_as_one_and_zero():
    result = interpret(ok({"is_correct": True, "wrong": False}), "is_correct")
    assert result.outcome == Outcome(
        1.0, {"scores": {"is_correct": 1.0, "wrong": 0.0}, "metadata": {}}, ""
    )


def test_scores_and_metadata_form():
    value = {"scores": {"accuracy": 0.95}, "metadata": {"why": ["a", {"b": None}]}}
    assert outcome(value) == Outcome(
        0.95, {"scores": {"accuracy": 0.95}, "metadata": {"why": ["a", {"b": None}]}}, ""
    )


def test_a_flat_dict_may_have_a_score_called_scores():
    assert outcome({"scores": 3}).score == 3.0


def test_one_score_needs_no_score_key_and_ints_become_floats():
    assert outcome({"points": 7}) == Outcome(7.0, {"scores": {"points": 7.0}, "metadata": {}}, "")


def test_several_scores_without_score_key_give_none_with_the_reason():
    result = outcome({"a": 1.0, "b": 2.0})
    assert result.score is None
    assert "set score_key" in result.error
    assert result.details == {"scores": {"a": 1.0, "b": 2.0}, "metadata": {}, "error": result.error}


def test_missing_score_key_value_gives_none_with_the_reason():
    result = outcome({"other": 1.0}, score_key="accuracy")
    assert result.score is None
    assert "no 'accuracy' score" in result.error
    assert result.details["scores"] == {"other": 1.0}


def test_none_score_key_value_gives_none_with_the_reason():
    result = outcome({"accuracy": None, "b": 1}, score_key="accuracy")
    assert (result.score, result.details["scores"]) == (None, {"accuracy": None, "b": 1.0})
    assert "None" in result.error


def test_negative_ranking_score_is_kept_not_clamped():
    # Issue 20: a snippet may rank by a negative quantity (an error, a log-likelihood).
    assert outcome({"s": -2.5}).score == -2.5
    assert outcome({"s": -2.5}).details["scores"] == {"s": -2.5}


def test_a_failure_keeps_the_details_shape():
    result = interpret((False, "ZeroDivisionError: division by zero", 0.3), "s")
    assert result.outcome == Outcome(
        None,
        {"scores": {}, "metadata": {}, "error": "ZeroDivisionError: division by zero"},
        "ZeroDivisionError: division by zero",
    )
    assert result.ms == 0.3


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("a string", "not a dict"),
        ([1, 2], "not a dict"),
        (None, "not a dict"),
        ({}, "no scores"),
        ({"scores": {}, "metadata": {}}, "no scores"),
        ({"s": [1]}, "list, not a number"),
        ({"s": {"x": 1}}, "dict, not a number"),
        ({"s": math.nan}, "not a finite number"),
        ({"s": math.inf}, "not a finite number"),
        ({"s": json.loads("1e400")}, "not a finite number"),
        ({"s": 10**400}, "beyond"),
        ({"s": 2**53 + 1}, "beyond"),
        ({"\u202eevil": 1.0}, "printable"),
        ({"tab\there": 1.0}, "printable"),
        ({"": 1.0}, "printable"),
        ({"k" * 65: 1.0}, "printable"),
        ({f"k{i}": 1.0 for i in range(65)}, "at most 64"),
        ({"scores": {"s": 1}, "metadata": [1]}, "not a dict"),
        ({"scores": {"s": 1}, "metadata": {"x": math.nan}}, "not finite"),
        ({"scores": {"s": 1}, "metadata": {"x": 2**60}}, "beyond"),
        ({"scores": {"s": 1}, "metadata": {"x": "a\x00b"}}, "null"),
        ({"scores": {"s": 1}, "metadata": {"x": "\ud800"}}, "surrogate"),
        ({"scores": {"s": 1}, "metadata": {"\x07": 1}}, "printable"),
        ({"scores": {"s": 1}, "metadata": {f"k{i}": 1 for i in range(65)}}, "at most 64"),
        ({"scores": {"s": 1}, "metadata": {"x": "y" * 20_000}}, "over 16384 bytes"),
    ],
)
def test_untrusted_results_are_refused_with_the_reason(value, text):
    result = outcome(value, score_key="s")
    assert result.score is None
    assert text in result.error, result.error
    assert result.details == {"scores": {}, "metadata": {}, "error": result.error}


def test_string_labels_are_kept_only_the_ranking_score_must_be_numeric():
    # Issue 20 finding 8: a label beside the ranking score no longer nulls the result.
    kept = outcome({"s": 1.0, "label": "cat"}, score_key="s")
    assert (kept.score, kept.error) == (1.0, "")
    assert kept.details["scores"] == {"s": 1.0, "label": "cat"}
    unranked = outcome({"s": "high"}, score_key="s")
    assert unranked.score is None and "label ('high'), not a number" in unranked.error
    assert unranked.details["scores"] == {"s": "high"}
    assert "256" in outcome({"s": 1.0, "label": "x" * 257}, score_key="s").error


def test_deep_metadata_is_refused_without_recursion():
    deep: dict = {}
    node = deep
    for _ in range(100):
        node["x"] = {}
        node = node["x"]
    assert "nested" in outcome({"scores": {"s": 1}, "metadata": deep}).error


def test_error_text_is_made_storable():
    result = interpret((False, "bad\x00\ud800 text", None), "")
    assert result.outcome.error == "bad\\0? text"


def test_bogus_timing_is_dropped():
    assert interpret((True, {"s": 1}, -5.0), "").ms is None
    assert interpret((True, {"s": 1}, math.nan), "").ms is None


# --- running through the sandbox --------------------------------------------------------------
def scorer(
    sandbox_pool, code, *, config=None, score_key="", timeout_ms=2000, owner="t", legacy=False
):
    setup = SnippetSetup(code, config or {}, score_key, timeout_ms, owner, legacy)
    return SnippetScorer(setup, sandbox_pool)


def item(**metrics):
    return (AttemptMetrics(**metrics), ScoringContext())


def test_sample_is_exactly_the_row_and_metrics_come_another_way(sandbox_pool):
    code = (
        "def compute_scores(sample, solver_output):\n"
        "    return {'scores': {'s': 1}, 'metadata': {'sample': sample,\n"
        "            'metrics': solver_output.metrics, 'global': attempt_metrics}}\n"
    )
    payload = AttemptPayload('{"rating": "mine", "q": 1}', "", "null")
    [result] = scorer(sandbox_pool, code).results(
        [item(succeeded=True, tokens_total=5, created_at=10)], [payload]
    )
    metrics = {
        "succeeded": True,
        "tokens_total": 5,
        "elapsed_ms": None,
        "rating": None,
        "created_at": 10,
    }
    assert result.metadata == {
        "sample": {"rating": "mine", "q": 1},
        "metrics": metrics,
        "global": metrics,
    }


def test_legacy_setups_keep_the_metrics_merged_into_the_sample(sandbox_pool):
    code = "def compute_scores(sample):\n    return {'scores': {'s': 1}, 'metadata': sample}\n"
    payload = AttemptPayload('{"rating": "mine", "q": 1}')
    [result] = scorer(sandbox_pool, code, legacy=True).results(
        [item(succeeded=True, tokens_total=5, created_at=10)], [payload]
    )
    assert result.metadata == {
        "rating": "mine",
        "q": 1,
        "succeeded": True,
        "tokens_total": 5,
        "elapsed_ms": None,
        "created_at": 10,
    }


def test_solver_output_has_output_and_messages(sandbox_pool):
    code = (
        "def compute_scores(sample, solver_output):\n"
        "    return {'scores': {'n': len(solver_output.messages)},\n"
        "            'metadata': {'out': solver_output.output}}\n"
    )
    payload = AttemptPayload("null", "Paris", '[{"role": "user"}, {"role": "assistant"}]')
    [result] = scorer(sandbox_pool, code).results([item()], [payload])
    assert (result.outcome.score, result.metadata) == (2.0, {"out": "Paris"})


def test_async_snippets_run(sandbox_pool):
    code = (
        "import asyncio\n"
        "async def compute_scores(sample):\n"
        "    await asyncio.sleep(0)\n"
        "    return {'s': sample['x'] * 2}\n"
    )
    payloads = [AttemptPayload(json.dumps({"x": i})) for i in range(3)]
    outcomes = scorer(sandbox_pool, code).score_many([item()] * 3, payloads)
    assert [o.score for o in outcomes] == [0.0, 2.0, 4.0]


def test_placeholders_are_filled_before_the_code_runs(sandbox_pool):
    code = (
        "def compute_scores(sample):\n"
        "    return {'s': << config.weight >> * len('<< config.word >>')}\n"
    )
    [o] = scorer(sandbox_pool, code, config={"weight": 2, "word": "abc"}).score_many([item()])
    assert o.score == 6.0


def test_many_attempts_in_order(sandbox_pool):
    code = "def compute_scores(sample):\n    return {'s': sample['i']}\n"
    payloads = [AttemptPayload(json.dumps({"i": i})) for i in range(2500)]
    outcomes = scorer(sandbox_pool, code).score_many([item()] * 2500, payloads)
    assert [o.score for o in outcomes] == [float(i) for i in range(2500)]


def test_build_scorer_runs_snippets_given_a_sandbox(sandbox_pool, registry):
    setup = ScoringSetup(strategy="python", code=SIMPLE, owner="t")
    [o] = build_scorer(setup, registry, sandbox_pool).score_many([item()])
    assert o == Outcome(1.0, {"scores": {"score": 1.0}, "metadata": {}}, "")


def test_build_scorer_refuses_invalid_code(sandbox_pool, registry):
    setup = ScoringSetup(strategy="python", code="x = 1", owner="t")
    with pytest.raises(SnippetInvalid):
        build_scorer(setup, registry, sandbox_pool)


def test_a_worker_never_runs_two_owners_code(sandbox_pool):
    code = (
        "seen = []\ndef compute_scores(sample):\n    seen.append(1)\n    return {'s': len(seen)}\n"
    )
    first = scorer(sandbox_pool, code, owner="version 1").score_many([item()] * 2)
    second = scorer(sandbox_pool, code, owner="version 2").score_many([item()] * 2)
    assert [o.score for o in first] == [1.0, 2.0]
    assert [o.score for o in second] == [1.0, 2.0]  # a fresh module: no state carried over


def test_snippet_engine_and_sandbox_import_no_django():
    import subprocess
    import sys
    from pathlib import Path

    check = (
        "import scoring.engine.snippet, scoring.engine.metrics, scoring.sandbox, "
        "scoring.sandbox.pool, sys; "
        "assert not any(m.split('.')[0] == 'django' for m in sys.modules); print('ok')"
    )
    result = subprocess.run(
        [sys.executable, "-c", check],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert result.stdout.strip() == "ok", result.stderr


def test_the_worker_program_is_standard_library_only():
    import ast
    import sys
    from pathlib import Path

    source = Path(sandbox.launch.WORKER_SOURCE).read_text()
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert imported <= set(sys.stdlib_module_names), imported - set(sys.stdlib_module_names)
