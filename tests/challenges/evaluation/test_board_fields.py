"""The evaluation board's challenge fields: defaults, the API (create, update, read, a 400
naming the field), the admin form's errors, and export/import."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from challenges.models import Challenge
from tests.challenges.admin.admin_pages import field_errors, page_data
from tests.factories import counts, make_challenge
from tests.urls import challenges_url, change_url, detail_url

pytestmark = pytest.mark.django_db

BOARD = {
    "board": "aggregate",
    "aggregate": "sum",
    "min_attempts": 3,
    "ci_level": 0.9,
    "bootstrap_samples": 500,
    "sample_key": "question_id",
    "slice_by": "topic",
}


def test_defaults_are_todays_boards(admin_api):
    resp = admin_api.post(challenges_url(), {"name": "Plain"}, format="json")
    assert resp.status_code == 201, resp.content
    body = resp.json()
    assert {k: body[k] for k in BOARD} == {
        "board": "best_attempt",
        "aggregate": "mean",
        "min_attempts": 1,
        "ci_level": 0.95,
        "bootstrap_samples": 1000,
        "sample_key": "id",
        "slice_by": None,
    }


def test_create_update_and_read_the_fields(admin_api, anon_api):
    resp = admin_api.post(challenges_url(), {"name": "Evals", **BOARD}, format="json")
    assert resp.status_code == 201, resp.content
    pk = resp.json()["id"]
    assert {k: resp.json()[k] for k in BOARD} == BOARD
    resp = admin_api.patch(detail_url(pk), {"ci_level": 0.99, "slice_by": ""}, format="json")
    assert resp.status_code == 200, resp.content
    challenge = Challenge.objects.get(pk=pk)
    assert (challenge.ci_level, challenge.slice_by, challenge.aggregate) == (0.99, None, "sum")
    assert challenge.versions.count() == 1  # how the board ranks is not a scoring change
    public = anon_api.get(detail_url(pk)).json()
    assert "sample_key" not in public and "board" not in public  # staff's, like the setup


@pytest.mark.parametrize(
    "field,value",
    [
        ("board", "median_attempt"),
        ("aggregate", "median"),
        ("min_attempts", 0),
        ("min_attempts", "2"),
        ("ci_level", 1.0),
        ("ci_level", 0.2),
        ("ci_level", "0.95"),
        ("ci_level", True),
        ("bootstrap_samples", 99),
        ("bootstrap_samples", 10_001),
        ("sample_key", "x" * 65),
        ("sample_key", None),
        ("slice_by", 7),
    ],
)
def test_bad_values_are_a_400_naming_the_field_and_write_nothing(admin_api, field, value):
    before = counts()
    resp = admin_api.post(challenges_url(), {"name": "Bad", field: value}, format="json")
    assert resp.status_code == 400, resp.content
    assert field in resp.json()
    assert counts() == before
    challenge = make_challenge()
    resp = admin_api.patch(detail_url(challenge.pk), {field: value}, format="json")
    assert resp.status_code == 400 and field in resp.json()


def test_the_service_refuses_what_the_serializer_would(db):
    from scoring.services import SetupInvalid

    with pytest.raises(SetupInvalid) as caught:
        make_challenge(sample_key=" id ", ci_level=1.5)
    assert set(caught.value.errors) == {"sample_key", "ci_level"}


def test_admin_form_shows_the_errors_and_saves_good_values(admin_client):
    challenge = make_challenge()
    url = change_url(challenge)
    bad = page_data(admin_client, url, board="aggregate", ci_level="1.5", bootstrap_samples="5")
    errors = field_errors(admin_client.post(url, bad))
    assert set(errors) >= {"ci_level", "bootstrap_samples"}
    good = page_data(
        admin_client, url, board="aggregate", ci_level="0.9", sample_key="qid", slice_by=""
    )
    response = admin_client.post(url, good)
    assert response.status_code == 302, field_errors(response)
    challenge.refresh_from_db()
    assert (challenge.board, challenge.ci_level, challenge.sample_key) == ("aggregate", 0.9, "qid")
    assert challenge.slice_by is None


def test_export_and_import_carry_the_board(tmp_path):
    challenge = make_challenge(**BOARD)
    path = tmp_path / "c.jsonl"
    call_command("export_challenge", challenge.slug, "-o", str(path), stderr=StringIO())
    first = json.loads(path.read_text().splitlines()[0])
    assert {k: first[k] for k in BOARD} == BOARD
    call_command("import_challenge", str(path), "--slug", "copy", stdout=StringIO())
    copy = Challenge.objects.get(slug="copy")
    assert {k: getattr(copy, k) for k in BOARD} == BOARD


def test_admin_empty_sample_key_means_unpaired_and_empty_numbers_the_defaults(admin_client):
    challenge = make_challenge()
    url = change_url(challenge)
    data = page_data(admin_client, url, sample_key="", min_attempts="", bootstrap_samples="")
    response = admin_client.post(url, data)
    assert response.status_code == 302, field_errors(response)
    challenge.refresh_from_db()
    assert (challenge.sample_key, challenge.min_attempts, challenge.bootstrap_samples) == (
        "",
        1,
        1000,
    )
