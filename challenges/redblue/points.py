"""The points of judged pairings under the challenge's rule (``scoring.engine.red_blue``),
and their recomputation when the rule's settings change."""

from __future__ import annotations

from typing import Any

from challenges.models import Challenge, Pairing
from challenges.redblue import kept as red_blue_kept
from scoring.engine.red_blue import Points, ratio_points


def pairing_points(*, challenge: Challenge, judgement: dict[str, Any]) -> Points:
    """The points of a judgement (``categories``, ``rating``, ``elapsed_ms``,
    ``tokens_total``) under the challenge's settings."""
    return ratio_points(
        suite=challenge.judge_suite,
        categories=judgement["categories"],
        rating=judgement["rating"],
        severity_divisor=challenge.severity_divisor,
        elapsed_ms=judgement.get("elapsed_ms"),
        tokens_total=judgement.get("tokens_total"),
        time_penalty=challenge.time_penalty,
        token_penalty=challenge.token_penalty,
    )


def points_recompute(*, challenge: Challenge) -> int:
    """Recompute every judged pairing's points under the challenge's current settings
    (call inside the transaction that saves them: readers see the old points or the new,
    never a mix). A pairing judged under another suite keeps the verdicts it has: codes
    no longer in the suite count for neither side, new codes as held. Returns how many
    pairings changed."""
    suite = list(challenge.judge_suite)
    changed = []
    judged = Pairing.objects.select_for_update().filter(
        challenge_id=challenge.pk, judged_at__isnull=False
    )
    for pairing in judged:
        verdicts = {code: bool((pairing.categories or {}).get(code)) for code in suite}
        points = pairing_points(
            challenge=challenge,
            judgement={
                "categories": verdicts,
                "rating": pairing.rating or 0,
                "elapsed_ms": pairing.elapsed_ms,
                "tokens_total": pairing.tokens_total,
            },
        )
        if (pairing.red_points, pairing.blue_points) != (points.red, points.blue):
            pairing.red_points, pairing.blue_points = points.red, points.blue
            changed.append(pairing)
    Pairing.objects.bulk_update(changed, ["red_points", "blue_points"], batch_size=1000)
    if changed:
        red_blue_kept.changed(challenge_ids=[challenge.pk])
    return len(changed)
