"""Try it and Preview leaderboard: the unsaved setup of the page, scored without writing,
compared with the active version (``challenges.admin.preview`` and its admin views)."""

from __future__ import annotations

import pytest

from challenges.admin import preview
from challenges.leaderboards import selectors
from challenges.models import Challenge
from scoring.project_registry import registry
from tests.challenges.admin.admin_pages import WEIGHTS, page_data
from tests.factories import WEIGHTED_SEED, attempt_input, counts, make_challenge, record
from tests.urls import admin_url, change_url

pytestmark = pytest.mark.django_db

WEIGHTED = {k: v for k, v in WEIGHTED_SEED.items() if k != "name"}


def try_url(challenge: Challenge) -> str:
    return admin_url("challenge", "try", challenge.pk)


def preview_url(challenge: Challenge) -> str:
    return admin_url("challenge", "preview", challenge.pk)


@pytest.fixture
def contest():
    """Weighted (success_bonus 100, rating_weight 15, time_penalty 0.5, token_penalty
    0.02): slow 100+150-30-20 = 200, mid 100+75-5-10 = 160, fast 100+15-1-2 = 112,
    loser (failed) 0+45-0.5 = 44.5."""
    challenge = make_challenge(**WEIGHTED)
    record(
        challenge,
        attempt_input("fast", rating=1, elapsed_ms=2_000, tokens_total=100, created_at=1),
        attempt_input("slow", rating=10, elapsed_ms=60_000, tokens_total=1000, created_at=2),
        attempt_input("mid", rating=5, elapsed_ms=10_000, tokens_total=500, created_at=3),
        attempt_input("loser", succeeded=False, rating=3, elapsed_ms=1_000, created_at=4),
    )
    challenge.refresh_from_db()
    return challenge


def board(challenge):
    challenge.refresh_from_db()
    page = selectors.leaderboard_page(challenge=challenge, limit=50, offset=0)
    return [(r.rank, r.player_external_id, r.score) for r in page.rows]


def setup_with(challenge, **config):
    return {**challenge.setup_dict(), "scoring_config": {**challenge.scoring_config, **config}}


# --- the services -------------------------------------------------------------------------
def test_try_scores_the_latest_attempts_with_details_and_time(contest):
    before = counts()
    result = preview.try_setup(challenge=contest, setup=setup_with(contest, rating_weight=0.0))
    assert counts() == before  # nothing written
    assert not result.picked
    assert [row.attempt.player.external_id for row in result.rows] == [
        "loser",
        "mid",
        "slow",
        "fast",
    ]
    slow = result.rows[2]
    assert slow.current_score == 200.0
    assert slow.score == 100.0 - 30.0 - 20.0
    assert slow.details == {
        "base": 100.0,
        "rating_contribution": 0.0,
        "time_penalty": 30.0,
        "token_penalty": 20.0,
    }
    assert slow.error == "" and slow.took_ms >= 0


def test_try_picked_attempts_and_unknown_ids(contest):
    other = make_challenge()
    [foreign] = record(other, attempt_input("x"))
    ids = list(contest.attempts.order_by("pk").values_list("pk", flat=True))
    result = preview.try_setup(challenge=contest, setup=contest.setup_dict(), attempt_ids=ids[:2])
    assert result.picked and {r.attempt.pk for r in result.rows} == set(ids[:2])
    with pytest.raises(
        preview.PreviewError, match=f"Not attempts of this challenge: {foreign.attempt.pk}"
    ):
        preview.try_setup(
            challenge=contest, setup=contest.setup_dict(), attempt_ids=[foreign.attempt.pk]
        )
    assert preview.parse_attempt_ids("#12, 15 15\n7") == [12, 15, 7]
    with pytest.raises(preview.PreviewError, match="'x1' is not an attempt id"):
        preview.parse_attempt_ids("3, x1")


def test_try_shows_a_failing_plugin_error(contest):
    record(contest, attempt_input("thirteen", tokens_total=13, created_at=10))
    with registry().temporarily("t.tokens", "tests.plugins:TokensScorer"):
        setup = {
            **contest.setup_dict(),
            "scoring_plugin_id": "t.tokens",
            "scoring_entrypoint": "tests.plugins:TokensScorer",
            "scoring_config": {},
        }
        result = preview.try_setup(challenge=contest, setup=setup)
    first = result.rows[0]
    assert first.attempt.player.external_id == "thirteen"
    assert first.score is None and "unlucky" in first.error and first.details is None


def test_preview_ranks_with_the_new_setup_beside_the_current(contest):
    assert board(contest) == [
        (1, "slow", 200.0),
        (2, "mid", 160.0),
        (3, "fast", 112.0),
        (4, "loser", 44.5),
    ]
    before = counts()
    # Ratings no longer count, time costs 5 a second: fast 100-10-2 = 88,
    # mid 100-50-10 = 40, slow and loser clamped to 0 (slow was earlier: ranks first).
    setup = setup_with(contest, rating_weight=0.0, time_penalty=5.0)
    result = preview.leaderboard_preview(challenge=contest, setup=setup, player="mid")
    assert counts() == before
    assert not result.sampled and result.attempts_scored == 4 and result.failures == 0
    assert [
        (r.external_id, r.current.rank, r.new.rank, r.rank_change) for r in result.current_top
    ] == [
        ("slow", 1, 3, "↓2"),
        ("mid", 2, 2, "="),
        ("fast", 3, 1, "↑2"),
        ("loser", 4, 4, "="),
    ]
    assert [(r.external_id, r.new.rank, r.rank_change) for r in result.new_top] == [
        ("fast", 1, "↑2"),
        ("mid", 2, "="),
        ("slow", 3, "↓2"),  # 0 at 2 s beats loser's 0 at 4 s: the earlier ranks first
        ("loser", 4, "="),
    ]
    assert result.new_top[0].score_change == pytest.approx(88.0 - 112.0)
    assert (result.changed, result.players_compared) == (2, 4)
    assert result.player.external_id == "mid" and result.player.new.score == pytest.approx(40.0)


def test_preview_marks_players_who_drop_out(contest):
    setup = {**contest.setup_dict(), "scoring_strategy": "fastest", "scoring_plugin_id": ""}
    setup.update(scoring_entrypoint="", scoring_config={})
    result = preview.leaderboard_preview(challenge=contest, setup=setup)
    # fastest: fast 2 s, mid 10 s, slow 60 s; loser did not succeed: dropped.
    assert [(r.external_id, r.rank_change) for r in result.new_top] == [
        ("fast", "↑2"),
        ("mid", "="),
        ("slow", "↓2"),
    ]
    assert result.current_top[3].rank_change == "dropped" and result.current_top[3].new is None
    assert (result.changed, result.players_new) == (3, 3)
    setup["scoring_strategy"] = "highest_rating"
    record(contest, attempt_input("norating", rating=None, created_at=9))
    contest.refresh_from_db()
    result = preview.leaderboard_preview(challenge=contest, setup=setup, player="nobody")
    assert result.notes == ["No player with the id 'nobody'."]
    dropped = [r for r in result.current_top if r.rank_change == "dropped"]
    assert [r.external_id for r in dropped] == ["norating", "loser"]


def test_preview_samples_players_past_the_limit_and_says_so(contest, monkeypatch):
    monkeypatch.setattr(preview, "PREVIEW_FULL_LIMIT", 2)  # 4 attempts: 1 player in 2
    result = preview.leaderboard_preview(challenge=contest, setup=contest.setup_dict())
    assert result.sampled and result.sample_every == 2 and result.attempts_total == 4
    sampled = {p for p in contest.attempts.values_list("player_id", flat=True) if p % 2 == 0}
    assert {r.player_id for r in result.new_top} <= sampled
    assert result.attempts_scored == contest.attempts.filter(player_id__in=sampled).count()
    assert result.changed == 0  # same setup: same order within the sample


def test_preview_of_the_same_setup_changes_nothing(contest):
    result = preview.leaderboard_preview(challenge=contest, setup=contest.setup_dict())
    assert result.changed == 0
    assert all(r.rank_change == "=" and r.score_change == 0 for r in result.new_top)


def test_preview_ties_share_a_rank():
    challenge = make_challenge(scoring_strategy="highest_rating")
    record(
        challenge,
        attempt_input("a", rating=5, created_at=1),
        attempt_input("b", rating=5, created_at=1),
        attempt_input("c", rating=4, created_at=0),
    )
    challenge.refresh_from_db()
    result = preview.leaderboard_preview(challenge=challenge, setup=challenge.setup_dict())
    assert [r.new.rank for r in result.new_top] == [1, 1, 3]
    assert [r.current.rank for r in result.current_top] == [1, 1, 3]


# --- the views ----------------------------------------------------------------------------
def test_try_view_scores_the_unsaved_page(admin_client, contest):
    before = counts()
    data = page_data(admin_client, change_url(contest), **{f"{WEIGHTS}rating_weight": "0"})
    response = admin_client.post(try_url(contest), data)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Try it: the latest 4 attempts" in html
    assert "rating_contribution" in html and "time_penalty" in html and " ms</td>" in html
    slow = response.content.decode().split('data-attempt="')[3]
    assert ">200.00<" in slow and ">50.00<" in slow  # now 200, new 100 − 30 − 20
    assert counts() == before
    contest.refresh_from_db()
    assert contest.scoring_config["rating_weight"] == 15.0


def test_try_view_with_picked_and_bad_ids(admin_client, contest):
    url = change_url(contest)
    first = contest.attempts.order_by("pk").first()
    response = admin_client.post(
        try_url(contest), page_data(admin_client, url, try_attempts=str(first.pk))
    )
    assert "the 1 picked attempt" in response.content.decode()
    response = admin_client.post(
        try_url(contest), page_data(admin_client, url, try_attempts="999999")
    )
    assert "Not attempts of this challenge: 999999." in response.content.decode()


def test_try_and_preview_views_list_setup_errors(admin_client, contest):
    data = page_data(admin_client, change_url(contest), **{f"{WEIGHTS}rating_weight": "-3"})
    for url in (try_url(contest), preview_url(contest)):
        html = admin_client.post(url, data).content.decode()
        assert "Fix the setup first" in html
        assert "Rating weight: Ensure this value is greater than or equal to 0." in html


def test_preview_view_shows_rank_changes(admin_client, contest):
    data = page_data(
        admin_client,
        change_url(contest),
        preview_player="mid",
        **{f"{WEIGHTS}rating_weight": "0", f"{WEIGHTS}time_penalty": "5"},
    )
    response = admin_client.post(preview_url(contest), data)
    html = response.content.decode()
    assert response.status_code == 200
    assert "2 of 4 players would change rank" in html
    assert "↑2" in html and "↓2" in html
    assert "−24" in html  # fast: 112 → 88
    assert "Sample" not in html


def test_preview_view_says_when_it_sampled(admin_client, contest, monkeypatch):
    monkeypatch.setattr(preview, "PREVIEW_FULL_LIMIT", 2)
    data = page_data(admin_client, change_url(contest))
    html = admin_client.post(preview_url(contest), data).content.decode()
    assert "Sample:" in html and "1 in 2 players" in html


@pytest.mark.parametrize("method", ["get", "put"])
def test_try_and_preview_need_post(admin_client, contest, method):
    for url in (try_url(contest), preview_url(contest)):
        assert getattr(admin_client, method)(url).status_code == 405


def test_staff_may_not_try_or_preview(scoring_staff_client, contest):
    for url in (try_url(contest), preview_url(contest)):
        assert scoring_staff_client.post(url, {}).status_code == 403


def test_unknown_challenge_is_404(admin_client):
    assert admin_client.post(admin_url("challenge", "try", 999999), {}).status_code == 404


def test_preview_across_units_compares_ranks_not_scores(admin_client, contest):
    data = page_data(
        admin_client,
        change_url(contest),
        scoring_strategy="fastest",
    )
    html = admin_client.post(preview_url(contest), data).content.decode()
    assert "ranks compare, scores do not" in html
    assert "Score change" not in html
    assert "2.000 s" in html and "200.00 pts" in html  # each board in its own unit
    same = admin_client.post(preview_url(contest), page_data(admin_client, change_url(contest)))
    assert "Score change" in same.content.decode()
