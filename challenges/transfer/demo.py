"""Demo data: three challenges with a few hundred attempts from a few dozen players."""

from __future__ import annotations

import random
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from challenges.ingestion import services
from challenges.models import Challenge
from challenges.setup import services as setup_services
from scoring.engine.registry import WEIGHTED_ID

DEMO_CHALLENGES = [
    {
        "name": "Speed Run: Regex Golf",
        "slug": "speed-run",
        "description": (
            "Write a regular expression that matches every word in list A and none in "
            "list B.\n\n**Ranked by the fastest successful attempt.**"
        ),
        "scoring_strategy": "fastest",
    },
    {
        "name": "Advanced Prompt Challenge",
        "slug": "advanced-prompt-challenge",
        "description": (
            "Get the model to solve a multi-step reasoning task.\n\nScored by the "
            "*weighted scorer*: a success bonus, points for the judge's rating, and "
            "penalties for time and tokens."
        ),
        "scoring_strategy": "custom",
        "scoring_plugin_id": WEIGHTED_ID,
        "scoring_config": {
            "success_bonus": 100.0,
            "rating_weight": 15.0,
            "time_penalty": 0.5,
            "token_penalty": 0.02,
        },
    },
    {
        "name": "Token Golf",
        "slug": "token-golf",
        "description": "Solve the puzzle with as few tokens as you can.",
        "scoring_strategy": "fewest_tokens",
    },
]

FIRST_NAMES = [
    "Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Margaret", "Ken", "Dennis",
    "Frances", "John", "Radia", "Leslie", "Shafi", "Tim", "Katherine", "Guido", "Linus",
    "Hedy", "Claude", "Sophie", "Niklaus", "Jean", "Yukihiro", "Anders", "Bjarne",
    "Carol", "Ivan", "Lynn", "Mary", "Vint", "Whitfield", "Judea", "Silvio", "Cynthia",
    "Ross",
]  # fmt: skip


def seed_demo(*, attempts_per_challenge: int = 150, seed: int = 7) -> list[Challenge]:
    """Create the demo challenges; returns [] when they exist already."""
    if Challenge.objects.filter(slug__in=[c["slug"] for c in DEMO_CHALLENGES]).exists():
        return []
    rng = random.Random(seed)  # noqa: S311 - demo data, not secrets
    now = timezone.now().replace(microsecond=0)
    created = []
    with transaction.atomic():
        for spec in DEMO_CHALLENGES:
            challenge = setup_services.challenge_create(data=dict(spec))
            inputs = []
            for _ in range(attempts_per_challenge):
                index = rng.randrange(len(FIRST_NAMES))
                skill = (index % 7) / 7
                succeeded = rng.random() < 0.45 + 0.5 * skill
                inputs.append(
                    services.AttemptInput(
                        player=f"demo-{index:03d}",
                        player_name=FIRST_NAMES[index],
                        succeeded=succeeded,
                        tokens_total=int(rng.uniform(200, 3_000) * (1.2 - skill)),
                        elapsed_ms=int(rng.uniform(3_000, 60_000) * (1.2 - skill)),
                        rating=min(10, max(0, round(rng.gauss(4 + 5 * skill, 1.5)))),
                        created_at=now - timedelta(minutes=rng.randint(1, 14 * 24 * 60)),
                        sample={"task": f"demo task {rng.randint(1, 20)}"},
                        output="",
                        messages=None,
                    )
                )
            services.attempts_record(challenge=challenge, inputs=inputs)
            created.append(challenge)
    return created
