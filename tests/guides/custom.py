# The plugin guide's example (custom-scorer-plugins.md, "1. Implement the ScorerProtocol"),
# as its readers copy it: unchanged (the scraped guide lost the indentation; restored).
# Excluded from ruff (ruff.toml): it is the users' code, kept byte for byte.
from typing import Any
from services.challenge_scorer_protocol import AttemptMetrics, ScoringContext, ScoringResult


class MyCustomScorer:
    def score(
        self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext
    ) -> ScoringResult:
        # Access metrics
        succeeded = metrics.get("succeeded", False)
        tokens = metrics.get("tokens_total", 0)
        elapsed_ms = metrics.get("elapsed_ms", 0)
        rating = metrics.get("rating", 0)

        # Access configuration
        multiplier = config.get("multiplier", 1.0)

        # Compute score
        score = (rating * multiplier) if succeeded else 0.0

        return {
            "score": score,
            "details": {  # optional
                "multiplier_used": multiplier
            },
        }
