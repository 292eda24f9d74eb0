"""Who the caller is and what it may do, each read in one constant statement.

``ModelBackend`` builds two ORM queries (the user's own permissions, then its groups')
the first time a request asks ``user.has_perm``; every request recording attempts asks,
and compiling those two queries was a sixth of such a request's CPU. This backend answers
the same question, with the same rules, from one precompiled statement. Superusers are
left to ``ModelBackend`` (every permission there is). ``TokenAuthentication`` likewise
reads an API token and its user without compiling DRF's ``select_related`` query."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions
from rest_framework.authtoken.models import Token

_USER_PERMS = Permission.user_set.through._meta.db_table  # type: ignore[attr-defined]
_GROUP_PERMS = Group.permissions.through._meta.db_table
_USER_GROUPS = Group.user_set.through._meta.db_table  # type: ignore[attr-defined]
ALL_PERMISSIONS = f"""
SELECT ct.app_label, p.codename
FROM {Permission._meta.db_table} p
JOIN {ContentType._meta.db_table} ct ON ct.id = p.content_type_id
WHERE p.id IN (
    SELECT permission_id FROM {_USER_PERMS} WHERE user_id = %s
    UNION
    SELECT gp.permission_id FROM {_GROUP_PERMS} gp
    JOIN {_USER_GROUPS} ug ON ug.group_id = gp.group_id WHERE ug.user_id = %s
)
"""  # noqa: S608 - Django's own tables


class PermissionsBackend(ModelBackend):
    """``ModelBackend`` whose ``get_all_permissions`` (behind ``has_perm``) reads a
    non-superuser's permissions, its own and its groups', in one statement, cached on
    the user object for the request as ModelBackend caches them."""

    def get_all_permissions(self, user_obj: Any, obj: Any = None) -> set[str]:
        if not user_obj.is_active or user_obj.is_anonymous or obj is not None:
            return set()
        if user_obj.is_superuser:
            return super().get_all_permissions(user_obj, obj)
        if not hasattr(user_obj, "_perm_cache"):
            with connection.cursor() as cursor:
                cursor.execute(ALL_PERMISSIONS, [user_obj.pk, user_obj.pk])
                user_obj._perm_cache = {f"{app}.{codename}" for app, codename in cursor}
        return user_obj._perm_cache


_User = get_user_model()
# The token, its user, and the challenges the user is scoped to (challenges.permissions
# ``writable_challenges``) as one comma-separated list: one statement, no ORM.
_SCOPES_LIST = {
    "postgresql": "string_agg(s.challenge_id::text, ',')",
    "default": "group_concat(s.challenge_id, ',')",
}
_USER_OF_KEY = """
SELECT u.*, t.created AS token_created,
       (SELECT {scopes} FROM {scope_table} s WHERE s.user_id = u.{pk}) AS scopes
FROM {users} u JOIN {tokens} t ON t.user_id = u.{pk}
WHERE t.key = %s
"""


def _user_of_key() -> str:
    from challenges.models import IntegrationScope  # the app's models, once apps are ready

    scopes = _SCOPES_LIST.get(connection.vendor, _SCOPES_LIST["default"])
    return _USER_OF_KEY.format(
        scopes=scopes,
        scope_table=IntegrationScope._meta.db_table,
        pk=_User._meta.pk.column,
        users=_User._meta.db_table,
        tokens=Token._meta.db_table,
    )


class TokenAuthentication(authentication.TokenAuthentication):
    """DRF's ``Authorization: Token <key>``, same answers and errors, the token and its
    user read in one precompiled statement."""

    def authenticate_credentials(self, key: str) -> tuple[Any, Token]:
        found = list(_User.objects.raw(_user_of_key(), [key]))
        if not found:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        user = found[0]
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        created = user.token_created  # an extra column: SQLite's comes back unconverted
        if hasattr(connection.ops, "convert_datetimefield_value"):
            created = connection.ops.convert_datetimefield_value(created, None, connection)
        scopes = frozenset(int(pk) for pk in str(user.scopes or "").split(",") if pk)
        user._podium_scopes = scopes or None  # challenges.permissions.SCOPES
        token = Token(key=key, user=user, created=created)
        token._state.adding, token._state.db = False, user._state.db  # as read
        return user, token
