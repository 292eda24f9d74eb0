"""The Python scorer reference's examples, run as written, through the API (issue 20):
the sample is exactly the row, labels are scores, annotations never raise, the ranking
value is not clamped and may order ascending, any Mapping result, ``"metrics": null``."""

from __future__ import annotations

from pathlib import Path

import pytest

from challenges.models import Challenge
from tests.urls import attempts_url, challenges_url, leaderboard_url, metrics_url

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

COMPLETENESS = (Path(__file__).parents[2] / "guides" / "completeness_scorer.py").read_text()


@pytest.fixture(autouse=True)
def _needs_the_sandbox():
    from tests.scoring.test_snippet import sandbox_or_skip

    sandbox_or_skip()


def create(admin_api, **setup):
    body = {"name": "Guide snippet", "scoring_strategy": "python", **setup}
    response = admin_api.post(challenges_url(), body, format="json")
    assert response.status_code == 201, response.content
    return Challenge.objects.get(pk=response.json()["id"])


def record(api, challenge, attempts):
    response = api.post(attempts_url(challenge.pk), attempts, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_the_references_field_completeness_on_the_field_rating(admin_api):
    # Before issue 20 the five metrics were merged into `sample`: "rating" was always
    # there, and {} answered 1/1/0 instead of 0/0/0.
    challenge = create(
        admin_api,
        scoring_code=COMPLETENESS,
        scoring_config={"field": "rating"},
        score_key="is_complete",
        metrics=[{"type": "mean", "field": "is_complete", "name": "Field Completeness"}],
    )
    samples = [{}, {"rating": ""}, {"rating": 5}]
    body = [
        {"player": f"p{i}", "succeeded": True, "rating": 9, "sample": s}
        for i, s in enumerate(samples)
    ]

    out = record(admin_api, challenge, body)

    triples = [
        tuple(a["details"]["scores"][k] for k in ("is_complete", "has_field", "empty_field"))
        for a in out
    ]
    assert triples == [(0.0, 0.0, 0.0), (0.0, 1.0, 1.0), (1.0, 1.0, 0.0)]


def test_a_string_label_with_a_frequency_metric(admin_api, anon_api):
    code = "def compute_scores(sample):\n    return {'s': 1.0, 'label': sample['animal']}\n"
    challenge = create(
        admin_api,
        scoring_code=code,
        score_key="s",
        metrics=[
            {"type": "frequency", "field": "label", "name": "Animals"},
            {"type": "multiclass_classification", "prediction": "label", "label": "label"},
        ],
    )
    animals = ["cat", "dog", "cat"]
    body = [
        {"player": f"p{i}", "succeeded": True, "sample": {"animal": a}}
        for i, a in enumerate(animals)
    ]

    out = record(admin_api, challenge, body)

    assert [a["score"] for a in out] == [1.0, 1.0, 1.0]
    assert [a["details"]["scores"]["label"] for a in out] == animals
    metrics = anon_api.get(metrics_url(challenge.pk)).json()
    assert metrics[0] == {"name": "Animals", "type": "frequency", "value": {"cat": 2, "dog": 1}}
    assert metrics[1]["value"]["accuracy"] == 1.0
    assert set(metrics[1]["value"]["classes"]) == {"cat", "dog"}


def test_the_references_annotated_signature_verbatim(admin_api):
    # No `from __future__ import annotations`: the annotations are evaluated at def time.
    code = (
        "def compute_scores(sample: dict[str, Any], solver_output: SolverOutput)"
        " -> dict[str, Any]:\n"
        "    return {'n': len(solver_output.messages),"
        " 'rating': solver_output.metrics['rating']}\n"
    )
    challenge = create(admin_api, scoring_code=code, score_key="n")

    [out] = record(
        admin_api,
        challenge,
        [{"player": "p", "succeeded": True, "rating": 4, "messages": [{"role": "user"}]}],
    )

    assert out["score"] == 1.0, out["details"]
    assert out["details"]["scores"] == {"n": 1.0, "rating": 4.0}


def test_a_snippet_ranking_by_a_negative_error_lower_first(admin_api, anon_api):
    code = "def compute_scores(sample):\n    return {'error': -abs(sample['x'])}\n"
    challenge = create(admin_api, scoring_code=code, lower_is_better=True)
    body = [
        {"player": "small", "succeeded": True, "sample": {"x": 1}, "created_at": 1000},
        {"player": "big", "succeeded": True, "sample": {"x": 5}, "created_at": 1000},
        {"player": "mid", "succeeded": True, "sample": {"x": 3}, "created_at": 1000},
    ]

    out = record(admin_api, challenge, body)

    assert [a["score"] for a in out] == [-1.0, -5.0, -3.0]  # not clamped to 0
    board = anon_api.get(leaderboard_url(challenge.pk)).json()["results"]
    assert [(r["player"], r["rank"], r["score"]) for r in board] == [
        ("big", 1, -5.0),
        ("mid", 2, -3.0),
        ("small", 3, -1.0),
    ]


def test_higher_ranks_first_by_default_with_negative_values(admin_api, anon_api):
    code = "def compute_scores(sample):\n    return {'loglik': -float(sample['x'])}\n"
    challenge = create(admin_api, scoring_code=code)
    body = [{"player": p, "succeeded": True, "sample": {"x": x}} for p, x in (("a", 2), ("b", 1))]
    record(admin_api, challenge, body)
    board = anon_api.get(leaderboard_url(challenge.pk)).json()["results"]
    assert [r["player"] for r in board] == ["b", "a"]


def test_any_mapping_result_and_metrics_null(admin_api):
    code = (
        "from collections import OrderedDict\n"
        "from types import MappingProxyType\n"
        "def compute_scores(sample):\n"
        "    if sample.get('proxy'):\n"
        "        return MappingProxyType({'scores': OrderedDict(s=2.0), 'metadata': {}})\n"
        "    return OrderedDict(s=1.0)\n"
    )
    challenge = create(admin_api, scoring_code=code, metrics=None)
    body = [
        {"player": "a", "succeeded": True, "sample": {}},
        {"player": "b", "succeeded": True, "sample": {"proxy": True}},
    ]

    out = record(admin_api, challenge, body)

    assert [a["score"] for a in out] == [1.0, 2.0]
    assert challenge.metrics == []
