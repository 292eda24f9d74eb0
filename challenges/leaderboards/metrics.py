"""Selector: the aggregate metrics of a challenge (DESIGN.md ``metrics``).

Computed over the *active* version's scored attempts: the database groups the scores
each metric names (how many attempts had each value, or each prediction/label pair) and
``scoring.engine.metrics`` does the maths, so a million attempts cost one grouped query
per metric, not a million rows in Python.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import CharField, Count
from django.db.models.expressions import RawSQL
from django.db.models.fields.json import KeyTextTransform, KeyTransform, compile_json_path

from challenges.leaderboards import exclusions, precision
from challenges.models import AttemptScore, Challenge
from scoring.engine import metrics as M
from scoring.engine import strategies as S


def _text(name: str) -> KeyTextTransform:
    """details -> 'scores' ->> name: the score as text (its JSON type says how to read it)."""
    return KeyTextTransform(name, KeyTransform("scores", "details"))


def _type(name: str) -> RawSQL:
    """The JSON type of details -> 'scores' -> name, in one vocabulary on both databases:
    'number', 'string', 'boolean', or NULL/'null' (no such score, or None). A cast of the
    text alone cannot tell None from 0 on SQLite (its ->> gives 'null') nor the label
    "1.5" from the number 1.5."""
    column = f'{AttemptScore._meta.db_table}."details"'
    if connection.vendor == "postgresql":
        return RawSQL(f"jsonb_typeof({column} #> %s)", (["scores", name],), CharField())  # noqa: S611 - name is a bound parameter
    sql = (
        f"CASE JSON_TYPE({column}, %s) WHEN 'real' THEN 'number' WHEN 'integer' THEN 'number' "
        "WHEN 'text' THEN 'string' WHEN 'true' THEN 'boolean' WHEN 'false' THEN 'boolean' END"
    )
    return RawSQL(sql, (compile_json_path(["scores", name]),), CharField())  # noqa: S611 - bound


def _value(kind: str | None, text: str | None) -> float | str | None:
    """A grouped score as Python: a number (booleans 1.0/0.0), a label, or None."""
    if kind == "number":
        return float(text)  # type: ignore[arg-type]
    if kind == "boolean":
        return 1.0 if text == "true" else 0.0
    if kind == "string":
        return text
    return None  # no such score, or None: not counted


def _grouped(scored: Any, names: dict[str, str]) -> dict[Any, int]:
    """Counts of each value (one name) or each (prediction, label) pair (two names),
    attempts without a value skipped; grouped by the database, read here."""
    annotations: dict[str, Any] = {}
    for alias, name in names.items():
        annotations[f"{alias}_type"] = _type(name)
        annotations[f"{alias}_text"] = _text(name)
    keys = list(annotations)
    rows = scored.annotate(**annotations).values(*keys).annotate(n=Count("pk"))
    counts: dict[Any, int] = {}
    for row in rows:
        values = tuple(_value(row[f"{a}_type"], row[f"{a}_text"]) for a in names)
        if any(v is None for v in values):
            continue
        key = values if len(values) > 1 else values[0]
        counts[key] = counts.get(key, 0) + row["n"]
    return counts


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
            counts = _grouped(scored, {"p": metric["prediction"], "t": metric["label"]})
        else:
            counts = _grouped(scored, {"v": metric["field"]})
        value = M.compute(metric, counts)
        value = precision.served_json(value)
        out.append({"name": metric["name"], "type": metric["type"], "value": value})
    return out
