"""Custom python metrics (issue 14): compute_metric(scores) in the sandbox, cached per
version, an error shown to admins as that metric's error and never breaking a page."""

from __future__ import annotations

import pytest

from challenges.leaderboards import metric_counts as metrics_module
from challenges.models import Challenge
from tests.urls import attempts_url, challenges_url, change_url, metrics_url, page_url

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

SCORER = """\
def compute_scores(sample):
    return {"passed": sample["answer"] == sample["expected"], "task": sample["task"]}
"""
PASS_AT_K = """\
from math import comb


def compute_metric(scores):
    tasks = {}
    for s in scores:
        n, c = tasks.get(s["task"], (0, 0))
        tasks[s["task"]] = (n + 1, c + int(s["passed"]))

    def pass_at(k):
        values = [1.0 - (comb(n - c, k) / comb(n, k) if n - c >= k else 0.0)
                  for n, c in tasks.values() if n >= k]
        return sum(values) / len(values)

    return {"pass@1": pass_at(1), "pass@2": pass_at(2)}
"""
TRIMMED = """\
def compute_metric(scores):
    values = sorted(s["passed"] for s in scores)
    return sum(values[1:-1]) / (len(values) - 2)
"""
RAISES = """\
def compute_metric(scores):
    raise ZeroDivisionError("no tasks to average")
"""


@pytest.fixture(autouse=True)
def _needs_the_sandbox():
    from tests.scoring.test_snippet import sandbox_or_skip

    sandbox_or_skip()


def make(admin_api, metrics) -> Challenge:
    body = {
        "name": "Pass at k",
        "scoring_strategy": "python",
        "scorers": [
            {"key": "tests", "compute_scores_snippet": SCORER, "metrics": metrics},
        ],
        "rank_by": "tests.passed",
    }
    response = admin_api.post(challenges_url(), body, format="json")
    assert response.status_code == 201, response.content
    return Challenge.objects.get(pk=response.json()["id"])


def record(api, challenge, rows):
    body = [
        {
            "player": f"p{i}",
            "succeeded": True,
            "created_at": 1000 + i,
            "sample": {"task": task, "answer": answer, "expected": "ok"},
        }
        for i, (task, answer) in enumerate(rows)
    ]
    response = api.post(attempts_url(challenge.pk), body, format="json")
    assert response.status_code == 201, response.content


ROWS = [(1, "ok"), (1, "no"), (1, "no"), (2, "ok"), (2, "ok")]


def test_pass_at_k_against_a_hand_computed_value(admin_api, integration_api, anon_api, monkeypatch):
    challenge = make(
        admin_api,
        [
            {"type": "python", "name": "pass@k", "compute_metric_snippet": PASS_AT_K},
            {"type": "python", "name": "Trimmed mean", "compute_metric_snippet": TRIMMED},
            {"type": "mean", "field": "passed", "name": "Pass rate"},
        ],
    )
    record(integration_api, challenge, ROWS)
    # Task 1: n=3, c=1: pass@1 = 1/3, pass@2 = 1 - C(2,2)/C(3,2) = 2/3.
    # Task 2: n=2, c=2: pass@1 = 1,   pass@2 = 1.
    # Means over the tasks: pass@1 = 2/3, pass@2 = 5/6. Trimmed mean of 0,0,1,1,1 = 2/3.
    found = anon_api.get(metrics_url(challenge.pk)).json()
    assert found == [
        {
            "name": "pass@k",
            "type": "python",
            "value": {"pass@1": pytest.approx(2 / 3), "pass@2": pytest.approx(5 / 6)},
            "scorer": "tests",
            "scorer_name": "tests",
        },
        {
            "name": "Trimmed mean",
            "type": "python",
            "value": pytest.approx(2 / 3),
            "scorer": "tests",
            "scorer_name": "tests",
        },
        {
            "name": "Pass rate",
            "type": "mean",
            "value": pytest.approx(3 / 5),
            "scorer": "tests",
            "scorer_name": "tests",
        },
    ]

    # Cached per version and state of its scores: no sandbox run until the scores change.
    calls = []
    real = metrics_module._compute_python_metric
    monkeypatch.setattr(
        metrics_module,
        "_compute_python_metric",
        lambda *a: calls.append(1) or real(*a),
    )
    assert anon_api.get(metrics_url(challenge.pk)).json() == found
    assert calls == []
    record(integration_api, challenge, [(2, "no")])  # task 2: n=3, c=2
    again = anon_api.get(metrics_url(challenge.pk)).json()
    assert len(calls) == 2
    # pass@1 = (1/3 + 2/3)/2 = 1/2; pass@2: task 1 2/3, task 2 1 - C(1,2)/C(3,2) = 1.
    assert again[0]["value"] == {"pass@1": pytest.approx(1 / 2), "pass@2": pytest.approx(5 / 6)}


def test_a_metric_that_raises_is_that_metrics_error_for_admins(
    admin_api, integration_api, anon_api, client, admin_client
):
    challenge = make(
        admin_api,
        [
            {"type": "python", "name": "Broken", "compute_metric_snippet": RAISES},
            {"type": "mean", "field": "passed", "name": "Pass rate"},
        ],
    )
    record(integration_api, challenge, ROWS)
    public = anon_api.get(metrics_url(challenge.pk)).json()
    assert public[0] == {
        "name": "Broken",
        "type": "python",
        "value": None,
        "scorer": "tests",
        "scorer_name": "tests",
    }
    assert public[1]["value"] == pytest.approx(3 / 5)
    admin_view = admin_api.get(metrics_url(challenge.pk)).json()
    assert "ZeroDivisionError: no tasks to average" in admin_view[0]["error"]

    page = client.get(page_url(challenge.slug))
    assert page.status_code == 200
    text = page.content.decode()
    assert "Pass rate" in text and "ZeroDivisionError" not in text
    admin_page = admin_client.get(change_url(challenge)).content.decode()
    assert "data-metric-error" in admin_page and "ZeroDivisionError" in admin_page


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("def other(scores):\n    return 1\n", "Define compute_metric"),
        ("def compute_metric(a, b):\n    return 1\n", "must take 1"),
        ("def compute_metric(scores)\n", "Line 1"),
    ],
)
def test_bad_metric_code_is_400_naming_the_metric(admin_api, code, message):
    body = {
        "name": "Bad",
        "scoring_strategy": "python",
        "scorers": [
            {
                "key": "t",
                "compute_scores_snippet": SCORER,
                "metrics": [{"type": "python", "compute_metric_snippet": code}],
            }
        ],
    }
    response = admin_api.post(challenges_url(), body, format="json")
    assert response.status_code == 400
    error = str(response.json()["scorers[0].metrics"])
    assert "metric 1: compute_metric_snippet" in error and message in error


PASSED = """\
def compute_metric(scores):
    return sum(s["passed"] for s in scores)
"""


def test_a_cached_metric_follows_moderation_with_the_same_counts(admin_api, integration_api):
    """Issue 28, finding 3: the key was (count of scores, highest score id); hiding one
    attempt and unhiding another kept both, and the value served was stale."""
    from django.urls import reverse

    from challenges.models import Attempt

    challenge = make(
        admin_api, [{"type": "python", "name": "Passed", "compute_metric_snippet": PASSED}]
    )
    record(integration_api, challenge, [(1, "ok"), (1, "no"), (1, "ok")])
    first, second, _ = Attempt.objects.filter(challenge=challenge).order_by("pk")

    def moderate(attempt, hidden):
        route = "attempt-hide" if hidden else "attempt-unhide"
        response = admin_api.post(
            reverse(route, args=[attempt.pk]), {"reason": "test"}, format="json"
        )
        assert response.status_code == 200, response.content

    def value():
        return admin_api.get(metrics_url(challenge.pk)).json()[0]["value"]

    moderate(first, True)
    assert value() == 1.0  # the failed one and the third
    moderate(first, False)
    moderate(second, True)
    assert value() == 2.0  # same count, same highest id: the first and the third
