"""Scores attempts under one scoring setup, applying every failure rule.

``build_scorer(setup, registry, sandbox)`` returns a ``Scorer`` for a setup; its
``score_many`` returns one ``Outcome`` per attempt, in order, and never raises for a
plugin's or a snippet's fault. A Python snippet needs a sandbox (``scoring.sandbox``,
passed in so the engine stays free of process management); without one it is refused.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .config import validate_config
from .isolated import isolated_scorer
from .outcome import Outcome, normalize_result
from .protocol import DEFAULT_TIMEOUT_MS, AttemptMetrics, ScoringContext
from .registry import ScorerRegistry
from .scorers_list import ScorerList
from .snippet import Sandbox, SnippetScorer, SnippetSetup
from .strategies import CUSTOM, PYTHON, Strategy, get_strategy

Item = tuple[AttemptMetrics, ScoringContext]
SNIPPETS_UNAVAILABLE = (
    "Python snippet scorers need the sandbox, which is not available here; snippets are "
    "refused rather than run unsandboxed. Use a built-in strategy or a scorer plugin."
)


@dataclass(frozen=True)
class ScoringSetup:
    """A challenge's scoring setup, as stored on a scoring version."""

    strategy: str
    plugin_id: str = ""
    entrypoint: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    code: str = ""
    score_key: str = ""
    owner: str = ""  # whose setup (e.g. "version 12"): snippet workers never mix owners
    scorers: tuple[Any, ...] = ()  # several scorers (scorers_list.py); empty: code is the one
    rank_by: str = ""
    lower_is_better: bool = False  # python: the ranking score orders ascending
    sample_with_metrics: bool = False  # python, legacy: metrics merged into ``sample``


class Scorer(Protocol):
    strategy: Strategy

    def score_many(self, items: Sequence[Item]) -> list[Outcome]: ...


class StrategyScorer:
    """A built-in strategy: the ranking value is a metric; no plugin runs."""

    def __init__(self, strategy: Strategy):
        assert strategy.value is not None
        self.strategy = strategy
        self._value = strategy.value

    def score_many(self, items: Sequence[Item]) -> list[Outcome]:
        value = self._value
        return [Outcome(value(metrics)) for metrics, _ in items]


class PluginScorer:
    """A registered plugin, run in this process (built-in, pure plugins) or isolated."""

    def __init__(self, registry: ScorerRegistry, setup: ScoringSetup):
        self.strategy = get_strategy(CUSTOM)
        registry.verify(setup.plugin_id, setup.entrypoint)  # a stale or tampered row: refused
        info = registry.info(setup.plugin_id)
        self.entrypoint = info.entrypoint
        self.config = validate_config(info.config_schema, setup.config)
        self.timeout_ms = setup.timeout_ms
        self.in_process = info.runs_in_process
        self._instance = registry.load(setup.plugin_id)() if self.in_process else None

    def score_many(self, items: Sequence[Item]) -> list[Outcome]:
        if self._instance is None:
            return isolated_scorer(self.entrypoint).run(items, self.config, self.timeout_ms)
        batch = getattr(self._instance, "score_many", None)
        if batch is not None:
            try:
                results = batch(items, self.config)
            except Exception:  # scored one by one below, to find the culprit
                results = None
            if isinstance(results, list) and len(results) == len(items):
                return [_builtin_outcome(raw) for raw in results]
        return [self._score_in_process(metrics, ctx) for metrics, ctx in items]

    def _score_in_process(self, metrics: AttemptMetrics, ctx: ScoringContext) -> Outcome:
        started = time.perf_counter()
        try:
            raw = self._instance.score(metrics, self.config, ctx)  # type: ignore[union-attr]
        except Exception as exc:
            return Outcome.failed(f"{type(exc).__name__}: {exc}"[:2000])
        took_ms = (time.perf_counter() - started) * 1000
        if took_ms > self.timeout_ms:
            return Outcome.failed(f"took {took_ms:.0f} ms, over the {self.timeout_ms} ms limit")
        return normalize_result(raw)


_INF = float("inf")


def _builtin_outcome(raw: Any) -> Outcome:
    """A built-in scorer's batch result: Podium's own code, so a finite, non-negative
    float score and a dict of details are taken as they are; anything else goes through
    every rule like a plugin's result."""
    if type(raw) is dict:
        score = raw.get("score")
        if type(score) is float and 0.0 <= score < _INF:
            details = raw.get("details")
            if details is None or type(details) is dict:
                return Outcome(score, details)
    return normalize_result(raw)


def build_scorer(
    setup: ScoringSetup, registry: ScorerRegistry, sandbox: Sandbox | None = None
) -> Scorer:
    """Raises ValueError (RegistryError, ConfigError, SnippetInvalid) for a setup that
    cannot run."""
    strategy = get_strategy(setup.strategy)
    if strategy.value is not None:
        return StrategyScorer(strategy)
    if strategy.name == PYTHON:
        if sandbox is None:
            raise ValueError(SNIPPETS_UNAVAILABLE)
        if setup.scorers:
            return ScorerList(
                setup.scorers,
                setup.rank_by,
                timeout_ms=setup.timeout_ms,
                owner=setup.owner,
                sandbox=sandbox,
            )
        snippet = SnippetSetup(
            code=setup.code,
            config=setup.config,
            score_key=setup.score_key,
            timeout_ms=setup.timeout_ms,
            owner=setup.owner,
            sample_with_metrics=setup.sample_with_metrics,
        )
        return SnippetScorer(snippet, sandbox)
    return PluginScorer(registry, setup)
