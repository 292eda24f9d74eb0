"""Names on a frozen board: the public sees every player named as they were at
``freeze_at`` until the reveal — a rename carried by a post-freeze attempt, or made by an
admin after the freeze, shows nowhere public (page, fragment, search, API, exports, the
player page, the card's leader, the charts, a version's board, an aggregate board);
staff see the names as they are; after the reveal everyone does. A rename before the
freeze shows at once."""

from __future__ import annotations

import csv
import io
import json
import re
import time

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from challenges.leaderboards import evaluation, freeze, kept, ranking
from challenges.models import LeaderboardRanking, Player
from challenges.setup import services as setup_services
from tests.factories import attempt_input, make_challenge, record
from tests.urls import (
    admin_url,
    leaderboard_url,
    page_url,
    player_url,
    reveal_url,
    version_page_url,
)

pytestmark = pytest.mark.django_db


def _freeze(challenge) -> None:
    setup_services.challenge_update(challenge=challenge, data={"freeze_at": timezone.now()})
    time.sleep(0.01)  # what follows is recorded after the freeze
    challenge.refresh_from_db()


@pytest.fixture
def frozen():
    """ada leads bob on a board frozen now; their names at the freeze: Ada and Bob."""
    challenge = make_challenge(scoring_strategy="fastest", name="Names", slug="names")
    record(
        challenge,
        attempt_input("ada", player_name="Ada", elapsed_ms=100),
        attempt_input("bob", player_name="Bob", elapsed_ms=200),
    )
    _freeze(challenge)
    return challenge


def _board_names(html: str, slug: str) -> dict[str, str]:
    """{external id: name} of the board's rows in a page or fragment."""
    found = re.findall(rf'<a href="/challenges/{slug}/players/([^/"]+)/">([^<]*)</a></th>', html)
    return dict(found)


def _csv_names(response) -> dict[str, str]:
    text = b"".join(response.streaming_content).decode()
    return {r["player"]: r["display_name"] for r in csv.DictReader(io.StringIO(text))}


def _json_names(response) -> dict[str, str]:
    content = response.getvalue() if not response.streaming else b"".join(response)
    body = json.loads(content)
    return {r["player"]: r["display_name"] for r in body["results"]}


def _player_name(client, slug: str, external_id: str) -> str:
    html = client.get(player_url(slug, external_id)).content.decode()
    return re.search(r'<h1 class="player-name">([^<]*)</h1>', html).group(1)


def names_shown(client, api, challenge, external_id: str) -> dict[str, str | None]:
    """The name each output shows for a player (``client``/``api``: whose reads)."""
    slug = challenge.slug
    shown: dict[str, str | None] = {}
    shown["page"] = _board_names(client.get(page_url(slug)).content.decode(), slug).get(external_id)
    shown["fragment"] = _board_names(
        client.get(page_url(slug, "board")).content.decode(), slug
    ).get(external_id)
    body = api.get(leaderboard_url(challenge.pk)).json()
    shown["api"] = {r["player"]: r["display_name"] for r in body["results"]}.get(external_id)
    one = api.get(leaderboard_url(challenge.pk), {"player": external_id}).json()["results"]
    shown["api_player"] = one[0]["display_name"] if one else None
    version = api.get(leaderboard_url(challenge.pk), {"version": 1}).json()["results"]
    shown["api_version"] = {r["player"]: r["display_name"] for r in version}.get(external_id)
    shown["version_page"] = _board_names(
        client.get(version_page_url(slug, 1)).content.decode(), slug
    ).get(external_id)
    shown["csv"] = _csv_names(client.get(page_url(slug, "export-csv"))).get(external_id)
    shown["json"] = _json_names(client.get(page_url(slug, "export-json"))).get(external_id)
    shown["player_page"] = _player_name(client, slug, external_id)
    return shown


def _leader(client) -> str:
    html = client.get("/challenges/").content.decode()
    return re.search(r"<dt>Leader</dt><dd>([^<]*) <span", html).group(1)


def _chart_labels(client, challenge) -> list[str]:
    return [line["label"] for line in client.get(page_url(challenge.slug, "charts")).json()["top"]]


def _search(client, challenge, text: str) -> dict[str, str]:
    slug = challenge.slug
    html = client.get(page_url(slug), {"q": text}).content.decode()
    return _board_names(html, slug)


def _everywhere(name: str) -> dict[str, str]:
    return dict.fromkeys(
        (
            "page",
            "fragment",
            "api",
            "api_player",
            "api_version",
            "version_page",
            "csv",
            "json",
            "player_page",
        ),
        name,
    )


def test_a_post_freeze_attempt_does_not_rename_a_ranked_player_for_the_public(
    frozen, client, anon_api, staff_client, staff_api, admin_api
):
    assert names_shown(client, anon_api, frozen, "ada") == _everywhere("Ada")
    # A worse attempt after the freeze, carrying a new name: the live board renames ada.
    record(frozen, attempt_input("ada", player_name="Ada Lovelace", elapsed_ms=900))
    assert Player.objects.get(external_id="ada").display_name == "Ada Lovelace"

    assert names_shown(client, anon_api, frozen, "ada") == _everywhere("Ada")
    assert _leader(client) == "Ada"
    assert _chart_labels(client, frozen) == ["Ada", "Bob"]
    assert _search(client, frozen, "ada") == {"ada": "Ada"}
    assert _search(client, frozen, "love") == {}  # the new name is not on the frozen board
    assert _search(client, frozen, "LOVELACE") == {}

    # Staff read the live board: the name as it is.
    assert names_shown(staff_client, staff_api, frozen, "ada") == _everywhere("Ada Lovelace")
    assert _leader(staff_client) == "Ada Lovelace"
    assert _chart_labels(staff_client, frozen) == ["Ada Lovelace", "Bob"]
    assert _search(staff_client, frozen, "love") == {"ada": "Ada Lovelace"}

    # The reveal: the public sees the name as it is.
    assert admin_api.post(reveal_url(frozen.pk)).status_code == 200
    frozen.refresh_from_db()
    assert names_shown(client, anon_api, frozen, "ada") == _everywhere("Ada Lovelace")
    assert _leader(client) == "Ada Lovelace"
    assert _chart_labels(client, frozen) == ["Ada Lovelace", "Bob"]
    assert _search(client, frozen, "love") == {"ada": "Ada Lovelace"}


def test_an_admin_rename_after_the_freeze_waits_for_the_reveal(
    frozen, client, anon_api, staff_api, admin_client, admin_api
):
    bob = Player.objects.get(external_id="bob")
    url = admin_url("player", "change", bob.pk)
    response = admin_client.post(url, {"external_id": "bob", "display_name": "Robert"})
    assert response.status_code == 302
    assert Player.objects.get(external_id="bob").display_name == "Robert"
    assert names_shown(client, anon_api, frozen, "bob") == _everywhere("Bob")
    assert _chart_labels(client, frozen) == ["Ada", "Bob"]
    assert _search(client, frozen, "rob") == {}
    assert _search(client, frozen, "bo") == {"bob": "Bob"}
    body = staff_api.get(leaderboard_url(frozen.pk)).json()
    assert [r["display_name"] for r in body["results"]] == ["Ada", "Robert"]
    # Renamed again: still the name at the freeze, and the latest after the reveal.
    admin_client.post(url, {"external_id": "bob", "display_name": "Bobby"})
    assert names_shown(client, anon_api, frozen, "bob") == _everywhere("Bob")
    admin_api.post(reveal_url(frozen.pk))
    frozen.refresh_from_db()
    assert names_shown(client, anon_api, frozen, "bob") == _everywhere("Bobby")


def test_a_rename_before_the_freeze_shows_on_the_frozen_board(client, anon_api):
    challenge = make_challenge(scoring_strategy="fastest", slug="early")
    record(challenge, attempt_input("ada", player_name="Ada", elapsed_ms=100))
    record(challenge, attempt_input("ada", player_name="Countess", elapsed_ms=500))
    _freeze(challenge)
    record(challenge, attempt_input("ada", player_name="Later", elapsed_ms=900))
    assert names_shown(client, anon_api, challenge, "ada") == _everywhere("Countess")
    assert _leader(client) == "Countess"
    assert _search(client, challenge, "count") == {"ada": "Countess"}


def test_a_rename_on_another_challenge_after_the_freeze_does_not_show(client, anon_api):
    challenge = make_challenge(scoring_strategy="fastest", slug="here")
    elsewhere = make_challenge(scoring_strategy="fastest", slug="elsewhere")
    record(challenge, attempt_input("ada", player_name="Ada", elapsed_ms=100))
    _freeze(challenge)
    record(elsewhere, attempt_input("ada", player_name="Elsewhere Ada", elapsed_ms=100))
    assert names_shown(client, anon_api, challenge, "ada") == _everywhere("Ada")


def _fragment_now(client, challenge) -> tuple[str, object]:
    minute = timezone.now().replace(second=0, microsecond=0)
    return client.get(page_url(challenge.slug, "board")).content.decode(), minute


def test_a_rename_after_the_freeze_leaves_the_public_frozen_page_as_it_was(
    frozen, client, django_capture_on_commit_callbacks
):
    """The frozen page and fragment are kept by what they show: a rename after the
    freeze changes nothing the public sees, byte for byte."""
    # Activity after the freeze shows as the freeze's time: have some before comparing.
    record(frozen, attempt_input("bob", elapsed_ms=999))
    for _ in range(3):  # relative times are worded for the minute: compare within one
        before, minute = _fragment_now(client, frozen)
        page_before = client.get(page_url(frozen.slug)).content.decode()
        record(frozen, attempt_input("bob", player_name=f"Bob {_}", elapsed_ms=999))
        after, minute_after = _fragment_now(client, frozen)
        page_after = client.get(page_url(frozen.slug)).content.decode()
        if minute == minute_after:
            break
    assert "Bob 0" not in after and ">Bob</a>" in after
    assert after == before
    assert page_after == page_before
    # Nor is the frozen board's ranking made stale (its rows are not rebuilt): only the
    # live board's, whose rows show the new name.
    board = freeze.frozen_id(frozen.active_version_id)
    token = LeaderboardRanking.objects.get(version_id=board).token
    ranking.ranking_current(version_id=frozen.active_version_id)  # the live one, current
    with django_capture_on_commit_callbacks(execute=True):  # the rename's marks run
        record(frozen, attempt_input("bob", player_name="Bob again", elapsed_ms=999))
    assert LeaderboardRanking.objects.filter(version_id=board, stale=False, token=token).exists()
    assert LeaderboardRanking.objects.get(version_id=frozen.active_version_id).stale


def test_an_aggregate_board_names_players_as_of_its_freeze(client, anon_api, staff_api):
    challenge = make_challenge(
        name="Evals names",
        slug="evals-names",
        scoring_strategy="highest_rating",
        board="aggregate",
        bootstrap_samples=100,
    )
    record(
        challenge,
        *[
            attempt_input(p, player_name=p.title(), rating=r, sample={"id": f"q{i}"})
            for p, r in (("ada", 9), ("bob", 3))
            for i in range(4)
        ],
    )
    _freeze(challenge)
    record(
        challenge, attempt_input("ada", player_name="Ada Lovelace", rating=1, sample={"id": "q9"})
    )
    evaluation.evaluation_compute(challenge_id=challenge.pk)
    challenge.refresh_from_db()
    body = anon_api.get(leaderboard_url(challenge.pk)).json()
    assert [(r["player"], r["display_name"]) for r in body["results"]] == [
        ("ada", "Ada"),
        ("bob", "Bob"),
    ]
    assert _json_names(client.get(page_url(challenge.slug, "export-json"))) == {
        "ada": "Ada",
        "bob": "Bob",
    }
    assert "Lovelace" not in client.get(page_url(challenge.slug)).content.decode()
    assert _player_name(client, challenge.slug, "ada") == "Ada"
    live = staff_api.get(leaderboard_url(challenge.pk)).json()
    assert {r["player"]: r["display_name"] for r in live["results"]}["ada"] == "Ada Lovelace"


def _queries(read) -> int:
    with CaptureQueriesContext(connection) as captured:
        read()
    return len(captured)


def test_names_as_of_the_freeze_cost_no_query_per_row(client, anon_api):
    """The frozen board's reads cost the same queries whether nobody or most of its
    players were renamed since the freeze (no query per row)."""
    challenge = make_challenge(scoring_strategy="fastest", slug="many")
    record(
        challenge,
        *[attempt_input(f"p{i:02d}", player_name=f"P{i}", elapsed_ms=i + 1) for i in range(30)],
    )
    _freeze(challenge)
    reads = {
        "api": lambda: anon_api.get(leaderboard_url(challenge.pk)),
        "fragment": lambda: client.get(page_url(challenge.slug, "board")),
        "search": lambda: client.get(page_url(challenge.slug, "board"), {"q": "P2"}),
        "csv": lambda: b"".join(client.get(page_url(challenge.slug, "export-csv"))),
        "charts": lambda: client.get(page_url(challenge.slug, "charts")),
        "cards": lambda: client.get("/challenges/"),
    }
    for read in reads.values():
        read()  # the frozen board built, the ranking current

    def cold() -> dict[str, int]:
        cache.clear()  # nothing kept: every read reads its rows and names
        kept.local_clear()
        return {name: _queries(read) for name, read in reads.items()}

    before = cold()
    record(
        challenge,
        *[attempt_input(f"p{i:02d}", player_name=f"New {i}", elapsed_ms=999) for i in range(25)],
    )
    assert cold() == before
    body = anon_api.get(leaderboard_url(challenge.pk)).json()
    assert [r["display_name"] for r in body["results"]][:3] == ["P0", "P1", "P2"]
