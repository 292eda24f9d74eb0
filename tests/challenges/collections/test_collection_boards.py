"""A collection's standings through the API and the page against a brute force from
the raw scores, for every strategy: players missing challenges, a frozen member board,
a hidden player (from one challenge and from all), a hidden attempt, practice attempts
and an inactive member. The brute force reads no leaderboard entry: it ranks each
member's public board from its attempts' scores itself."""

from __future__ import annotations

import random
import re
import time

import pytest
from django.utils import timezone

from challenges.collections.standings import STRATEGIES
from challenges.ingestion import moderation, services
from challenges.models import Attempt, AttemptScore, Challenge, Player
from challenges.setup import services as setup_services
from tests.challenges.collections.reference import Best, reference_standings
from tests.factories import WEIGHTED_SEED, attempt_input, make_challenge, public_score_rows
from tests.urls import collection_board_url, collection_page_url, collections_url

pytestmark = pytest.mark.django_db


def public_bests(challenge: Challenge) -> dict[str, Best]:
    """Each player's best attempt on the challenge's public board, from the scores."""
    challenge.refresh_from_db()
    now = timezone.now()
    frozen = challenge.freeze_at and challenge.revealed_at is None and now >= challenge.freeze_at
    scores = public_score_rows(challenge, before=challenge.freeze_at if frozen else None)
    best: dict[str, tuple] = {}
    for s in scores.select_related("player", "attempt"):
        key = (s.sort_key, s.created_at, s.attempt_id)
        p = s.player.external_id
        if p not in best or key < best[p][0]:
            a = s.attempt
            fact = Best(s.score, a.created_at, a.succeeded, a.elapsed_ms, a.tokens_total, a.rating)
            best[p] = (key, fact)
    return {p: fact for p, (_, fact) in best.items()}


def api_standings(api, pk) -> list[tuple[int, str, float, int]]:
    body = api.get(collection_board_url(pk), {"limit": 500}).json()
    assert body["count"] == len(body["results"])
    return [(r["rank"], r["player"], r["score"], r["completed"]) for r in body["results"]]


def _attempts(rng: random.Random, players: list[str]) -> list[services.AttemptInput]:
    return [
        attempt_input(
            p,
            succeeded=rng.random() < 0.8,
            elapsed_ms=rng.choice([None, 1000, 2000, 3000, 4000]),
            tokens_total=rng.choice([None, 100, 200, 300]),
            rating=rng.choice([None, 3, 5, 7, 9]),
            created_at=rng.randrange(0, 300, 60),  # coarse: ties on time happen
        )
        for p in players
    ]


def season(rng: random.Random) -> list[Challenge]:
    """Four challenges with their public boards each shaped by another rule."""
    everyone = [f"p{i:02d}" for i in range(24)]
    # A plain board; a player hidden here only, and an attempt hidden.
    fastest = make_challenge(scoring_strategy="fastest", slug="c-fastest")
    services.attempts_record(challenge=fastest, inputs=_attempts(rng, everyone[:20] * 2))
    # A frozen board: attempts after the freeze are on the live board only.
    rating = make_challenge(scoring_strategy="highest_rating", slug="c-rating")
    services.attempts_record(challenge=rating, inputs=_attempts(rng, everyone[4:] * 2))
    setup_services.challenge_update(challenge=rating, data={"freeze_at": timezone.now()})
    time.sleep(0.01)
    services.attempts_record(challenge=rating, inputs=_attempts(rng, everyone * 2))
    # Practice attempts after the close: stored and scored, never ranked.
    weighted = make_challenge(**WEIGHTED_SEED, slug="c-weighted")
    services.attempts_record(challenge=weighted, inputs=_attempts(rng, everyone[::2]))
    setup_services.challenge_update(
        challenge=weighted, data={"closes_at": timezone.now(), "late_attempts": "practice"}
    )
    time.sleep(0.01)
    weighted.refresh_from_db()
    services.attempts_record(challenge=weighted, inputs=_attempts(rng, everyone * 2))
    assert Attempt.objects.filter(challenge=weighted, practice=True).exists()
    tokens = make_challenge(scoring_strategy="fewest_tokens", slug="c-tokens")
    services.attempts_record(challenge=tokens, inputs=_attempts(rng, everyone[10:] * 3))

    p = {x.external_id: x for x in Player.objects.all()}
    moderation.player_hide(player=p["p05"], challenge=fastest, reason="copied")
    moderation.player_hide(player=p["p11"], challenge=None, reason="cheated everywhere")
    attempt = Attempt.objects.filter(challenge=tokens, player=p["p12"]).first()
    moderation.attempt_set_hidden(attempt=attempt, hidden=True, reason="leaked")
    return [fastest, rating, weighted, tokens]


@pytest.mark.parametrize("seed", [3, 4])
def test_standings_equal_the_brute_force_for_every_strategy(seed, admin_api, anon_api, client):
    members = season(random.Random(seed))
    boards = [public_bests(c) for c in members]
    assert all(boards)
    live_rating = AttemptScore.objects.filter(version_id=members[1].active_version_id)
    assert live_rating.exclude(attempt__recorded_at__lt=members[1].freeze_at).exists()
    for strategy in STRATEGIES:
        body = {"name": f"Season {strategy}", "strategy": strategy}
        body["challenges"] = [c.pk for c in members]
        created = admin_api.post(collections_url(), body, format="json")
        assert created.status_code == 201, created.content
        expected = reference_standings(strategy, boards)
        assert expected, strategy
        assert any(c < len(members) for _, _, _, c in expected)  # someone missed one
        found = api_standings(anon_api, created.json()["id"])
        assert [(r, p, c) for r, p, _, c in found] == [(r, p, c) for r, p, _, c in expected]
        for (_, _, value, _), (_, _, exact, _) in zip(found, expected, strict=True):
            assert value == pytest.approx(exact, rel=1e-11)
        assert "p11" not in {p for _, p, _, _ in found}  # hidden from every challenge
        # The page lists the same players in the same order.
        html = client.get(collection_page_url(created.json()["slug"])).content.decode()
        names = re.findall(r'<th scope="row" class="col-name">([^<]*)</th>', html)
        assert names == [p for _, p, _, _ in expected][:50]


def test_an_inactive_member_is_no_column_and_counts_for_no_one(admin_api, anon_api):
    shown = make_challenge(scoring_strategy="fastest")
    hidden = make_challenge(scoring_strategy="fastest")
    services.attempts_record(challenge=shown, inputs=[attempt_input("a", elapsed_ms=5)])
    services.attempts_record(
        challenge=hidden,
        inputs=[attempt_input("a", elapsed_ms=5), attempt_input("b", elapsed_ms=1)],
    )
    body = {"name": "S", "strategy": "fastest_total", "challenges": [shown.pk, hidden.pk]}
    pk = admin_api.post(collections_url(), body, format="json").json()["id"]
    assert [p for _, p, _, _ in api_standings(anon_api, pk)] == ["a", "b"]
    setup_services.challenge_update(challenge=hidden, data={"is_active": False})
    assert api_standings(anon_api, pk) == [(1, "a", 5.0, 1)]
    detail = anon_api.get(collections_url()).json()[0]
    assert [c["id"] for c in detail["challenges"]] == [shown.pk]


def test_unhide_brings_a_player_back_exactly(admin_api, anon_api):
    a = make_challenge(scoring_strategy="fewest_tokens")
    b = make_challenge(scoring_strategy="fewest_tokens")
    for c in (a, b):
        services.attempts_record(
            challenge=c,
            inputs=[attempt_input("x", tokens_total=3), attempt_input("y", tokens_total=9)],
        )
    body = {"name": "S", "strategy": "fewest_tokens_total", "challenges": [a.pk, b.pk]}
    pk = admin_api.post(collections_url(), body, format="json").json()["id"]
    before = api_standings(anon_api, pk)
    assert before == [(1, "x", 6.0, 2), (2, "y", 18.0, 2)]
    x = Player.objects.get(external_id="x")
    moderation.player_hide(player=x, challenge=b, reason="r")
    assert api_standings(anon_api, pk) == [(1, "y", 18.0, 2), (2, "x", 3.0, 1)]
    moderation.player_unhide(player=x, challenge=b, reason="r")
    assert api_standings(anon_api, pk) == before


def test_kept_standings_follow_new_attempts_and_renames(
    admin_api, anon_api, django_capture_on_commit_callbacks
):
    a = make_challenge(scoring_strategy="fastest")
    services.attempts_record(challenge=a, inputs=[attempt_input("x", elapsed_ms=50)])
    body = {"name": "S", "strategy": "fastest_total", "challenges": [a.pk]}
    pk = admin_api.post(collections_url(), body, format="json").json()["id"]
    assert api_standings(anon_api, pk) == [(1, "x", 50.0, 1)]
    services.attempts_record(
        challenge=a,
        inputs=[attempt_input("y", elapsed_ms=10), attempt_input("x", elapsed_ms=40)],
    )
    assert api_standings(anon_api, pk) == [(1, "y", 10.0, 1), (2, "x", 40.0, 1)]
    with django_capture_on_commit_callbacks(execute=True):  # a rename marks boards stale
        services.attempts_record(
            challenge=a, inputs=[attempt_input("y", elapsed_ms=99, player_name="Yvonne")]
        )
    names = [r["display_name"] for r in anon_api.get(collection_board_url(pk)).json()["results"]]
    assert names == ["Yvonne", "x"]
