"""Leaderboards from the database equal a brute-force reference, for every strategy.

The reference below is written from the table of docs/ranking.md alone (it does not use the
engine): which attempts count, the best attempt per player, ascending/descending order,
the earlier created_at first, competition ranks on a full tie. Data is randomised with
fixed seeds and small value ranges, so ties and nulls are frequent.
"""

from __future__ import annotations

import calendar
import random
from datetime import timedelta

import pytest

from challenges.leaderboards import selectors
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from tests.factories import T0, attempt_input, make_challenge, record

WEIGHTS = {"success_bonus": 100.0, "rating_weight": 10.0, "time_penalty": 1.0, "token_penalty": 1.0}


def _weighted(a) -> float:
    bonus = WEIGHTS["success_bonus"] if a.succeeded else 0.0
    total = (
        bonus
        + (a.rating or 0) * WEIGHTS["rating_weight"]
        - (a.elapsed_ms or 0) / 1000.0 * WEIGHTS["time_penalty"]
        - (a.tokens_total or 0) * WEIGHTS["token_penalty"]
    )
    return max(total, 0.0)


def _epoch_ms(dt) -> int:
    return calendar.timegm(dt.utctimetuple()) * 1000 + dt.microsecond // 1000


# strategy -> (value of an attempt or None, higher is better?)
REFERENCE = {
    "first": (lambda a: _epoch_ms(a.created_at) if a.succeeded else None, False),
    "fastest": (
        lambda a: a.elapsed_ms if a.succeeded and a.elapsed_ms is not None else None,
        False,
    ),
    "fewest_tokens": (
        lambda a: a.tokens_total if a.succeeded and a.tokens_total is not None else None,
        False,
    ),
    "highest_rating": (lambda a: a.rating if a.succeeded and a.rating is not None else None, True),
    "custom": (_weighted, True),
}


def reference_leaderboard(strategy: str, inputs) -> list[tuple[int, str, float, object]]:
    value_of, higher_better = REFERENCE[strategy]
    best: dict[str, tuple] = {}
    for a in inputs:
        value = value_of(a)
        if value is None:
            continue
        key = (-value if higher_better else value, a.created_at)
        if a.player not in best or key < best[a.player][0]:
            best[a.player] = (key, float(value))
    ordered = sorted(best.items(), key=lambda item: item[1][0])
    rows = []
    for player, (key, value) in ordered:
        rank = 1 + sum(1 for other_key, _ in best.values() if other_key < key)
        rows.append((rank, player, value, key[1]))
    return sorted(rows)


def random_inputs(rng: random.Random, count: int, players: int):
    def maybe(values):
        return rng.choice([None, *values])

    return [
        attempt_input(
            f"p{rng.randrange(players)}",
            succeeded=rng.random() < 0.7,
            tokens_total=maybe([0, 5, 10, 20]),
            elapsed_ms=maybe([0, 100, 200, 300]),
            rating=maybe([0, 3, 7, 10]),
            created_at=T0 + timedelta(milliseconds=rng.choice([0, 1, 2, 1000, 2000])),
        )
        for _ in range(count)
    ]


def db_leaderboard(challenge) -> list[tuple[int, str, float, object]]:
    challenge.refresh_from_db()
    page = selectors.leaderboard_page(challenge=challenge, limit=500, offset=0)
    assert page.count == len(page.rows)
    return sorted((r.rank, r.player_external_id, r.score, r.created_at) for r in page.rows)


def setup_for(strategy: str) -> dict:
    if strategy == "custom":
        return {
            "scoring_strategy": "custom",
            "scoring_plugin_id": "builtin.weighted_scorer",
            "scoring_config": WEIGHTS,
        }
    return {"scoring_strategy": strategy}


@pytest.mark.django_db
@pytest.mark.parametrize("strategy", list(REFERENCE))
@pytest.mark.parametrize("seed", range(8))
def test_leaderboard_matches_brute_force(strategy, seed):
    rng = random.Random(f"{strategy}-{seed}")
    inputs = random_inputs(rng, count=rng.randint(1, 40), players=rng.randint(1, 8))
    challenge = make_challenge(**setup_for(strategy))
    # Recorded in several requests: the incremental best-per-player upkeep is exercised.
    cut = rng.randint(0, len(inputs))
    for part in (inputs[:cut], inputs[cut:]):
        if part:
            record(challenge, *part)
    expected = reference_leaderboard(strategy, inputs)
    assert db_leaderboard(challenge) == expected

    # A rescore rebuilds the board from scratch (the bulk path): same result.
    update = setup_services.challenge_update(challenge=challenge, data={"timeout_ms": 4000})
    rescoring.job_run_inline(job=update.job)
    challenge.refresh_from_db()
    assert challenge.active_version_id == update.new_version.pk
    assert db_leaderboard(challenge) == expected


@pytest.mark.django_db
def test_competition_ranking_and_tie_break():
    challenge = make_challenge(scoring_strategy="fastest")
    record(
        challenge,
        attempt_input("a", elapsed_ms=100, created_at=5),
        attempt_input("b", elapsed_ms=200, created_at=1),
        attempt_input("c", elapsed_ms=200, created_at=1),  # full tie with b: shared rank
        attempt_input("d", elapsed_ms=200, created_at=0),  # same time, earlier: ahead of b, c
        attempt_input("e", elapsed_ms=300, created_at=0),
    )
    rows = db_leaderboard(challenge)
    assert [(rank, player) for rank, player, *_ in rows] == [
        (1, "a"), (2, "d"), (3, "b"), (3, "c"), (5, "e"),
    ]  # fmt: skip


@pytest.mark.django_db
def test_best_attempt_per_player_and_uncounted_attempts_never_listed():
    challenge = make_challenge(scoring_strategy="fewest_tokens")
    record(
        challenge,
        attempt_input("a", tokens_total=50),
        attempt_input("a", tokens_total=30, created_at=10),
        attempt_input("a", tokens_total=40),
        attempt_input("b", succeeded=False, tokens_total=1),  # failed: does not count
        attempt_input("c", tokens_total=None),  # no metric: does not count
    )
    assert db_leaderboard(challenge) == [(1, "a", 30.0, T0 + timedelta(seconds=10))]


@pytest.mark.django_db
def test_player_row_has_its_rank():
    challenge = make_challenge(scoring_strategy="highest_rating")
    record(
        challenge,
        attempt_input("a", rating=9),
        attempt_input("b", rating=7),
        attempt_input("c", rating=7),
        attempt_input("d", rating=2),
    )
    challenge.refresh_from_db()
    for player, rank in {"a": 1, "b": 2, "c": 2, "d": 4}.items():
        page = selectors.leaderboard_player(challenge=challenge, external_id=player)
        assert page.count == 4
        assert [(r.rank, r.player_external_id) for r in page.rows] == [(rank, player)]
    assert selectors.leaderboard_player(challenge=challenge, external_id="nobody").rows == []
