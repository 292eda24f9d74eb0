"""Request fuzzing for text (issue 12, finding 5): a lone surrogate or a NUL, in any key
or value at any depth of the JSON body of every write route, is a 400 naming the field
(and the item index, in a list body), and nothing is written."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.factories import WEIGHTED_SEED, counts, make_challenge
from tests.urls import attempts_url, challenges_url, detail_url, job_cancel_url, rescore_url

pytestmark = pytest.mark.django_db

EXAMPLES = 60
# Valid text: everything but surrogates and NUL (the bad characters are injected once).
VALID = st.characters(exclude_categories=("Cs",), exclude_characters="\x00")


def text(min_size: int = 0, max_size: int = 6) -> st.SearchStrategy[str]:
    return st.text(alphabet=VALID, min_size=min_size, max_size=max_size)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | text(),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(text(), kids, max_size=3),
    max_leaves=10,
)
BAD_CHAR = st.one_of(st.just("\x00"), st.integers(0xD800, 0xDFFF).map(chr))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)


def _slots(value: Any, path: tuple = ()) -> list[tuple[tuple, str]]:
    """Every place a bad string can go: ("key", path of the dict + key) for each key,
    ("value", path) for each leaf (any leaf may be replaced by a string)."""
    out: list[tuple[tuple, str]] = []
    if isinstance(value, dict):
        for key, child in value.items():
            out.append(((*path, key), "key"))
            out += _slots(child, (*path, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            out += _slots(child, (*path, i))
    elif path:
        out.append((path, "value"))
    return out


def _inject(body: Any, path: tuple, kind: str, bad: str) -> Any:
    body = copy.deepcopy(body)
    parent = body
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if kind == "key":
        parent[last + bad if isinstance(last, str) else bad] = parent.pop(last)
    else:
        old = parent[last]
        parent[last] = (old if isinstance(old, str) else "") + bad
    return body


def _expect_named(response, path: tuple, kind: str) -> None:
    assert response.status_code == 400, (path, response.content)
    errors = response.json()
    if isinstance(path[0], int):
        errors = errors[str(path[0])]
        path = path[1:]
    assert len(errors) == 1, errors
    (field,) = errors
    text = " ".join(errors[field])
    assert "valid Unicode" in text, errors
    if kind == "value" or len(path) > 1:  # else the key itself is bad: shown escaped
        assert field == path[0], (field, path)
    response.content.decode("utf-8")  # the answer itself is valid UTF-8


def _send(client, method: str, url: str, body: Any):
    return getattr(client, method)(url, data=json.dumps(body), content_type="application/json")


@st.composite
def attempt_bodies(draw):
    def one():
        item = {"player": draw(text(min_size=1, max_size=8)), "succeeded": draw(st.booleans())}
        for name, strategy in (
            ("player_name", text(max_size=8)),
            ("output", text(max_size=8)),
            ("sample", st.dictionaries(text(max_size=6), JSON, max_size=4)),
            ("messages", st.lists(JSON, max_size=3)),
            ("created_at", st.just("2026-01-01T00:00:00Z")),
            ("rating", st.integers(0, 10)),
        ):
            if draw(st.booleans()):
                item[name] = draw(strategy)
        return item

    if draw(st.booleans()):
        return one()
    return [one() for _ in range(draw(st.integers(1, 3)))]


@st.composite
def challenge_bodies(draw):
    body = {
        "name": draw(text(min_size=1, max_size=10)),
        "description": draw(text(max_size=10)),
        "scoring_strategy": "custom",
        "scoring_plugin_id": "builtin.weighted_scorer",
        "scoring_config": draw(st.dictionaries(text(max_size=6), JSON, max_size=4)),
    }
    for name in ("tenant_id", "app_id", "workflow_id", "slug", "scoring_code", "score_key"):
        if draw(st.booleans()):
            body[name] = draw(st.text(alphabet="abc-", max_size=6))
    if draw(st.booleans()):
        body["metrics"] = draw(st.lists(JSON, max_size=2))
    return body


@st.composite
def poisoned(draw, bodies):
    body = draw(bodies)
    slots = _slots(body)
    path, kind = draw(st.sampled_from(slots))
    bad = draw(text(max_size=3)) + draw(BAD_CHAR) + draw(text(max_size=3))
    return _inject(body, path, kind, bad), path, kind


def test_attempts_route(integration_api):
    challenge = make_challenge(name="Fuzz text", scoring_strategy="fastest")
    before = counts()

    @SETTINGS
    @given(case=poisoned(attempt_bodies()))
    def run(case):
        body, path, kind = case
        _expect_named(_send(integration_api, "post", attempts_url(challenge.pk), body), path, kind)
        assert counts() == before

    run()


@pytest.mark.parametrize("method", ["post", "patch"])
def test_challenge_routes(admin_api, method):
    target = make_challenge(**WEIGHTED_SEED)
    url = challenges_url() if method == "post" else detail_url(target.pk)
    before = counts()

    @SETTINGS
    @given(case=poisoned(challenge_bodies()))
    def run(case):
        body, path, kind = case
        _expect_named(_send(admin_api, method, url, body), path, kind)
        assert counts() == before
        target.refresh_from_db()
        assert target.scoring_config == WEIGHTED_SEED["scoring_config"]

    run()


@pytest.mark.parametrize("route", ["rescore", "cancel"])
def test_body_less_routes_refuse_bad_text_too(admin_api, route):
    from challenges.setup import services as setup_services

    challenge = make_challenge(**WEIGHTED_SEED)
    if route == "rescore":
        url = rescore_url(challenge.pk)
    else:
        job = setup_services.challenge_rescore(challenge=challenge)
        url = job_cancel_url(job.pk)
    before = counts()
    response = _send(admin_api, "post", url, {"note": "\ud800"})
    assert response.status_code == 400 and "note" in response.json()
    assert counts() == before
