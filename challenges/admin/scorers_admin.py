"""The admin's list of scorers for a python challenge (several scorers, QA, batch):
one row of inputs per scorer, plus one empty row to add a scorer; a row's *order*
reorders it and *remove* drops it. ``rank_by`` offers the scores a Try it run returned
(the Try it result fills its list of suggestions).

Used by ``admin_forms.ChallengeAdminForm``; the validation is the API's
(``setup_validate``), each error placed on the input of its row.
"""

from __future__ import annotations

import json
import re
from typing import Any

from django import forms

from scoring.engine.scorers_list import MAX_SCORERS, PURPOSES, TYPES

PREFIX = "scorer."
PARTS = ("order", "key", "display_name", "type", "purpose", "code", "config", "metrics", "remove")
_JSON_PARTS = {"config": dict, "metrics": list}
_ERROR_PART = {"compute_scores_snippet": "code"}


def _textarea(rows: int, code: bool = False) -> forms.Textarea:
    attrs = {"rows": rows, "class": "vLargeTextField scoring-json"}
    if code:
        attrs = {"rows": rows, "class": "code-editor__input", "spellcheck": "false", "wrap": "off"}
    return forms.Textarea(attrs=attrs)


def scorer_row_fields(index: int) -> dict[str, forms.Field]:
    p = f"{PREFIX}{index}."
    return {
        p + "order": forms.IntegerField(required=False, label="Order", min_value=0),
        p + "key": forms.CharField(required=False, max_length=64, label="Key"),
        p + "display_name": forms.CharField(required=False, max_length=100, label="Display name"),
        p + "type": forms.ChoiceField(
            choices=[(t, t) for t in TYPES], required=False, initial=TYPES[0], label="Type"
        ),
        p + "purpose": forms.ChoiceField(
            choices=[(t, t) for t in PURPOSES], required=False, initial=PURPOSES[0], label="Purpose"
        ),
        p + "code": forms.CharField(
            required=False, strip=False, widget=_textarea(12, code=True), label="Code"
        ),
        p + "config": forms.CharField(
            required=False, widget=_textarea(2), label="Config (JSON object)"
        ),
        p + "metrics": forms.CharField(
            required=False, widget=_textarea(3), label="Metrics (JSON list)"
        ),
        p + "remove": forms.BooleanField(required=False, label="Remove"),
    }


def add_scorer_fields(form: forms.Form, saved: list[dict[str, Any]]) -> int:
    """Add the rows to ``form`` (as posted, or the saved list plus one empty row).
    Returns the number of rows."""
    if form.is_bound:
        indexes = [
            int(m.group(1))
            for k in form.data
            if (m := re.fullmatch(rf"{re.escape(PREFIX)}(\d+)\.key", k))
        ]
        count = min(max(indexes, default=-1) + 1, MAX_SCORERS + 1)
    else:
        count = min(len(saved) + 1, MAX_SCORERS + 1) if saved else 1
    for i in range(count):
        form.fields.update(scorer_row_fields(i))
        if i < len(saved) and not form.is_bound:
            spec = saved[i]
            p = f"{PREFIX}{i}."
            form.initial.update(
                {
                    p + "order": i + 1,
                    p + "key": spec.get("key", ""),
                    p + "display_name": spec.get("display_name", ""),
                    p + "type": spec.get("type", TYPES[0]),
                    p + "purpose": spec.get("purpose", PURPOSES[0]),
                    p + "code": spec.get("compute_scores_snippet", ""),
                    p + "config": json.dumps(spec.get("config") or {}),
                    p + "metrics": json.dumps(spec.get("metrics") or []),
                }
            )
    return count


def scorer_rows(form: forms.Form, count: int) -> list[dict[str, Any]]:
    """Per row: each input by part, plus ``about`` (key, name, type, purpose) and
    ``data`` (config, metrics) as lists for the template."""
    rows = []
    for i in range(count):
        row: dict[str, Any] = {part: form[f"{PREFIX}{i}.{part}"] for part in PARTS}
        row["about"] = [row[p] for p in ("key", "display_name", "type", "purpose")]
        row["data"] = [row["config"], row["metrics"]]
        rows.append(row)
    return rows


def clean_scorers(form: forms.Form, cleaned: dict[str, Any], count: int) -> tuple[list, list]:
    """(the scorers list in order, the row index of each) from the posted rows; a row
    with no key and no code is empty (the one to add a scorer), a removed row is left
    out. Bad JSON is an error on its input."""
    rows = []
    for i in range(count):
        p = f"{PREFIX}{i}."
        if cleaned.get(p + "remove"):
            continue
        key = (cleaned.get(p + "key") or "").strip()
        code = cleaned.get(p + "code") or ""
        if not key and not code.strip():
            continue
        spec: dict[str, Any] = {
            "key": key,
            "type": cleaned.get(p + "type") or TYPES[0],
            "display_name": (cleaned.get(p + "display_name") or "").strip(),
            "purpose": cleaned.get(p + "purpose") or PURPOSES[0],
            "compute_scores_snippet": code,
        }
        for part, kind in _JSON_PARTS.items():
            text = (cleaned.get(p + part) or "").strip()
            if not text:
                spec[part] = kind()
                continue
            try:
                value = json.loads(text)
            except ValueError as exc:
                form.add_error(p + part, f"Not JSON: {exc}")
                value = kind()
            if not isinstance(value, kind):
                form.add_error(p + part, f"Must be a JSON {'object' if kind is dict else 'list'}.")
                value = kind()
            spec[part] = value
        order = cleaned.get(p + "order")
        rows.append((order if order is not None else 10_000 + i, i, spec))
    rows.sort(key=lambda r: (r[0], r[1]))
    return [spec for _, _, spec in rows], [i for _, i, _ in rows]


def error_field(field: str, row_of: list[int]) -> str | None:
    """The input of a ``setup_validate`` error like ``scorers[1].config``."""
    m = re.fullmatch(r"scorers\[(\d+)\](?:\.(\w+))?", field)
    if not m or int(m.group(1)) >= len(row_of):
        return None
    part = _ERROR_PART.get(m.group(2) or "key", m.group(2) or "key")
    if part not in PARTS:
        part = "key"
    return f"{PREFIX}{row_of[int(m.group(1))]}.{part}"


def rank_by_choices(rows: list[Any], setup: dict[str, Any]) -> list[str]:
    """``key.score`` for every score a Try it run returned, in order (never QA)."""
    from scoring.engine.scorers_list import ranking_of

    if not setup.get("scorers"):
        return []
    key = ranking_of(setup["scorers"], setup.get("rank_by") or "")[0]
    found: dict[str, None] = {}
    for row in rows:
        details = row.details if isinstance(getattr(row, "details", None), dict) else {}
        if key and isinstance(details.get("scores"), dict):
            found.update(dict.fromkeys(f"{key}.{name}" for name in details["scores"]))
        for other, entry in (details.get("scorers") or {}).items():
            if isinstance(entry, dict) and isinstance(entry.get("scores"), dict):
                found.update(dict.fromkeys(f"{other}.{name}" for name in entry["scores"]))
    return list(found)
