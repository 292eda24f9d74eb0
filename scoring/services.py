"""Scoring services: validate a scoring setup and score attempts under a version.

Django-facing glue around ``scoring.engine``: it turns model rows into engine types and
engine errors into field errors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from scoring.engine import strategies as S
from scoring.engine.config import validate_config
from scoring.engine.outcome import Outcome
from scoring.engine.protocol import AttemptMetrics, ConfigError, RegistryError, ScoringContext
from scoring.engine.runner import SNIPPETS_UNAVAILABLE, Scorer, ScoringSetup, build_scorer
from scoring.registry import registry

MAX_TIMEOUT_MS = 60_000


class SetupInvalid(ValueError):
    """A scoring setup that cannot be saved; ``errors`` maps a field name to a message."""

    def __init__(self, errors: dict[str, str]):
        self.errors = errors
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))


def setup_validate(*, setup: dict[str, Any]) -> dict[str, Any]:
    """Check a scoring setup (the DESIGN.md fields) and return it normalised.

    Normalised: the registered entrypoint (never the alias or the caller's string),
    the plugin config with its schema defaults. Raises ``SetupInvalid``.
    """
    out = dict(setup)
    errors: dict[str, str] = {}
    strategy = setup.get("scoring_strategy")
    if strategy not in S.STRATEGIES:
        known = ", ".join(S.STRATEGIES)
        raise SetupInvalid(
            {"scoring_strategy": f"Unknown strategy {strategy!r}; choose one of: {known}."}
        )
    timeout = setup.get("timeout_ms", 5000)
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int)
        or not 1 <= timeout <= MAX_TIMEOUT_MS
    ):
        errors["timeout_ms"] = f"Must be an integer from 1 to {MAX_TIMEOUT_MS}."

    def unused(field: str, empty: Any) -> None:
        if setup.get(field, empty) not in (empty, None):
            errors[field] = f"Not used by the {strategy!r} strategy; leave it empty."

    if strategy == S.PYTHON:
        errors["scoring_strategy"] = SNIPPETS_UNAVAILABLE
    elif strategy == S.CUSTOM:
        for name in ("scoring_code", "score_key"):
            unused(name, "")
        unused("metrics", [])
        _validate_plugin(setup, out, errors)
    else:
        for name in ("scoring_plugin_id", "scoring_entrypoint", "scoring_code", "score_key"):
            unused(name, "")
        unused("scoring_config", {})
        unused("metrics", [])
    if errors:
        raise SetupInvalid(errors)
    return out


def _validate_plugin(setup: dict[str, Any], out: dict[str, Any], errors: dict[str, str]) -> None:
    plugin_id = setup.get("scoring_plugin_id") or ""
    if not plugin_id:
        errors["scoring_plugin_id"] = "Required with the 'custom' strategy: a registered plugin id."
        return
    reg = registry()
    try:
        out["scoring_entrypoint"] = reg.verify(plugin_id, setup.get("scoring_entrypoint") or "")
    except RegistryError as exc:
        field = "scoring_plugin_id" if plugin_id not in reg.ids() else "scoring_entrypoint"
        errors[field] = str(exc)
        return
    try:
        schema = reg.info(plugin_id).config_schema
        out["scoring_config"] = validate_config(schema, setup.get("scoring_config", {}))
    except RegistryError as exc:
        errors["scoring_plugin_id"] = f"The plugin cannot be loaded: {exc}"
    except ConfigError as exc:
        errors["scoring_config"] = "; ".join(
            f"{key}: {msg}" if key else msg for key, msg in exc.errors.items()
        )


def setup_of(version: Any) -> ScoringSetup:
    """The engine's view of a scoring version (or a challenge's current setup)."""
    return ScoringSetup(
        strategy=version.scoring_strategy,
        plugin_id=version.scoring_plugin_id,
        entrypoint=version.scoring_entrypoint,
        config=version.scoring_config or {},
        timeout_ms=version.timeout_ms,
        code=version.scoring_code,
        score_key=version.score_key,
    )


def scorer_for(version: Any) -> Scorer:
    """Raises ValueError when the version's setup can no longer run (e.g. its plugin was
    unregistered); callers record that as every attempt's error."""
    return build_scorer(setup_of(version), registry())


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def epoch_ms(dt: datetime) -> int:
    """Exact epoch milliseconds (integer arithmetic: a float loses a millisecond)."""
    return (dt - _EPOCH) // _MS


class _Contexts:
    """One ScoringContext per player of a challenge (they differ only by end user)."""

    def __init__(self, challenge: Any, timeout_ms: int):
        self._base = ScoringContext(
            challenge_id=challenge.pk,
            tenant_id=challenge.tenant_id,
            app_id=challenge.app_id,
            workflow_id=challenge.workflow_id,
            timeout_ms=timeout_ms,
        )
        self.cache: dict[str | None, ScoringContext] = {}

    def __call__(self, end_user_id: str | None) -> ScoringContext:
        ctx = self.cache.get(end_user_id)
        if ctx is None:
            ctx = self.cache[end_user_id] = self._base._replace(end_user_id=end_user_id)
        return ctx


Item = tuple[AttemptMetrics, ScoringContext]


def items_from_attempts(attempts: Iterable[Any], *, challenge: Any, timeout_ms: int) -> list[Item]:
    """Engine inputs for Attempt instances (each with ``player`` loaded, or a
    ``player_external_id`` attribute)."""
    context = _Contexts(challenge, timeout_ms)
    items = []
    for a in attempts:
        external_id = getattr(a, "player_external_id", None)
        if external_id is None:
            external_id = a.player.external_id
        metrics = AttemptMetrics(
            a.succeeded, a.tokens_total, a.elapsed_ms, a.rating, epoch_ms(a.created_at)
        )
        items.append((metrics, context(external_id)))
    return items


def rows_scorer(*, version: Any, challenge: Any) -> Callable[[Sequence[Any]], list[Outcome]]:
    """A function scoring batches of plain attempt rows under ``version`` (the scorer is
    built once, the contexts cached across batches); never raises for a scorer's fault."""
    context = _Contexts(challenge, version.timeout_ms)
    try:
        scorer = scorer_for(version)
    except ValueError as exc:
        failure = Outcome.failed(f"this scoring setup cannot run: {exc}")
        return lambda rows: [failure] * len(rows)

    contexts = context.cache  # looked up inline: a million method calls add up

    def score(rows: Sequence[Any]) -> list[Outcome]:
        return scorer.score_many(
            [
                (AttemptMetrics(*r[3:8]), contexts[r[2]] if r[2] in contexts else context(r[2]))
                for r in rows
            ]
        )

    return score


def scores_compute(*, version: Any, items: Sequence[Item]) -> list[Outcome]:
    """One outcome per item under ``version``; never raises for a scorer's fault."""
    try:
        scorer = scorer_for(version)
    except ValueError as exc:
        return [Outcome.failed(f"this scoring setup cannot run: {exc}")] * len(items)
    return scorer.score_many(items)


def sort_key_of(version: Any, score: float | None) -> float | None:
    if score is None:
        return None
    return S.get_strategy(version.scoring_strategy).sort_key(score)
