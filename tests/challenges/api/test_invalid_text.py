"""Text is valid or refused (docs/api.md; issue 12, finding 5): a lone
surrogate or a NUL anywhere in a request's JSON, key or value, at any depth, is a 400
naming the field, and nothing is written, on SQLite and on PostgreSQL."""

from __future__ import annotations

import json

import pytest

from challenges.models import Challenge, ScoringVersion
from tests.factories import SEED_ATTEMPT, WEIGHTED_SEED, counts, make_challenge
from tests.urls import attempts_url, challenges_url, detail_url

pytestmark = pytest.mark.django_db

BAD = {"surrogate": "\ud800", "low surrogate": "x\udfffy", "nul": "a\u0000b"}


def post_raw(client, url, body, method="post"):
    # json.dumps escapes the bad characters (\ud800, \u0000): the body is valid UTF-8
    # and valid JSON, exactly what a client sends.
    return getattr(client, method)(url, data=json.dumps(body), content_type="application/json")


def attempt_variants(bad):
    base = dict(SEED_ATTEMPT)
    yield "player", {**base, "player": "u" + bad}
    yield "player_name", {**base, "player_name": bad}
    yield "output", {**base, "output": bad}
    yield "sample", {**base, "sample": {"question": bad}}
    yield "sample", {**base, "sample": {bad: 1}}
    yield "sample", {**base, "sample": {"rows": [{"deep": [[{"k": ["ok", bad]}]]}]}}
    yield "messages", {**base, "messages": [{"role": "user", "content": bad}]}
    yield "messages", {**base, "messages": [{"role": "user", bad: "key"}]}
    yield "created_at", {**base, "created_at": "2026-01-01T00:00:00Z" + bad}


@pytest.fixture
def challenge():
    return make_challenge(name="Text", scoring_strategy="fastest")


@pytest.mark.parametrize("kind", list(BAD))
def test_attempt_with_bad_text_is_400_naming_the_field(integration_api, challenge, kind):
    before = counts()
    for field, body in attempt_variants(BAD[kind]):
        response = post_raw(integration_api, attempts_url(challenge.pk), body)
        assert response.status_code == 400, (field, response.content)
        assert field in response.json(), (field, response.json())
        assert counts() == before, field


def test_bad_text_in_one_item_of_a_list_writes_nothing(integration_api, challenge):
    before = counts()
    good = dict(SEED_ATTEMPT)
    bad = {**SEED_ATTEMPT, "sample": {"a": ["\ud83d"]}}  # a high surrogate alone
    response = post_raw(integration_api, attempts_url(challenge.pk), [good, good, bad])
    assert response.status_code == 400, response.content
    assert "sample" in response.json()["2"]
    assert counts() == before


def test_an_unknown_top_level_key_with_bad_text_is_named_readably(integration_api, challenge):
    response = post_raw(integration_api, attempts_url(challenge.pk), {**SEED_ATTEMPT, "\ud800": 1})
    assert response.status_code == 400
    assert response.content.decode("utf-8")  # the answer itself is valid UTF-8
    assert "\\ud800" in response.json()


def test_a_valid_surrogate_pair_is_text(integration_api, challenge):
    body = {**SEED_ATTEMPT, "player_name": "\U0001f600 smile", "sample": {"e": "\U0001f600"}}
    response = post_raw(integration_api, attempts_url(challenge.pk), body)
    assert response.status_code == 201, response.content
    assert response.json()["sample"] == {"e": "\U0001f600"}


def test_utf8_encoded_surrogate_bytes_are_400(integration_api, challenge):
    raw = b'{"player": "u1", "succeeded": true, "output": "\xed\xa0\x80"}'
    response = integration_api.post(
        attempts_url(challenge.pk), data=raw, content_type="application/json"
    )
    assert response.status_code == 400
    assert counts()["Attempt"] == 0


def challenge_variants(bad):
    yield "name", {**WEIGHTED_SEED, "name": bad}
    yield "description", {**WEIGHTED_SEED, "description": "# Title\n" + bad}
    yield "scoring_config", {**WEIGHTED_SEED, "scoring_config": {"success_bonus": 1, bad: 2}}
    yield "scoring_config", {**WEIGHTED_SEED, "scoring_config": {"note": [bad]}}
    yield "tenant_id", {**WEIGHTED_SEED, "tenant_id": bad}
    yield "slug", {**WEIGHTED_SEED, "slug": "s" + bad}
    yield "scoring_code", {"name": "Py", "scoring_strategy": "python", "scoring_code": bad}
    yield (
        "metrics",
        {
            "name": "Py",
            "scoring_strategy": "python",
            "metrics": [{"type": "mean", "field": bad}],
        },
    )


@pytest.mark.parametrize("kind", list(BAD))
def test_challenge_create_with_bad_text_is_400(admin_api, kind):
    for field, body in challenge_variants(BAD[kind]):
        response = post_raw(admin_api, challenges_url(), body)
        assert response.status_code == 400, (field, response.content)
        assert field in response.json(), (field, response.json())
        assert Challenge.objects.count() == 0


@pytest.mark.parametrize("kind", list(BAD))
def test_challenge_patch_with_bad_text_is_400(admin_api, kind):
    challenge = make_challenge(**WEIGHTED_SEED)
    before = challenge.scoring_config
    for field, body in challenge_variants(BAD[kind]):
        body = {field: body[field]}
        response = post_raw(admin_api, detail_url(challenge.pk), body, "patch")
        assert response.status_code == 400, (field, response.content)
        assert field in response.json(), (field, response.json())
    challenge.refresh_from_db()
    assert challenge.scoring_config == before
    assert ScoringVersion.objects.filter(challenge=challenge).count() == 1


def test_list_still_works_after_a_refused_config(admin_api, anon_api):
    make_challenge(**WEIGHTED_SEED)
    body = {**WEIGHTED_SEED, "name": "Other", "scoring_config": {"time_penalty": "\ud800"}}
    assert post_raw(admin_api, challenges_url(), body).status_code == 400
    assert anon_api.get(challenges_url()).status_code == 200
    assert admin_api.get(challenges_url()).status_code == 200
