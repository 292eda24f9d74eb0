"""The built-in weighted scorer (``builtin.weighted_scorer``).

score = success_bonus (only if succeeded) + rating × rating_weight
        − elapsed_ms / 1000 × time_penalty − tokens_total × token_penalty,
null metrics count as 0, and the result is clamped to ≥ 0.

``details`` has the original project's keys and signs, so integrations ported from it
read them unchanged: ``base`` (the success bonus, 0 on failure), ``rating_contribution``,
``time_penalty`` and ``token_penalty`` (both ≥ 0, subtracted), and ``clamped_from`` when
the total was negative. Scores stored before this shape (by an older Podium) keep theirs:
``success_bonus``, ``rating_bonus`` and negative penalties; a reader tells the two apart
by ``base`` (the current shape) against ``success_bonus`` (the older one).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scoring.engine.config import schema_defaults
from scoring.engine.protocol import AttemptMetrics, ScoringContext, ScoringResult

_MAX_WEIGHT = 1e9  # keeps every term finite for any int64 metric


def _weight(title: str, default: float, description: str) -> dict[str, Any]:
    return {
        "type": "number",
        "title": title,
        "default": default,
        "minimum": 0,
        "maximum": _MAX_WEIGHT,
        "description": description,
    }


def _details(bonus: float, rating: float, time: float, tokens: float) -> dict[str, Any]:
    """Each term, as the original project's weighted scorer names and signs them."""
    return {
        "base": bonus,
        "rating_contribution": rating,
        "time_penalty": time + 0.0,  # never -0.0
        "token_penalty": tokens + 0.0,
    }


class WeightedScorer:
    name = "Weighted score"
    description = (
        "A bonus for success plus points per rating point, minus a penalty per second "
        "and per token."
    )
    # Pure arithmetic that cannot block: Podium may run it in the scoring process
    # instead of an isolated one (see scoring.engine.runner).
    runs_in_process = True
    config_schema: dict[str, Any] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "success_bonus": _weight(
                "Success bonus", 100.0, "Points added when the attempt succeeded."
            ),
            "rating_weight": _weight("Rating weight", 10.0, "Points per rating point (0–10)."),
            "time_penalty": _weight("Time penalty", 1.0, "Points taken off per second taken."),
            "token_penalty": _weight("Token penalty", 0.01, "Points taken off per token used."),
        },
    }

    @classmethod
    def _weights(cls, config: dict[str, Any]) -> tuple[float, float, float, float]:
        """The four weights; a key the config lacks takes its default (the guide's rule:
        a scorer called directly, e.g. in an author's test, may get a partial config)."""
        get = config.get
        return (
            float(get("success_bonus", DEFAULTS["success_bonus"])),
            float(get("rating_weight", DEFAULTS["rating_weight"])),
            float(get("time_penalty", DEFAULTS["time_penalty"])),
            float(get("token_penalty", DEFAULTS["token_penalty"])),
        )

    def score_many(
        self, items: Sequence[tuple[AttemptMetrics, ScoringContext]], config: dict[str, Any]
    ) -> list[ScoringResult]:
        """The formula over a batch (a rescore scores a million attempts)."""
        bonus_w, rating_w, time_w, token_w = self._weights(config)
        results: list[ScoringResult] = []
        append = results.append
        for metrics, _ in items:
            bonus = bonus_w if metrics.succeeded else 0.0
            rating_part = (metrics.rating or 0) * rating_w
            time_part = (metrics.elapsed_ms or 0) / 1000.0 * time_w
            token_part = (metrics.tokens_total or 0) * token_w
            total = bonus + rating_part - time_part - token_part
            details = _details(bonus, rating_part, time_part, token_part)
            if total < 0:
                details["clamped_from"] = total
                total = 0.0
            append({"score": total, "details": details})
        return results

    def score(
        self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext
    ) -> ScoringResult:
        return self.score_many([(metrics, ctx)], config)[0]


DEFAULTS: dict[str, float] = schema_defaults(WeightedScorer.config_schema)
