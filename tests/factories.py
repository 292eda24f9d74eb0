"""Factories for object graphs, built through the services (as the API would)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

from challenges.ingestion import services
from challenges.models import Challenge
from challenges.setup import services as setup_services
from config.transient import retry_transient

_counter = itertools.count(1)
T0 = datetime(2026, 1, 1, tzinfo=UTC)

WEIGHTED_SEED = {
    "name": "Advanced Prompt Challenge",
    "scoring_strategy": "custom",
    "scoring_plugin_id": "builtin.weighted_scorer",
    "scoring_entrypoint": "services.scorers.weighted:WeightedScorer",
    "scoring_config": {
        "success_bonus": 100.0,
        "rating_weight": 15.0,
        "time_penalty": 0.5,
        "token_penalty": 0.02,
    },
}


def make_challenge(**data: Any) -> Challenge:
    n = next(_counter)
    data.setdefault("name", f"Challenge {n}")
    data.setdefault("scoring_strategy", "first")
    return setup_services.challenge_create(data=data)


def attempt_input(
    player: str = "p1",
    *,
    succeeded: bool = True,
    tokens_total: int | None = None,
    elapsed_ms: int | None = None,
    rating: int | None = None,
    created_at: datetime | int | None = None,
    player_name: str | None = None,
    sample: dict | None = None,
    output: str = "",
    messages: list | None = None,
) -> services.AttemptInput:
    """``created_at`` may be a datetime or seconds after T0."""
    if created_at is None:
        created_at = T0
    elif isinstance(created_at, int):
        created_at = T0 + timedelta(seconds=created_at)
    return services.AttemptInput(
        player=player,
        player_name=player_name,
        succeeded=succeeded,
        tokens_total=tokens_total,
        elapsed_ms=elapsed_ms,
        rating=rating,
        created_at=created_at,
        sample=sample,
        output=output,
        messages=messages,
    )


def record(challenge: Challenge, *inputs: services.AttemptInput) -> list[services.RecordedAttempt]:
    challenge.refresh_from_db()
    return services.attempts_record(challenge=challenge, inputs=list(inputs))


def record_beside_readers(
    challenge: Challenge, *inputs: services.AttemptInput
) -> list[services.RecordedAttempt]:
    """``record`` while a server in a thread of this process reads the database through
    connections of its own. On SQLite the test database is in memory with a shared
    cache, where a table another connection is reading is locked and a write fails at
    once ("database table is locked") instead of waiting, as it does on the file
    database ``make run`` uses (WAL, busy timeout). So it is tried again as the app tries
    a transient error (``retry_transient``: 8 tries, 6 s of waits in all): a try that
    failed wrote nothing, as recording is one transaction."""
    work = lambda: record(challenge, *inputs)  # noqa: E731
    return retry_transient(work, tries=8, first_wait_s=0.05, what="a test's write")


# --- API helpers ------------------------------------------------------------------
SEED_ATTEMPT = {
    "player": "u1",
    "succeeded": True,
    "tokens_total": 1200,
    "elapsed_ms": 12000,
    "rating": 5,
}


def counts() -> dict[str, int]:
    """Rows per model: a failed request must leave every count unchanged."""
    from challenges.models import (
        Attempt,
        AttemptScore,
        LeaderboardEntry,
        Player,
        ScoringVersion,
    )

    models = (Challenge, ScoringVersion, Attempt, Player, AttemptScore, LeaderboardEntry)
    return {m.__name__: m.objects.count() for m in models}


def public_score_rows(challenge: Challenge, *, before: datetime | None = None) -> Any:
    """Brute force for the tests' references: every counted score row of the active
    version as the public board takes them (no practice or hidden attempt, no hidden
    player; recorded before ``before`` when given), straight from the scores table."""
    from django.db.models import Q

    from challenges.models import AttemptScore, PlayerHide

    challenge.refresh_from_db()
    hidden = PlayerHide.objects.filter(Q(challenge=challenge) | Q(challenge__isnull=True))
    scores = AttemptScore.objects.filter(
        version_id=challenge.active_version_id,
        sort_key__isnull=False,
        attempt__practice=False,
        attempt__hidden=False,
    ).exclude(player_id__in=hidden.values("player_id"))
    if before is not None:
        scores = scores.filter(attempt__recorded_at__lt=before)
    return scores
