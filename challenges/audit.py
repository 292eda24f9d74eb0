"""The audit trail: every change of what players see, recorded once by the service that
makes it (so the admin, the API and the commands are recorded alike).

Services call ``audit_record``; where the change came from (``via``) is the entry
point's business, not the service's: ``AuditViaMiddleware`` marks API and admin
requests, and anything else (management commands, the shell, tasks) is a command.
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponse

from challenges.fieldsets import FREEZE_FIELDS, INFO_FIELDS, LIMIT_FIELDS, SCHEDULE_FIELDS
from challenges.models import AuditEvent, Challenge


class Kind:
    """The kinds of change recorded (``AuditEvent.kind``)."""

    CHALLENGE_CREATE = "challenge_create"
    CHALLENGE_EDIT = "challenge_edit"  # name, slug, description, visibility, identifiers
    CHALLENGE_DELETE = "challenge_delete"  # with its attempts, versions and boards
    SCORING_CHANGE = "scoring_change"  # a new scoring version
    RESCORE_START = "rescore_start"
    RESCORE_CANCEL = "rescore_cancel"
    VERSION_ACTIVATE = "version_activate"  # "make active again"
    SCHEDULE = "schedule"  # opens_at, closes_at, late_attempts
    FREEZE = "freeze"  # freeze_at
    REVEAL = "reveal"
    LIMITS = "limits"  # attempts_per_day, attempts_total
    PLAYER_HIDE = "player_hide"
    PLAYER_UNHIDE = "player_unhide"
    ATTEMPT_HIDE = "attempt_hide"
    ATTEMPT_UNHIDE = "attempt_unhide"
    ATTEMPT_DELETE = "attempt_delete"
    PLAYER_RENAME = "player_rename"  # an admin's edit of a display name
    IMPORT = "import"
    COLLECTION_CREATE = "collection_create"
    COLLECTION_EDIT = "collection_edit"  # name, slug, strategy, member challenges
    COLLECTION_DELETE = "collection_delete"
    PAIRING_JUDGEMENT = "pairing_judgement"  # red/blue: the judge's verdict and the points
    PAIRING_REJUDGE = "pairing_rejudge"  # an admin's new verdict on a judged pairing

    # Every kind above, in order: a new kind is listed by being written.
    ALL = tuple(value for name, value in list(locals().items()) if name.isupper())


# Which challenge fields each kind of edit covers (the scoring setup is a version).
INFO_KINDS = {
    Kind.SCHEDULE: SCHEDULE_FIELDS,
    Kind.LIMITS: LIMIT_FIELDS,
    Kind.FREEZE: FREEZE_FIELDS,
}

_via: contextvars.ContextVar[str] = contextvars.ContextVar("podium_audit_via", default="command")


@contextmanager
def audit_via(via: str) -> Iterator[None]:
    """Record the changes made inside as coming from ``via`` (admin, api, command)."""
    token = _via.set(via)
    try:
        yield
    finally:
        _via.reset(token)


class AuditViaMiddleware:
    """Marks a request's changes as coming from the API or the admin by its path."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        path = request.path_info
        via = "api" if path.startswith("/api/") else "admin" if path.startswith("/admin/") else ""
        if not via:
            return self.get_response(request)
        with audit_via(via):
            return self.get_response(request)


def _jsonable(value: Any) -> Any:
    """A value as JSON stores it (datetimes as ISO 8601 text)."""
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


def audit_record(
    *,
    kind: str,
    by: Any = None,
    challenge: Challenge | None = None,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    reason: str = "",
) -> AuditEvent:
    """Append one event (call inside the transaction that makes the change, so the event
    exists exactly when the change does)."""
    assert kind in Kind.ALL, kind
    actor = by if getattr(by, "is_authenticated", False) else None
    return AuditEvent.objects.create(
        actor=actor,
        actor_name=actor.get_username() if actor else "",
        via=_via.get(),
        kind=kind,
        challenge=challenge,
        challenge_name=challenge.name if challenge else "",
        before=_jsonable(before) if before is not None else None,
        after=_jsonable(after) if after is not None else None,
        reason=reason,
    )


def fields_changed(
    old: dict[str, Any], new: dict[str, Any], names: tuple[str, ...]
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(before, after) of the ``names`` whose value differs, or None when none does."""
    changed = [n for n in names if _comparable(old.get(n)) != _comparable(new.get(n))]
    if not changed:
        return None
    return {n: old.get(n) for n in changed}, {n: new.get(n) for n in changed}


def _comparable(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def challenge_values(challenge: Challenge) -> dict[str, Any]:
    """What an edit may change, for the before/after of its events."""
    return {name: getattr(challenge, name) for name in (*INFO_FIELDS, *challenge.SETUP_FIELDS)}


def audit_challenge_saved(
    *,
    challenge: Challenge,
    before: dict[str, Any] | None,
    by: Any,
    new_version_number: int | None = None,
) -> None:
    """The events of a challenge create (``before`` None) or edit: one per kind of change
    (description and visibility, schedule, limits, scoring), each with the fields it
    changed."""
    after = challenge_values(challenge)
    if before is None:
        audit_record(kind=Kind.CHALLENGE_CREATE, by=by, challenge=challenge, after=after)
        return

    grouped = {name for names in INFO_KINDS.values() for name in names}
    kinds = {**INFO_KINDS, Kind.CHALLENGE_EDIT: tuple(n for n in INFO_FIELDS if n not in grouped)}
    for kind, names in kinds.items():
        changed = fields_changed(before, after, names)
        if changed:
            audit_record(kind=kind, by=by, challenge=challenge, before=changed[0], after=changed[1])
    if new_version_number is not None:
        changed = fields_changed(before, after, challenge.SETUP_FIELDS)
        old, new = changed or ({}, {})
        audit_record(
            kind=Kind.SCORING_CHANGE,
            by=by,
            challenge=challenge,
            before=old,
            after={**new, "version": new_version_number},
        )
