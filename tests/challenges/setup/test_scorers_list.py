"""Several scorers per python challenge (issue 14): two score scorers and a QA scorer,
ranked by the second scorer's score; a failure in the first; QA kept for admins only."""

from __future__ import annotations

import pytest
from django.urls import reverse

from challenges.models import AttemptScore, Challenge, ScoringVersion
from tests.urls import (
    admin_url,
    attempts_url,
    challenges_url,
    detail_url,
    leaderboard_url,
    metrics_url,
    page_url,
    rescore_url,
)

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

FIRST = """\
def compute_scores(sample):
    if sample.get("answer") == "boom":
        raise ValueError("first scorer exploded")
    answer = sample.get("answer", "")
    return {"is_paris": answer == "Paris", "words": len(answer.split())}
"""
SECOND = """\
def compute_scores(sample, solver_output):
    answer = sample.get("answer", "")
    return {"length": float(len(answer)), "shouty": answer.isupper()}
"""
QA = """\
def compute_scores(sample, solver_output):
    answer = sample.get("answer", "")
    return {"no_secret": "sk-" not in answer, "not_empty": bool(answer)}
"""
SCORERS = [
    {"key": "first", "display_name": "Correctness", "compute_scores_snippet": FIRST},
    {
        "key": "second",
        "type": "python",
        "display_name": "Length",
        "purpose": "score",
        "compute_scores_snippet": SECOND,
        "metrics": [{"type": "max", "field": "length", "name": "Longest"}],
    },
    {"key": "leaks", "display_name": "Leak check", "purpose": "qa", "compute_scores_snippet": QA},
]
BODY = {
    "name": "Multi",
    "scoring_strategy": "python",
    "scorers": SCORERS,
    "rank_by": "second.length",
}


@pytest.fixture(autouse=True)
def _needs_the_sandbox():
    from tests.scoring.test_snippet import sandbox_or_skip

    sandbox_or_skip()


def create(api, **changes) -> Challenge:
    response = api.post(challenges_url(), {**BODY, **changes}, format="json")
    assert response.status_code == 201, response.content
    return Challenge.objects.get(pk=response.json()["id"])


def record(api, challenge, answers):
    body = [
        {"player": f"p{i}", "succeeded": True, "sample": {"answer": a}, "created_at": 1000 + i}
        for i, a in enumerate(answers)
    ]
    response = api.post(attempts_url(challenge.pk), body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_two_scorers_and_qa_ranked_by_the_second(admin_api, integration_api, anon_api):
    challenge = create(admin_api)
    assert challenge.scorers[1]["key"] == "second" and challenge.rank_by == "second.length"
    out = record(integration_api, challenge, ["Paris", "boom", "sk-123 LEAK", ""])
    assert [a["score"] for a in out] == [5.0, 4.0, 11.0, 0.0]
    # The ranking scorer's scores; the first scorer's results ride along.
    assert out[0]["details"]["scores"] == {"length": 5.0, "shouty": 0.0}
    assert out[0]["details"]["scorers"]["first"]["scores"] == {"is_paris": 1.0, "words": 1.0}
    # The first scorer failed on "boom": the attempt still ranks (the second did not).
    assert out[1]["details"]["scorers"]["first"] == {"scores": {}, "metadata": {}}
    for attempt in out:  # an integration never sees QA, nor any scorer's error
        assert "qa" not in attempt["details"] and "error" not in str(attempt["details"])

    rows = AttemptScore.objects.filter(version=challenge.active_version).order_by("attempt_id")
    boom = rows[1]
    assert "first scorer exploded" in str(boom.details["scorers"]["first"]["error"])
    assert boom.error == "" and boom.score == 4.0
    qa = [(r.qa["leaks"]["failed"], r.qa_failed) for r in rows]
    assert qa == [([], 0), ([], 0), (["no_secret"], 1), (["not_empty"], 1)]

    board = anon_api.get(leaderboard_url(challenge.pk)).json()
    assert [(r["player"], r["rank"]) for r in board["results"]] == [
        ("p2", 1),
        ("p0", 2),
        ("p1", 3),
        ("p3", 4),
    ]
    assert "leaks" not in str(board) and "no_secret" not in str(board)
    # The public view of the challenge hides the scorers (code, config, QA checks).
    public = anon_api.get(detail_url(challenge.pk)).json()
    assert "scorers" not in public and "no_secret" not in str(public)
    assert admin_api.get(detail_url(challenge.pk)).json()["scorers"][2]["purpose"] == "qa"


def test_a_failing_ranking_scorer_makes_the_attempt_unranked(admin_api, integration_api):
    challenge = create(admin_api, rank_by="first.words")
    out = record(integration_api, challenge, ["Paris", "boom"])
    assert out[0]["score"] == 1.0
    assert out[1]["score"] is None
    row = AttemptScore.objects.get(attempt_id=out[1]["id"])
    assert "first scorer exploded" in row.error
    # The other scorers' results are kept.
    assert row.details["scorers"]["second"]["scores"] == {"length": 4.0, "shouty": 0.0}
    assert row.qa["leaks"]["scores"] == {"no_secret": 1.0, "not_empty": 1.0}


def test_changing_the_list_rescores_and_switches(
    admin_api, integration_api, django_capture_on_commit_callbacks
):
    challenge = create(admin_api)
    record(integration_api, challenge, ["Paris", "ab"])
    scorers = [dict(s) for s in SCORERS]
    scorers[1]["compute_scores_snippet"] = SECOND.replace("len(answer)", "len(answer) * 10")
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_api.patch(detail_url(challenge.pk), {"scorers": scorers}, format="json")
    assert response.status_code == 200, response.content
    challenge.refresh_from_db()
    assert challenge.active_version.number == 2  # the rescore ran (eager) and switched
    scores = AttemptScore.objects.filter(version=challenge.active_version).order_by("attempt_id")
    assert [s.score for s in scores] == [50.0, 20.0]
    assert all(s.qa["leaks"]["scores"] for s in scores)
    # Same list again: no new version.
    response = admin_api.patch(detail_url(challenge.pk), {"scorers": scorers}, format="json")
    assert ScoringVersion.objects.filter(challenge=challenge).count() == 2


def test_single_scorer_body_keeps_working_and_migrates_without_rescore(admin_api):
    from tests.challenges.api.test_api_metrics import SETUP

    response = admin_api.post(challenges_url(), {"name": "Old", **SETUP}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["scorers"] == [] and body["rank_by"] == ""
    challenge = Challenge.objects.get(pk=body["id"])
    assert challenge.versions.count() == 1


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"scorers": SCORERS * 3}, "scorers"),
        ({"scorers": [SCORERS[0], {**SCORERS[1], "key": "first"}]}, "scorers[1].key"),
        ({"scorers": [{**SCORERS[0], "key": "a b"}]}, "scorers[0].key"),
        ({"scorers": [{**SCORERS[0], "purpose": "fun"}]}, "scorers[0].purpose"),
        ({"scorers": [{**SCORERS[0], "type": "js"}]}, "scorers[0].type"),
        ({"scorers": [{**SCORERS[0], "colour": 1}]}, "scorers[0].colour"),
        ({"scorers": [{**SCORERS[0], "compute_scores_snippet": "x = ("}]}, None),
        ({"scorers": [SCORERS[2]], "rank_by": ""}, "scorers"),
        ({"rank_by": "leaks.no_secret"}, "rank_by"),
        ({"rank_by": "nope.x"}, "rank_by"),
        ({"scoring_code": SECOND}, "scoring_code"),
        ({"scorers": "no"}, "scorers"),
        (
            {
                "scorers": [
                    SCORERS[1],
                    {
                        "key": "batch",
                        "type": "python_batch",
                        "compute_scores_snippet": "def compute_batch_scores(samples):\n"
                        "    return [{'x': << config.k >>} for s in samples]\n",
                    },
                ]
            },
            "scorers[1].config",
        ),
        (
            {
                "scorers": [
                    SCORERS[1],
                    {"key": "b", "type": "python_batch", "compute_scores_snippet": FIRST},
                ]
            },
            "scorers[1].compute_scores_snippet",
        ),
    ],
)
def test_bad_lists_are_400_naming_the_field(admin_api, change, field):
    response = admin_api.post(challenges_url(), {**BODY, **change}, format="json")
    assert response.status_code == 400, response.content
    if field is None:
        field = "scorers[0].compute_scores_snippet"
    assert field in response.json(), response.json()
    assert not Challenge.objects.exists()


def body_of(response) -> str:
    if response.streaming:
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


def test_qa_is_for_admins_only(admin_api, integration_api, anon_api, client, admin_client):
    challenge = create(admin_api, rank_by="second.length")
    out = record(integration_api, challenge, ["Paris", "sk-123 LEAK", ""])
    leak_id = out[1]["id"]

    # Public outputs: the page, both exports, the anonymous API: no QA anywhere.
    slug = challenge.slug
    public = [
        client.get(page_url(slug)),
        client.get(page_url(slug, "board")),
        client.get(page_url(slug, "export-csv")),
        client.get(page_url(slug, "export-json")),
        anon_api.get(leaderboard_url(challenge.pk)),
        anon_api.get(metrics_url(challenge.pk)),
        anon_api.get(detail_url(challenge.pk)),
        anon_api.get(challenges_url()),
    ]
    for response in public:
        assert response.status_code == 200
        text = body_of(response)
        for secret in ("no_secret", "not_empty", "leaks", "Leak check", "failing QA"):
            assert secret not in text, (response.request["PATH_INFO"], secret)
    # Other scorers' results are public on the breakdown (never their errors).
    page = body_of(client.get(page_url(slug)))
    assert "Correctness · is paris" in page

    # The admin: on the attempt, filterable, counted on the dashboard and the rescore list.
    attempt_page = body_of(admin_client.get(admin_url("attempt", "change", leak_id)))
    assert "qa-check--fail" in attempt_page and "no_secret" in attempt_page
    listing = body_of(admin_client.get(admin_url("attempt") + "?qa_failing=any"))
    assert admin_url("attempt", "change", leak_id) in listing
    assert admin_url("attempt", "change", out[0]["id"]) not in listing
    by_key = body_of(admin_client.get(admin_url("attempt") + "?qa_failing=leaks"))
    assert admin_url("attempt", "change", leak_id) in by_key
    scores = body_of(admin_client.get(admin_url("attemptscore") + "?qa_failing=any"))
    assert scores.count("failing</span>") == 2
    dashboard = body_of(admin_client.get(reverse("admin:index")))
    assert 'data-qa-failing="2"' in dashboard and "2 failing QA" in dashboard


def test_rescore_summary_counts_failing_qa(
    admin_api, integration_api, admin_client, django_capture_on_commit_callbacks
):
    from challenges.models import RescoreJob

    challenge = create(admin_api)
    record(integration_api, challenge, ["Paris", "sk-1", "sk-2"])
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_api.post(rescore_url(challenge.pk))
    assert response.status_code == 202
    job = RescoreJob.objects.get()
    assert job.status == "succeeded"
    listing = body_of(admin_client.get(admin_url("rescorejob")))
    assert "2 failing QA" in listing
    detail = body_of(admin_client.get(admin_url("rescorejob", "change", job.pk)))
    assert "2 failing QA" in detail


def test_version_history_summarises_and_diffs_the_list():
    from challenges.setup.versions import setup_summary, version_diff

    before = {"scoring_strategy": "python", "scorers": SCORERS, "rank_by": "second.length"}
    moved = [
        dict(SCORERS[1]),
        {**SCORERS[0], "compute_scores_snippet": FIRST.replace("Paris", "Rome")},
    ]
    after = {"scoring_strategy": "python", "scorers": moved, "rank_by": "first.words"}
    assert setup_summary(before) == "Python snippet, 3 scorers (1 QA), ranked by second.length"
    changes = {c.label: c for c in version_diff(before, after)}
    assert changes["Scorer leaks"].after == "(removed)"
    assert (changes["Scorer first"].before, changes["Scorer first"].after) == (
        "position 1",
        "position 2",
    )
    assert any("Rome" in line for line in changes["Scorer first code"].lines)
    assert changes["Ranking score"].after == "first.words"


MEDDLER = """\
def compute_scores(sample, solver_output):
    sample["nested"]["answer"] = "changed"
    solver_output.metrics["rating"] = 0
    solver_output.messages.append({"role": "meddler"})
    return {"meddled": 1.0}
"""
READER = """\
def compute_scores(sample, solver_output):
    return {
        "nested": float(sample["nested"]["answer"] == "kept"),
        "rating": float(solver_output.metrics["rating"]),
        "messages": float(len(solver_output.messages)),
        "global_rating": float(attempt_metrics["rating"]),
    }
"""


def test_scorers_of_a_list_share_nothing_and_read_attempt_metrics(admin_api, integration_api):
    """Issue 28, finding 11: each scorer gets its own deep copy of the sample and of the
    solver output (metrics and messages included), and the documented module global
    ``attempt_metrics`` is defined for every scorer of a list."""
    challenge = create(
        admin_api,
        scorers=[
            {"key": "meddler", "compute_scores_snippet": MEDDLER},
            {"key": "reader", "compute_scores_snippet": READER},
        ],
        rank_by="reader.nested",
    )
    body = {
        "player": "p",
        "succeeded": True,
        "rating": 7,
        "sample": {"nested": {"answer": "kept"}},
        "messages": [{"role": "user", "content": "hi"}],
    }
    response = integration_api.post(attempts_url(challenge.pk), body, format="json")
    assert response.status_code == 201, response.content
    details = response.json()["details"]
    assert response.json()["score"] == 1.0, details
    assert details["scores"] == {
        "nested": 1.0,
        "rating": 7.0,
        "messages": 1.0,
        "global_rating": 7.0,
    }
