"""Score columns: every score of the ranking scorer on a leaderboard row
(docs/writing-scorers.md), the ranking one first; and what of an attempt's details the
public may see."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from challenges.models import AttemptScore, ScoringVersion
from scoring.engine import strategies
from scoring.engine.scorers_list import SCORE, ranking_of


def public_details(details: Any) -> Any:
    """Details without any scorer's error (admins only) and without QA (never stored
    there, dropped here all the same)."""
    if not isinstance(details, dict):
        return details
    out = {k: v for k, v in details.items() if k not in ("error", "qa")}
    others = out.get("scorers")
    if isinstance(others, dict):
        out["scorers"] = {
            key: {k: v for k, v in entry.items() if k != "error"}
            for key, entry in others.items()
            if isinstance(entry, dict)
        }
    return out or None


def ranking_score_name(version: Any) -> str:
    """The name of the score that ranks (``""`` when the only score ranks)."""
    if version.scorers:
        return ranking_of(version.scorers, version.rank_by)[1]
    return version.score_key


def ranking_scorer(version: Any) -> dict[str, Any] | None:
    """The ranking scorer of a list (None for a single-scorer setup)."""
    if not version.scorers:
        return None
    key = ranking_of(version.scorers, version.rank_by)[0]
    return next(s for s in version.scorers if s["key"] == key)


def score_scorers(version: Any) -> list[dict[str, Any]]:
    """The version's ``score`` scorers (never QA), in order."""
    return [s for s in version.scorers or () if s.get("purpose", SCORE) == SCORE]


def ordered(scores: dict[str, Any], first: str) -> dict[str, Any]:
    """The scores with the ranking one first."""
    if first in scores:
        return {first: scores[first], **{k: v for k, v in scores.items() if k != first}}
    return dict(scores)


def row_scores(
    *, version: ScoringVersion | None, attempt_ids: Iterable[int]
) -> dict[int, dict[str, Any]]:
    """``{attempt_id: {score name: value}}`` of the ranking scorer, ranking one first
    (python versions; empty for the others), in one query."""
    ids = list(attempt_ids)
    if version is None or version.scoring_strategy != strategies.PYTHON or not ids:
        return {}
    first = ranking_score_name(version)
    rows = AttemptScore.objects.filter(version=version, attempt_id__in=ids).values_list(
        "attempt_id", "details"
    )
    out = {}
    for attempt_id, details in rows:
        scores = details.get("scores") if isinstance(details, dict) else None
        out[attempt_id] = ordered(scores if isinstance(scores, dict) else {}, first)
    return out


def other_scorers(details: Any, version: Any) -> list[tuple[str, dict[str, Any]]]:
    """The other ``score`` scorers' results of an attempt, for its breakdown:
    [(display name, {score: value})], in the version's order (never QA, never errors)."""
    if not isinstance(details, dict) or not isinstance(details.get("scorers"), dict):
        return []
    found = details["scorers"]
    out = []
    for spec in score_scorers(version):
        entry = found.get(spec["key"])
        if isinstance(entry, dict) and isinstance(entry.get("scores"), dict):
            out.append((spec.get("display_name") or spec["key"], entry["scores"]))
    return out


def columns(version: Any, rows: Sequence[dict[str, Any]]) -> list[str]:
    """The score column names of a page: the ranking score first, then the others in
    the order the rows give them."""
    names: dict[str, None] = {}
    first = ranking_score_name(version) if version is not None else ""
    if first:
        names[first] = None
    for row in rows:
        names.update(dict.fromkeys(row))
    return list(names)


EXPORT_BATCH = 1000
CSV_SAMPLE_ROWS = 1000  # the CSV's score columns: the names the first rows have


def with_scores(rows: Iterable[Any], version: Any) -> Iterator[tuple[Any, dict | None]]:
    """Leaderboard rows with their score columns (None unless python), read per batch."""
    if version is None or version.scoring_strategy != strategies.PYTHON:
        for row in rows:
            yield row, None
        return
    iterator = iter(rows)
    while batch := list(itertools.islice(iterator, EXPORT_BATCH)):
        found = row_scores(version=version, attempt_ids=[r.attempt_id for r in batch])
        for row in batch:
            yield row, found.get(row.attempt_id, {})


def csv_names(rows: Iterator[tuple[Any, ...]]) -> tuple[list[str], Iterator[tuple[Any, ...]]]:
    """The score column names for a CSV (from its first rows: the ranking score first)
    and the rows, none lost."""
    head = list(itertools.islice(rows, CSV_SAMPLE_ROWS))
    names: dict[str, None] = {}
    for row in head:
        if row[-1]:
            names.update(dict.fromkeys(row[-1]))
    return list(names), itertools.chain(head, rows)


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e6 else f"{value:,.0f}"
    return str(value)


def page_columns(
    version: Any, rows: list[dict[str, Any]], breakdowns: dict[int, Any]
) -> list[dict[str, Any]]:
    """The page's score columns (python versions): each row gets ``scores``, its cells
    in column order; the header is [{"name", "ranks", "scorer"}], the ranking one first.
    Read from the breakdowns the page has anyway (no query of its own)."""
    if version is None or version.scoring_strategy != strategies.PYTHON:
        return []
    per_row = []
    for row in rows:
        why = breakdowns.get(row["attempt"])
        details = why.details if why is not None else None
        scores = details.get("scores") if isinstance(details, dict) else None
        per_row.append(scores if isinstance(scores, dict) else {})
        others = other_scorers(details, version)
        row["terms"] = [
            *row["terms"][:-1],
            *(
                (f"{name} · {key.replace('_', ' ')}", _cell(value))
                for name, scores_of in others
                for key, value in scores_of.items()
            ),
            row["terms"][-1],
        ]
    names = columns(version, per_row)
    first = ranking_score_name(version) or (names[0] if len(names) == 1 else "")
    scorer = ranking_scorer(version)
    label = (scorer or {}).get("display_name") or ""
    # The ranking score is the row's value ("Best value"): not a second column, nor a
    # term of its breakdown ("Is complete +1.00" beside the value "1").
    shown = [n for n in names if n != first]
    ranked_term = first.replace("_", " ").strip().capitalize() if first else None
    for row, scores in zip(rows, per_row, strict=True):
        row["scores"] = [_cell(scores.get(name)) for name in shown]
        row["terms"] = [t for t in row["terms"] if t[0] != ranked_term]
    titles = _metric_names(version)
    return [
        {
            "name": titles.get(n) or n.replace("_", " ").strip(),
            "key": n,
            "ranks": False,
            "scorer": label,
        }
        for n in shown
    ]


def _metric_names(version: Any) -> dict[str, str]:
    """A score key's display name: the name of the first metric over it."""
    names: dict[str, str] = {}
    for metric in getattr(version, "metrics", None) or []:
        if isinstance(metric, dict) and metric.get("field") and metric.get("name"):
            names.setdefault(str(metric["field"]), str(metric["name"]))
    return names
