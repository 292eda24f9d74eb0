"""Text a scorer returns is made safe before it is stored or answered (issue 12, finding
5): a lone surrogate or a NUL in a plugin's details or error message never turns an
attempt POST into a 500, on SQLite or on PostgreSQL."""

from __future__ import annotations

import pytest

from challenges.models import AttemptScore
from scoring.project_registry import registry
from tests.factories import SEED_ATTEMPT, make_challenge
from tests.urls import attempts_url

pytestmark = pytest.mark.django_db

MODULE = "tests.challenges.ingestion.text_plugins"


@pytest.mark.parametrize("prefix", ["", "InProcess"])
def test_details_are_cleaned(admin_api, prefix):
    entrypoint = f"{MODULE}:{prefix}SurrogateDetails"
    with registry().temporarily("t.surrogate", entrypoint):
        if prefix:
            registry()._builtin.add("t.surrogate")
        challenge = make_challenge(scoring_strategy="custom", scoring_plugin_id="t.surrogate")
        response = admin_api.post(attempts_url(challenge.pk), SEED_ATTEMPT, format="json")
    assert response.status_code == 201, response.content
    details = response.json()["details"]
    assert details == {"label": "x\ufffd", "nul\ufffd": "a\ufffdb"}
    stored = AttemptScore.objects.get(attempt_id=response.json()["id"])
    assert stored.details == details and stored.score == 2.0


@pytest.mark.parametrize("prefix", ["", "InProcess"])
def test_error_messages_are_cleaned(admin_api, prefix):
    entrypoint = f"{MODULE}:{prefix}SurrogateError"
    with registry().temporarily("t.surrogate_error", entrypoint):
        if prefix:
            registry()._builtin.add("t.surrogate_error")
        challenge = make_challenge(scoring_strategy="custom", scoring_plugin_id="t.surrogate_error")
        response = admin_api.post(attempts_url(challenge.pk), SEED_ATTEMPT, format="json")
    assert response.status_code == 201, response.content
    stored = AttemptScore.objects.get(attempt_id=response.json()["id"])
    assert stored.score is None
    assert "bad \ufffd text \ufffd here" in stored.error
    response.content.decode("utf-8")


@pytest.mark.parametrize("plugin", ["SurrogateDetails", "SurrogateError"])
def test_a_rescore_stores_cleaned_text(plugin):
    from challenges.models import RescoreJob
    from challenges.rescoring import jobs as rescoring
    from challenges.setup import services as setup_services
    from tests.factories import attempt_input, record

    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, attempt_input("a", elapsed_ms=1), attempt_input("b", elapsed_ms=2))
    with registry().temporarily("t.rescore_text", f"{MODULE}:{plugin}"):
        result = setup_services.challenge_update(
            challenge=challenge,
            data={"scoring_strategy": "custom", "scoring_plugin_id": "t.rescore_text"},
        )
        rescoring.job_run_inline(job=result.job)
    job = RescoreJob.objects.get(pk=result.job.pk)
    assert job.status == "succeeded", job.error
    rows = AttemptScore.objects.filter(version=result.new_version)
    assert rows.count() == 2
    for row in rows:
        assert "\ud800" not in str(row.details) and "\x00" not in row.error
