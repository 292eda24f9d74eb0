"""API: recording attempts (docs/api.md, "Attempt metrics", "Errors", the
weighted scorer's formula and the failure rules)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from challenges.models import (
    Attempt,
    AttemptScore,
    Challenge,
    LeaderboardEntry,
    Player,
)
from scoring.project_registry import registry
from tests.factories import SEED_ATTEMPT, WEIGHTED_SEED, counts, make_challenge
from tests.urls import attempts_url, challenges_url, leaderboard_url


def attempt(**changes: object) -> dict:
    return {**SEED_ATTEMPT, **changes}


@pytest.fixture
def weighted(db) -> Challenge:
    return make_challenge(**WEIGHTED_SEED)


# --- the seed example and the formula -------------------------------------------------------
def test_seed_example_end_to_end(admin_api, integration_api, anon_api):
    created = admin_api.post(challenges_url(), WEIGHTED_SEED, format="json")
    assert created.status_code == 201, created.content
    pk = created.json()["id"]

    resp = integration_api.post(attempts_url(pk), SEED_ATTEMPT, format="json")

    assert resp.status_code == 201, resp.content
    body = resp.json()
    assert body["score"] == 145.0
    assert body["version"] == 1
    assert body["player"] == "u1"
    assert body["challenge"] == pk
    assert body["details"] == {
        "base": 100.0,
        "rating_contribution": 75.0,
        "time_penalty": 6.0,
        "token_penalty": 24.0,
    }
    stored = AttemptScore.objects.get(attempt_id=body["id"])
    assert stored.score == 145.0
    assert stored.version.number == 1
    # The leaderboard reflects it at once.
    board = anon_api.get(leaderboard_url(pk)).json()
    assert board["count"] == 1
    assert board["results"][0]["player"] == "u1"
    assert board["results"][0]["score"] == 145.0
    assert board["results"][0]["attempt_id"] == body["id"]


@pytest.mark.parametrize(
    ("metrics", "expected"),
    [
        pytest.param(
            {"succeeded": True, "tokens_total": 1200, "elapsed_ms": 12000, "rating": 5},
            145.0,
            id="seed",
        ),
        pytest.param({"succeeded": True}, 100.0, id="success-only-nulls-count-0"),
        pytest.param(
            {"succeeded": True, "tokens_total": None, "elapsed_ms": None, "rating": None},
            100.0,
            id="explicit-nulls",
        ),
        pytest.param({"succeeded": False, "rating": 10}, 150.0, id="failed-but-rated"),
        pytest.param({"succeeded": False}, 0.0, id="nothing"),
        pytest.param(
            {"succeeded": True, "elapsed_ms": 1000, "tokens_total": 50, "rating": 2},
            128.5,
            id="mixed",
        ),
        pytest.param({"succeeded": True, "tokens_total": 10_000}, 0.0, id="clamped-at-0"),
        pytest.param({"succeeded": False, "elapsed_ms": 10**9}, 0.0, id="clamped-time"),
    ],
)
def test_weighted_formula(integration_api, weighted, metrics, expected):
    resp = integration_api.post(
        attempts_url(weighted.pk), {"player": "p", **metrics}, format="json"
    )

    assert resp.status_code == 201, resp.content
    assert resp.json()["score"] == pytest.approx(expected)
    assert AttemptScore.objects.get(attempt_id=resp.json()["id"]).score == pytest.approx(expected)


def test_list_body_records_all_in_order(integration_api, weighted):
    before = counts()
    body = [
        attempt(player="a", rating=1),
        attempt(player="b", rating=2, player_name="Bee"),
        attempt(player="a", rating=3),
    ]

    resp = integration_api.post(attempts_url(weighted.pk), body, format="json")

    assert resp.status_code == 201, resp.content
    out = resp.json()
    assert isinstance(out, list)
    assert [(r["player"], r["rating"], r["score"]) for r in out] == [
        ("a", 1, 85.0),
        ("b", 2, 100.0),
        ("a", 3, 115.0),
    ]
    assert out[1]["display_name"] == "Bee"
    after = counts()
    assert after["Attempt"] == before["Attempt"] + 3
    assert after["AttemptScore"] == before["AttemptScore"] + 3
    assert after["Player"] == before["Player"] + 2
    assert (
        LeaderboardEntry.objects.get(version=weighted.active_version, player__external_id="a").score
        == 115.0
    )


def test_single_object_body_returns_an_object(integration_api, weighted):
    resp = integration_api.post(attempts_url(weighted.pk), attempt(), format="json")

    assert resp.status_code == 201
    assert isinstance(resp.json(), dict)
    assert {"id", "player", "display_name", "score", "details", "version", "created_at"} <= set(
        resp.json()
    )


def test_payload_fields_are_stored(integration_api, weighted):
    body = attempt(
        sample={"q": "2+2", "n": [1, 2]}, output="4", messages=[{"role": "user", "content": "hi"}]
    )

    resp = integration_api.post(attempts_url(weighted.pk), body, format="json")

    assert resp.status_code == 201, resp.content
    stored = Attempt.objects.get(pk=resp.json()["id"])
    assert stored.sample == {"q": "2+2", "n": [1, 2]}
    assert stored.output == "4"
    assert stored.messages == [{"role": "user", "content": "hi"}]


def test_player_name_sets_display_name_and_is_kept(integration_api, weighted):
    first = integration_api.post(
        attempts_url(weighted.pk), attempt(player="x1", player_name="Ada"), format="json"
    )
    second = integration_api.post(attempts_url(weighted.pk), attempt(player="x1"), format="json")

    assert first.status_code == second.status_code == 201
    assert second.json()["display_name"] == "Ada"
    assert Player.objects.get(external_id="x1").display_name == "Ada"


def test_display_name_defaults_to_external_id(integration_api, weighted):
    resp = integration_api.post(attempts_url(weighted.pk), attempt(player="ext-42"), format="json")

    assert resp.status_code == 201
    assert resp.json()["display_name"] == "ext-42"


# --- bad input: 400 naming the field, nothing written -------------------------------------------
BAD_FIELDS = [
    pytest.param({"rating": 11}, "rating", id="rating-11"),
    pytest.param({"rating": -1}, "rating", id="rating-negative"),
    pytest.param({"rating": 5.5}, "rating", id="rating-float"),
    pytest.param({"rating": "5"}, "rating", id="rating-string"),
    pytest.param({"tokens_total": -1}, "tokens_total", id="tokens-negative"),
    pytest.param({"tokens_total": "12"}, "tokens_total", id="tokens-string"),
    pytest.param({"tokens_total": True}, "tokens_total", id="tokens-bool"),
    pytest.param({"tokens_total": 2**53}, "tokens_total", id="tokens-over-2^53-1"),
    pytest.param({"tokens_total": 10**30}, "tokens_total", id="tokens-huge"),
    pytest.param({"tokens_total": 1e300}, "tokens_total", id="tokens-huge-float"),
    pytest.param({"elapsed_ms": -5}, "elapsed_ms", id="elapsed-negative"),
    pytest.param({"elapsed_ms": 2**63}, "elapsed_ms", id="elapsed-int64-overflow"),
    pytest.param({"elapsed_ms": "fast"}, "elapsed_ms", id="elapsed-string"),
    pytest.param({"succeeded": "yes"}, "succeeded", id="succeeded-yes"),
    pytest.param({"succeeded": 1}, "succeeded", id="succeeded-1"),
    pytest.param({"succeeded": None}, "succeeded", id="succeeded-null"),
    pytest.param({"created_at": True}, "created_at", id="created-at-true"),
    pytest.param({"created_at": "yesterday"}, "created_at", id="created-at-words"),
    pytest.param({"created_at": "2026-13-01T00:00:00Z"}, "created_at", id="created-at-month-13"),
    pytest.param({"created_at": ""}, "created_at", id="created-at-empty"),
    pytest.param({"created_at": -1}, "created_at", id="created-at-negative-epoch"),
    pytest.param({"created_at": 2**62}, "created_at", id="created-at-epoch-too-big"),
    pytest.param({"created_at": [2026, 1, 1]}, "created_at", id="created-at-list"),
    pytest.param({"player": ""}, "player", id="player-blank"),
    pytest.param({"player": 123}, "player", id="player-int"),
    pytest.param({"player": "x" * 256}, "player", id="player-too-long"),
    pytest.param({"player_name": 5}, "player_name", id="player-name-int"),
    pytest.param({"sample": [1, 2]}, "sample", id="sample-list"),
    pytest.param({"messages": {"role": "user"}}, "messages", id="messages-object"),
    pytest.param({"output": 5}, "output", id="output-int"),
    pytest.param({"unknown": 1}, "unknown", id="unknown-field"),
    pytest.param({"score": 1000.0}, "score", id="client-sent-score"),
]


@pytest.mark.parametrize(("changes", "field"), BAD_FIELDS)
def test_bad_attempt_is_400_naming_field_and_writes_nothing(
    integration_api, weighted, changes, field
):
    before = counts()

    resp = integration_api.post(attempts_url(weighted.pk), attempt(**changes), format="json")

    assert resp.status_code == 400, resp.content
    assert field in resp.json(), resp.json()
    assert counts() == before


@pytest.mark.parametrize("missing", ["player", "succeeded"])
def test_required_field_missing_is_400(integration_api, weighted, missing):
    before = counts()
    body = attempt()
    del body[missing]

    resp = integration_api.post(attempts_url(weighted.pk), body, format="json")

    assert resp.status_code == 400
    assert missing in resp.json()
    assert counts() == before


@pytest.mark.parametrize("bad_index", [0, 1, 2])
def test_list_with_one_bad_item_names_index_and_field_and_writes_nothing(
    integration_api, weighted, bad_index
):
    body = [attempt(player=f"p{i}") for i in range(3)]
    body[bad_index]["rating"] = 11
    before = counts()

    resp = integration_api.post(attempts_url(weighted.pk), body, format="json")

    assert resp.status_code == 400, resp.content
    errors = resp.json()
    assert set(errors) == {str(bad_index)}
    assert "rating" in errors[str(bad_index)]
    assert counts() == before
    assert not Player.objects.filter(external_id__in=["p0", "p1", "p2"]).exists()


def test_list_with_several_bad_items_names_each(integration_api, weighted):
    body = [attempt(player="ok"), attempt(tokens_total=-1), attempt(succeeded="yes", rating=99)]
    before = counts()

    resp = integration_api.post(attempts_url(weighted.pk), body, format="json")

    assert resp.status_code == 400
    errors = resp.json()
    assert set(errors) == {"1", "2"}
    assert "tokens_total" in errors["1"]
    assert {"succeeded", "rating"} <= set(errors["2"])
    assert counts() == before


@pytest.mark.parametrize(
    "body",
    [
        pytest.param([], id="empty-list"),
        pytest.param("an attempt", id="string"),
        pytest.param(42, id="number"),
        pytest.param(None, id="null"),
        pytest.param([1], id="list-of-number"),
        pytest.param([[SEED_ATTEMPT]], id="nested-list"),
    ],
)
def test_body_that_is_not_attempts_is_400(integration_api, weighted, body):
    before = counts()

    resp = integration_api.post(
        attempts_url(weighted.pk), data=json.dumps(body), content_type="application/json"
    )

    assert resp.status_code == 400, resp.content
    errors = resp.json()
    assert "non_field_errors" in errors or "non_field_errors" in errors.get("0", {}), errors
    assert counts() == before


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param('{"player": "p", "succeeded": true', id="unterminated"),
        pytest.param('{"player": "p", "succeeded": true,}', id="trailing-comma"),
        pytest.param("player=p&succeeded=true", id="form-encoded-as-json"),
        pytest.param('{"player": "p", "succeeded": true, "sample": {"x": NaN}}', id="nan"),
        pytest.param('[{"player": "p", "succeeded": true}, ', id="unterminated-list"),
    ],
)
def test_malformed_json_is_400_and_writes_nothing(integration_api, weighted, raw):
    before = counts()

    resp = integration_api.post(
        attempts_url(weighted.pk), data=raw, content_type="application/json"
    )

    assert resp.status_code == 400, resp.content
    assert "detail" in resp.json()
    assert counts() == before


def test_deeply_nested_json_is_400_not_500(integration_api, weighted):
    integration_api.raise_request_exception = False
    before = counts()

    resp = integration_api.post(
        attempts_url(weighted.pk), data="[" * 100_000, content_type="application/json"
    )

    assert resp.status_code == 400
    assert counts() == before


def test_more_attempts_than_the_limit_is_400(integration_api, weighted, settings):
    settings.PODIUM_MAX_ATTEMPTS_PER_REQUEST = 2
    before = counts()

    resp = integration_api.post(
        attempts_url(weighted.pk), [attempt(player=f"p{i}") for i in range(3)], format="json"
    )

    assert resp.status_code == 400
    assert "non_field_errors" in resp.json()
    assert counts() == before


def test_largest_metric_is_accepted(integration_api, weighted):
    resp = integration_api.post(
        attempts_url(weighted.pk), attempt(tokens_total=2**53 - 1), format="json"
    )

    assert resp.status_code == 201, resp.content
    assert Attempt.objects.get(pk=resp.json()["id"]).tokens_total == 2**53 - 1
    assert resp.json()["score"] == 0.0


# --- created_at -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(
            1767225600123, datetime(2026, 1, 1, 0, 0, 0, 123000, tzinfo=UTC), id="epoch-ms"
        ),
        pytest.param(0, datetime(1970, 1, 1, tzinfo=UTC), id="epoch-0"),
        pytest.param("2026-01-01T10:00:00Z", datetime(2026, 1, 1, 10, tzinfo=UTC), id="iso-z"),
        pytest.param(
            "2026-01-01T10:00:00+02:00", datetime(2026, 1, 1, 8, tzinfo=UTC), id="iso-offset"
        ),
        pytest.param(
            "2026-01-01T10:00:00", datetime(2026, 1, 1, 10, tzinfo=UTC), id="iso-naive-is-utc"
        ),
        pytest.param(
            "2026-01-01T10:00:00.123456Z",
            datetime(2026, 1, 1, 10, 0, 0, 123000, tzinfo=UTC),
            id="iso-to-ms",
        ),
    ],
)
def test_created_at_is_parsed_and_stored(integration_api, weighted, value, expected):
    resp = integration_api.post(attempts_url(weighted.pk), attempt(created_at=value), format="json")

    assert resp.status_code == 201, resp.content
    assert Attempt.objects.get(pk=resp.json()["id"]).created_at == expected
    returned = datetime.fromisoformat(resp.json()["created_at"].replace("Z", "+00:00"))
    assert returned == expected


@pytest.mark.parametrize("body_extra", [{}, {"created_at": None}], ids=["absent", "null"])
def test_created_at_absent_means_now(integration_api, weighted, body_extra):
    before = timezone.now() - timedelta(milliseconds=1)
    body = {"player": "p", "succeeded": True, **body_extra}

    resp = integration_api.post(attempts_url(weighted.pk), body, format="json")

    after = timezone.now()
    assert resp.status_code == 201, resp.content
    stored = Attempt.objects.get(pk=resp.json()["id"]).created_at
    assert before <= stored <= after


@pytest.mark.parametrize("value", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_created_at_out_of_range_after_offset_is_400(integration_api, weighted, value):
    integration_api.raise_request_exception = False
    before = counts()

    resp = integration_api.post(attempts_url(weighted.pk), attempt(created_at=value), format="json")

    assert resp.status_code == 400
    assert "created_at" in resp.json()
    assert counts() == before


# --- permissions ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("client_name", "status"),
    [("anon_api", 401), ("staff_api", 403), ("scorer_admin_api", 403)],
)
def test_recording_needs_add_attempt_permission(request, weighted, client_name, status):
    client = request.getfixturevalue(client_name)
    before = counts()

    resp = client.post(attempts_url(weighted.pk), attempt(), format="json")

    assert resp.status_code == status
    assert counts() == before


@pytest.mark.parametrize("client_name", ["integration_api", "admin_api"])
def test_recording_allowed_with_add_attempt_permission(request, weighted, client_name):
    client = request.getfixturevalue(client_name)

    resp = client.post(attempts_url(weighted.pk), attempt(), format="json")

    assert resp.status_code == 201, resp.content
    assert Attempt.objects.filter(challenge=weighted).count() == 1


def test_integration_may_record_to_inactive_challenge(integration_api, anon_api):
    hidden = make_challenge(**{**WEIGHTED_SEED, "is_active": False})

    resp = integration_api.post(attempts_url(hidden.pk), attempt(), format="json")

    assert resp.status_code == 201, resp.content
    assert resp.json()["score"] == 145.0
    assert Attempt.objects.filter(challenge=hidden).count() == 1
    assert anon_api.get(leaderboard_url(hidden.pk)).status_code == 404  # still not public


@pytest.mark.parametrize("pk", ["999999", "abc"])
def test_unknown_challenge_is_404(integration_api, pk):
    before = counts()

    resp = integration_api.post(f"/api/challenges/{pk}/attempts/", attempt(), format="json")

    assert resp.status_code == 404
    assert counts() == before


def test_get_on_attempts_is_not_allowed(admin_api, weighted):
    resp = admin_api.get(attempts_url(weighted.pk))

    assert resp.status_code == 405


# --- failing scorers: recorded with score None, the error only for admins ------------------------
@pytest.fixture
def tokens_challenge(db):
    with registry().temporarily("t.tokens", "tests.plugins:TokensScorer"):
        yield make_challenge(scoring_strategy="custom", scoring_plugin_id="t.tokens")


def test_failed_scorer_records_none_and_hides_error_from_integration(
    integration_api, tokens_challenge
):
    before = counts()
    body = [
        {"player": "p13", "succeeded": True, "tokens_total": 13},
        {"player": "p7", "succeeded": True, "tokens_total": 7},
    ]

    resp = integration_api.post(attempts_url(tokens_challenge.pk), body, format="json")

    assert resp.status_code == 201, resp.content
    failed, ok = resp.json()
    assert failed["score"] is None
    assert "details" in failed
    assert "error" not in (failed["details"] or {})
    assert ok["score"] == 7.0
    assert "unlucky" not in resp.content.decode()
    assert "ValueError" not in resp.content.decode()
    assert counts()["Attempt"] == before["Attempt"] + 2
    stored = AttemptScore.objects.get(attempt_id=failed["id"])
    assert stored.score is None
    assert "unlucky" in stored.error  # kept for admins


def test_failed_scorer_error_is_shown_to_admin(admin_api, tokens_challenge):
    resp = admin_api.post(
        attempts_url(tokens_challenge.pk),
        {"player": "p", "succeeded": True, "tokens_total": 13},
        format="json",
    )

    assert resp.status_code == 201, resp.content
    body = resp.json()
    assert body["score"] is None
    assert "unlucky" in body["details"]["error"]


def test_body_over_size_limit_is_413_and_writes_nothing(integration_api, weighted, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    before = counts()

    resp = integration_api.post(
        attempts_url(weighted.pk), attempt(output="x" * 5000), format="json"
    )

    assert resp.status_code == 413
    assert counts() == before


def test_long_player_id_without_name_is_recorded_with_a_fitting_display_name(
    integration_api, weighted
):
    integration_api.raise_request_exception = False
    before = counts()

    resp = integration_api.post(attempts_url(weighted.pk), attempt(player="x" * 230), format="json")

    assert resp.status_code in (201, 400), resp.status_code
    if resp.status_code == 400:
        assert "player" in resp.json()
        assert counts() == before
    else:
        assert len(Player.objects.get(external_id="x" * 230).display_name) <= 200
