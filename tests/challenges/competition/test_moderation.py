"""Moderation (docs/competitions.md): a hidden player or attempt leaves every
public output at once (ranks below move up) and comes back exactly on unhide; staff may
hide, only admins may unhide."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from challenges.ingestion import moderation
from challenges.models import Attempt, AuditEvent, Challenge, Player
from tests.factories import SEED_ATTEMPT, make_challenge
from tests.urls import attempts_url, leaderboard_url, page_url, rescore_url


def _hide_url(challenge: Challenge, player: str, action: str = "hide") -> str:
    return reverse(f"player-{action}", args=[challenge.pk, player])


@pytest.fixture
def board(db, integration_api) -> Challenge:
    """Six players on a "fastest" board: p1 fastest, p6 slowest; each with a worse second
    attempt, and p3 with a practice-free tie partner p4 (equal value and time)."""
    challenge = make_challenge(scoring_strategy="fastest")
    body = []
    for i, ms in enumerate([100, 200, 300, 300, 500, 600], start=1):
        created = 1_700_000_000_000 + (0 if i in (3, 4) else i * 1000)
        body.append({**SEED_ATTEMPT, "player": f"p{i}", "elapsed_ms": ms, "created_at": created})
        body.append(
            {**SEED_ATTEMPT, "player": f"p{i}", "elapsed_ms": ms * 10, "created_at": created}
        )
    assert integration_api.post(attempts_url(challenge.pk), body, format="json").status_code == 201
    return challenge


def _stream(response) -> bytes:
    return b"".join(response.streaming_content)


def snapshot(client, challenge: Challenge) -> dict:
    """Every public output of the challenge, as the public gets it."""
    slug = challenge.slug
    api = client.get(leaderboard_url(challenge.pk), {"limit": 500}).json()
    return {
        "api": api,
        "json": json.loads(_stream(client.get(page_url(slug, "export-json")))),
        "csv": _stream(client.get(page_url(slug, "export-csv"))).decode(),
        "charts": client.get(page_url(slug, "charts")).json(),
        "player_p2": client.get(leaderboard_url(challenge.pk), {"player": "p2"}).json(),
    }


def _ranks(snap: dict) -> list[tuple[int, str]]:
    return [(r["rank"], r["player"]) for r in snap["json"]["results"]]


def test_hide_a_player_then_unhide_restores_everything(board, client, staff_api, admin_api):
    before = snapshot(client, board)
    assert _ranks(before) == [(1, "p1"), (2, "p2"), (3, "p3"), (3, "p4"), (5, "p5"), (6, "p6")]
    page_before = client.get(page_url(board.slug)).content.decode()
    assert ">p2<" in page_before or "p2" in page_before

    response = staff_api.post(_hide_url(board, "p2"), {"reason": "shared answers"}, format="json")
    assert response.status_code == 200, response.content
    hidden = snapshot(client, board)
    # Gone from every output at once; everyone below moves up a place.
    assert _ranks(hidden) == [(1, "p1"), (2, "p3"), (2, "p4"), (4, "p5"), (5, "p6")]
    assert hidden["api"]["count"] == 5
    assert "p2" not in hidden["csv"]
    assert hidden["player_p2"]["results"] == []
    assert all(line["label"] != "p2" for line in hidden["charts"]["top"])
    assert sum(hidden["charts"]["distribution"]["counts"]) == 5
    page = client.get(page_url(board.slug)).content.decode()
    assert "p2" not in page.split("leaderboard-title")[1]  # not in the (cached) board
    cards = client.get(reverse("challenges:list")).content.decode()
    assert "<dt>Ranked players</dt><dd>5</dd>" in cards

    # Only admins undo.
    refused = staff_api.post(_hide_url(board, "p2", "unhide"), {"reason": "x"}, format="json")
    assert refused.status_code == 403
    assert (
        admin_api.post(
            _hide_url(board, "p2", "unhide"), {"reason": "appeal upheld"}, format="json"
        ).status_code
        == 200
    )
    after = snapshot(client, board)
    assert after == before  # the whole exported leaderboard, the charts, the API: identical


def test_hide_an_attempt_the_next_best_takes_its_place(board, client, staff_api, admin_api):
    before = snapshot(client, board)
    best = Attempt.objects.get(player__external_id="p1", elapsed_ms=100)
    response = staff_api.post(
        reverse("attempt-hide", args=[best.pk]), {"reason": "leak"}, format="json"
    )
    assert response.status_code == 200, response.content
    rows = snapshot(client, board)["json"]["results"]
    assert rows[-1]["player"] == "p1" and rows[-1]["score"] == 1000.0  # its second attempt
    assert rows[0]["player"] == "p2" and rows[0]["rank"] == 1
    assert (
        admin_api.post(
            reverse("attempt-unhide", args=[best.pk]), {"reason": "ok"}, format="json"
        ).status_code
        == 200
    )
    assert snapshot(client, board) == before


def test_hidden_stays_hidden_through_ingestion_and_a_rescore(
    board, client, staff_api, integration_api
):
    staff_api.post(_hide_url(board, "p1"), {"reason": "bot"}, format="json")
    faster = {**SEED_ATTEMPT, "player": "p1", "elapsed_ms": 1}
    assert integration_api.post(attempts_url(board.pk), faster, format="json").status_code == 201
    assert "p1" not in [p for _, p in _ranks(snapshot(client, board))]
    assert staff_api.post(rescore_url(board.pk)).status_code == 202
    assert "p1" not in [p for _, p in _ranks(snapshot(client, board))]


def test_a_hidden_player_in_a_long_list_stays_hidden(board, client, staff_api, integration_api):
    """A list of many players asks first whether anyone is hidden (exclusions.py): one
    hidden player among fifty is still left out, and the others are ranked."""
    staff_api.post(_hide_url(board, "p1"), {"reason": "bot"}, format="json")
    body = [{**SEED_ATTEMPT, "player": f"n{i}", "elapsed_ms": 50 + i} for i in range(49)]
    body.append({**SEED_ATTEMPT, "player": "p1", "elapsed_ms": 1})
    assert integration_api.post(attempts_url(board.pk), body, format="json").status_code == 201
    ranked = [p for _, p in _ranks(snapshot(client, board))]
    assert "p1" not in ranked and ranked[:2] == ["n0", "n1"]


def test_hide_from_all_challenges(db, integration_api, staff_api, admin_api, client):
    one, two = (
        make_challenge(scoring_strategy="fastest"),
        make_challenge(scoring_strategy="fastest"),
    )
    for c in (one, two):
        integration_api.post(
            attempts_url(c.pk),
            [{**SEED_ATTEMPT, "player": p} for p in ("cheat", "fair")],
            format="json",
        )
    body = {"reason": "banned", "all_challenges": True}
    assert staff_api.post(_hide_url(one, "cheat"), body, format="json").status_code == 200
    for c in (one, two):
        players = [r["player"] for r in client.get(leaderboard_url(c.pk)).json()["results"]]
        assert players == ["fair"]
    # An unhide of one challenge does not undo the hide from all.
    response = admin_api.post(_hide_url(two, "cheat", "unhide"), {"reason": "x"}, format="json")
    assert response.status_code == 409
    assert admin_api.post(_hide_url(two, "cheat", "unhide"), body, format="json").status_code == 200
    for c in (one, two):
        assert client.get(leaderboard_url(c.pk)).json()["count"] == 2


@pytest.mark.parametrize(
    ("body", "field"), [({}, "reason"), ({"reason": ""}, "reason"), ({"reason": 5}, "reason")]
)
def test_a_reason_is_required(board, staff_api, body, field):
    response = staff_api.post(_hide_url(board, "p1"), body, format="json")
    assert response.status_code == 400 and field in response.json()
    assert not Player.objects.get(external_id="p1").hides.exists()


def test_who_may_hide(board, anon_api, integration_api, staff_api):
    assert anon_api.post(_hide_url(board, "p1"), {"reason": "x"}, format="json").status_code in (
        401,
        403,
    )
    assert (
        integration_api.post(_hide_url(board, "p1"), {"reason": "x"}, format="json").status_code
        == 403
    )
    assert (
        staff_api.post(_hide_url(board, "nobody"), {"reason": "x"}, format="json").status_code
        == 404
    )
    assert staff_api.post(_hide_url(board, "p1"), {"reason": "x"}, format="json").status_code == 200
    again = staff_api.post(_hide_url(board, "p1"), {"reason": "x"}, format="json")
    assert again.status_code == 409 and "already hidden" in again.json()["detail"]
    assert AuditEvent.objects.filter(kind="player_hide").count() == 1


def test_the_service_refuses_what_it_cannot_do(board):
    player = Player.objects.get(external_id="p1")
    with pytest.raises(moderation.ModerationError):
        moderation.player_unhide(player=player, challenge=board, reason="x")
    with pytest.raises(moderation.ModerationError):
        moderation.player_hide(player=player, challenge=board, reason="   ")


def test_metrics_leave_out_hidden_and_practice(db):
    """The aggregates read the scores table, not the entries: filtered the same way."""
    from challenges.leaderboards import exclusions
    from challenges.models import AttemptScore

    challenge = make_challenge(scoring_strategy="fastest")
    from tests.factories import attempt_input, record

    record(challenge, *[attempt_input(p, elapsed_ms=10) for p in ("a", "b", "c")])
    moderation.player_hide(
        player=Player.objects.get(external_id="a"), challenge=challenge, reason="x"
    )
    moderation.attempt_set_hidden(
        attempt=Attempt.objects.get(player__external_id="b"), hidden=True, reason="x"
    )
    scores = AttemptScore.objects.filter(version=challenge.active_version_id)
    kept = exclusions.public_scores(scores, challenge_id=challenge.pk)
    assert [s.player.external_id for s in kept] == ["c"]
