"""config/auth.py: the permissions backend and the token authentication answer exactly
as Django's ModelBackend and DRF's TokenAuthentication do, in one statement each."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group, Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework import exceptions
from rest_framework.authtoken.models import Token

from config.auth import PermissionsBackend, TokenAuthentication

pytestmark = pytest.mark.django_db
User = get_user_model()


def _perm(codename: str) -> Permission:
    return Permission.objects.get(codename=codename)


@pytest.fixture
def users():
    graders = Group.objects.create(name="graders")
    graders.permissions.add(_perm("add_attempt"), _perm("view_attempt"))
    editors = Group.objects.create(name="editors")
    editors.permissions.add(_perm("view_attempt"), _perm("change_scoring"))
    nobody = User.objects.create_user("nobody")
    own = User.objects.create_user("own")
    own.user_permissions.add(_perm("add_attempt"))
    grouped = User.objects.create_user("grouped")
    grouped.groups.add(graders, editors)
    both = User.objects.create_user("both")
    both.user_permissions.add(_perm("delete_attempt"))
    both.groups.add(graders)
    inactive = User.objects.create_user("inactive", is_active=False)
    inactive.user_permissions.add(_perm("add_attempt"))
    boss = User.objects.create_superuser("boss", "b@example.com", "pw")
    return [nobody, own, grouped, both, inactive, boss]


def test_same_permissions_as_model_backend(users):
    for user in users:
        ours = PermissionsBackend().get_all_permissions(User.objects.get(pk=user.pk))
        theirs = ModelBackend().get_all_permissions(User.objects.get(pk=user.pk))
        assert ours == theirs, user.username
    by_name = {u.username: u for u in users}
    assert PermissionsBackend().get_all_permissions(by_name["grouped"]) == {
        "challenges.add_attempt",
        "challenges.view_attempt",
        "challenges.change_scoring",
    }
    assert PermissionsBackend().get_all_permissions(by_name["inactive"]) == set()


def test_one_statement_per_request_user(users):
    user = User.objects.get(username="both")
    with CaptureQueriesContext(connection) as queries:
        assert user.has_perm("challenges.add_attempt")
        assert user.has_perm("challenges.delete_attempt")
        assert not user.has_perm("challenges.change_scoring")
    assert len(queries) == 1


def test_the_backend_is_the_one_in_use(settings):
    assert "config.auth.PermissionsBackend" in settings.AUTHENTICATION_BACKENDS
    assert "django.contrib.auth.backends.ModelBackend" not in settings.AUTHENTICATION_BACKENDS
    assert (
        "config.auth.TokenAuthentication"
        in settings.REST_FRAMEWORK["DEFAULT_AUTHENTICATION_CLASSES"]
    )


def test_token_authentication_answers_as_drf(users):
    own = next(u for u in users if u.username == "own")
    token = Token.objects.create(user=own)
    with CaptureQueriesContext(connection) as queries:
        user, found = TokenAuthentication().authenticate_credentials(token.key)
    assert len(queries) == 1
    assert user.pk == own.pk and user.username == "own" and user.is_authenticated
    assert (found.key, found.user_id, found.created) == (token.key, own.pk, token.created)
    assert found.user is user
    with pytest.raises(exceptions.AuthenticationFailed, match="Invalid token"):
        TokenAuthentication().authenticate_credentials(token.key.upper() + "x")
    inactive = next(u for u in users if u.username == "inactive")
    with pytest.raises(exceptions.AuthenticationFailed, match="User inactive or deleted"):
        TokenAuthentication().authenticate_credentials(Token.objects.create(user=inactive).key)


def test_a_bad_or_unknown_token_is_a_401_through_the_api(client):
    for header in ("Token nope", "Token " + "a" * 40, "Token ' OR 1=1 --"):
        response = client.get("/api/challenges/", HTTP_AUTHORIZATION=header)
        assert response.status_code == 401, header
        assert "Invalid token" in response.json()["detail"]
