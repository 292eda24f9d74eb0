"""Selector: the aggregate metrics of a challenge (docs/writing-scorers.md, "custom metrics").

Computed over the *active* version's scored attempts: the database groups the scores
each metric names (how many attempts had each value, or each prediction/label pair) and
``scoring.engine.metrics`` does the maths, so a million attempts cost one grouped query
per metric, not a million rows in Python.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

from django.core.cache import cache
from django.db.models import Count, Expression, Max, Subquery
from django.db.models.fields.json import KeyTextTransform, KeyTransform

from challenges.leaderboards import exclusions, precision, sql
from challenges.models import AttemptScore, AuditEvent, Challenge, ScoringVersion
from scoring import sandbox
from scoring.engine import metrics as engine_metrics
from scoring.engine import strategies
from scoring.engine.protocol import AttemptMetrics
from scoring.engine.scorers_list import SCORE, ranking_of
from scoring.engine.shims import metric_program_code
from scoring.engine.snippet import (
    AttemptPayload,
    Program,
    SnippetInvalid,
    encode_item,
    interpret,
)


def _path(name: str, scorer: str | None) -> list[str]:
    """The JSON path of a score: details -> 'scores' -> name, or, for another scorer of
    a list, details -> 'scorers' -> key -> 'scores' -> name."""
    return ["scores", name] if scorer is None else ["scorers", scorer, "scores", name]


def _text(name: str, scorer: str | None = None) -> KeyTextTransform:
    """The score as text (its JSON type says how to read it)."""
    scores = KeyTransform("scores", "details")
    if scorer is not None:
        scores = KeyTransform("scores", KeyTransform(scorer, KeyTransform("scorers", "details")))
    return KeyTextTransform(name, scores)


def _type(name: str, scorer: str | None = None) -> Expression:
    """The JSON type of the score, in one vocabulary on both databases:
    'number', 'string', 'boolean', or NULL/'null' (no such score, or None). A cast of the
    text alone cannot tell None from 0 on SQLite (its ->> gives 'null') nor the label
    "1.5" from the number 1.5."""
    return sql.json_type(f'{AttemptScore._meta.db_table}."details"', _path(name, scorer))


def _value(kind: str | None, text: str | None) -> float | str | None:
    """A grouped score as Python: a number (booleans 1.0/0.0), a label, or None."""
    if kind == "number":
        return float(text)  # type: ignore[arg-type]
    if kind == "boolean":
        return 1.0 if text == "true" else 0.0
    if kind == "string":
        return text
    return None  # no such score, or None: not counted


def _grouped(scored: Any, names: dict[str, str], scorer: str | None = None) -> dict[Any, int]:
    """Counts of each value (one name) or each (prediction, label) pair (two names),
    attempts without a value skipped; grouped by the database, read here."""
    annotations: dict[str, Any] = {}
    for alias, name in names.items():
        annotations[f"{alias}_type"] = _type(name, scorer)
        annotations[f"{alias}_text"] = _text(name, scorer)
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
    *, challenge: Challenge, before: datetime | None = None, player_id: int | None = None
) -> list[dict[str, Any]]:
    """``[{"name", "type", "value"}]`` in the order of the active version's ``metrics``;
    ``value`` is a number, a dict (frequency, classification) or None (no data).

    With several scorers, each entry also has ``scorer`` (its key) and ``scorer_name``,
    grouped by scorer in the list's order (QA scorers' metrics are left out: QA is
    never public). A python metric that failed has ``error`` (for admins: callers
    showing metrics to the public drop it)."""
    version = challenge.active_version
    if version is None or version.scoring_strategy != strategies.PYTHON:
        return []
    scored = AttemptScore.objects.filter(version=version).order_by()
    # Hidden and practice attempts, and hidden players, are in no public aggregate.
    scored = exclusions.public_scores(scored, challenge_id=challenge.pk)
    if before is not None:  # a frozen board: only the attempts recorded before the freeze
        scored = scored.filter(attempt__recorded_at__lt=before)
    if player_id is not None:  # one player's metrics (GET …/metrics/?player=)
        scored = scored.filter(player_id=player_id)
    if not version.scorers:
        if not version.metrics:
            return []
        try:
            metrics = engine_metrics.validate_metrics(version.metrics)
        except engine_metrics.MetricsInvalid:
            return []  # saved before validation existed: nothing trustworthy to show
        return [_metric(version, scored, metric, None, n) for n, metric in enumerate(metrics)]
    rank_key = ranking_of(version.scorers, version.rank_by)[0]
    out = []
    for spec in version.scorers:
        if spec.get("purpose", SCORE) != SCORE:
            continue
        path = None if spec["key"] == rank_key else spec["key"]
        for n, metric in enumerate(spec.get("metrics") or ()):
            entry = _metric(version, scored, metric, path, n)
            entry.update(scorer=spec["key"], scorer_name=spec.get("display_name") or spec["key"])
            out.append(entry)
    return out


def public_metrics(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Metrics without their errors (admins only)."""
    return [{k: v for k, v in e.items() if k != "error"} for e in entries]


def _metric(
    version: ScoringVersion, scored: Any, metric: dict[str, Any], path: str | None, n: int
) -> dict[str, Any]:
    if metric["type"] == engine_metrics.PYTHON_METRIC:
        value, error = python_metric_value(
            version=version, metric=metric, scorer=path, n=n, scored=scored
        )
        entry = {"name": metric["name"], "type": metric["type"], "value": value}
        if error:
            entry["error"] = error
        return entry
    if engine_metrics.is_paired(metric):
        counts = _grouped(scored, {"p": metric["prediction"], "t": metric["label"]}, path)
    else:
        counts = _grouped(scored, {"v": metric["field"]}, path)
    value = precision.served_json(engine_metrics.compute(metric, counts))
    return {"name": metric["name"], "type": metric["type"], "value": value}


# --- python metrics: compute_metric(scores) in the sandbox, cached per version -----------------
MAX_PYTHON_METRIC_ROWS = 100_000  # score dicts per call (about 10 MB of JSON at most)
CACHE_SECONDS = 24 * 3600


def _scores_list(scored: Any, scorer: str | None) -> list[dict[str, Any]]:
    scores = KeyTransform("scores", "details")
    if scorer is not None:
        scores = KeyTransform("scores", KeyTransform(scorer, KeyTransform("scorers", "details")))
    rows = (
        scored.order_by("attempt_id")
        .annotate(s=scores)
        .values_list("s", flat=True)[: MAX_PYTHON_METRIC_ROWS + 1]
    )
    return [s for s in rows if isinstance(s, dict) and s]


def python_metric_value(
    *,
    version: ScoringVersion,
    metric: dict[str, Any],
    scorer: str | None,
    n: int,
    scored: Any = None,
) -> tuple[Any, str]:
    """(value, error) of a python metric over the version's scores (``scored``: the
    public ones by default), cached under what the scores it reads depend on: the
    version, how many there are and the newest (new attempts), the newest audit event
    (every hide, unhide or other moderation writes one, whichever challenge it names)
    and the challenge's ``updated_at`` (a batch run rewrites scores in place and bumps
    it)."""
    if scored is None:
        scored = exclusions.public_scores(
            AttemptScore.objects.filter(version=version).order_by(),
            challenge_id=version.challenge_id,
        )
    last_event = AuditEvent.objects.order_by("-pk").values("pk")[:1]
    touched = Challenge.objects.filter(pk=version.challenge_id).values("updated_at")[:1]
    state = scored.aggregate(
        n=Count("pk"),
        last=Max("pk"),
        event=Max(Subquery(last_event)),
        touched=Max(Subquery(touched)),
    )
    code = metric["compute_metric_snippet"]
    digest = hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()
    parts = (version.pk, scorer, n, digest, *state.values())
    key = "podium:pymetric:" + hashlib.sha256(repr(parts).encode()).hexdigest()
    cached = cache.get(key)
    if cached is not None:
        return tuple(cached)
    value, error = _compute_python_metric(version, code, _scores_list(scored, scorer))
    found = (precision.served_json(value), error)
    cache.set(key, list(found), CACHE_SECONDS)
    return found


def _compute_python_metric(
    version: ScoringVersion, code: str, scores: list[dict[str, Any]]
) -> tuple[Any, str]:
    if len(scores) > MAX_PYTHON_METRIC_ROWS:
        return None, f"over {MAX_PYTHON_METRIC_ROWS:,} scored attempts: too many for one call"
    try:
        program_code, is_async = metric_program_code(code)
        pool = sandbox.shared_pool()
    except (SnippetInvalid, sandbox.SandboxUnavailable) as exc:
        return None, str(exc)
    program = Program(
        owner=f"ScoringVersion {version.pk} metric",
        code=program_code,
        arity=1,
        is_async=is_async,
        timeout_ms=version.timeout_ms,
    )
    item = encode_item(AttemptMetrics(), AttemptPayload(json.dumps({"scores": scores})), 1)
    (raw,) = pool.run(program, [item])
    result = interpret(raw, "")
    if not result.scores:
        return None, result.outcome.error or "compute_metric returned nothing"
    if set(result.scores) == {"__value__"}:
        return result.scores["__value__"], ""
    return result.scores, ""
