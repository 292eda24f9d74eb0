"""API: challenges CRUD, scoring-setup validation, versions on PATCH, and who may do what.

docs/api.md, docs/errors.md, docs/words-and-data.md ("Roles"), docs/scorers.md.
"""

from __future__ import annotations

import copy
import json

import pytest

from challenges.models import (
    Attempt,
    Challenge,
    ScoringVersion,
)
from tests.factories import (
    SEED_ATTEMPT,
    WEIGHTED_SEED,
    attempt_input,
    counts,
    make_challenge,
    record,
)
from tests.urls import attempts_url, challenges_url, detail_url, leaderboard_url

REGISTERED_WEIGHTED = "scoring.scorers.weighted:WeightedScorer"


def seed_body(**changes: object) -> dict:
    body = copy.deepcopy(WEIGHTED_SEED)
    body.update(changes)
    return body


# --- create -------------------------------------------------------------------------------
def test_seed_example_verbatim_creates_challenge_with_version_1(admin_api):
    resp = admin_api.post(challenges_url(), WEIGHTED_SEED, format="json")

    assert resp.status_code == 201, resp.content
    body = resp.json()
    assert body["name"] == "Advanced Prompt Challenge"
    assert body["slug"] == "advanced-prompt-challenge"
    assert body["scoring_strategy"] == "custom"
    assert body["scoring_plugin_id"] == "builtin.weighted_scorer"
    # The legacy alias is accepted; what is stored is the registered entrypoint.
    assert body["scoring_entrypoint"] == REGISTERED_WEIGHTED
    assert body["scoring_config"] == WEIGHTED_SEED["scoring_config"]
    assert body["is_active"] is True
    assert body["active_version"] == 1
    challenge = Challenge.objects.get(pk=body["id"])
    assert challenge.scoring_entrypoint == REGISTERED_WEIGHTED
    assert list(challenge.versions.values_list("number", flat=True)) == [1]
    assert challenge.active_version.number == 1


def test_create_fills_plugin_config_defaults(admin_api):
    resp = admin_api.post(
        challenges_url(),
        seed_body(name="Defaults", scoring_config={"rating_weight": 2.0}),
        format="json",
    )

    assert resp.status_code == 201, resp.content
    assert resp.json()["scoring_config"] == {
        "success_bonus": 100.0,
        "rating_weight": 2.0,
        "time_penalty": 1.0,
        "token_penalty": 0.01,
    }


def test_create_minimal_body_uses_defaults(admin_api):
    resp = admin_api.post(challenges_url(), {"name": "Quick Start"}, format="json")

    assert resp.status_code == 201, resp.content
    body = resp.json()
    assert body["slug"] == "quick-start"
    assert body["scoring_strategy"] == "first"
    assert body["is_active"] is True
    assert body["active_version"] == 1
    assert Challenge.objects.filter(pk=body["id"], slug="quick-start").exists()


def test_create_same_name_twice_gets_distinct_slugs(admin_api):
    first = admin_api.post(challenges_url(), {"name": "Twin"}, format="json")
    second = admin_api.post(challenges_url(), {"name": "Twin"}, format="json")

    assert first.status_code == second.status_code == 201
    assert first.json()["slug"] != second.json()["slug"]
    assert Challenge.objects.filter(name="Twin").count() == 2


def test_create_with_taken_slug_is_400_slug(admin_api):
    make_challenge(name="Taken", slug="taken")
    before = counts()

    resp = admin_api.post(challenges_url(), {"name": "Other", "slug": "taken"}, format="json")

    assert resp.status_code == 400
    assert "slug" in resp.json()
    assert counts() == before


BAD_CREATE = [
    pytest.param({"scoring_strategy": "best"}, "scoring_strategy", "best", id="unknown-strategy"),
    pytest.param({"scoring_strategy": None}, "scoring_strategy", None, id="null-strategy"),
    pytest.param(
        {"scoring_plugin_id": "nope.scorer"},
        "scoring_plugin_id",
        "nope.scorer",
        id="unregistered-plugin",
    ),
    pytest.param({"scoring_plugin_id": ""}, "scoring_plugin_id", None, id="custom-without-plugin"),
    pytest.param(
        {"scoring_entrypoint": "os:system"},
        "scoring_entrypoint",
        "os:system",
        id="entrypoint-os-system",
    ),
    pytest.param(
        {"scoring_entrypoint": "builtins:eval"},
        "scoring_entrypoint",
        "builtins:eval",
        id="entrypoint-eval",
    ),
    pytest.param(
        {"scoring_entrypoint": "madeup.module:Scorer"},
        "scoring_entrypoint",
        "madeup.module:Scorer",
        id="entrypoint-made-up",
    ),
    pytest.param(
        {"scoring_entrypoint": "scoring.scorers.weighted"},
        "scoring_entrypoint",
        None,
        id="entrypoint-no-class",
    ),
    pytest.param({"scoring_entrypoint": 5}, "scoring_entrypoint", None, id="entrypoint-not-string"),
    pytest.param({"scoring_config": [1, 2]}, "scoring_config", None, id="config-list"),
    pytest.param({"scoring_config": "{}"}, "scoring_config", None, id="config-string"),
    pytest.param(
        {"scoring_config": {"rating_weight": "high"}},
        "scoring_config",
        "rating_weight",
        id="config-wrong-type",
    ),
    pytest.param(
        {"scoring_config": {"bogus": 1}}, "scoring_config", "bogus", id="config-unknown-key"
    ),
    pytest.param(
        {"scoring_config": {"rating_weight": -1}},
        "scoring_config",
        "rating_weight",
        id="config-below-min",
    ),
    pytest.param(
        {"scoring_config": {"rating_weight": True}},
        "scoring_config",
        "rating_weight",
        id="config-bool-for-number",
    ),
    pytest.param(
        {"scoring_config": {"rating_weight": 1e10}},
        "scoring_config",
        "rating_weight",
        id="config-above-max",
    ),
    pytest.param(
        {
            "scoring_strategy": "python",
            "scoring_plugin_id": "",
            "scoring_entrypoint": "",
            "scoring_config": {},
            "scoring_code": "def compute_scores(sample):\n    return {'s': 1\n",
        },
        "scoring_code",
        "Line 2",
        id="python-syntax-error",
    ),
    pytest.param(
        {"scoring_strategy": "fastest"},
        "scoring_plugin_id",
        "fastest",
        id="builtin-with-plugin-fields",
    ),
    pytest.param({"scoring_code": "x = 1"}, "scoring_code", None, id="custom-with-code"),
    pytest.param({"name": ""}, "name", None, id="blank-name"),
    pytest.param({"name": 5}, "name", None, id="name-not-string"),
    pytest.param({"name": "x" * 201}, "name", None, id="name-too-long"),
    pytest.param({"slug": "not a slug!"}, "slug", None, id="bad-slug"),
    pytest.param({"is_active": "yes"}, "is_active", None, id="is-active-string"),
    pytest.param({"timeout_ms": 0}, "timeout_ms", None, id="timeout-zero"),
    pytest.param({"timeout_ms": 60_001}, "timeout_ms", None, id="timeout-too-big"),
    pytest.param({"metrics": {}}, "metrics", None, id="metrics-object"),
    pytest.param({"unknown_field": 1}, "unknown_field", None, id="unknown-field"),
    pytest.param({"id": 99}, "id", None, id="read-only-id"),
    pytest.param({"active_version": 3}, "active_version", None, id="read-only-active-version"),
]


@pytest.mark.parametrize(("changes", "field", "in_message"), BAD_CREATE)
def test_create_bad_input_is_400_naming_field_and_writes_nothing(
    admin_api, changes, field, in_message
):
    before = counts()

    resp = admin_api.post(challenges_url(), seed_body(**changes), format="json")

    assert resp.status_code == 400, resp.content
    errors = resp.json()
    assert field in errors, errors
    if in_message is not None:
        assert in_message in " ".join(map(str, errors[field])), errors
    assert counts() == before


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param('{"name": "Broken"', id="unterminated"),
        pytest.param('{"name": "Broken",}', id="trailing-comma"),
        pytest.param("name=Broken", id="not-json"),
        pytest.param('{"name": "Broken", "timeout_ms": NaN}', id="nan"),
    ],
)
def test_create_malformed_json_is_400_and_writes_nothing(admin_api, raw):
    before = counts()

    resp = admin_api.post(challenges_url(), data=raw, content_type="application/json")

    assert resp.status_code == 400, resp.content
    assert "detail" in resp.json()
    assert counts() == before


@pytest.mark.parametrize(
    "body", [[], ["x"], "a string", 5, None], ids=["list", "list-str", "str", "int", "null"]
)
def test_create_body_not_an_object_is_400(admin_api, body):
    before = counts()

    resp = admin_api.post(challenges_url(), data=json.dumps(body), content_type="application/json")

    assert resp.status_code == 400, resp.content
    assert counts() == before


# --- permissions ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("client_name", "status"),
    [("anon_api", 401), ("staff_api", 403), ("integration_api", 403)],
)
def test_create_refused_without_scoring_permission(db, request, client_name, status):
    client = request.getfixturevalue(client_name)
    before = counts()

    resp = client.post(challenges_url(), WEIGHTED_SEED, format="json")

    assert resp.status_code == status
    assert counts() == before


def test_scorer_admin_may_create_patch_and_delete(scorer_admin_api):
    created = scorer_admin_api.post(challenges_url(), WEIGHTED_SEED, format="json")
    assert created.status_code == 201, created.content
    pk = created.json()["id"]

    patched = scorer_admin_api.patch(detail_url(pk), {"description": "New words"}, format="json")
    assert patched.status_code == 200, patched.content
    assert Challenge.objects.get(pk=pk).description == "New words"

    deleted = scorer_admin_api.delete(detail_url(pk))
    assert deleted.status_code == 204
    assert not Challenge.objects.filter(pk=pk).exists()


@pytest.mark.parametrize(
    ("client_name", "status"),
    [("anon_api", 401), ("staff_api", 403), ("integration_api", 403)],
)
def test_patch_and_delete_refused_without_scoring_permission(db, request, client_name, status):
    challenge = make_challenge(name="Guarded")
    client = request.getfixturevalue(client_name)
    before = counts()

    patched = client.patch(
        detail_url(challenge.pk), {"name": "Hacked", "scoring_strategy": "fastest"}, format="json"
    )
    put = client.put(detail_url(challenge.pk), {"name": "Hacked"}, format="json")
    deleted = client.delete(detail_url(challenge.pk))

    assert (patched.status_code, put.status_code, deleted.status_code) == (status, status, status)
    challenge.refresh_from_db()
    assert challenge.name == "Guarded"
    assert challenge.scoring_strategy == "first"
    assert counts() == before


@pytest.fixture
def active_and_inactive(db):
    return make_challenge(name="Visible"), make_challenge(name="Hidden", is_active=False)


@pytest.mark.parametrize(
    ("client_name", "sees_inactive"),
    [
        ("anon_api", False),
        ("integration_api", False),
        ("scorer_admin_api", True),
        ("staff_api", True),
        ("admin_api", True),
    ],
)
def test_list_shows_active_challenges_and_staff_see_all(
    request, active_and_inactive, client_name, sees_inactive
):
    active, inactive = active_and_inactive
    client = request.getfixturevalue(client_name)

    resp = client.get(challenges_url())

    assert resp.status_code == 200
    ids = {c["id"] for c in resp.json()}
    assert active.pk in ids
    assert (inactive.pk in ids) is sees_inactive


@pytest.mark.parametrize(
    ("client_name", "inactive_status"),
    [("anon_api", 404), ("integration_api", 404), ("staff_api", 200), ("admin_api", 200)],
)
def test_retrieve_inactive_is_404_to_non_staff(
    request, active_and_inactive, client_name, inactive_status
):
    active, inactive = active_and_inactive
    client = request.getfixturevalue(client_name)

    assert client.get(detail_url(active.pk)).status_code == 200
    resp = client.get(detail_url(inactive.pk))
    assert resp.status_code == inactive_status
    if inactive_status == 200:
        assert resp.json()["is_active"] is False


def test_retrieve_shows_the_challenge_fields(anon_api, staff_api):
    challenge = make_challenge(**WEIGHTED_SEED)

    resp = staff_api.get(detail_url(challenge.pk))

    assert resp.status_code == 200
    body = resp.json()
    assert body["id"] == challenge.pk
    assert body["scoring_plugin_id"] == "builtin.weighted_scorer"
    assert body["scoring_config"] == WEIGHTED_SEED["scoring_config"]
    assert body["active_version"] == 1
    # The public view (docs/words-and-data.md, "Roles"): tests/challenges/api/test_public_view.py
    public = anon_api.get(detail_url(challenge.pk)).json()
    assert public["id"] == challenge.pk and public["active_version"] == 1
    assert "scoring_config" not in public


def test_scorer_admin_may_patch_an_inactive_challenge(scorer_admin_api):
    created = scorer_admin_api.post(
        challenges_url(), {"name": "Draft", "is_active": False}, format="json"
    )
    assert created.status_code == 201
    pk = created.json()["id"]

    resp = scorer_admin_api.patch(detail_url(pk), {"is_active": True}, format="json")

    assert resp.status_code == 200
    assert Challenge.objects.get(pk=pk).is_active is True


@pytest.mark.parametrize("pk", ["999999", "abc", str(2**70)], ids=["missing", "not-int", "huge"])
def test_unknown_challenge_id_is_404(admin_api, anon_api, pk):
    before = counts()
    detail = f"/api/challenges/{pk}/"

    assert anon_api.get(detail).status_code == 404
    assert anon_api.get(f"{detail}leaderboard/").status_code == 404
    assert admin_api.patch(detail, {"name": "X"}, format="json").status_code == 404
    assert admin_api.delete(detail).status_code == 404
    assert counts() == before


def test_delete_removes_challenge_and_its_attempts(admin_api, anon_api):
    challenge = make_challenge(name="Doomed")
    record(challenge, attempt_input("p1"), attempt_input("p2"))
    assert Attempt.objects.filter(challenge=challenge).count() == 2

    resp = admin_api.delete(detail_url(challenge.pk))

    assert resp.status_code == 204
    assert not Challenge.objects.filter(pk=challenge.pk).exists()
    assert Attempt.objects.filter(challenge_id=challenge.pk).count() == 0
    assert anon_api.get(detail_url(challenge.pk)).status_code == 404


# --- PATCH and scoring versions ---------------------------------------------------------------
@pytest.fixture
def seeded(admin_api, integration_api):
    """The seed challenge created through the API, with one attempt scoring 145.0."""
    resp = admin_api.post(challenges_url(), WEIGHTED_SEED, format="json")
    assert resp.status_code == 201
    pk = resp.json()["id"]
    recorded = integration_api.post(attempts_url(pk), SEED_ATTEMPT, format="json")
    assert recorded.status_code == 201
    assert recorded.json()["score"] == 145.0
    return pk


def test_patch_scoring_config_makes_new_version_and_rescore_switches_it(
    seeded, admin_api, anon_api, django_capture_on_commit_callbacks
):
    new_config = dict(WEIGHTED_SEED["scoring_config"], success_bonus=0.0)

    with django_capture_on_commit_callbacks() as callbacks:
        resp = admin_api.patch(detail_url(seeded), {"scoring_config": new_config}, format="json")

    assert resp.status_code == 200, resp.content
    assert resp.json()["scoring_config"] == new_config
    assert list(
        ScoringVersion.objects.filter(challenge_id=seeded)
        .order_by("number")
        .values_list("number", flat=True)
    ) == [1, 2]
    assert len(callbacks) == 1  # the rescore is queued on commit
    # Until the rescore is done, the public leaderboard stays on version 1.
    before = anon_api.get(leaderboard_url(seeded)).json()
    assert before["version"] == 1
    assert before["results"][0]["score"] == 145.0

    callbacks[0]()  # Celery is eager: the rescore runs here

    after = anon_api.get(leaderboard_url(seeded)).json()
    assert after["version"] == 2
    assert [r["score"] for r in after["results"]] == [45.0]
    assert anon_api.get(detail_url(seeded)).json()["active_version"] == 2


def test_patch_then_rescore_with_execute_true(
    seeded, admin_api, anon_api, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        resp = admin_api.patch(
            detail_url(seeded),
            {"scoring_config": dict(WEIGHTED_SEED["scoring_config"], rating_weight=0.0)},
            format="json",
        )

    assert resp.status_code == 200, resp.content
    board = anon_api.get(leaderboard_url(seeded)).json()
    assert board["version"] == 2
    assert board["results"][0]["score"] == 70.0  # 100 + 0 - 6 - 24


def test_patch_name_only_makes_no_new_version(
    seeded, admin_api, anon_api, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        resp = admin_api.patch(detail_url(seeded), {"name": "Renamed"}, format="json")

    assert resp.status_code == 200, resp.content
    assert resp.json()["name"] == "Renamed"
    assert Challenge.objects.get(pk=seeded).name == "Renamed"
    assert ScoringVersion.objects.filter(challenge_id=seeded).count() == 1
    assert callbacks == []
    board = anon_api.get(leaderboard_url(seeded)).json()
    assert board["version"] == 1
    assert board["results"][0]["score"] == 145.0


def test_patch_with_identical_setup_makes_no_new_version(
    seeded, admin_api, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        resp = admin_api.patch(
            detail_url(seeded),
            {"scoring_strategy": "custom", "scoring_config": WEIGHTED_SEED["scoring_config"]},
            format="json",
        )

    assert resp.status_code == 200, resp.content
    assert ScoringVersion.objects.filter(challenge_id=seeded).count() == 1
    assert callbacks == []


def test_patch_custom_to_fastest_clears_plugin_fields(
    seeded, admin_api, anon_api, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        resp = admin_api.patch(detail_url(seeded), {"scoring_strategy": "fastest"}, format="json")

    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert body["scoring_strategy"] == "fastest"
    assert (body["scoring_plugin_id"], body["scoring_entrypoint"], body["scoring_config"]) == (
        "",
        "",
        {},
    )
    challenge = Challenge.objects.get(pk=seeded)
    assert (
        challenge.scoring_plugin_id,
        challenge.scoring_entrypoint,
        challenge.scoring_config,
    ) == ("", "", {})
    board = anon_api.get(leaderboard_url(seeded)).json()
    assert board["version"] == 2
    assert [r["score"] for r in board["results"]] == [12000.0]  # fastest: elapsed_ms


def test_patch_twice_ends_on_the_newest_version(
    seeded, admin_api, anon_api, django_capture_on_commit_callbacks
):
    for bonus in (10.0, 20.0):
        with django_capture_on_commit_callbacks(execute=True):
            resp = admin_api.patch(
                detail_url(seeded),
                {"scoring_config": dict(WEIGHTED_SEED["scoring_config"], success_bonus=bonus)},
                format="json",
            )
        assert resp.status_code == 200

    board = anon_api.get(leaderboard_url(seeded)).json()
    assert board["version"] == 3
    assert board["results"][0]["score"] == 65.0  # 20 + 75 - 6 - 24


BAD_PATCH = [
    pytest.param({"scoring_plugin_id": "nope"}, "scoring_plugin_id", id="unregistered-plugin"),
    pytest.param(
        {"scoring_entrypoint": "os:system"}, "scoring_entrypoint", id="entrypoint-os-system"
    ),
    pytest.param({"scoring_config": []}, "scoring_config", id="config-list"),
    pytest.param(
        {"scoring_config": {"rating_weight": "high"}}, "scoring_config", id="config-wrong-type"
    ),
    pytest.param({"scoring_config": {"extra": 1}}, "scoring_config", id="config-unknown-key"),
    pytest.param(
        {"scoring_strategy": "python", "scoring_code": "x = 1"},
        "scoring_code",
        id="python-no-function",
    ),
    pytest.param({"scoring_strategy": "nope"}, "scoring_strategy", id="unknown-strategy"),
    pytest.param(
        {"scoring_strategy": "fastest", "scoring_config": {"a": 1}},
        "scoring_config",
        id="fastest-with-config",
    ),
    pytest.param({"is_active": 1}, "is_active", id="is-active-int"),
    pytest.param({"bogus": 1}, "bogus", id="unknown-field"),
]


@pytest.mark.parametrize(("changes", "field"), BAD_PATCH)
def test_patch_bad_input_is_400_and_changes_nothing(
    seeded, admin_api, changes, field, django_capture_on_commit_callbacks
):
    before = counts()
    changes = {"name": "Should Not Stick", **changes}

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        resp = admin_api.patch(detail_url(seeded), changes, format="json")

    assert resp.status_code == 400, resp.content
    assert field in resp.json(), resp.json()
    assert counts() == before
    assert callbacks == []
    challenge = Challenge.objects.get(pk=seeded)
    assert challenge.name == "Advanced Prompt Challenge"
    assert challenge.scoring_strategy == "custom"
    assert challenge.scoring_config == WEIGHTED_SEED["scoring_config"]


def test_attempt_recorded_while_rescore_pending_counts_under_both_versions(
    seeded, admin_api, integration_api, anon_api, django_capture_on_commit_callbacks
):
    new_config = dict(WEIGHTED_SEED["scoring_config"], success_bonus=0.0)
    with django_capture_on_commit_callbacks() as callbacks:
        resp = admin_api.patch(detail_url(seeded), {"scoring_config": new_config}, format="json")
    assert resp.status_code == 200
    assert len(callbacks) == 1

    late = integration_api.post(
        attempts_url(seeded), dict(SEED_ATTEMPT, player="u2"), format="json"
    )

    assert late.status_code == 201, late.content
    assert (late.json()["version"], late.json()["score"]) == (1, 145.0)  # the active version
    callbacks[0]()
    board = anon_api.get(leaderboard_url(seeded)).json()
    assert board["version"] == 2
    assert {(r["player"], r["score"]) for r in board["results"]} == {("u1", 45.0), ("u2", 45.0)}


def test_patch_slug_to_a_taken_one_is_400(seeded, admin_api):
    make_challenge(name="Other", slug="other")
    before = counts()

    resp = admin_api.patch(detail_url(seeded), {"slug": "other"}, format="json")

    assert resp.status_code == 400
    assert "slug" in resp.json()
    assert Challenge.objects.get(pk=seeded).slug == "advanced-prompt-challenge"
    assert counts() == before
