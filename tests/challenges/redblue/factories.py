"""Red/blue object graphs, built through the services (as the API would)."""

from __future__ import annotations

import random
from typing import Any

from challenges.models import Challenge, Pairing
from challenges.redblue import services
from tests.factories import make_challenge

SUITE = ["CBRNE", "SA", "SH", "RWH", "V", "M"]


def make_red_blue(**data: Any) -> Challenge:
    data.setdefault("format", "red_blue")
    data.setdefault("judge_suite", list(SUITE))
    return make_challenge(**data)


def submit(challenge: Challenge, player: str, team: str, prompt: str = "", rng=None):
    return services.submission_record(
        challenge=challenge,
        external_id=player,
        team=team,
        prompt=prompt or f"{team} prompt of {player}",
        rng=rng or random.Random(0),
    )


def judge(pairing: Pairing, breached=(), rating=5, **extra: Any) -> Pairing:
    suite = pairing.challenge.judge_suite
    judgement = {"categories": {c: c in breached for c in suite}, "rating": rating, **extra}
    return services.judgement_record(pairing=pairing, judgement=judgement)
