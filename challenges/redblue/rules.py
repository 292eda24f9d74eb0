"""What a red/blue challenge's settings must be, checked by the services that save a
challenge (the API and the admin alike). Errors name the field."""

from __future__ import annotations

import re
from typing import Any

from challenges.fieldsets import RED_BLUE_FIELDS
from challenges.models import Attempt, Challenge, ChallengeFormat, RedBlueScoring, Submission
from scoring.engine.red_blue import MAX_SUITE

CODE = re.compile(r"[A-Za-z0-9_-]{1,32}")


def red_blue_errors(values: dict[str, Any]) -> dict[str, str]:
    """What is wrong with the red/blue fields of a challenge, by field."""
    if values.get("format") != ChallengeFormat.RED_BLUE:
        return {}
    errors = {}
    suite = values.get("judge_suite")
    if not isinstance(suite, list) or not 1 <= len(suite) <= MAX_SUITE:
        errors["judge_suite"] = f"A red/blue challenge needs 1 to {MAX_SUITE} category codes."
    elif bad := [c for c in suite if not isinstance(c, str) or not CODE.fullmatch(c)]:
        errors["judge_suite"] = (
            f"A category code is 1–32 letters, digits, '_' or '-': {bad[0]!r} is not."
        )
    elif len(set(suite)) != len(suite):
        errors["judge_suite"] = "Each category code may appear once."
    if values.get("red_blue_scoring") == RedBlueScoring.CUSTOM:
        errors["red_blue_scoring"] = (
            "Scoring pairings with a plugin is not available yet: use red_blue_ratio."
        )
    return errors


def red_blue_validate(*, challenge: Challenge, before: dict[str, Any] | None = None) -> None:
    """Raises ``scoring.SetupInvalid`` (a 400 naming the field) for bad red/blue settings,
    or a change of format once the challenge has attempts or submissions."""
    from scoring.services import SetupInvalid

    errors = red_blue_errors({n: getattr(challenge, n) for n in RED_BLUE_FIELDS})
    changed = before is not None and before.get("format") != challenge.format
    if changed and (
        Attempt.objects.filter(challenge_id=challenge.pk).exists()
        or Submission.objects.filter(challenge_id=challenge.pk).exists()
    ):
        errors["format"] = "The format cannot change once players have taken part."
    if errors:
        raise SetupInvalid(errors)
