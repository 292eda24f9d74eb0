"""The collections API: who may create, what a bad body gets (a 400 naming the field,
nothing written), unknown ids, paging like a challenge board, ?player=, the schema, and
the audit trail."""

from __future__ import annotations

import pytest

from challenges.ingestion import services
from challenges.models import AuditEvent, Collection, CollectionMember
from tests.factories import attempt_input, make_challenge
from tests.urls import (
    collection_board_url,
    collection_url,
    collections_url,
    schema_url,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def pair():
    return make_challenge(scoring_strategy="fastest"), make_challenge(scoring_strategy="fastest")


def body(pair, **changes):
    data = {"name": "Spring season", "challenges": [c.pk for c in pair], "strategy": "sum"}
    data.update(changes)
    return data


def test_admin_creates_in_order_and_the_public_reads(pair, admin_api, anon_api):
    a, b = pair
    response = admin_api.post(collections_url(), body(pair, challenges=[b.pk, a.pk]), "json")
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["slug"] == "spring-season" and created["strategy"] == "sum"
    assert [c["id"] for c in created["challenges"]] == [b.pk, a.pk]
    assert anon_api.get(collection_url(created["id"])).json() == created
    assert anon_api.get(collections_url()).json() == [created]
    event = AuditEvent.objects.get(kind="collection_create")
    assert event.actor_name == "admin" and event.via == "api"
    assert event.after["challenges"] == [b.pk, a.pk]


@pytest.mark.parametrize(
    "client_name, status", [("anon_api", 401), ("integration_api", 403), ("staff_api", 403)]
)
def test_only_admins_create(pair, request, client_name, status):
    api = request.getfixturevalue(client_name)
    assert api.post(collections_url(), body(pair), "json").status_code == status
    assert not Collection.objects.exists()


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"challenges": []}, "challenges"),
        ({"challenges": [999_999]}, "challenges"),
        ({"challenges": "1,2"}, "challenges"),
        ({"challenges": [True]}, "challenges"),
        ({"challenges": [1.5]}, "challenges"),
        ({"challenges": [2**70]}, "challenges"),
        ({"challenges": list(range(1, 60))}, "challenges"),
        ({"strategy": "median"}, "strategy"),
        ({"name": ""}, "name"),
        ({"name": 7}, "name"),
        ({"slug": "not a slug"}, "slug"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(pair, admin_api, changes, field):
    response = admin_api.post(collections_url(), body(pair, **changes), "json")
    assert response.status_code == 400, response.content
    assert field in response.json()
    assert not Collection.objects.exists() and not CollectionMember.objects.exists()


def test_a_repeated_challenge_and_a_taken_slug_are_400s(pair, admin_api):
    a, _ = pair
    response = admin_api.post(collections_url(), body(pair, challenges=[a.pk, a.pk]), "json")
    assert response.status_code == 400 and "repeated" in response.json()["challenges"][0]
    assert admin_api.post(collections_url(), body(pair, slug="s"), "json").status_code == 201
    again = admin_api.post(collections_url(), body(pair, slug="s"), "json")
    assert again.status_code == 400 and "slug" in again.json()
    assert Collection.objects.count() == 1


@pytest.mark.parametrize("pk", ["999999", "99999999999999999999999"])
def test_unknown_ids_are_404s(anon_api, pk):
    assert anon_api.get(f"/api/collections/{pk}/").status_code == 404
    assert anon_api.get(f"/api/collections/{pk}/leaderboard/").status_code == 404


def test_no_update_or_delete_over_the_api(pair, admin_api):
    pk = admin_api.post(collections_url(), body(pair), "json").json()["id"]
    assert admin_api.patch(collection_url(pk), {"name": "x"}, "json").status_code == 405
    assert admin_api.delete(collection_url(pk)).status_code == 405
    assert Collection.objects.get().name == "Spring season"


def test_the_board_pages_like_a_challenge_board(pair, admin_api, anon_api):
    a, b = pair
    services.attempts_record(
        challenge=a, inputs=[attempt_input(f"p{i}", elapsed_ms=100 + i) for i in range(7)]
    )
    services.attempts_record(challenge=b, inputs=[attempt_input("p6", elapsed_ms=1)])
    pk = admin_api.post(collections_url(), body(pair, strategy="fastest_total"), "json").json()[
        "id"
    ]
    url = collection_board_url(pk)
    whole = anon_api.get(url).json()
    assert whole["count"] == 7 and whole["strategy"] == "fastest_total"
    assert [r["player"] for r in whole["results"]] == ["p6", "p0", "p1", "p2", "p3", "p4", "p5"]
    first = whole["results"][0]
    assert first["completed"] == 2 and first["score"] == 107.0
    assert [c["challenge"] for c in first["challenges"]] == [a.pk, b.pk]
    assert [c["rank"] for c in first["challenges"]] == [7, 1]
    page = anon_api.get(url, {"limit": 2, "offset": 3}).json()
    assert page["count"] == 7 and page["results"] == whole["results"][3:5]
    assert anon_api.get(url, {"player": "p3"}).json()["results"] == [whole["results"][4]]
    assert anon_api.get(url, {"player": "nobody"}).json()["results"] == []
    for bad in ({"limit": 0}, {"limit": 501}, {"limit": "x"}, {"offset": -1}, {"version": 1}):
        response = anon_api.get(url, bad)
        assert response.status_code == 400 and set(bad) <= set(response.json())


def test_the_routes_are_in_the_schema(anon_api):
    paths = anon_api.get(schema_url(), {"format": "json"}).json()["paths"]
    for path in (
        "/api/collections/",
        "/api/collections/{id}/",
        "/api/collections/{id}/leaderboard/",
    ):
        assert path in paths


def test_reads_cost_the_same_queries_whatever_the_players(pair, admin_api, anon_api):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    pk = admin_api.post(collections_url(), body(pair), "json").json()["id"]

    def queries(players: int) -> int:
        for c in pair:
            services.attempts_record(
                challenge=c,
                inputs=[attempt_input(f"q{players}-{i}", elapsed_ms=i + 1) for i in range(players)],
            )
        anon_api.get(collection_board_url(pk))  # rankings computed, as any first read
        with CaptureQueriesContext(connection) as seen:
            assert anon_api.get(collection_board_url(pk)).status_code == 200
        return len(seen)

    assert queries(3) == queries(60)
