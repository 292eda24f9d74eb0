"""Try it and Preview with a python snippet: the unsaved code runs in the sandbox on the
challenge's real attempts, their sample included (the issue's field-completeness
example)."""

from __future__ import annotations

import pytest

from challenges.admin import preview
from scoring import sandbox
from tests.factories import attempt_input, make_challenge, record

pytestmark = pytest.mark.django_db

FIELD_COMPLETENESS = """def compute_scores(sample):
    field = "<< config.field >>"
    has_field = field in sample
    value = sample.get(field)
    empty = has_field and (value is None or value == "")
    return {
        "scores": {
            "is_complete": has_field and not empty,
            "has_field": has_field,
            "empty_field": empty,
        },
        "metadata": {"length": len(value) if isinstance(value, str) else 0},
    }
"""


def field_completeness_challenge():
    """The issue's done-when example with its three samples (skips without a sandbox)."""
    if not sandbox.availability().available:
        pytest.skip(sandbox.availability().message)
    challenge = make_challenge(
        name="Fields",
        scoring_strategy="python",
        scoring_code=FIELD_COMPLETENESS,
        scoring_config={"field": "answer"},
        score_key="is_complete",
        metrics=[{"type": "mean", "field": "is_complete", "name": "Field Completeness"}],
    )
    record(
        challenge,
        attempt_input("a", sample={"answer": "Paris"}),
        attempt_input("b", sample={"answer": ""}),
        attempt_input("c", sample={}),
    )
    return challenge


SETUP = {
    "scoring_strategy": "python",
    "scoring_code": FIELD_COMPLETENESS,
    "scoring_config": {"field": "answer"},
    "score_key": "is_complete",
}


@pytest.fixture
def challenge():
    if not sandbox.availability().available:
        pytest.skip(sandbox.availability().message)
    c = make_challenge(scoring_strategy="fastest")
    record(
        c,
        attempt_input("paris", elapsed_ms=3, sample={"answer": "Paris"}, created_at=1),
        attempt_input("blank", elapsed_ms=2, sample={"answer": ""}, created_at=2),
        attempt_input("none", elapsed_ms=1, sample={}, created_at=3),
    )
    return c


def test_try_it_runs_the_unsaved_snippet_on_each_attempts_sample(challenge):
    result = preview.try_setup(challenge=challenge, setup=SETUP)
    by_player = {r.attempt.player.external_id: r for r in result.rows}
    scores = {p: r.details["scores"] for p, r in by_player.items()}
    assert scores == {
        "paris": {"is_complete": 1.0, "has_field": 1.0, "empty_field": 0.0},
        "blank": {"is_complete": 0.0, "has_field": 1.0, "empty_field": 1.0},
        "none": {"is_complete": 0.0, "has_field": 0.0, "empty_field": 0.0},
    }
    assert by_player["paris"].score == 1.0 and by_player["paris"].error == ""
    assert by_player["paris"].details["metadata"] == {"length": 5}
    assert all(r.took_ms >= 0 for r in result.rows)
    challenge.refresh_from_db()
    assert challenge.scoring_strategy == "fastest"  # nothing saved


def test_preview_ranks_by_the_snippets_score_key(challenge):
    result = preview.leaderboard_preview(challenge=challenge, setup=SETUP)
    top = result.new_top[0]
    assert top.external_id == "paris"
    assert (top.new.rank, top.new.score) == (1, 1.0)
    assert top.current.rank == 3  # third fastest now


def test_drafts_of_two_challenges_never_share_a_sandbox_worker():
    from scoring import services as scoring

    first, second = make_challenge(name="One"), make_challenge(name="Two")
    drafts = [preview.candidate_version(challenge=c, setup=SETUP) for c in (first, second)]
    owners = {scoring.setup_of(d).owner for d in drafts}
    assert len(owners) == 2
    assert (
        scoring.setup_of(first.active_version).owner == f"ScoringVersion {first.active_version_id}"
    )
