"""Selector: the aggregate metrics of a challenge (DESIGN.md ``metrics``).

Computed over the *active* version's scored attempts: the database groups the scores
each metric names (how many attempts had each value, or each prediction/label pair) and
``scoring.engine.metrics`` does the maths, so a million attempts cost one grouped query
per metric, not a million rows in Python.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Count, FloatField
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Cast

from challenges.leaderboards import exclusions, precision
from challenges.models import AttemptScore, Challenge
from scoring.engine import metrics as M
from scoring.engine import strategies as S


def _score(name: str) -> Cast:
    """details -> 'scores' ->> name, as a float (NULL when the attempt has no such score)."""
    return Cast(KeyTextTransform(name, KeyTransform("scores", "details")), FloatField())


def challenge_metrics(
    *, challenge: Challenge, before: datetime | None = None
) -> list[dict[str, Any]]:
    """``[{"name", "type", "value"}]`` in the order of the active version's ``metrics``;
    ``value`` is a number, a dict (frequency, classification) or None (no data)."""
    version = challenge.active_version
    if version is None or version.scoring_strategy != S.PYTHON or not version.metrics:
        return []
    try:
        metrics = M.validate_metrics(version.metrics)
    except M.MetricsInvalid:
        return []  # saved before validation existed: nothing trustworthy to show
    scored = AttemptScore.objects.filter(version=version).order_by()
    # Hidden and practice attempts, and hidden players, are in no public aggregate.
    scored = exclusions.public_scores(scored, challenge_id=challenge.pk)
    if before is not None:  # a frozen board: only the attempts recorded before the freeze
        scored = scored.filter(attempt__recorded_at__lt=before)
    out = []
    for metric in metrics:
        if M.is_paired(metric):
            rows = (
                scored.annotate(p=_score(metric["prediction"]), t=_score(metric["label"]))
                .filter(p__isnull=False, t__isnull=False)
                .values("p", "t")
                .annotate(n=Count("pk"))
            )
            counts: dict[Any, int] = {(r["p"], r["t"]): r["n"] for r in rows}
        else:
            rows = (
                scored.annotate(v=_score(metric["field"]))
                .filter(v__isnull=False)
                .values("v")
                .annotate(n=Count("pk"))
            )
            counts = {r["v"]: r["n"] for r in rows}
        value = M.compute(metric, counts)
        value = precision.served_json(value)
        out.append({"name": metric["name"], "type": metric["type"], "value": value})
    return out
