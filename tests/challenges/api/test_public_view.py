"""Public readers see what is public (docs/words-and-data.md, "Roles"; issue 12, finding 8):
anonymous users and integration tokens get the public view of a challenge, staff and
admins every field; the API denies by default and every route says who may use it."""

from __future__ import annotations

import pytest
from django.urls import get_resolver, reverse
from rest_framework.permissions import AllowAny
from rest_framework.settings import api_settings
from rest_framework.test import APIRequestFactory

from challenges.api import views as api
from challenges.boards import display
from tests.factories import WEIGHTED_SEED, make_challenge
from tests.urls import challenges_url, detail_url

pytestmark = pytest.mark.django_db

PUBLIC_FIELDS = {
    "id",
    "name",
    "slug",
    "description",
    "is_active",
    "scoring_strategy",
    "scoring_summary",
    "active_version",
    "created_at",
    "updated_at",
    # the schedule and the caps (docs/competitions.md): public, so an
    # integration can tell its players when and how often they may submit
    "opens_at",
    "closes_at",
    "late_attempts",
    "freeze_at",
    "revealed_at",
    "schedule_status",
    "attempts_per_day",
    "attempts_total",
    # red/blue: the rules of the game (the suite, the pairing policies, the points rule,
    # the instructions) are public; prompts never reach a challenge's view
    "format",
    "judge_suite",
    "defense_selection_policy",
    "attack_selection_policy",
    "red_blue_scoring",
    "severity_divisor",
    "time_penalty",
    "token_penalty",
    "instructions",
    "reveal_attacks_after_close",
}
SECRET = {"scoring_code", "scoring_config", "tenant_id", "app_id", "workflow_id"}
SNIPPET = 'def compute_scores(sample):\n    return {"answer_key": 42.0}\n'


@pytest.fixture
def secret():
    challenge = make_challenge(
        **WEIGHTED_SEED, tenant_id="tenant-7", app_id="app-secret", workflow_id="wf-9"
    )
    from challenges.models import Challenge

    # A snippet holding an answer key, as a scorer admin would write it.
    Challenge.objects.filter(pk=challenge.pk).update(scoring_code=SNIPPET)
    challenge.refresh_from_db()
    return challenge


@pytest.mark.parametrize("client_name", ["anon_api", "integration_api"])
def test_public_readers_get_the_public_view(request, secret, client_name):
    client = request.getfixturevalue(client_name)
    listed = client.get(challenges_url())
    detail = client.get(detail_url(secret.pk))
    assert listed.status_code == detail.status_code == 200
    for body in (listed.json()[0], detail.json()):
        assert set(body) == PUBLIC_FIELDS, set(body) ^ PUBLIC_FIELDS
        text = str(body)
        for leak in ("tenant-7", "app-secret", "wf-9", "answer_key", "rating_weight"):
            assert leak not in text


def test_scoring_summary_is_the_page_sentence(anon_api, secret):
    body = anon_api.get(detail_url(secret.pk)).json()
    setup = secret.active_version
    expected = f"{display.strategy_words(setup)}. {display.scoring_sentence(setup)}"
    assert body["scoring_summary"] == expected
    assert "15 per rating point" in body["scoring_summary"]  # as the public page says it


@pytest.mark.parametrize("client_name", ["staff_api", "admin_api", "scorer_admin_api"])
def test_staff_and_admins_see_everything(request, secret, client_name):
    client = request.getfixturevalue(client_name)
    body = client.get(detail_url(secret.pk)).json()
    assert set(body) >= PUBLIC_FIELDS | SECRET
    assert body["tenant_id"] == "tenant-7" and body["scoring_code"] == SNIPPET
    assert client.get(challenges_url()).json()[0]["app_id"] == "app-secret"


def test_the_default_permission_denies():
    factory = APIRequestFactory()
    request = factory.get("/")
    for permission in api_settings.DEFAULT_PERMISSION_CLASSES:
        assert not permission().has_permission(request, None)


def _routes(resolver):
    for pattern in resolver.url_patterns:
        if hasattr(pattern, "url_patterns"):
            yield from _routes(pattern)
        else:
            yield pattern


def test_every_api_route_states_its_permission():
    """Every action of every API view set is in its view's explicit table; an action
    that is not (a new route someone forgot) is denied."""
    factory = APIRequestFactory()
    seen = set()
    api_root = next(p for p in get_resolver().url_patterns if str(p.pattern) == "api/")
    for route in _routes(api_root):
        view = getattr(route.callback, "cls", None)
        actions = getattr(route.callback, "actions", None)
        if view is None:
            continue
        if not actions:  # a plain APIView states its own permission classes
            if view.__name__ != "APIRootView":
                own = [c for c in view.__mro__ if c.__module__.startswith("challenges.")]
                assert any(
                    "permission_classes" in vars(c) or "get_permissions" in vars(c) for c in own
                ), view.__name__
                seen.add((view.__name__, None))
            continue
        for method, action in actions.items():
            if method not in view.http_method_names:
                continue  # 405 before any permission (PUT: the API has PATCH only)
            instance = view(action=action, request=factory.get("/"))
            permissions = instance.get_permissions()
            assert permissions, (view, action)
            assert action in view.permissions_by_action, (view.__name__, action)
            seen.add((view.__name__, action))
    assert ("ChallengeViewSet", "attempts") in seen
    instance = api.ChallengeViewSet(action="something_new", request=factory.get("/"))
    assert not any(isinstance(p, AllowAny) for p in instance.get_permissions())
    assert not instance.get_permissions()[0].has_permission(factory.get("/"), instance)


def test_the_api_root_lists_the_routes_for_anyone(anon_api):
    response = anon_api.get(reverse("api-root"), HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    assert set(response.json()) == {"challenges", "collections"}  # jobs have no list route
