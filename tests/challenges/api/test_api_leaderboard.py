"""API: the public leaderboard (docs/api.md, "Strategies and ranking")."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from challenges.models import (
    AttemptScore,
    Challenge,
    Player,
)
from scoring.project_registry import registry
from tests.factories import T0, WEIGHTED_SEED, attempt_input, counts, make_challenge, record
from tests.urls import attempts_url, leaderboard_url

ROW_KEYS = {"rank", "player", "display_name", "score", "attempt_id", "created_at"}


def get_board(client, challenge, **params):
    resp = client.get(leaderboard_url(challenge.pk), params)
    assert resp.status_code == 200, resp.content
    return resp.json()


@pytest.fixture
def fastest(db) -> Challenge:
    return make_challenge(scoring_strategy="fastest")


@pytest.fixture
def five(fastest) -> Challenge:
    """p1..p5 with elapsed 100..500 ms: ranked p1 first."""
    record(fastest, *(attempt_input(f"p{i}", elapsed_ms=i * 100) for i in range(1, 6)))
    return fastest


def test_shape_and_best_attempt_per_player(anon_api, fastest):
    recorded = record(
        fastest,
        attempt_input("a", elapsed_ms=500, player_name="Alice"),
        attempt_input("a", elapsed_ms=300, created_at=10),
        attempt_input("b", elapsed_ms=400),
        attempt_input("c", elapsed_ms=50, succeeded=False),  # does not count
    )

    board = get_board(anon_api, fastest)

    assert set(board) == {"version", "count", "results"}
    assert board["version"] == 1
    assert board["count"] == 2
    assert all(set(row) == ROW_KEYS for row in board["results"])
    first, second = board["results"]
    assert (first["rank"], first["player"], first["display_name"], first["score"]) == (
        1,
        "a",
        "Alice",
        300.0,
    )
    assert first["attempt_id"] == recorded[1].attempt.pk
    assert datetime.fromisoformat(first["created_at"].replace("Z", "+00:00")) == datetime(
        2026, 1, 1, 0, 0, 10, tzinfo=UTC
    )
    assert (second["rank"], second["player"], second["score"]) == (2, "b", 400.0)


def test_empty_leaderboard(anon_api, fastest):
    assert get_board(anon_api, fastest) == {"version": 1, "count": 0, "results": []}


def test_new_attempt_is_reflected_at_once(anon_api, integration_api, five):
    resp = integration_api.post(
        attempts_url(five.pk),
        {"player": "new", "succeeded": True, "elapsed_ms": 150},
        format="json",
    )
    assert resp.status_code == 201

    board = get_board(anon_api, five)

    assert board["count"] == 6
    assert [r["player"] for r in board["results"][:3]] == ["p1", "new", "p2"]
    assert board["results"][1]["attempt_id"] == resp.json()["id"]


def test_better_attempt_replaces_player_row_at_once(anon_api, integration_api, five):
    resp = integration_api.post(
        attempts_url(five.pk),
        {"player": "p5", "succeeded": True, "elapsed_ms": 1},
        format="json",
    )
    assert resp.status_code == 201

    board = get_board(anon_api, five)

    assert board["count"] == 5
    assert (board["results"][0]["player"], board["results"][0]["score"]) == ("p5", 1.0)


def test_custom_strategy_ranks_highest_score_first(anon_api, db):
    challenge = make_challenge(**WEIGHTED_SEED)
    record(
        challenge,
        attempt_input("low", rating=1),
        attempt_input("high", rating=9),
        attempt_input("mid", rating=5, tokens_total=1200, elapsed_ms=12000),
    )

    board = get_board(anon_api, challenge)

    assert [(r["player"], r["score"]) for r in board["results"]] == [
        ("high", 235.0),
        ("mid", 145.0),
        ("low", 115.0),
    ]


# --- pagination -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("params", "players", "ranks"),
    [
        ({"limit": 2}, ["p1", "p2"], [1, 2]),
        ({"limit": 2, "offset": 2}, ["p3", "p4"], [3, 4]),
        ({"limit": 2, "offset": 4}, ["p5"], [5]),
        ({"offset": 3}, ["p4", "p5"], [4, 5]),
        ({"offset": 10}, [], []),
        ({"limit": 500}, ["p1", "p2", "p3", "p4", "p5"], [1, 2, 3, 4, 5]),
        ({"limit": 1, "format": "json"}, ["p1"], [1]),  # other query parameters are ignored
    ],
)
def test_limit_offset_pagination(anon_api, five, params, players, ranks):
    board = get_board(anon_api, five, **params)

    assert board["count"] == 5
    assert [r["player"] for r in board["results"]] == players
    assert [r["rank"] for r in board["results"]] == ranks


def test_default_limit_is_50(anon_api, fastest):
    record(fastest, *(attempt_input(f"p{i:03}", elapsed_ms=i) for i in range(55)))

    board = get_board(anon_api, fastest)

    assert board["count"] == 55
    assert len(board["results"]) == 50
    assert board["results"][-1]["rank"] == 50


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "501"}, "limit"),
        ({"limit": "abc"}, "limit"),
        ({"limit": "-1"}, "limit"),
        ({"limit": "1.5"}, "limit"),
        ({"limit": ""}, "limit"),
        ({"offset": "-1"}, "offset"),
        ({"offset": "x"}, "offset"),
        ({"player": ""}, "player"),
    ],
)
def test_bad_query_is_400_naming_field(anon_api, five, params, field):
    resp = anon_api.get(leaderboard_url(five.pk), params)

    assert resp.status_code == 400, resp.content
    assert field in resp.json(), resp.json()


# --- player= --------------------------------------------------------------------------------------
def test_player_gives_that_players_row_and_rank(anon_api, five):
    board = get_board(anon_api, five, player="p3")

    assert board["version"] == 1
    assert board["count"] == 5
    assert len(board["results"]) == 1
    row = board["results"][0]
    assert set(row) == ROW_KEYS
    assert (row["rank"], row["player"], row["score"]) == (3, "p3", 300.0)


def test_player_overrides_pagination(anon_api, five):
    board = get_board(anon_api, five, player="p5", limit=1, offset=0)

    assert [(r["player"], r["rank"]) for r in board["results"]] == [("p5", 5)]


@pytest.mark.parametrize("player", ["nobody", "P1", "p"])
def test_unknown_player_is_200_with_empty_results(anon_api, five, player):
    board = get_board(anon_api, five, player=player)

    assert board["results"] == []
    assert board["count"] == 5


def test_player_without_counted_attempt_has_no_row(anon_api, five):
    record(five, attempt_input("loser", succeeded=False, elapsed_ms=1))

    board = get_board(anon_api, five, player="loser")

    assert board["results"] == []
    assert Player.objects.filter(external_id="loser").exists()


# --- ties -----------------------------------------------------------------------------------------
@pytest.fixture
def tied(fastest) -> Challenge:
    record(
        fastest,
        attempt_input("a", elapsed_ms=100, created_at=0),
        attempt_input("b", elapsed_ms=200, created_at=5),
        attempt_input("c", elapsed_ms=200, created_at=5),  # same value and time as b
        attempt_input("d", elapsed_ms=200, created_at=6),  # same value, later
        attempt_input("e", elapsed_ms=300, created_at=0),
    )
    return fastest


def test_ties_share_rank_competition_ranking(anon_api, tied):
    board = get_board(anon_api, tied)

    ranks = {r["player"]: r["rank"] for r in board["results"]}
    assert ranks == {"a": 1, "b": 2, "c": 2, "d": 4, "e": 5}
    assert [r["rank"] for r in board["results"]] == [1, 2, 2, 4, 5]
    assert [r["player"] for r in board["results"]][3:] == ["d", "e"]


@pytest.mark.parametrize(("player", "rank"), [("a", 1), ("b", 2), ("c", 2), ("d", 4), ("e", 5)])
def test_player_rank_matches_page_rank_with_ties(anon_api, tied, player, rank):
    board = get_board(anon_api, tied, player=player)

    assert [(r["player"], r["rank"]) for r in board["results"]] == [(player, rank)]


def test_tie_split_across_pages_keeps_its_rank(anon_api, tied):
    first = get_board(anon_api, tied, limit=2)
    second = get_board(anon_api, tied, limit=2, offset=2)

    assert [r["rank"] for r in first["results"]] == [1, 2]
    assert [r["rank"] for r in second["results"]] == [2, 4]
    players = [r["player"] for r in first["results"] + second["results"]]
    assert sorted(players) == ["a", "b", "c", "d"]  # no row lost or repeated between pages


def test_equal_score_earlier_created_at_ranks_first(anon_api, db):
    challenge = make_challenge(**WEIGHTED_SEED)
    record(
        challenge,
        attempt_input("late", rating=5, created_at=60),
        attempt_input("early", rating=5, created_at=1),
    )

    board = get_board(anon_api, challenge)

    assert [(r["player"], r["rank"]) for r in board["results"]] == [("early", 1), ("late", 2)]
    assert board["results"][0]["score"] == board["results"][1]["score"]


def test_first_strategy_score_is_success_time_in_epoch_ms(anon_api, db):
    challenge = make_challenge(scoring_strategy="first")
    record(challenge, attempt_input("slow", created_at=30), attempt_input("quick", created_at=20))

    board = get_board(anon_api, challenge)

    t0_ms = int(T0.timestamp() * 1000)
    assert [(r["player"], r["score"]) for r in board["results"]] == [
        ("quick", float(t0_ms + 20_000)),
        ("slow", float(t0_ms + 30_000)),
    ]


# --- visibility and failures --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("client_name", "status"),
    [("anon_api", 404), ("integration_api", 404), ("staff_api", 200), ("admin_api", 200)],
)
def test_inactive_challenge_leaderboard_is_404_to_non_staff(request, db, client_name, status):
    hidden = make_challenge(scoring_strategy="fastest", is_active=False)
    record(hidden, attempt_input("p", elapsed_ms=1))
    client = request.getfixturevalue(client_name)

    resp = client.get(leaderboard_url(hidden.pk))

    assert resp.status_code == status
    if status == 200:
        assert resp.json()["count"] == 1


def test_unknown_challenge_is_404(anon_api):
    assert anon_api.get(leaderboard_url(999_999)).status_code == 404


@pytest.mark.parametrize("pk", ["abc", "0", "-1", str(2**63), str(2**70), "1e3"])
def test_challenge_id_that_is_no_id_is_404(anon_api, five, pk):
    resp = anon_api.get(f"/api/challenges/{pk}/leaderboard/")

    assert resp.status_code == 404, resp.content


def test_reading_writes_nothing(anon_api, five):
    before = counts()

    get_board(anon_api, five)
    get_board(anon_api, five, player="p2")

    assert counts() == before


@pytest.fixture
def tokens_challenge(db):
    with registry().temporarily("t.tokens", "tests.plugins:TokensScorer"):
        challenge = make_challenge(scoring_strategy="custom", scoring_plugin_id="t.tokens")
        record(
            challenge,
            attempt_input("p13", tokens_total=13),  # the plugin raises "unlucky"
            attempt_input("p7", tokens_total=7),
            attempt_input("p13b", tokens_total=13),
            attempt_input("p13b", tokens_total=2),
        )
        yield challenge


def test_failed_scorer_error_never_in_public_leaderboard(anon_api, tokens_challenge):
    assert AttemptScore.objects.filter(attempt__challenge=tokens_challenge, score=None).count() == 2
    assert "unlucky" in AttemptScore.objects.filter(score=None).first().error

    page = anon_api.get(leaderboard_url(tokens_challenge.pk))
    mine = anon_api.get(leaderboard_url(tokens_challenge.pk), {"player": "p13"})
    other = anon_api.get(leaderboard_url(tokens_challenge.pk), {"player": "p13b"})

    assert page.status_code == mine.status_code == other.status_code == 200
    for resp in (page, mine, other):
        text = resp.content.decode()
        assert "unlucky" not in text
        assert "error" not in text.lower()
    board = page.json()
    assert [(r["player"], r["score"]) for r in board["results"]] == [("p7", 7.0), ("p13b", 2.0)]
    assert mine.json()["results"] == []
    assert other.json()["results"][0]["rank"] == 2


def test_equal_score_earlier_attempt_takes_the_players_row(anon_api, integration_api, fastest):
    url = attempts_url(fastest.pk)
    t0_ms = int(T0.timestamp() * 1000)
    first = integration_api.post(
        url,
        {"player": "p", "succeeded": True, "elapsed_ms": 100, "created_at": t0_ms + 10_000},
        format="json",
    )
    earlier = integration_api.post(
        url,
        {"player": "p", "succeeded": True, "elapsed_ms": 100, "created_at": t0_ms + 5_000},
        format="json",
    )
    later = integration_api.post(
        url,
        {"player": "p", "succeeded": True, "elapsed_ms": 100, "created_at": t0_ms + 20_000},
        format="json",
    )
    assert (first.status_code, earlier.status_code, later.status_code) == (201, 201, 201)

    board = get_board(anon_api, fastest)

    assert board["count"] == 1
    assert board["results"][0]["attempt_id"] == earlier.json()["id"]


@pytest.mark.parametrize("epoch", [1001, 2002, 1_024_003])
def test_first_strategy_score_is_exact_epoch_ms_sent(anon_api, integration_api, db, epoch):
    challenge = make_challenge(scoring_strategy="first")
    resp = integration_api.post(
        attempts_url(challenge.pk),
        {"player": "p", "succeeded": True, "created_at": epoch},
        format="json",
    )
    assert resp.status_code == 201

    assert resp.json()["score"] == float(epoch)
    assert get_board(anon_api, challenge)["results"][0]["score"] == float(epoch)
