"""A brute-force reference for rescoring tests: every attempt's expected score and each
player's best, recomputed from the attempts alone."""

from __future__ import annotations

from collections.abc import Callable

from challenges.leaderboards import selectors
from challenges.models import Attempt, AttemptScore, Challenge, ScoringVersion


def expected_best(
    challenge: Challenge, value: Callable[[Attempt], float], *, higher_is_better: bool
) -> dict[str, float]:
    best: dict[str, float] = {}
    for attempt in Attempt.objects.filter(challenge=challenge).select_related("player"):
        ext, v = attempt.player.external_id, value(attempt)
        if ext not in best or (v > best[ext] if higher_is_better else v < best[ext]):
            best[ext] = v
    return best


def board_of(challenge: Challenge) -> tuple[int, dict[str, float]]:
    challenge = Challenge.objects.get(pk=challenge.pk)
    page = selectors.leaderboard_page(challenge=challenge, limit=100_000, offset=0)
    rows = {r.player_external_id: r.score for r in page.rows}
    assert len(rows) == len(page.rows), "a player is on the board twice"
    return page.version.number, rows


def assert_each_attempt_scored_once(challenge: Challenge, version: ScoringVersion) -> None:
    attempt_ids = sorted(Attempt.objects.filter(challenge=challenge).values_list("pk", flat=True))
    scored = sorted(
        AttemptScore.objects.filter(version=version).values_list("attempt_id", flat=True)
    )
    missing = set(attempt_ids) - set(scored)
    assert scored == attempt_ids, f"{len(missing)} attempts without a score, or one twice"
