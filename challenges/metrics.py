"""Selector: the aggregate metrics of a challenge (DESIGN.md ``metrics``).

Computed over the *active* version's scored attempts: the database groups the scores
each metric names (how many attempts had each value, or each prediction/label pair) and
``scoring.engine.metrics`` does the maths, so a million attempts cost one grouped query
per metric, not a million rows in Python.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.core.cache import cache
from django.db.models import Count, FloatField, Max
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Cast

from scoring import sandbox
from scoring.engine import metrics as M
from scoring.engine import strategies as S
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

from .models import AttemptScore, Challenge, ScoringVersion


def _score(name: str, scorer: str | None = None) -> Cast:
    """details -> 'scores' ->> name (or, for another scorer of a list, details ->
    'scorers' -> key -> 'scores' ->> name), as a float (NULL when there is none)."""
    scores = KeyTransform("scores", "details")
    if scorer is not None:
        scores = KeyTransform("scores", KeyTransform(scorer, KeyTransform("scorers", "details")))
    return Cast(KeyTextTransform(name, scores), FloatField())


def challenge_metrics(*, challenge: Challenge) -> list[dict[str, Any]]:
    """``[{"name", "type", "value"}]`` in the order of the active version's ``metrics``;
    ``value`` is a number, a dict (frequency, classification) or None (no data).

    With several scorers, each entry also has ``scorer`` (its key) and ``scorer_name``,
    grouped by scorer in the list's order (QA scorers' metrics are left out: QA is
    never public). A python metric that failed has ``error`` (for admins: callers
    showing metrics to the public drop it)."""
    version = challenge.active_version
    if version is None or version.scoring_strategy != S.PYTHON:
        return []
    scored = AttemptScore.objects.filter(version=version).order_by()
    if not version.scorers:
        try:
            metrics = M.validate_metrics(version.metrics)
        except M.MetricsInvalid:
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
    if metric["type"] == M.PYTHON_METRIC:
        value, error = python_metric_value(version=version, metric=metric, scorer=path, n=n)
        entry = {"name": metric["name"], "type": metric["type"], "value": value}
        if error:
            entry["error"] = error
        return entry
    if M.is_paired(metric):
        rows = (
            scored.annotate(p=_score(metric["prediction"], path), t=_score(metric["label"], path))
            .filter(p__isnull=False, t__isnull=False)
            .values("p", "t")
            .annotate(n=Count("pk"))
        )
        counts: dict[Any, int] = {(r["p"], r["t"]): r["n"] for r in rows}
    else:
        rows = (
            scored.annotate(v=_score(metric["field"], path))
            .filter(v__isnull=False)
            .values("v")
            .annotate(n=Count("pk"))
        )
        counts = {r["v"]: r["n"] for r in rows}
    return {"name": metric["name"], "type": metric["type"], "value": M.compute(metric, counts)}


# --- python metrics: compute_metric(scores) in the sandbox, cached per version -----------------
MAX_PYTHON_METRIC_ROWS = 100_000  # score dicts per call (about 10 MB of JSON at most)
CACHE_SECONDS = 24 * 3600


def _scores_list(version: ScoringVersion, scorer: str | None) -> list[dict[str, Any]]:
    scores = KeyTransform("scores", "details")
    if scorer is not None:
        scores = KeyTransform("scores", KeyTransform(scorer, KeyTransform("scorers", "details")))
    rows = (
        AttemptScore.objects.filter(version=version)
        .order_by("attempt_id")
        .annotate(s=scores)
        .values_list("s", flat=True)[: MAX_PYTHON_METRIC_ROWS + 1]
    )
    return [s for s in rows if isinstance(s, dict) and s]


def python_metric_value(
    *, version: ScoringVersion, metric: dict[str, Any], scorer: str | None, n: int
) -> tuple[Any, str]:
    """(value, error) of a python metric over the version's scores: cached per version
    and per state of its scores (a new or rescored attempt is a new key)."""
    state = AttemptScore.objects.filter(version=version).aggregate(n=Count("pk"), last=Max("pk"))
    code = metric["compute_metric_snippet"]
    digest = hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    key = f"podium:pymetric:{version.pk}:{scorer}:{n}:{digest}:{state['n']}:{state['last']}"
    cached = cache.get(key)
    if cached is not None:
        return tuple(cached)
    found = _compute_python_metric(version, code, _scores_list(version, scorer))
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
