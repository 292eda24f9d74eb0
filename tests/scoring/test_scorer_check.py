"""`manage.py scorer_check` and the public test helper ``scoring.testing.score_attempt``
(issue 20, finding 6)."""

from __future__ import annotations

import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from scoring.engine.protocol import ConfigError
from scoring.testing import score_attempt

ROOT = Path(__file__).resolve().parents[2]
GUIDE = {"my_custom_scorer": "tests.guides.custom:MyCustomScorer"}


def _check(*args: str) -> str:
    out = StringIO()
    call_command("scorer_check", *args, stdout=out, skip_checks=True)
    return out.getvalue()


def test_scorer_check_runs_the_guides_plugin_over_the_edge_cases(settings):
    settings.SCORING_PLUGINS = GUIDE
    text = _check(
        "my_custom_scorer", "--config", '{"multiplier": 2.0}', "--metrics", '{"succeeded": false}'
    )
    rows = [line for line in text.splitlines() if line.startswith("- ")]
    names = [row[2:].split(":")[0] for row in rows]
    assert names == [
        "typical success",
        "failure",
        "all metrics null",
        "zeros",
        "largest accepted",
        "rating 10",
        "--metrics 1",
    ]
    assert "isolated scorer process" in text
    assert 'score=14.0  details={"multiplier_used": 2.0}' in text  # rating 7 × 2
    assert "score=20.0" in text  # rating 10
    # Every metric null: the guide's `metrics.get('rating', 0)` is None, None × 2.0 raises,
    # and Podium would record null with that reason.
    assert "score=null (TypeError: unsupported operand" in text


def test_scorer_check_shows_clamping(settings):
    settings.SCORING_PLUGINS = {"acme.weird": "tests.plugins:Weird"}
    text = _check("acme.weird", "--metrics", '{"rating": 6}')
    assert "score=0.0  clamped from -5.0" in text


@pytest.mark.parametrize(
    ("plugins", "args", "message"),
    [
        (
            {"acme.raises": "tests.guides.raises_on_import:Scorer"},
            ["acme.raises"],
            "plugin 'acme.raises': cannot load: Cannot import 'tests.guides.raises_on_import:"
            "Scorer': boom at import",
        ),
        ({}, ["acme.nope"], "plugin 'acme.nope': cannot load: Unknown scorer plugin"),
        (
            {},
            ["builtin.weighted_scorer", "--config", '{"success_bonus": "x"}'],
            "plugin 'builtin.weighted_scorer': the config is invalid: success_bonus",
        ),
    ],
    ids=["raises-on-import", "unknown", "bad-config"],
)
def test_scorer_check_fails_with_one_line_naming_the_plugin(settings, plugins, args, message):
    settings.SCORING_PLUGINS = plugins
    with pytest.raises(CommandError) as caught:
        _check(*args)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_scorer_check_exit_status_on_the_command_line():
    env = {
        **os.environ,
        "SCORING_PLUGINS": '{"acme.raises": "tests.guides.raises_on_import:Scorer"}',
    }
    broken = subprocess.run(
        [sys.executable, "manage.py", "scorer_check", "acme.raises"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    fine = subprocess.run(
        [sys.executable, "manage.py", "scorer_check", "builtin.weighted_scorer"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert broken.returncode != 0
    [error] = [line for line in broken.stderr.splitlines() if line.startswith("CommandError")]
    assert "acme.raises" in error and "boom at import" in error
    assert "Traceback" not in broken.stderr
    assert fine.returncode == 0, fine.stderr
    assert "score=146.0" in fine.stdout


@pytest.mark.parametrize("value", ["-1", "0", "60001", "soon"])
def test_scorer_check_refuses_a_timeout_out_of_range(value):
    """Issue 28, finding 12: -1 or 0 ran the plugin into a traceback."""
    with pytest.raises(CommandError, match="--timeout-ms"):
        call_command("scorer_check", "builtin.weighted_scorer", f"--timeout-ms={value}")


# --- the public test helper --------------------------------------------------------------
def test_score_attempt_with_the_guides_plugin_as_an_entrypoint_or_a_class():
    from tests.guides.custom import MyCustomScorer

    expected = {
        "score": 14.0,
        "details": {"multiplier_used": 2.0},
        "error": "",
        "clamped_from": None,
    }
    metrics = {"succeeded": True, "rating": 7}
    config = {"multiplier": 2.0}
    assert score_attempt(GUIDE["my_custom_scorer"], metrics=metrics, config=config) == expected
    assert score_attempt(MyCustomScorer, metrics=metrics, config=config) == expected


def test_score_attempt_applies_podiums_rules():
    weird = "tests.plugins:Weird"
    assert score_attempt(weird, metrics={"rating": 6})["clamped_from"] == -5.0
    assert score_attempt(weird, metrics={"rating": 3})["score"] is None  # NaN
    slow = score_attempt("tests.plugins:Sleeper", metrics={"rating": 0}, timeout_ms=200)
    assert slow["score"] is None and "timed out" in slow["error"]
    with pytest.raises(ConfigError):
        score_attempt("tests.plugins:Constant", config={"value": "x"})


def test_score_attempt_by_registered_id(settings):
    settings.SCORING_PLUGINS = GUIDE
    got = score_attempt("my_custom_scorer", metrics={"succeeded": False, "rating": 7})
    assert got["score"] == 0.0
    weighted = score_attempt(
        "builtin.weighted_scorer",
        metrics={"succeeded": True, "tokens_total": 1000, "elapsed_ms": 5000, "rating": 8},
    )
    assert weighted["score"] == 165.0


def test_the_guides_pytest_example_passes():
    readme = (ROOT / "docs" / "writing-scorers.md").read_text()
    block = readme.split("```python\n# tests/test_custom.py\n", 1)[1].split("```", 1)[0]
    code = block.replace("myplugins.custom:MyCustomScorer", "tests.guides.custom:MyCustomScorer")
    namespace: dict = {}
    exec(compile(code, "writing-scorers.md", "exec"), namespace)  # noqa: S102 - our own docs
    namespace["test_my_custom_scorer"]()
