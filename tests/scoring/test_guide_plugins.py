"""Plugins written as the class scorer-plugin guide teaches run unchanged (issue 20):
metrics and context read as mappings and as attributes, in process and isolated; the
guide's import line; the types as annotations and constructors. No database."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from scoring.engine import legacy
from scoring.engine.protocol import METRIC_KEYS, AttemptMetrics, ScoringContext
from scoring.engine.registry import builtin_registry
from scoring.engine.runner import ScoringSetup, build_scorer

ROOT = Path(__file__).resolve().parents[2]
GUIDE = "tests.guides.custom:MyCustomScorer"


def _scorer(entrypoint: str, config: dict, *, in_process: bool):
    registry = builtin_registry()
    registry.register("guide.plugin", entrypoint, builtin=in_process)
    return build_scorer(ScoringSetup("custom", "guide.plugin", config=config), registry)


def _ctx(**kw) -> ScoringContext:
    return ScoringContext(challenge_id="12", end_user_id="u1", tenant_id="t", **kw)


@pytest.mark.parametrize("in_process", [False, True], ids=["isolated", "in-process"])
def test_the_guides_example_scores_as_the_guide_says(in_process):
    if in_process:  # the guide's class does not declare itself pure: a subclass does
        entrypoint = "tests.scoring.test_guide_plugins:PureGuideScorer"
    else:
        entrypoint = GUIDE
    scorer = _scorer(entrypoint, {"multiplier": 2.0}, in_process=in_process)
    items = [
        (AttemptMetrics(succeeded=True, rating=7), _ctx()),
        (AttemptMetrics(succeeded=False, rating=7), _ctx()),
        (AttemptMetrics(succeeded=True), _ctx()),  # rating None: the guide's `or` is ours
    ]

    out = scorer.score_many(items)

    assert [o.score for o in out[:2]] == [14.0, 0.0]
    assert out[0].details == {"multiplier_used": 2.0}
    assert out[0].error == ""
    # metrics.get('rating', 0) is None for an unknown rating (the key is always there):
    # None * 2.0 raises, and the attempt is recorded null with that reason.
    assert out[2].score is None and "TypeError" in out[2].error


def _pure_guide_scorer():
    from tests.guides.custom import MyCustomScorer

    class PureGuideScorer(MyCustomScorer):
        runs_in_process = True

    return PureGuideScorer


PureGuideScorer = _pure_guide_scorer()


class PureMappingReader:
    runs_in_process = True

    def score(self, metrics, config, ctx):
        from tests.plugins import MappingReader

        return MappingReader().score(metrics, config, ctx)


@pytest.mark.parametrize(
    "entrypoint",
    ["tests.plugins:MappingReader", "tests.scoring.test_guide_plugins:PureMappingReader"],
    ids=["isolated", "in-process"],
)
def test_metrics_and_context_read_every_mapping_way(entrypoint):
    in_process = "Pure" in entrypoint
    scorer = _scorer(entrypoint, {}, in_process=in_process)
    metrics = AttemptMetrics(succeeded=True, tokens_total=5, rating=7)

    [outcome] = scorer.score_many([(metrics, _ctx(timeout_ms=3000))])

    assert outcome.error == ""
    seen = outcome.details
    expected_metrics = {
        "succeeded": True,
        "tokens_total": 5,
        "elapsed_ms": None,
        "rating": 7,
        "created_at": None,
    }
    assert seen["get"] == seen["item"] == seen["attr"] == 7
    assert seen["get_missing"] == "default"
    assert seen["in"] is True and seen["not_in"] is False
    assert seen["dict"] == expected_metrics
    assert seen["keys"] == seen["items"] == sorted(METRIC_KEYS)
    assert seen["iter"] == list(METRIC_KEYS)
    assert seen["len"] == 5
    assert seen["read_only"] is True
    assert seen["ctx_dict"] == {
        "challenge_id": "12",
        "end_user_id": "u1",
        "tenant_id": "t",
        "app_id": "",
        "workflow_id": "",
        "timeout_ms": 3000,
    }
    assert seen["ctx_get"] == "12" and seen["ctx_item"] == "t" and seen["ctx_attr"] == "u1"
    assert seen["ctx_challenge_id_type"] == "str"


def test_all_five_metric_keys_are_always_there():
    metrics = AttemptMetrics()
    assert dict(metrics) == dict.fromkeys(METRIC_KEYS) | {"succeeded": False}
    with pytest.raises(KeyError):
        metrics["score"]
    assert metrics == {**dict(metrics)}  # equal to the dict it reads as
    assert pickle.loads(pickle.dumps(metrics)) == metrics  # noqa: S301 - our own bytes
    assert metrics._replace(rating=3).rating == 3
    assert ScoringContext()._replace(end_user_id="x") == {
        **dict(ScoringContext()),
        "end_user_id": "x",
    }


@pytest.fixture
def _forget_legacy_modules(monkeypatch):
    yield
    for name in [n for n in sys.modules if n == "services" or n.startswith("services.")]:
        monkeypatch.delitem(sys.modules, name)


@pytest.mark.usefixtures("_forget_legacy_modules")
def test_the_guides_import_line_gives_podiums_types():
    legacy.install()
    from services.challenge_scorer_protocol import (  # the guide's line
        AttemptMetrics as LegacyMetrics,
    )
    from services.challenge_scorer_protocol import ScoringContext as LegacyContext
    from services.challenge_scorer_protocol import ScoringResult
    from services.scorers.weighted import WeightedScorer

    assert LegacyMetrics is AttemptMetrics and LegacyContext is ScoringContext
    # constructors, as an author's tests use them
    metrics = LegacyMetrics(succeeded=True, tokens_total=1000, elapsed_ms=5000, rating=8)
    result = ScoringResult(score=1.0, details=None)
    assert result == {"score": 1.0, "details": None}
    config = {"success_bonus": 100, "rating_weight": 10, "time_penalty": 1.0}
    assert WeightedScorer().score(metrics, config, LegacyContext())["score"] == 165.0


def _run(code: str, path: list[Path]) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": ":".join(str(p) for p in path), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )


def test_podium_ships_no_top_level_services_package():
    result = _run("import services", [ROOT])  # without the registry's finder
    assert result.returncode != 0
    assert "No module named 'services'" in result.stderr


def test_a_users_own_services_package_is_not_shadowed(tmp_path):
    own = tmp_path / "services"
    own.mkdir()
    (own / "__init__.py").write_text("MINE = True\n")
    (own / "billing.py").write_text("RATE = 3\n")
    code = (
        "from scoring.engine import legacy; legacy.install()\n"
        "import services, services.billing\n"
        "from services.challenge_scorer_protocol import AttemptMetrics\n"
        "print(services.MINE, services.billing.RATE, AttemptMetrics.__module__)\n"
    )

    result = _run(code, [tmp_path, ROOT])

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "3", "scoring.engine.protocol"]


def test_the_guides_file_layout_loads_through_the_registry(tmp_path):
    # The guide puts the plugin in services/scorers/custom.py (no __init__ files here).
    folder = tmp_path / "services" / "scorers"
    folder.mkdir(parents=True)
    (folder / "custom.py").write_text((ROOT / "tests/guides/custom.py").read_text())
    code = (
        "from scoring.engine.registry import builtin_registry\n"
        "r = builtin_registry()\n"
        "r.register('my_custom_scorer', 'services.scorers.custom:MyCustomScorer')\n"
        "from scoring.engine.protocol import AttemptMetrics, ScoringContext\n"
        "s = r.load('my_custom_scorer')()\n"
        "print(s.score(AttemptMetrics(succeeded=True, rating=7), {'multiplier': 2.0},"
        " ScoringContext())['score'])\n"
    )

    result = _run(code, [tmp_path, ROOT])

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "14.0"
