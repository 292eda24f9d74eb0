"""The scorer contract (DESIGN.md, "Class scorer plugins").

A plugin author needs only this module:

    class MyScorer:
        name = "My scorer"                    # optional, shown in the admin
        description = "What it rewards."      # optional
        config_schema = {...}                 # optional JSON Schema, with defaults

        def score(self, metrics: AttemptMetrics, config: dict, ctx: ScoringContext
                  ) -> ScoringResult:
            return {"score": 42.0, "details": {"why": "..."}}

What Podium does with the result:
- ``score`` must be a finite real number (bool is not a number here); a negative score
  is clamped to 0.
- ``details`` is optional; if given it must be a JSON object (a dict with string keys
  and JSON values). It is shown to players as the score breakdown.
- Raising any exception (``ScorerError`` for an expected, explained failure), returning
  something without a numeric ``score``, a NaN or infinite score, or running past
  ``ctx.timeout_ms`` records the attempt with ``score = None``; the error is kept for
  admins and scoring of the other attempts goes on.
- ``config`` has already been validated against ``config_schema`` with its defaults
  filled in; the same instance of the class scores many attempts, so keep no state
  between calls.

Built-in scorers that run in Podium's own process may also define
``score_many(items, config) -> list[ScoringResult]`` over ``(metrics, ctx)`` pairs: the
same results as ``score``, one per item, in order, computed faster. Each result still
goes through the rules above; if ``score_many`` raises, the batch is scored one by one.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol, Required, TypedDict, runtime_checkable

DEFAULT_TIMEOUT_MS = 5000
MAX_TIMEOUT_MS = 60_000  # the longest a scorer may take per attempt (models, forms, API)


class AttemptMetrics(NamedTuple):
    """What every scorer sees of an attempt. Any metric may be None (unknown).

    Immutable (a NamedTuple: cheap to make a million of during a rescore)."""

    succeeded: bool = False
    tokens_total: int | None = None
    elapsed_ms: int | None = None
    rating: int | None = None
    created_at: int | None = None  # epoch milliseconds

    def as_dict(self) -> dict[str, Any]:
        return {
            "succeeded": self.succeeded,
            "tokens_total": self.tokens_total,
            "elapsed_ms": self.elapsed_ms,
            "rating": self.rating,
            "created_at": self.created_at,
        }


class ScoringContext(NamedTuple):
    """Where an attempt comes from. Identifiers are blank or None when unknown."""

    challenge_id: int | None = None
    end_user_id: str | None = None
    tenant_id: str = ""
    app_id: str = ""
    workflow_id: str = ""
    timeout_ms: int = DEFAULT_TIMEOUT_MS

    def as_dict(self) -> dict[str, Any]:
        return {
            "challenge_id": self.challenge_id,
            "end_user_id": self.end_user_id,
            "tenant_id": self.tenant_id,
            "app_id": self.app_id,
            "workflow_id": self.workflow_id,
            "timeout_ms": self.timeout_ms,
        }


class ScoringResult(TypedDict, total=False):
    score: Required[float]
    details: dict[str, Any] | None


@runtime_checkable
class ScorerProtocol(Protocol):
    def score(
        self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext
    ) -> ScoringResult: ...


class ScorerError(Exception):
    """Raised by a plugin for an expected failure; the message is kept for admins."""


class RegistryError(ValueError):
    """A plugin id or entrypoint that the registry refuses."""


class ConfigError(ValueError):
    """A config that does not fit a plugin's ``config_schema``.

    ``errors`` maps a dotted path inside the config (``""`` for the whole object) to a
    message, so callers can name the offending key.
    """

    def __init__(self, errors: dict[str, str]):
        self.errors = errors
        super().__init__("; ".join(f"{k or '(config)'}: {v}" for k, v in errors.items()))
