"""Issue 15 item 4: a snippet returning several scores without ``score_key`` is decided on
save: from the code when its return statements say, else by a probe on the challenge's
own attempts; never accepted only to score every attempt null."""

from __future__ import annotations

import pytest

from challenges.boards import display
from challenges.models import ScoringVersion
from challenges.setup import services as setup_services
from scoring import sandbox
from scoring.engine.snippet import prepare
from tests.challenges.admin.admin_pages import field_errors, page_data
from tests.factories import attempt_input, make_challenge, record
from tests.urls import admin_url, challenges_url, change_url, detail_url

pytestmark = pytest.mark.django_db

SEVERAL = """def compute_scores(sample):
    ok = sample.get("x") == 1
    return {"is_complete": ok, "has_field": "x" in sample}
"""
NESTED = """def compute_scores(sample):
    return {"scores": {"a": 1, "b": 2}, "metadata": {"n": 1}}
"""
DYNAMIC = """def compute_scores(sample):
    out = {}
    for key in ("a", "b"):
        out[key] = 1.0
    return out
"""
DYNAMIC_ONE = """def compute_scores(sample):
    out = {}
    out["only"] = 1.0
    return out
"""


@pytest.fixture(autouse=True)
def _sandbox():
    if not sandbox.availability().available:
        pytest.skip(sandbox.availability().message)


def test_score_names_read_from_the_code():
    assert prepare(SEVERAL, {}).score_names == {"is_complete", "has_field"}
    assert prepare(NESTED, {}).score_names == {"a", "b"}
    assert prepare(DYNAMIC, {}).score_names is None
    early = 'def compute_scores(sample):\n    if not sample:\n        return {"a": 0}\n'
    early += '    def helper():\n        return {"zzz": 1}\n    return {"b": 1}\n'
    assert prepare(early, {}).score_names == {"a", "b"}


def test_api_refuses_several_scores_without_score_key(admin_api):
    response = admin_api.post(
        challenges_url(),
        {"name": "Several", "scoring_strategy": "python", "scoring_code": SEVERAL},
        format="json",
    )
    assert response.status_code == 400, response.content
    message = response.json()["score_key"][0]
    assert "several scores (has_field, is_complete)" in message


def test_api_refuses_a_score_key_the_code_never_returns(admin_api):
    response = admin_api.post(
        challenges_url(),
        {
            "name": "Several",
            "scoring_strategy": "python",
            "scoring_code": SEVERAL,
            "score_key": "accuracy",
        },
        format="json",
    )
    assert response.status_code == 400
    assert "returns no 'accuracy' score" in response.json()["score_key"][0]


def test_admin_refuses_several_scores_without_score_key(admin_client):
    data = page_data(
        admin_client,
        admin_url("challenge", "add"),
        name="Several",
        slug="several",
        scoring_strategy="python",
        scoring_code=SEVERAL,
        score_key="",
    )
    errors = field_errors(admin_client.post(admin_url("challenge", "add"), data))
    assert any("several scores" in e for e in errors.get("score_key", [])), errors


def test_probe_on_own_attempts_decides_when_the_code_cannot_tell(admin_api):
    challenge = make_challenge(name="Probe", scoring_strategy="python", scoring_code=DYNAMIC_ONE)
    record(challenge, attempt_input("u1", sample={"x": 1}))
    response = admin_api.patch(detail_url(challenge.pk), {"scoring_code": DYNAMIC}, format="json")
    assert response.status_code == 400, response.content
    message = response.json()["score_key"][0]
    assert "cannot tell from the code" in message and "several scores (a, b)" in message
    assert ScoringVersion.objects.filter(challenge=challenge).count() == 1
    ok = admin_api.patch(
        detail_url(challenge.pk),
        {"scoring_code": DYNAMIC, "score_key": "b"},
        format="json",
    )
    assert ok.status_code == 200, ok.content


def test_public_text_without_score_key_reads_naturally():
    challenge = make_challenge(name="One", scoring_strategy="python", scoring_code=DYNAMIC_ONE)
    sentence = display.scoring_sentence(challenge)
    assert "highest its score" not in sentence
    assert "ranked by their highest score" in sentence


def test_public_text_names_the_metric_of_the_score():
    challenge = setup_services.challenge_create(
        data={
            "name": "Fields",
            "scoring_strategy": "python",
            "scoring_code": SEVERAL,
            "score_key": "is_complete",
            "metrics": [{"type": "mean", "field": "is_complete", "name": "Field completeness"}],
        }
    )
    assert display.strategy_words(challenge) == "Highest field completeness"
    assert "ranked by their highest field completeness" in display.scoring_sentence(challenge)


def test_admin_probe_decides_when_the_code_cannot_tell(admin_client):
    challenge = make_challenge(name="Probe", scoring_strategy="python", scoring_code=DYNAMIC_ONE)
    record(challenge, attempt_input("u1", sample={"x": 1}))
    url = change_url(challenge)
    data = page_data(admin_client, url, scoring_code=DYNAMIC)
    errors = field_errors(admin_client.post(url, data))
    assert any("several scores (a, b)" in e for e in errors.get("score_key", [])), errors
    assert ScoringVersion.objects.filter(challenge=challenge).count() == 1
    data = page_data(admin_client, url, scoring_code=DYNAMIC, score_key="a")
    assert admin_client.post(url, data).status_code == 302
    assert ScoringVersion.objects.filter(challenge=challenge).count() == 2


def test_admin_says_so_when_the_scores_cannot_be_read_from_the_code(admin_client):
    data = page_data(
        admin_client,
        admin_url("challenge", "add"),
        name="Dynamic",
        slug="dynamic",
        scoring_strategy="python",
        scoring_code=DYNAMIC,
        score_key="",
    )
    response = admin_client.post(admin_url("challenge", "add"), data, follow=True)
    assert response.status_code == 200
    messages = [str(m) for m in response.context["messages"]]
    assert any("cannot tell from the code" in m for m in messages), messages
