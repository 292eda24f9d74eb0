"""The board freeze against an independent brute force: the public's board (API, JSON
export, page, cards, charts) is the standings of the attempts *recorded* before
``freeze_at`` under the active version — through ingestion after the freeze (backdated
attempts included), a rescore during the freeze, "make active again" during the freeze,
moderation during the freeze, and the reveal. Staff see the live board throughout."""

from __future__ import annotations

import json
import random
import re
import time
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from challenges.ingestion import moderation, services
from challenges.models import AuditEvent, Challenge, Player
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from challenges.setup import versions
from tests.factories import T0, attempt_input, make_challenge, public_score_rows
from tests.urls import detail_url, leaderboard_url, page_url, reveal_url

pytestmark = pytest.mark.django_db


def reference(challenge: Challenge, *, before=None) -> list[tuple[int, str, float]]:
    """Brute force: every score row of the active version, best per player, ranked."""
    scores = public_score_rows(challenge, before=before)
    best = {}
    for s in scores.select_related("player"):
        key = (s.sort_key, s.created_at, s.attempt_id)
        if s.player_id not in best or key < best[s.player_id][0]:
            best[s.player_id] = (key, s.player.external_id, s.score)
    ordered = sorted(best.values())
    out, rank = [], 0
    for place, (key, player, score) in enumerate(ordered, start=1):
        if place == 1 or key[:2] != ordered[place - 2][0][:2]:
            rank = place
        out.append((rank, player, score))
    return out


def api_board(api, challenge) -> list[tuple[int, str, float]]:
    body = api.get(leaderboard_url(challenge.pk), {"limit": 500}).json()
    rows = [(r["rank"], r["player"], r["score"]) for r in body["results"]]
    assert body["count"] == len(rows)
    return rows


def export_board(client, challenge) -> list[tuple[int, str, float]]:
    response = client.get(page_url(challenge.slug, "export-json"))
    body = json.loads(b"".join(response.streaming_content))
    return [(r["rank"], r["player"], r["score"]) for r in body["results"]]


def page_players(client, challenge) -> list[str]:
    html = client.get(page_url(challenge.slug)).content.decode()
    return re.findall(r'<th scope="row" class="col-name">(?:<a [^>]*>)?([^<]*)', html)


def check_public(anon_api, client, challenge, expected) -> None:
    assert api_board(anon_api, challenge) == expected
    assert export_board(client, challenge) == expected
    assert page_players(client, challenge) == [p for _, p, _ in expected][:50]


def burst(rng, challenge, players, *, created=None) -> None:
    inputs = [
        attempt_input(
            p,
            elapsed_ms=rng.randrange(100, 5000, 100),  # coarse: ties happen
            tokens_total=rng.randrange(10, 500, 10),
            created_at=created if created is not None else rng.randrange(0, 600, 60),
        )
        for p in players
    ]
    services.attempts_record(challenge=challenge, inputs=inputs)


@pytest.mark.parametrize("seed", [1, 2])
def test_frozen_board_equals_the_brute_force_throughout(
    seed, anon_api, staff_api, admin_api, client
):
    rng = random.Random(seed)
    challenge = make_challenge(scoring_strategy="fastest", slug=f"frozen-{seed}")
    v1 = challenge.active_version
    burst(rng, challenge, [f"p{i:02d}" for i in range(30)] + ["p01", "p02", "p03"])
    before_freeze = reference(challenge)
    freeze_at = timezone.now()
    setup_services.challenge_update(challenge=challenge, data={"freeze_at": freeze_at})
    time.sleep(0.01)
    check_public(anon_api, client, challenge, before_freeze)

    # Ingestion after the freeze: better attempts, new players, and attempts whose
    # client-given created_at is long before the freeze. None reach the public board.
    burst(rng, challenge, [f"p{i:02d}" for i in range(0, 30, 2)] + ["late1", "late2"])
    burst(rng, challenge, ["p05", "late3"], created=-3600)
    frozen = reference(challenge, before=freeze_at)
    assert frozen == before_freeze
    assert reference(challenge) != frozen  # the live board moved on
    check_public(anon_api, client, challenge, frozen)
    assert api_board(staff_api, challenge) == reference(challenge)  # staff: live
    # No count, leader or activity after the freeze on the card, no chart point after it.
    cards = client.get(reverse("challenges:list")).content.decode()
    assert f"<dt>Ranked players</dt><dd>{len(frozen)}</dd>" in cards
    charts = client.get(page_url(challenge.slug, "charts")).json()
    assert sum(charts["distribution"]["counts"]) == len(frozen)
    late_points = {"late1", "late2", "late3"} & {line["label"] for line in charts["top"]}
    assert not late_points
    page = client.get(page_url(challenge.slug)).content.decode()
    assert 'data-frozen="1"' in page

    # A rescore under a new setup during the freeze: the frozen board follows the new
    # version, from the attempts before the freeze only.
    update = setup_services.challenge_update(
        challenge=challenge, data={"scoring_strategy": "fewest_tokens"}
    )
    rescoring.job_run_inline(job=update.job)
    challenge.refresh_from_db()
    assert challenge.active_version_id == update.new_version.pk
    frozen_v2 = reference(challenge, before=freeze_at)
    assert frozen_v2 != frozen
    check_public(anon_api, client, challenge, frozen_v2)

    # "Make active again" during the freeze: back to version 1's frozen standings.
    versions.version_activate(version=v1)
    challenge.refresh_from_db()
    assert challenge.active_version_id == v1.pk
    assert reference(challenge, before=freeze_at) == frozen
    check_public(anon_api, client, challenge, frozen)

    # Moderation during the freeze: the frozen board leaves the player out, then not.
    leader = Player.objects.get(external_id=frozen[0][1])
    moderation.player_hide(player=leader, challenge=challenge, reason="x")
    check_public(anon_api, client, challenge, reference(challenge, before=freeze_at))
    moderation.player_unhide(player=leader, challenge=challenge, reason="x")
    check_public(anon_api, client, challenge, frozen)

    # The reveal: the public sees the live board.
    assert staff_api.post(reveal_url(challenge.pk)).status_code == 403
    response = admin_api.post(reveal_url(challenge.pk))
    assert response.status_code == 200 and response.json()["revealed_at"]
    check_public(anon_api, client, challenge, reference(challenge))
    assert admin_api.post(reveal_url(challenge.pk)).status_code == 409
    assert AuditEvent.objects.filter(kind="freeze").count() == 1
    assert AuditEvent.objects.get(kind="reveal").actor_name == "admin"


def test_before_freeze_at_the_board_is_live(anon_api, admin_api):
    challenge = make_challenge(scoring_strategy="fastest")
    setup_services.challenge_update(
        challenge=challenge, data={"freeze_at": timezone.now() + timedelta(hours=1)}
    )
    services.attempts_record(challenge=challenge, inputs=[attempt_input("a", elapsed_ms=5)])
    assert [p for _, p, _ in api_board(anon_api, challenge)] == ["a"]
    response = admin_api.post(reveal_url(challenge.pk))
    assert response.status_code == 409 and "not begun" in response.json()["detail"]


def test_a_new_freeze_after_a_reveal(anon_api, admin_api):
    challenge = make_challenge(scoring_strategy="fastest")
    services.attempts_record(challenge=challenge, inputs=[attempt_input("a", elapsed_ms=5)])
    first = timezone.now()
    setup_services.challenge_update(challenge=challenge, data={"freeze_at": first})
    time.sleep(0.01)
    services.attempts_record(challenge=challenge, inputs=[attempt_input("b", elapsed_ms=1)])
    assert [p for _, p, _ in api_board(anon_api, challenge)] == ["a"]
    admin_api.post(reveal_url(challenge.pk))
    assert [p for _, p, _ in api_board(anon_api, challenge)] == ["b", "a"]
    # Moving freeze_at starts a new freeze (revealed_at cleared).
    response = admin_api.patch(
        detail_url(challenge.pk), {"freeze_at": T0.isoformat()}, format="json"
    )
    assert response.status_code == 200 and response.json()["revealed_at"] is None
    assert api_board(anon_api, challenge) == []  # nothing was recorded before T0
