"""Public test helpers for scorer plugin authors.

``score_attempt`` scores one attempt — plain dicts in, a plain dict out — with a plugin
under Podium's own rules: the config validated against the plugin's ``config_schema``
with its defaults filled in, the plugin run isolated in a scorer process with
``timeout_ms`` (as every third-party plugin runs), and the result through the failure
rules (a missing or non-numeric ``score``, NaN, an exception, a timeout → ``score``
None and the reason in ``error``; a negative score clamped to 0, ``clamped_from`` says
from what). Use it in your plugin's tests::

    from scoring.testing import score_attempt

    def test_my_scorer():
        got = score_attempt("myplugins.custom:MyCustomScorer",
                            metrics={"succeeded": True, "rating": 7},
                            config={"multiplier": 2.0})
        assert got == {"score": 14.0, "details": {"multiplier_used": 2.0},
                       "error": "", "clamped_from": None}

``plugin`` is an entrypoint ("package.module:Class"), a class, or a plugin id registered
with Podium (built-ins, ``SCORING_PLUGINS``, ``podium.scorers`` entry points).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scoring.engine.protocol import (
    DEFAULT_TIMEOUT_MS,
    METRIC_KEYS,
    AttemptMetrics,
    ScoringContext,
)
from scoring.engine.registry import ScorerRegistry, builtin_registry
from scoring.engine.runner import ScoringSetup, build_scorer

_TRY_ID = "test.plugin_under_test"


def _registry_for(plugin: str | type) -> tuple[ScorerRegistry, str]:
    if isinstance(plugin, type):
        plugin = f"{plugin.__module__}:{plugin.__qualname__}"
    if ":" in plugin:
        registry = builtin_registry()
        registry.register(_TRY_ID, plugin)  # not built-in: runs isolated, like yours will
        return registry, _TRY_ID
    from scoring.project_registry import registry as project_registry  # needs Django settings

    return project_registry(), plugin


def score_attempt(
    plugin: str | type,
    *,
    metrics: Mapping[str, Any] | None = None,
    config: Mapping[str, Any] | None = None,
    ctx: Mapping[str, Any] | None = None,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> dict[str, Any]:
    """``{"score", "details", "error", "clamped_from"}`` for one attempt. Raises
    ``RegistryError`` (the plugin cannot load) or ``ConfigError`` (the config does not
    fit its schema), as saving a challenge with them would be refused."""
    metrics = dict(metrics or {})
    unknown = set(metrics) - set(METRIC_KEYS)
    if unknown:
        raise ValueError(f"Unknown metric keys {sorted(unknown)}; known: {', '.join(METRIC_KEYS)}")
    registry, plugin_id = _registry_for(plugin)
    setup = ScoringSetup("custom", plugin_id, config=dict(config or {}), timeout_ms=timeout_ms)
    scorer = build_scorer(setup, registry)
    context = ScoringContext(**{"timeout_ms": timeout_ms, **dict(ctx or {})})
    [outcome] = scorer.score_many([(AttemptMetrics(**metrics), context)])
    return {
        "score": outcome.score,
        "details": outcome.details,
        "error": outcome.error,
        "clamped_from": outcome.clamped_from,
    }
