"""Snippet setups through the services: validation on save, "Try it", payloads read for
ingestion and rescoring, and a machine without a sandbox."""

from __future__ import annotations

import pytest

from challenges.models import Attempt
from scoring import sandbox
from scoring import services as scoring
from scoring.services import SetupInvalid
from tests.factories import attempt_input, make_challenge, record
from tests.scoring.test_snippet import sandbox_or_skip

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

CODE = (
    "def compute_scores(sample, solver_output):\n"
    "    return {'scores': {'ok': sample.get('<< config.key >>') == solver_output.output,\n"
    "                       'n': len(solver_output.messages or [])},\n"
    "            'metadata': {'seen': sample.get('<< config.key >>')}}\n"
)


@pytest.fixture(autouse=True)
def _needs_the_sandbox():
    sandbox_or_skip()


def python_setup(**changes):
    setup = {
        "scoring_strategy": "python",
        "scoring_code": CODE,
        "scoring_config": {"key": "answer"},
        "score_key": "ok",
        "metrics": [{"type": "mean", "field": "ok"}],
    }
    setup.update(changes)
    return setup


def test_valid_setup_is_normalised():
    out = scoring.setup_validate(setup=python_setup())
    assert out["metrics"] == [{"type": "mean", "field": "ok", "name": "Mean of ok"}]
    assert out["scoring_config"] == {"key": "answer"}


@pytest.mark.parametrize(
    ("changes", "field", "text"),
    [
        ({"scoring_code": ""}, "scoring_code", "Required"),
        ({"scoring_code": "def compute_scores(s):\n  return {\n"}, "scoring_code", "Line 2"),
        ({"scoring_config": {}}, "scoring_config", "<< config.key >>"),
        ({"scoring_config": []}, "scoring_config", "JSON object"),
        ({"score_key": "k" * 65}, "score_key", "at most 64"),
        ({"score_key": "a\nb"}, "score_key", "printable"),
        ({"metrics": [{"type": "median", "field": "ok"}]}, "metrics", "type must be one of"),
        ({"metrics": "mean"}, "metrics", "list"),
        ({"scoring_plugin_id": "builtin.weighted_scorer"}, "scoring_plugin_id", "Not used"),
        ({"timeout_ms": 0}, "timeout_ms", "1 to 60000"),
    ],
)
def test_invalid_setup_names_the_field(changes, field, text):
    with pytest.raises(SetupInvalid) as caught:
        scoring.setup_validate(setup=python_setup(**changes))
    assert text in caught.value.errors[field], caught.value.errors


def test_ingestion_and_catch_up_read_the_payloads():
    challenge = make_challenge(**python_setup())
    [recorded] = record(
        challenge,
        attempt_input("a", sample={"answer": "4"}, output="4", messages=[{}, {}]),
    )
    assert recorded.score.score == 1.0
    assert recorded.score.details == {
        "scores": {"ok": 1.0, "n": 2.0},
        "metadata": {"seen": "4"},
    }
    # The rescore's catch-up reads attempts with .only(): the payloads are loaded too.
    version = challenge.active_version
    attempts = list(Attempt.objects.filter(pk=recorded.attempt.pk).only("id", "created_at"))
    attempts[0].player_external_id = "a"
    items = scoring.items_from_attempts(attempts, challenge=challenge, timeout_ms=5000)
    [outcome] = scoring.scores_compute(version=version, items=items)
    assert outcome.details["metadata"] == {"seen": "4"}


def test_without_a_sandbox_attempts_record_the_reason(monkeypatch):
    challenge = make_challenge(**python_setup())
    unavailable = sandbox.Availability(None, ("no namespaces here",))
    monkeypatch.setattr(sandbox, "availability", lambda **_: unavailable)
    [recorded] = record(challenge, attempt_input("a", sample={"answer": "4"}, output="4"))
    assert recorded.score.score is None
    assert "cannot run" in recorded.score.error
    assert "no namespaces here" in recorded.score.error


@pytest.mark.parametrize("available", [True, False])
def test_serve_says_once_when_snippets_are_disabled(monkeypatch, available):
    from io import StringIO

    from django.core.management import call_command

    from challenges.management.commands import serve

    found = (
        sandbox.Availability("bwrap")
        if available
        else sandbox.Availability(None, ("bubblewrap (bwrap) is not installed",))
    )
    monkeypatch.setattr(sandbox, "availability", lambda **_: found)
    monkeypatch.setattr(serve, "serve_http", lambda **kwargs: None)  # no server
    out, err = StringIO(), StringIO()
    call_command("serve", "--no-worker", stdout=out, stderr=err)
    if available:
        assert "Snippets:   sandboxed (bwrap)" in out.getvalue()
        assert "disabled" not in err.getvalue()
    else:
        assert "Snippets:   disabled" in out.getvalue()
        text = " ".join(err.getvalue().split())
        assert text.count("Python snippet scorers are disabled") == 1
        assert "bubblewrap (bwrap) is not installed" in text
        assert "apt-get install bubblewrap" in text
