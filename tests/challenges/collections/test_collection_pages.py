"""The public collection page (one column per member challenge, pages of 50, 404s) and
the admin of collections (members in order, audited saves and deletions)."""

from __future__ import annotations

import re

import pytest

from challenges.collections import services as collection_services
from challenges.ingestion import services
from challenges.models import AuditEvent, Collection
from tests.factories import attempt_input, make_challenge
from tests.urls import admin_url, collection_page_url

pytestmark = pytest.mark.django_db


def _season(strategy="fewest_tokens_total", players=3):
    a = make_challenge(name="Alpha", scoring_strategy="fewest_tokens")
    b = make_challenge(name="Beta", scoring_strategy="fastest")
    services.attempts_record(
        challenge=a,
        inputs=[attempt_input(f"p{i}", tokens_total=10 + i) for i in range(players)],
    )
    services.attempts_record(
        challenge=b, inputs=[attempt_input("p1", elapsed_ms=2500, tokens_total=7)]
    )
    collection = collection_services.collection_create(
        name="Season <1>",
        description="**Bold** <script>alert(1)</script>",
        strategy=strategy,
        challenge_ids=[a.pk, b.pk],
    )
    return collection, a, b


def _rows(html: str) -> list[str]:
    return re.findall(r"<tr>(.*?)</tr>", html.split("<tbody>")[1], flags=re.S)


def test_the_page_shows_a_column_per_challenge(client):
    collection, a, b = _season()
    response = client.get(collection_page_url(collection.slug))
    assert response.status_code == 200
    html = response.content.decode()
    assert "<strong>Bold</strong>" in html and "<script>alert" not in html
    assert "Season &lt;1&gt;" in html
    assert f'href="/challenges/{a.slug}/">Alpha</a>' in html
    assert f'href="/challenges/{b.slug}/">Beta</a>' in html
    rows = _rows(html)
    assert len(rows) == 3
    # p1 completed both (11 + 7 tokens) and ranks first; p0 and p2 completed one.
    assert ">p1</th>" in rows[0] and "18 tokens" in rows[0] and "2 / 2" in rows[0]
    assert "2.500 s" in rows[0] and f"/challenges/{b.slug}/players/p1/" in rows[0]
    assert ">p0</th>" in rows[1] and "1 / 2" in rows[1] and 'class="col-score missing"' in rows[1]
    assert ">p2</th>" in rows[2]


def test_a_cell_that_does_not_count_says_so(client):
    collection, a, _ = _season(strategy="highest_avg_rating")
    services.attempts_record(challenge=a, inputs=[attempt_input("p9", tokens_total=1, rating=8)])
    html = client.get(collection_page_url(collection.slug)).content.decode()
    rows = _rows(html)
    assert len(rows) == 1 and ">p9</th>" in rows[0] and "8 / 10" in rows[0]


def test_pages_of_fifty_and_404s(client):
    collection, _, _ = _season(players=51)
    url = collection_page_url(collection.slug)
    assert len(_rows(client.get(url).content.decode())) == 50
    second = client.get(url, {"page": 2}).content.decode()
    assert len(_rows(second)) == 1 and "page 2 of 2" in second
    past = client.get(url, {"page": 3})
    assert past.status_code == 404 and "2 pages" in past.content.decode()
    assert client.get(url, {"page": "x"}).status_code == 200  # not a number: page 1
    missing = client.get(collection_page_url("no-such-season"))
    assert missing.status_code == 404 and "no collection" in missing.content.decode()


def test_an_empty_collection_page(client):
    a = make_challenge()
    collection = collection_services.collection_create(name="Empty", challenge_ids=[a.pk])
    html = client.get(collection_page_url(collection.slug)).content.decode()
    assert "No player has a counted attempt" in html


def _admin_post(admin_client, url, members, **fields):
    data = {
        "name": "Admin season",
        "slug": "admin-season",
        "description": "",
        "strategy": "sum",
        "members-TOTAL_FORMS": str(len(members)),
        "members-INITIAL_FORMS": "0",
        "members-MIN_NUM_FORMS": "1",
        "members-MAX_NUM_FORMS": "50",
        **fields,
    }
    for i, (position, challenge) in enumerate(members):
        data[f"members-{i}-position"] = str(position)
        data[f"members-{i}-challenge"] = str(challenge.pk)
    return admin_client.post(url, data)


def test_the_admin_creates_edits_and_deletes_audited(admin_client):
    a, b = make_challenge(), make_challenge()
    response = _admin_post(admin_client, admin_url("collection", "add"), [(1, b), (2, a)])
    assert response.status_code == 302, response.content.decode()[:3000]
    collection = Collection.objects.get()
    assert list(collection.members.values_list("challenge_id", flat=True)) == [b.pk, a.pk]
    created = AuditEvent.objects.get(kind="collection_create")
    assert created.via == "admin" and created.after["challenges"] == [b.pk, a.pk]

    change = admin_url("collection", "change", collection.pk)
    assert admin_client.get(change).status_code == 200
    listing = admin_client.get(admin_url("collection")).content.decode()
    assert "/collections/admin-season/" in listing
    admin_client.post(admin_url("collection", "delete", collection.pk), {"post": "yes"})
    assert not Collection.objects.exists()
    deleted = AuditEvent.objects.get(kind="collection_delete")
    assert deleted.before["slug"] == "admin-season"


def test_the_admin_refuses_no_member_and_a_repeated_one(admin_client):
    a = make_challenge()
    none = _admin_post(admin_client, admin_url("collection", "add"), [])
    assert none.status_code == 200 and not Collection.objects.exists()
    twice = _admin_post(admin_client, admin_url("collection", "add"), [(1, a), (2, a)])
    assert twice.status_code == 200 and not Collection.objects.exists()
    assert not AuditEvent.objects.filter(kind__startswith="collection").exists()
