"""Deciding ``score_key`` on save when the code alone cannot tell.

A snippet whose every ``return`` is a dict literal names its scores in the code, and
``scoring.services.setup_validate`` checks ``score_key`` against them. When the code
builds its result at run time, Podium says so and probes: it runs the unsaved setup on
the challenge's latest attempts (outside any transaction) and, if any of them returns
more than one score, requires ``score_key`` naming one of them. A challenge without
attempts yet cannot be probed; Try it shows the scores, and an attempt whose result has
several scores and no ``score_key`` is recorded with ``score = null`` and that reason.
"""

from __future__ import annotations

from typing import Any

from challenges.models import Attempt, Challenge, ScoringVersion
from scoring import services as scoring
from scoring.engine import strategies
from scoring.engine.snippet import SnippetInvalid, prepare

PROBE_ATTEMPTS = 20
UNKNOWN = (
    "Podium cannot tell from the code which scores compute_scores returns (its result is "
    "built at run time)"
)


def setup_probe(*, challenge: Challenge, setup: dict[str, Any]) -> None:
    """Raise ``scoring.SetupInvalid`` on ``score_key`` when the setup's snippet returns
    several scores on the challenge's latest attempts and ``score_key`` names none of
    them. Call it outside a transaction: it runs the code in the sandbox."""
    if setup.get("scoring_strategy") != strategies.PYTHON:
        return
    try:
        prepared = prepare(
            scoring.code_normalise(setup.get("scoring_code")), setup.get("scoring_config") or {}
        )
    except (SnippetInvalid, TypeError, AttributeError):
        return  # setup_validate reports it
    if prepared.score_names is not None:
        return  # read from the code: setup_validate checks score_key against them
    attempts = list(
        Attempt.objects.filter(challenge=challenge)
        .select_related("player")
        .order_by("-created_at", "-pk")[:PROBE_ATTEMPTS]
    )
    if not attempts:
        return
    try:
        valid = scoring.setup_validate(setup=setup)
    except scoring.SetupInvalid:
        return  # reported by the save itself
    version = ScoringVersion(challenge=challenge, number=0, **valid)
    items = scoring.items_from_attempts(
        attempts, challenge=challenge, timeout_ms=version.timeout_ms
    )
    outcomes = scoring.scores_compute(version=version, items=items)
    seen: set[str] = set()
    several = False
    for outcome in outcomes:
        scores = (outcome.details or {}).get("scores")
        if isinstance(scores, dict):
            seen |= set(scores)
            several = several or len(scores) > 1
    score_key = setup.get("score_key") or ""
    listed = ", ".join(sorted(seen))
    if several and not score_key:
        raise scoring.SetupInvalid(
            {
                "score_key": f"{UNKNOWN}; on this challenge's latest attempts it returned "
                f"several scores ({listed}): name the one that ranks."
            }
        )
    if several and score_key not in seen:
        raise scoring.SetupInvalid(
            {
                "score_key": f"{UNKNOWN}; on this challenge's latest attempts it never "
                f"returned a {score_key!r} score (it returned: {listed})."
            }
        )


def unknown_scores_warning(challenge: Challenge) -> str:
    """What to tell whoever saved a snippet with no ``score_key`` whose scores the code
    does not name (and no attempt could be probed yet); "" otherwise."""
    if challenge.scoring_strategy != strategies.PYTHON or challenge.score_key:
        return ""
    try:
        prepared = prepare(challenge.scoring_code, challenge.scoring_config or {})
    except SnippetInvalid:
        return ""
    if prepared.score_names is not None:
        return ""
    return (
        f"{UNKNOWN}. If it returns more than one score, set Score key to the one that "
        "ranks (Try it shows them); until then such attempts score nothing."
    )
