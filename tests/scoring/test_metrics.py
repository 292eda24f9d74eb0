"""Aggregate metrics (scoring/engine/metrics.py) against references computed by hand
from scikit-learn's definitions (binary: positive label 1, zero_division=0; macro and
support-weighted averages over the classes present; population standard deviation)."""

from __future__ import annotations

import math
import statistics
from collections import Counter

import pytest

from scoring.engine import metrics as M


def single(values):
    return Counter(values)


def pairs(predictions, labels):
    return Counter(zip(predictions, labels, strict=True))


def metric(kind, **fields):
    return M.validate_metrics([{"type": kind, **fields}])[0]


VALUES = [1.0, 0.0, 1.0, 1.0, 0.5, 3.25, 0.0]


def test_mean_max_min():
    counts = single(VALUES)
    assert M.compute(metric("mean", field="x"), counts) == pytest.approx(sum(VALUES) / 7)
    assert M.compute(metric("max", field="x"), counts) == 3.25
    assert M.compute(metric("min", field="x"), counts) == 0.0


def test_std_dev_is_the_population_one():
    expected = math.sqrt(sum((v - sum(VALUES) / 7) ** 2 for v in VALUES) / 7)
    got = M.compute(metric("std_dev", field="x"), single(VALUES))
    assert got == pytest.approx(expected)
    assert got == pytest.approx(statistics.pstdev(VALUES))


def test_std_dev_of_one_value_is_zero():
    assert M.compute(metric("std_dev", field="x"), single([4.0])) == 0.0


def test_frequency_counts_each_value():
    got = M.compute(metric("frequency", field="x"), single(VALUES))
    assert got == {"0": 2, "0.5": 1, "1": 3, "3.25": 1}


@pytest.mark.parametrize("kind", M.TYPES)
def test_no_data_is_none(kind):
    fields = (
        {"prediction": "p", "label": "t"} if kind in M.BINARY + M.MULTICLASS else {"field": "x"}
    )
    assert M.compute(metric(kind, **fields), Counter()) is None


# Binary: y_pred and y_true with tp=3, fp=1, fn=2, tn=2.
Y_PRED = [1, 1, 1, 1, 0, 0, 0, 0]
Y_TRUE = [1, 1, 1, 0, 1, 1, 0, 0]


def test_precision_recall_f1_by_hand():
    counts = pairs(Y_PRED, Y_TRUE)
    fields = {"prediction": "p", "label": "t"}
    precision, recall = 3 / (3 + 1), 3 / (3 + 2)
    assert M.compute(metric("precision", **fields), counts) == pytest.approx(precision)
    assert M.compute(metric("recall", **fields), counts) == pytest.approx(recall)
    f1 = 2 * precision * recall / (precision + recall)
    assert M.compute(metric("f1", **fields), counts) == pytest.approx(f1)


def test_binary_classification_report():
    got = M.compute(
        metric("binary_classification", prediction="p", label="t"), pairs(Y_PRED, Y_TRUE)
    )
    assert got == {
        "accuracy": pytest.approx(5 / 8),
        "precision": pytest.approx(0.75),
        "recall": pytest.approx(0.6),
        "f1": pytest.approx(2 * 0.75 * 0.6 / 1.35),
        "tp": 3,
        "fp": 1,
        "tn": 2,
        "fn": 2,
        "count": 8,
    }


def test_zero_division_is_zero():
    fields = {"prediction": "p", "label": "t"}
    no_positive_predictions = pairs([0, 0], [1, 0])
    assert M.compute(metric("precision", **fields), no_positive_predictions) == 0.0
    assert M.compute(metric("f1", **fields), no_positive_predictions) == 0.0
    no_positive_labels = pairs([1, 0], [0, 0])
    assert M.compute(metric("recall", **fields), no_positive_labels) == 0.0


def test_binary_pairs_outside_zero_and_one_are_skipped():
    counts = pairs([1, 2, 1], [1, 1, 0.5])
    got = M.compute(metric("binary_classification", prediction="p", label="t"), counts)
    assert (got["tp"], got["count"]) == (1, 1)


def test_multiclass_by_hand():
    # classes 0, 1, 2; y_true / y_pred as in scikit-learn's classification_report docs
    y_true = [0, 1, 2, 2, 2]
    y_pred = [0, 0, 2, 2, 1]
    got = M.compute(
        metric("multiclass_classification", prediction="p", label="t"), pairs(y_pred, y_true)
    )
    per = {
        "0": {"precision": 0.5, "recall": 1.0, "f1": 2 / 3, "support": 1},
        "1": {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1},
        "2": {"precision": 1.0, "recall": 2 / 3, "f1": 0.8, "support": 3},
    }
    assert got["classes"] == {
        k: {name: pytest.approx(v) for name, v in row.items()} for k, row in per.items()
    }
    assert got["accuracy"] == pytest.approx(3 / 5)
    assert got["macro_precision"] == pytest.approx(0.5)
    assert got["macro_recall"] == pytest.approx((1 + 0 + 2 / 3) / 3)
    assert got["macro_f1"] == pytest.approx((2 / 3 + 0 + 0.8) / 3)
    assert got["weighted_f1"] == pytest.approx((2 / 3 * 1 + 0 * 1 + 0.8 * 3) / 5)
    assert got["count"] == 5


def test_multiclass_counts_a_class_only_predicted():
    got = M.compute(
        metric("multiclass_classification", prediction="p", label="t"), pairs([3, 0], [0, 0])
    )
    assert got["classes"]["3"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    assert got["macro_recall"] == pytest.approx(0.25)  # (0.5 + 0) / 2


# --- validation -----------------------------------------------------------------------------------
def test_validation_fills_default_names():
    got = M.validate_metrics(
        [
            {"type": "mean", "field": "is_complete", "name": "Field Completeness"},
            {"type": "max", "field": "x"},
            {"type": "f1", "prediction": "p", "label": "t"},
        ]
    )
    assert [m["name"] for m in got] == ["Field Completeness", "Max of x", "F1 of p vs t"]


@pytest.mark.parametrize(
    ("metrics", "text"),
    [
        ({}, "must be a list"),
        ("mean", "must be a list"),
        ([1], "metric 1 must be an object"),
        ([{"type": "median", "field": "x"}], "type must be one of"),
        ([{"type": "mean"}], "field must name a score"),
        ([{"type": "mean", "field": ""}], "field must name a score"),
        ([{"type": "mean", "field": 3}], "field must name a score"),
        ([{"type": "mean", "field": "x", "label": "y"}], "unknown key 'label'"),
        ([{"type": "f1", "field": "x"}], "unknown key 'field'"),
        ([{"type": "f1", "prediction": "x"}], "label must name a score"),
        ([{"type": "mean", "field": "x", "name": 5}], "name must be"),
        ([{"type": "mean", "field": "x", "name": "a\nb"}], "name must be"),
        (
            [
                {"type": "mean", "field": "x", "name": "n"},
                {"type": "max", "field": "x", "name": "n"},
            ],
            "used twice",
        ),
        ([{"type": "mean", "field": "x", "name": f"m{i}"} for i in range(21)], "at most 20"),
    ],
)
def test_bad_metrics_are_refused_naming_the_entry(metrics, text):
    with pytest.raises(M.MetricsInvalid, match=text):
        M.validate_metrics(metrics)
