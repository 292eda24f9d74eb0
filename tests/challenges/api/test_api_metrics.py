"""Python snippet challenges through the API: the issue's done-when example, metrics at
GET /api/challenges/{id}/metrics/, and a rescore of a challenge switched to python."""

from __future__ import annotations

import pytest

from challenges.models import Challenge, RescoreJob
from scoring import sandbox
from tests.urls import (
    attempts_url,
    challenges_url,
    detail_url,
    leaderboard_url,
    metrics_url,
    schema_url,
)

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

FIELD_COMPLETENESS = '''\
def compute_scores(sample):
    """Is the configured field there, and filled in?"""
    field = "<< config.field >>"
    has_field = field in sample
    value = sample.get(field)
    empty_field = has_field and (value is None or str(value).strip() == "")
    return {
        "is_complete": has_field and not empty_field,
        "has_field": has_field,
        "empty_field": empty_field,
    }
'''
SETUP = {
    "scoring_strategy": "python",
    "scoring_code": FIELD_COMPLETENESS,
    "scoring_config": {"field": "answer"},
    "score_key": "is_complete",
    "metrics": [{"type": "mean", "field": "is_complete", "name": "Field Completeness"}],
}


@pytest.fixture(autouse=True)
def _needs_the_sandbox():
    from tests.scoring.test_snippet import sandbox_or_skip

    sandbox_or_skip()


def create(admin_api, **changes):
    body = {"name": "Field completeness", **SETUP, **changes}
    response = admin_api.post(challenges_url(), body, format="json")
    assert response.status_code == 201, response.content
    return Challenge.objects.get(pk=response.json()["id"])


def test_done_when_field_completeness(admin_api, integration_api, anon_api):
    challenge = create(admin_api)
    samples = [("paris", {"answer": "Paris"}), ("blank", {"answer": ""}), ("none", {})]
    body = [{"player": p, "succeeded": True, "sample": s, "created_at": 1000} for p, s in samples]
    response = integration_api.post(attempts_url(challenge.pk), body, format="json")
    assert response.status_code == 201, response.content

    scores = [a["details"]["scores"] for a in response.json()]
    triples = [(s["is_complete"], s["has_field"], s["empty_field"]) for s in scores]
    assert triples == [(1.0, 1.0, 0.0), (0.0, 1.0, 1.0), (0.0, 0.0, 0.0)]
    assert [a["score"] for a in response.json()] == [1.0, 0.0, 0.0]

    board = anon_api.get(leaderboard_url(challenge.pk)).json()
    assert [(r["player"], r["rank"], r["score"]) for r in board["results"]] == [
        ("paris", 1, 1.0),
        ("blank", 2, 0.0),
        ("none", 2, 0.0),
    ]
    metrics = anon_api.get(metrics_url(challenge.pk))
    assert metrics.status_code == 200
    assert metrics.json() == [
        {"name": "Field Completeness", "type": "mean", "value": pytest.approx(1 / 3)}
    ]


def test_metrics_of_every_kind(admin_api, integration_api, anon_api):
    code = (
        "def compute_scores(sample):\n"
        "    return {'scores': {'pred': sample['p'], 'gold': sample['t'], 'x': sample['x']},\n"
        "            'metadata': {'note': 'never aggregated'}}\n"
    )
    metrics = [
        {"type": kind, "field": "x"} for kind in ("mean", "max", "min", "std_dev", "frequency")
    ] + [
        {"type": kind, "prediction": "pred", "label": "gold"}
        for kind in (
            "precision",
            "recall",
            "f1",
            "binary_classification",
            "multiclass_classification",
        )
    ]
    challenge = create(
        admin_api, scoring_code=code, scoring_config={}, score_key="x", metrics=metrics
    )
    rows = [(1, 1, 2.0), (1, 0, 4.0), (0, 1, 4.0), (0, 0, 6.0), (1, 1, 9.0)]
    body = [
        {"player": f"p{i}", "succeeded": True, "sample": {"p": p, "t": t, "x": x}}
        for i, (p, t, x) in enumerate(rows)
    ]
    assert integration_api.post(attempts_url(challenge.pk), body, format="json").status_code == 201
    got = {m["name"]: m["value"] for m in anon_api.get(metrics_url(challenge.pk)).json()}
    xs = [x for *_, x in rows]
    mean = sum(xs) / 5
    assert got["Mean of x"] == pytest.approx(mean)
    assert (got["Max of x"], got["Min of x"]) == (9.0, 2.0)
    assert got["Standard deviation of x"] == pytest.approx(
        (sum((x - mean) ** 2 for x in xs) / 5) ** 0.5
    )
    assert got["Frequency of x"] == {"2": 1, "4": 2, "6": 1, "9": 1}
    # tp=2 (rows 0, 4), fp=1 (row 1), fn=1 (row 2), tn=1 (row 3)
    assert got["Precision of pred vs gold"] == pytest.approx(2 / 3)
    assert got["Recall of pred vs gold"] == pytest.approx(2 / 3)
    assert got["F1 of pred vs gold"] == pytest.approx(2 / 3)
    report = got["Binary classification of pred vs gold"]
    assert (report["tp"], report["fp"], report["fn"], report["tn"]) == (2, 1, 1, 1)
    assert got["Multiclass classification of pred vs gold"]["accuracy"] == pytest.approx(3 / 5)


def test_metrics_are_public_empty_without_data_and_404_when_hidden(admin_api, anon_api):
    challenge = create(admin_api)
    assert anon_api.get(metrics_url(challenge.pk)).json() == [
        {"name": "Field Completeness", "type": "mean", "value": None}
    ]
    Challenge.objects.filter(pk=challenge.pk).update(is_active=False)
    assert anon_api.get(metrics_url(challenge.pk)).status_code == 404
    assert admin_api.get(metrics_url(challenge.pk)).status_code == 200
    assert anon_api.get(metrics_url(999_999)).status_code == 404


def test_metrics_of_a_built_in_strategy_are_empty(admin_api, anon_api):
    response = admin_api.post(
        challenges_url(), {"name": "Fast", "scoring_strategy": "fastest"}, format="json"
    )
    assert anon_api.get(metrics_url(response.json()["id"])).json() == []


def test_metrics_cost_one_query_per_metric(
    admin_api, integration_api, anon_api, django_assert_max_num_queries
):
    challenge = create(admin_api)
    body = [{"player": f"p{i}", "succeeded": True, "sample": {"answer": "x"}} for i in range(30)]
    integration_api.post(attempts_url(challenge.pk), body, format="json")
    with django_assert_max_num_queries(4):
        anon_api.get(metrics_url(challenge.pk))


def test_metrics_in_the_openapi_schema(anon_api):
    schema = anon_api.get(schema_url()).json()
    operation = schema["paths"]["/api/challenges/{id}/metrics/"]["get"]
    assert operation["security"] and {} in operation["security"]  # public
    assert "ChallengeMetric" in schema["components"]["schemas"]


def test_rescore_to_python_end_to_end(
    admin_api, integration_api, anon_api, django_capture_on_commit_callbacks
):
    response = admin_api.post(
        challenges_url(), {"name": "Was first", "scoring_strategy": "first"}, format="json"
    )
    pk = response.json()["id"]
    body = [
        {"player": "early", "succeeded": True, "created_at": 1000, "sample": {}},
        {"player": "late", "succeeded": True, "created_at": 2000, "sample": {"answer": "42"}},
        {"player": "blank", "succeeded": False, "created_at": 3000, "sample": {"answer": " "}},
    ]
    assert integration_api.post(attempts_url(pk), body, format="json").status_code == 201
    assert [r["player"] for r in anon_api.get(leaderboard_url(pk)).json()["results"]] == [
        "early",
        "late",
    ]

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        patched = admin_api.patch(detail_url(pk), SETUP, format="json")
    assert patched.status_code == 200, patched.content
    job = RescoreJob.objects.get(challenge_id=pk, status=RescoreJob.Status.QUEUED)
    # Until the job runs, the public sees the old version: no metrics yet.
    assert anon_api.get(metrics_url(pk)).json() == []
    for callback in callbacks:
        callback()

    job.refresh_from_db()
    assert (job.status, job.processed, job.failed) == (RescoreJob.Status.SUCCEEDED, 3, 0)
    board = anon_api.get(leaderboard_url(pk)).json()
    assert board["version"] == 2
    assert [(r["player"], r["score"]) for r in board["results"]] == [
        ("late", 1.0),
        ("early", 0.0),
        ("blank", 0.0),
    ]
    assert anon_api.get(metrics_url(pk)).json()[0]["value"] == pytest.approx(1 / 3)


def test_python_is_refused_plainly_where_there_is_no_sandbox(admin_api, monkeypatch):
    unavailable = sandbox.Availability(None, ("bubblewrap (bwrap) is not installed",))
    monkeypatch.setattr(sandbox, "availability", lambda **_: unavailable)
    response = admin_api.post(challenges_url(), {"name": "X", **SETUP}, format="json")
    assert response.status_code == 400
    message = response.json()["scoring_strategy"][0]
    assert "disabled" in message and "bubblewrap" in message and "To enable them" in message
