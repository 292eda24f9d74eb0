"""Who may do what (DESIGN.md, "Roles")."""

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


class CanRecordAttempts(BasePermission):
    message = "This token may not record attempts (it needs challenges.add_attempt)."

    def has_permission(self, request: Any, view: Any) -> bool:
        user = request.user
        return bool(user and user.is_authenticated and user.has_perm(RECORD_ATTEMPTS))


class DenyAll(BasePermission):
    """The API's default (DEFAULT_PERMISSION_CLASSES): a view that does not say who may
    use it is closed to everyone, not open."""

    message = "This route states no permission, so nobody may use it."

    def has_permission(self, request: Any, view: Any) -> bool:
        return False
