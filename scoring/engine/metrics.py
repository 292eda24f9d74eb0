"""Aggregate metrics of a snippet challenge (docs/writing-scorers.md, "custom metrics"),
in plain Python.

A challenge's ``metrics`` is a list of

    {"type": "mean", "field": "is_complete", "name": "Field Completeness"}
    {"type": "f1", "prediction": "predicted", "label": "expected", "name": "F1"}

``field``, ``prediction`` and ``label`` name scores the snippet returns (metadata is
never aggregated). Each metric is computed from counts: how many scored attempts had
each value (``mean`` … ``frequency``) or each (prediction, label) pair (the
classification ones), so the database can do the grouping and this module the maths.

Definitions, as scikit-learn's on the same data:
- ``mean``, ``max``, ``min``; ``std_dev`` is the population standard deviation
  (``numpy.std``, ddof=0); ``frequency`` is ``{value: count}``.
- ``precision``, ``recall``, ``f1``: binary with positive label 1 (``average="binary"``,
  ``zero_division=0``); a pair counts only when both values are 0 or 1 (booleans are
  stored as 1.0/0.0).
- ``binary_classification``: those three plus accuracy and the confusion counts.
- ``multiclass_classification``: accuracy, per-class precision/recall/f1/support, and
  their macro and support-weighted averages over the classes seen in either column
  (``precision_recall_fscore_support`` with ``zero_division=0``).
A metric with no data has the value None.

Values may be numbers or strings (labels; booleans arrive as 1.0/0.0). ``mean``,
``max``, ``min``, ``std_dev`` and the binary metrics use the numbers only; ``frequency``
and ``multiclass_classification`` count labels and numbers alike (a number's label is its
shortest text: 1.0 → "1").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

SINGLE = ("mean", "max", "min", "std_dev", "frequency")
BINARY = ("precision", "recall", "f1", "binary_classification")
MULTICLASS = ("multiclass_classification",)
PYTHON_METRIC = "python"  # compute_metric(scores) in the sandbox (scoring/engine/shims.py)
TYPES = SINGLE + BINARY + MULTICLASS  # computed from counts, below
ALL_TYPES = (*TYPES, PYTHON_METRIC)
MAX_METRICS = 20
MAX_NAME_CHARS = 100
LABELS = {  # each type in words: the admin form's choices and default metric names
    "mean": "Mean",
    "max": "Max",
    "min": "Min",
    "std_dev": "Standard deviation",
    "frequency": "Frequency",
    "precision": "Precision",
    "recall": "Recall",
    "f1": "F1",
    "binary_classification": "Binary classification",
    "multiclass_classification": "Multiclass classification",
    "python": "Python metric",
}


class MetricsInvalid(ValueError):
    """A ``metrics`` list that cannot be saved; the message names the entry."""


def _python_metric(metric: Mapping[str, Any], where: str, n: int) -> dict[str, str]:
    from .shims import metric_program_code  # shims imports snippet, which is heavier
    from .snippet import SnippetInvalid

    unknown = sorted(set(metric) - {"type", "name", "compute_metric_snippet"})
    if unknown:
        raise MetricsInvalid(f"{where}: unknown key {unknown[0]!r} for a python metric")
    code: Any = metric.get("compute_metric_snippet")  # checked by metric_program_code
    try:
        metric_program_code(code)
    except SnippetInvalid as exc:
        message = next(iter(exc.errors.values()))
        raise MetricsInvalid(f"{where}: compute_metric_snippet: {message}") from None
    return {"type": PYTHON_METRIC, "compute_metric_snippet": code, "name": f"Python metric {n}"}


def is_paired(metric: Mapping[str, Any]) -> bool:
    return metric["type"] in BINARY or metric["type"] in MULTICLASS


def _field_name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= 64 or not value.isprintable():
        raise MetricsInvalid(f"{where} must name a score: 1–64 printable characters")
    return value


def validate_metrics(metrics: Any) -> list[dict[str, str]]:
    """The metrics list, normalised (every entry has a name). Raises MetricsInvalid."""
    if metrics is None:
        return []
    if not isinstance(metrics, list):
        raise MetricsInvalid("must be a list of {type, field, name} objects")
    if len(metrics) > MAX_METRICS:
        raise MetricsInvalid(f"at most {MAX_METRICS} metrics")
    out: list[dict[str, str]] = []
    names: set[str] = set()
    for n, metric in enumerate(metrics, start=1):
        where = f"metric {n}"
        if not isinstance(metric, dict):
            raise MetricsInvalid(f"{where} must be an object with type, field and name")
        kind = metric.get("type")
        if kind not in ALL_TYPES:
            raise MetricsInvalid(f"{where}: type must be one of {', '.join(ALL_TYPES)}")
        fields: tuple[str, ...]
        if kind == PYTHON_METRIC:
            entry, fields = _python_metric(metric, where, n), ()
        else:
            entry = {"type": kind}
            fields = ("prediction", "label") if kind in BINARY + MULTICLASS else ("field",)
        unknown = sorted(set(metric) - {"type", "name", "compute_metric_snippet", *fields})
        if unknown or (kind != PYTHON_METRIC and "compute_metric_snippet" in metric):
            bad = unknown[0] if unknown else "compute_metric_snippet"
            raise MetricsInvalid(f"{where}: unknown key {bad!r} for a {kind} metric")
        for key in fields:
            entry[key] = _field_name(metric.get(key), f"{where}: {key}")
        name = metric.get("name")
        if (name is None or name == "") and kind == PYTHON_METRIC:
            name = entry["name"]
        elif name is None or name == "":
            name = f"{LABELS[kind]} of " + " vs ".join(entry[key] for key in fields)
        if not isinstance(name, str) or len(name) > MAX_NAME_CHARS or not name.isprintable():
            raise MetricsInvalid(
                f"{where}: name must be at most {MAX_NAME_CHARS} printable characters"
            )
        if name in names:
            raise MetricsInvalid(f"{where}: the name {name!r} is used twice")
        names.add(name)
        entry["name"] = name
        out.append(entry)
    return out


# --- single-column metrics: counts of each value --------------------------------------------
def _numbers(counts: Mapping[Any, int]) -> dict[float, int]:
    return {v: c for v, c in counts.items() if type(v) is float or type(v) is int}


def _total(counts: Mapping[float, int]) -> int:
    return sum(counts.values())


def _order(value: Any) -> tuple[int, Any]:
    """Numbers first (by value), then labels (alphabetically): a total order on both."""
    return (1, value) if isinstance(value, str) else (0, float(value))


def mean(counts: Mapping[float, int]) -> float | None:
    counts = _numbers(counts)
    n = _total(counts)
    if not n:
        return None
    return math.fsum(value * c for value, c in counts.items()) / n


def std_dev(counts: Mapping[float, int]) -> float | None:
    """Population standard deviation (ddof=0), two-pass for accuracy."""
    counts = _numbers(counts)
    center = mean(counts)
    if center is None:
        return None
    n = _total(counts)
    return math.sqrt(math.fsum(c * (value - center) ** 2 for value, c in counts.items()) / n)


def maximum(counts: Mapping[float, int]) -> float | None:
    return max((value for value, c in _numbers(counts).items() if c), default=None)


def minimum(counts: Mapping[float, int]) -> float | None:
    return min((value for value, c in _numbers(counts).items() if c), default=None)


def _label(value: float | str) -> str:
    if isinstance(value, str):
        return value
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def frequency(counts: Mapping[float | str, int]) -> dict[str, int] | None:
    present = sorted(((v, c) for v, c in counts.items() if c), key=lambda vc: _order(vc[0]))
    out: dict[str, int] = {}
    for value, c in present:  # a label "1" and the number 1.0 share a key: counted together
        out[_label(value)] = out.get(_label(value), 0) + c
    return out or None


# --- classification: counts of (prediction, label) pairs -------------------------------------
def _divide(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else 0.0  # zero_division=0


def confusion(pairs: Mapping[tuple[float, float], int]) -> dict[str, int]:
    """Binary confusion counts with positive label 1 (pairs outside {0, 1} skipped)."""
    tp = fp = tn = fn = 0
    for (prediction, label), c in pairs.items():
        if prediction not in (0, 1) or label not in (0, 1):
            continue
        if prediction == 1:
            if label == 1:
                tp += c
            else:
                fp += c
        elif label == 1:
            fn += c
        else:
            tn += c
    return {"tp": tp, "fp": fp, "tn": tn, "fn": fn}


def _binary(pairs: Mapping[tuple[float, float], int]) -> dict[str, Any] | None:
    m = confusion(pairs)
    tp, fp, tn, fn = m["tp"], m["fp"], m["tn"], m["fn"]
    total = tp + fp + tn + fn
    if not total:
        return None
    return {
        "accuracy": (tp + tn) / total,
        "precision": _divide(tp, tp + fp),
        "recall": _divide(tp, tp + fn),
        "f1": _divide(2 * tp, 2 * tp + fp + fn),
        **m,
        "count": total,
    }


def multiclass(pairs: Mapping[tuple[float, float], int]) -> dict[str, Any] | None:
    total = sum(pairs.values())
    if not total:
        return None
    classes = sorted({p for p, _ in pairs} | {t for _, t in pairs}, key=_order)
    correct = sum(c for (p, t), c in pairs.items() if p == t)
    per_class: dict[str, dict[str, float | int]] = {}
    for cls in classes:
        tp = sum(c for (p, t), c in pairs.items() if p == cls and t == cls)
        predicted = sum(c for (p, _), c in pairs.items() if p == cls)
        support = sum(c for (_, t), c in pairs.items() if t == cls)
        per_class[_label(cls)] = {
            "precision": _divide(tp, predicted),
            "recall": _divide(tp, support),
            "f1": _divide(2 * tp, predicted + support),
            "support": support,
        }
    rows = list(per_class.values())
    weights = sum(r["support"] for r in rows)
    return {
        "accuracy": correct / total,
        "macro_precision": math.fsum(r["precision"] for r in rows) / len(rows),
        "macro_recall": math.fsum(r["recall"] for r in rows) / len(rows),
        "macro_f1": math.fsum(r["f1"] for r in rows) / len(rows),
        "weighted_f1": _divide(math.fsum(r["f1"] * r["support"] for r in rows), weights),
        "count": total,
        "classes": per_class,
    }


def compute(metric: Mapping[str, Any], counts: Mapping[Any, int]) -> Any:
    """The value of one (validated) metric from its counts: value → count, or
    (prediction, label) → count for the classification types."""
    kind = metric["type"]
    if kind == "mean":
        return mean(counts)
    if kind == "max":
        return maximum(counts)
    if kind == "min":
        return minimum(counts)
    if kind == "std_dev":
        return std_dev(counts)
    if kind == "frequency":
        return frequency(counts)
    if kind == "multiclass_classification":
        return multiclass(counts)
    result = _binary(counts)
    if kind == "binary_classification" or result is None:
        return result
    return result[kind]
