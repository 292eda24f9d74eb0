"""Who may do what (docs/words-and-data.md, "Roles" and "Who may write what")."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission

CHANGE_SCORING = "challenges.change_scoring"
RECORD_ATTEMPTS = "challenges.add_attempt"


def is_scoring_admin(user: Any) -> bool:
    return bool(
        user and user.is_authenticated and (user.is_superuser or user.has_perm(CHANGE_SCORING))
    )


class IsScoringAdmin(BasePermission):
    message = "Only admins (the challenges.change_scoring permission) may change challenges."

    def has_permission(self, request: Any, view: Any) -> bool:
        return is_scoring_admin(request.user)


def is_staff_member(user: Any) -> bool:
    """Staff may trigger and cancel rescoring (admins may too)."""
    return bool(user and user.is_authenticated and (user.is_staff or is_scoring_admin(user)))


class IsStaffMember(BasePermission):
    message = "Only staff may start, watch or cancel rescoring."

    def has_permission(self, request: Any, view: Any) -> bool:
        return is_staff_member(request.user)


SCOPES = "_podium_scopes"  # on a user object: its writable challenges, read once
OUT_OF_SCOPE = "This token may record attempts only to the challenges it is scoped to."


def writable_challenges(user: Any) -> frozenset[int] | None:
    """The ids of the challenges ``user`` may record attempts to; None for every one
    (staff, admins, and a user given no ``IntegrationScope``). Read once per request:
    ``config.auth.TokenAuthentication`` reads them with the token, in its statement."""
    if is_staff_member(user):
        return None
    if not hasattr(user, SCOPES):  # a session's user (the token's come with them)
        ids = user.integration_scopes.values_list("challenge_id", flat=True)
        setattr(user, SCOPES, frozenset(ids) or None)
    return getattr(user, SCOPES)


class CanRecordAttempts(BasePermission):
    message = "This token may not record attempts (it needs challenges.add_attempt)."

    def has_permission(self, request: Any, view: Any) -> bool:
        user = request.user
        return bool(user and user.is_authenticated and user.has_perm(RECORD_ATTEMPTS))

    def has_object_permission(self, request: Any, view: Any, obj: Any) -> bool:
        scopes = writable_challenges(request.user)
        if scopes is None or obj.pk in scopes:
            return True
        self.message = OUT_OF_SCOPE
        return False


class DenyAll(BasePermission):
    """The API's default (DEFAULT_PERMISSION_CLASSES): a view that does not say who may
    use it is closed to everyone, not open."""

    message = "This route states no permission, so nobody may use it."

    def has_permission(self, request: Any, view: Any) -> bool:
        return False
