"""The public scoring history (issue 30): the history API and page, permalinked version
boards, and that nothing leaks — hidden players, practice attempts, post-freeze attempts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from challenges.ingestion import moderation
from challenges.leaderboards import freeze
from challenges.models import Challenge, HistoryRecord, Player
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from tests.factories import attempt_input, make_challenge, record
from tests.urls import (
    history_page_url,
    history_url,
    leaderboard_url,
    page_url,
    version_page_url,
)

pytestmark = pytest.mark.django_db


def seeded(n=16):
    challenge = make_challenge(scoring_strategy="fastest")
    record(
        challenge,
        *[
            attempt_input(
                f"p{i:02d}",
                player_name=f"Player {i}",
                elapsed_ms=1000 + i * 10,
                tokens_total=(i * 7) % n,
                created_at=i,
            )
            for i in range(n)
        ],
    )
    challenge.refresh_from_db()
    return challenge


def rescore_to(challenge, strategy):
    update = setup_services.challenge_update(
        challenge=challenge, data={"scoring_strategy": strategy}
    )
    rescoring.job_run_inline(job=update.job)
    challenge.refresh_from_db()
    return update.new_version


def board_json(api, challenge, query=""):
    response = api.get(leaderboard_url(challenge.pk) + "?limit=500" + query)
    assert response.status_code == 200, response.content
    return response.json()


def test_history_api_lists_records_newest_first(anon_api):
    challenge = seeded()
    rescore_to(challenge, "fewest_tokens")
    rescore_to(challenge, "first")
    response = anon_api.get(history_url(challenge.pk))
    assert response.status_code == 200
    body = response.json()
    assert [(r["version"], r["previous_version"], r["reason"]) for r in body] == [
        (3, 2, "rescore"),
        (2, 1, "rescore"),
    ]
    first = body[1]
    assert set(first) == {
        "version",
        "previous_version",
        "switched_at",
        "reason",
        "summary",
        "players_ranked",
        "moved",
        "entered_top",
        "left_top",
        "largest_moves",
        "kendall_tau",
    }
    assert first["players_ranked"] == {"before": 16, "after": 16}
    assert "Before: Successful attempts are ranked by time taken" in first["summary"]
    assert "Now: Successful attempts are ranked by tokens used" in first["summary"]
    assert set(first["entered_top"][0]) == {
        "external_id",
        "display_name",
        "rank_before",
        "rank_after",
    }
    assert -1 <= first["kendall_tau"] < 1


def test_history_api_of_an_unknown_challenge_is_404(anon_api):
    assert anon_api.get(history_url(999999)).status_code == 404


def test_history_is_read_only_through_the_api(admin_api):
    challenge = seeded(4)
    rescore_to(challenge, "fewest_tokens")
    for method in ("post", "patch", "delete"):
        response = getattr(admin_api, method)(history_url(challenge.pk), {}, format="json")
        assert response.status_code in (403, 405), (method, response.status_code)
    assert HistoryRecord.objects.filter(challenge=challenge).count() == 1


def test_a_version_board_equals_the_board_served_while_it_was_active(anon_api, client):
    challenge = seeded()
    served = board_json(anon_api, challenge)
    page = client.get(page_url(challenge.slug)).content.decode()
    rescore_to(challenge, "fewest_tokens")
    assert board_json(anon_api, challenge)["results"] != served["results"]

    old = board_json(anon_api, challenge, "&version=1")
    assert old["results"] == served["results"] and old["count"] == served["count"]
    assert (old["version"], old["current"]) == (1, False)
    assert board_json(anon_api, challenge, "&version=2")["current"] is True

    html = client.get(version_page_url(challenge.slug, 1)).content.decode()
    assert 'data-current="0"' in html and "Not current" in html
    # The same players in the same order as the page served while version 1 was active.
    names = [f">Player {i}<" for i in range(16)]
    assert sorted(names, key=html.index) == sorted(names, key=page.index)


def test_a_version_never_active_publicly_is_404(anon_api, client):
    challenge = seeded(3)
    update = setup_services.challenge_update(
        challenge=challenge, data={"scoring_strategy": "fewest_tokens"}
    )  # version 2 made, never switched to
    assert update.new_version.number == 2
    for number in (2, 3, 2**31, 10**20):
        response = anon_api.get(leaderboard_url(challenge.pk) + f"?version={number}")
        assert response.status_code in (400, 404), (number, response.status_code)
    assert client.get(version_page_url(challenge.slug, 2)).status_code == 404
    assert client.get(f"/challenges/{challenge.slug}/versions/{10**30}/").status_code == 404
    assert client.get(version_page_url(challenge.slug, 1)).status_code == 200


@pytest.mark.parametrize("bad", ["x", "-1", "0", "1.5", "", "99999999999999999999"])
def test_a_bad_version_parameter_is_a_400(anon_api, bad):
    challenge = seeded(2)
    response = anon_api.get(leaderboard_url(challenge.pk) + f"?version={bad}")
    assert response.status_code == 400
    assert "version" in response.json()


def test_history_page_words_each_switch_and_the_board_links_it(client):
    challenge = seeded()
    rescore_to(challenge, "fewest_tokens")
    detail = client.get(page_url(challenge.slug)).content.decode()
    assert history_page_url(challenge.slug) in detail
    response = client.get(history_page_url(challenge.slug))
    assert response.status_code == 200
    html = response.content.decode()
    found = HistoryRecord.objects.get(challenge=challenge)
    when = found.switched_at.strftime("%d %b %Y %H:%M UTC")
    assert f"Version 2 replaced version 1 on {when}: {found.moved} of 16 ranked players" in html
    assert f"rank agreement τ = {found.kendall_tau:.2f}" in html
    assert version_page_url(challenge.slug, 1) in html
    assert version_page_url(challenge.slug, 2) in html
    assert client.get(history_page_url("no-such-challenge")).status_code == 404


def test_hidden_players_are_in_no_record(anon_api, client):
    challenge = seeded()
    hidden_before = Player.objects.get(external_id="p00")  # first under "fastest"
    moderation.player_hide(player=hidden_before, challenge=challenge, reason="spam")
    rescore_to(challenge, "fewest_tokens")
    record_ = HistoryRecord.objects.get(challenge=challenge)
    assert (record_.players_before, record_.players_after) == (15, 15)
    # Hidden after the record was written: its lists leave them out from then on.
    named = {e["external_id"] for e in record_.entered_top + record_.largest_moves}
    hidden_after = Player.objects.get(external_id=sorted(named)[0])
    moderation.player_hide(player=hidden_after, challenge=challenge, reason="spam")
    body = anon_api.get(history_url(challenge.pk)).json()
    html = client.get(history_page_url(challenge.slug)).content.decode()
    for hidden in (hidden_before, hidden_after):
        for field in ("entered_top", "left_top", "largest_moves"):
            assert hidden.external_id not in {e["external_id"] for e in body[0][field]}
        assert f">{hidden.display_name}<" not in html
        for number in (1, 2):
            rows = board_json(anon_api, challenge, f"&version={number}")["results"]
            assert hidden.external_id not in {r["player"] for r in rows}


def test_practice_attempts_are_in_no_record(integration_api, anon_api):
    challenge = seeded(6)
    Challenge.objects.filter(pk=challenge.pk).update(
        closes_at=timezone.now() - timedelta(hours=1), late_attempts="practice"
    )
    challenge.refresh_from_db()
    record(challenge, attempt_input("late", elapsed_ms=1, tokens_total=0))
    rescore_to(challenge, "fewest_tokens")
    found = HistoryRecord.objects.get(challenge=challenge)
    assert (found.players_before, found.players_after) == (6, 6)
    body = anon_api.get(history_url(challenge.pk)).json()
    assert "late" not in str(body)
    for number in (1, 2):
        rows = board_json(anon_api, challenge, f"&version={number}")["results"]
        assert "late" not in {r["player"] for r in rows}


def test_during_a_freeze_nothing_after_it_shows(anon_api, staff_api, client):
    challenge = seeded(12)
    rescore_to(challenge, "first")  # before the freeze: public throughout
    Challenge.objects.filter(pk=challenge.pk).update(freeze_at=timezone.now())
    challenge.refresh_from_db()
    record(challenge, attempt_input("newcomer", player_name="Newcomer", elapsed_ms=1, created_at=0))
    rescore_to(challenge, "fastest")  # after the freeze: its record waits for the reveal

    public = anon_api.get(history_url(challenge.pk)).json()
    assert [r["version"] for r in public] == [2]
    assert [r["version"] for r in staff_api.get(history_url(challenge.pk)).json()] == [3, 2]
    assert "Newcomer" not in client.get(history_page_url(challenge.slug)).content.decode()
    for number in (2, 3):  # 2: active before the freeze; 3: the active one, as of the freeze
        rows = board_json(anon_api, challenge, f"&version={number}")["results"]
        assert "newcomer" not in {r["player"] for r in rows}
        html = client.get(version_page_url(challenge.slug, number)).content.decode()
        assert "Newcomer" not in html
    assert "newcomer" in {
        r["player"] for r in board_json(staff_api, challenge, "&version=3")["results"]
    }

    freeze.board_reveal(challenge=challenge)
    assert [r["version"] for r in anon_api.get(history_url(challenge.pk)).json()] == [3, 2]
    assert "newcomer" in {
        r["player"] for r in board_json(anon_api, challenge, "&version=3")["results"]
    }


def test_a_players_page_lists_their_rank_under_each_version(anon_api, client):
    challenge = seeded()
    old = {r["player"]: r["rank"] for r in board_json(anon_api, challenge)["results"]}
    rescore_to(challenge, "fewest_tokens")
    new = {r["player"]: r["rank"] for r in board_json(anon_api, challenge)["results"]}
    html = client.get(f"/challenges/{challenge.slug}/players/p03/").content.decode()
    assert f"Version 2</a> (current): rank {new['p03']}<" in html
    assert f"Version 1</a>: rank {old['p03']}<" in html
    assert html.index('data-version="2"') < html.index('data-version="1"')


def test_kept_history_follows_every_change(anon_api, client, monkeypatch):
    """The page and the API answer are kept (built once while nothing changes), and a
    new record, a hide, an unhide and a rename each show at once."""
    from challenges.leaderboards import history

    challenge = seeded()
    rescore_to(challenge, "fewest_tokens")

    def both():
        return (
            anon_api.get(history_url(challenge.pk)).json(),
            client.get(history_page_url(challenge.slug)).content.decode(),
        )

    body, html = both()
    named = sorted({e["external_id"] for e in body[0]["largest_moves"]})[0]
    player = Player.objects.get(external_id=named)
    assert f">{player.display_name}<" in html

    builds = []
    real = history.history_public
    monkeypatch.setattr(history, "history_public", lambda **kw: builds.append(1) or real(**kw))
    assert both() == (body, html)
    assert builds == []  # served as kept: nothing rebuilt

    moderation.player_hide(player=player, challenge=challenge, reason="spam")
    body, html = both()
    assert named not in {e["external_id"] for e in body[0]["largest_moves"]}
    assert f">{player.display_name}<" not in html

    moderation.player_unhide(player=player, challenge=challenge, reason="appeal")
    body, html = both()
    assert named in {e["external_id"] for e in body[0]["largest_moves"]}
    assert f">{player.display_name}<" in html

    rescore_to(challenge, "fastest")
    body, html = both()
    assert len(body) == 2 and html.count('class="switch"') == 2

    setup_services.challenge_update(challenge=challenge, data={"name": "Renamed challenge"})
    assert "Renamed challenge" in client.get(history_page_url(challenge.slug)).content.decode()


def test_kept_version_boards_follow_renames_and_hides(
    anon_api, client, monkeypatch, django_capture_on_commit_callbacks
):
    """A past version's board (page and API) is kept under its ranking's token: a rename
    or a hide of one of its players shows at once."""
    from challenges.leaderboards import selectors

    challenge = seeded()
    rescore_to(challenge, "fewest_tokens")  # version 1 is now a past version

    def both():
        return (
            board_json(anon_api, challenge, "&version=1"),
            client.get(version_page_url(challenge.slug, 1)).content.decode(),
        )

    body, html = both()
    both()  # the ranking settles and the builds are kept
    reads = []
    real = selectors.board_page
    monkeypatch.setattr(selectors, "board_page", lambda **kw: reads.append(1) or real(**kw))
    assert both() == (body, html) and reads == []

    player = Player.objects.get(external_id=body["results"][0]["player"])
    renamed = player.display_name + " renamed"
    player.display_name = renamed
    with django_capture_on_commit_callbacks(execute=True):  # the rename commits
        player.save()
    body, html = both()
    assert body["results"][0]["display_name"] == renamed
    assert f">{renamed}<" in html

    with django_capture_on_commit_callbacks(execute=True):
        moderation.player_hide(player=player, challenge=challenge, reason="spam")
    body, html = both()
    assert player.external_id not in {r["player"] for r in body["results"]}
    assert f">{renamed}<" not in html


def test_a_kept_version_board_is_read_in_one_query(anon_api, client):
    """A past version's board that nothing changed since its ranking is served from what
    was built, after one round trip that finds the version, checks a public record names
    it and reads its ranking's state (sql.version_board); the version itself is not read."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    challenge = seeded()
    rescore_to(challenge, "fewest_tokens")
    for _ in range(2):  # the ranking settles, the builds are kept
        board_json(anon_api, challenge, "&version=1")
        client.get(version_page_url(challenge.slug, 1))
    for read in (
        lambda: board_json(anon_api, challenge, "&version=1"),
        lambda: client.get(version_page_url(challenge.slug, 1)),
    ):
        read()  # the challenge is looked up (and kept in the process) like any board's
        with CaptureQueriesContext(connection) as queries:
            read()
        statements = [q["sql"] for q in queries.captured_queries]
        # the challenge's probe (as every board read), then the version's board
        assert len(statements) == 2 and "v.number" in statements[1], statements
