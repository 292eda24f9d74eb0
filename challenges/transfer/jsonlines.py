"""Export a challenge as JSON lines and import it again, exactly.

The format (one JSON object per line, ``type`` first):
- ``{"type": "challenge", "format": "podium-challenge/1", ...}``: the challenge's fields
  and scoring setup, the number of its active version, and when it was created (the
  challenge's own ``format``, single or red_blue, as ``challenge_format``: ``format``
  names the file's; red/blue submissions and pairings are not exported);
- ``{"type": "version", "number": 1, ...}``: every scoring version, oldest first, with
  its setup, reason, author (username) and times;
- ``{"type": "attempt", "player": ..., ...}``: every attempt, oldest id first, in the
  attempts API's own shape (``created_at`` in epoch milliseconds, exact).

Scores are not exported: they follow from the attempts and the versions. An import
scores the attempts under the exported active version (a rescore job) and makes it
active when done; other versions are scored if they are made active again. When
attempts were recorded (``recorded_at``, the server's time, which a freeze goes by) and
when the board was revealed (``revealed_at``) are kept, so a frozen or revealed
challenge imports with the same public board; files without them (older exports) take
the import's time and no reveal.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils.dateparse import parse_datetime

from challenges import audit
from challenges.api.serializers import AttemptInSerializer, ChallengeSerializer
from challenges.ingestion.services import AttemptInput, _players_upsert, attempt_build
from challenges.models import Attempt, Challenge, RescoreJob, ScoringSetupFields, ScoringVersion
from challenges.rescoring import jobs as rescoring
from challenges.setup.services import INFO_FIELDS
from challenges.text import path_label, text_problem
from scoring import services as scoring

FORMAT = "podium-challenge/1"
SETUP_FIELDS = ScoringSetupFields.SETUP_FIELDS
ATTEMPT_BATCH = 5000


class ImportInvalid(ValueError):
    """A line of an import that cannot be used; the message names the line and field."""


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _epoch_ms(value: datetime) -> int:
    return round(value.timestamp() * 1000)


CHALLENGE_FORMAT = "challenge_format"


# --- export -------------------------------------------------------------------------------
def challenge_export(*, challenge: Challenge) -> Iterator[dict[str, Any]]:
    """The challenge's lines, streamed (attempts are read in batches, never all at once)."""
    active = challenge.active_version.number if challenge.active_version_id else None
    yield {
        "type": "challenge",
        "format": FORMAT,
        **{name: _plain(getattr(challenge, name)) for name in INFO_FIELDS if name != "format"},
        # The challenge's own ``format`` (single, red_blue): "format" names the file's.
        CHALLENGE_FORMAT: challenge.format,
        **challenge.setup_dict(),
        "active_version": active,
        "created_at": _iso(challenge.created_at),
        "revealed_at": _iso(challenge.revealed_at),
    }
    versions = challenge.versions.select_related("created_by").order_by("number")
    for v in versions:
        yield {
            "type": "version",
            "number": v.number,
            "reason": v.reason,
            "created_by": v.created_by.get_username() if v.created_by else None,
            "created_at": _iso(v.created_at),
            **v.setup_dict(),
        }
    attempts = challenge.attempts.select_related("player").order_by("pk")
    for a in attempts.iterator(chunk_size=ATTEMPT_BATCH):
        yield {
            "type": "attempt",
            "player": a.player.external_id,
            "player_name": a.player.display_name,
            "succeeded": a.succeeded,
            "tokens_total": a.tokens_total,
            "elapsed_ms": a.elapsed_ms,
            "rating": a.rating,
            "created_at": _epoch_ms(a.created_at),
            "sample": a.sample,
            "output": a.output,
            "messages": a.messages,
            "recorded_at": _iso(a.recorded_at),
            # Only when set: files without them (older exports) import as before.
            **{flag: True for flag in MODERATION_FLAGS if getattr(a, flag)},
        }


MODERATION_FLAGS = ("practice", "hidden")  # never ranked: kept so across an import


def _plain(value: Any) -> Any:
    return _iso(value) if isinstance(value, datetime) else value


def export_lines(*, challenge: Challenge) -> Iterator[str]:
    for item in challenge_export(challenge=challenge):
        yield json.dumps(item, ensure_ascii=False) + "\n"


# --- import -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ImportResult:
    challenge: Challenge
    versions: int
    attempts: int
    job: RescoreJob | None  # scores the active version; None when there is none


def _fail(line_no: int, message: str) -> ImportInvalid:
    return ImportInvalid(f"line {line_no}: {message}")


def _field_errors(errors: Any) -> str:
    if isinstance(errors, dict):
        return "; ".join(
            f"{k}: {' '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in errors.items()
        )
    return str(errors)


def _parse(lines: Iterable[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise _fail(line_no, f"not valid JSON ({exc})") from None
        if not isinstance(item, dict) or "type" not in item:
            raise _fail(line_no, 'expected a JSON object with a "type".')
        problem = text_problem(item)
        if problem is not None:  # the API's rule: no lone surrogate, no NUL
            path, what = problem
            raise _fail(line_no, f"{path_label(path)}: text must be valid Unicode: {what}.")
        yield line_no, item


def _datetime(line_no: int, field: str, value: Any, *, required: bool) -> datetime | None:
    if value is None and not required:
        return None
    parsed = parse_datetime(value) if isinstance(value, str) else None
    if parsed is None or parsed.tzinfo is None:
        raise _fail(line_no, f"{field}: expected an ISO 8601 time with its offset.")
    return parsed


def _setup(line_no: int, item: dict[str, Any]) -> dict[str, Any]:
    setup = {name: item[name] for name in SETUP_FIELDS if name in item}
    try:
        return scoring.setup_validate(setup=setup)
    except scoring.SetupInvalid as exc:
        raise _fail(line_no, _field_errors(exc.errors)) from None


def _challenge_from(line_no: int, item: dict[str, Any], slug: str | None) -> tuple[Challenge, Any]:
    data = dict(item)
    if data.pop("format", None) != FORMAT:
        raise _fail(line_no, f'"format" must be "{FORMAT}".')
    if CHALLENGE_FORMAT in data:
        data["format"] = data.pop(CHALLENGE_FORMAT)
    del data["type"]
    active = data.pop("active_version", None)
    created_at = _datetime(line_no, "created_at", data.pop("created_at", None), required=True)
    revealed_at = _datetime(line_no, "revealed_at", data.pop("revealed_at", None), required=False)
    if slug is not None:
        data["slug"] = slug
    checked = ChallengeSerializer(data=data)
    if not checked.is_valid():
        raise _fail(line_no, _field_errors(checked.errors))
    values = checked.validated_data
    setup = _setup(line_no, values)
    challenge = Challenge(**{k: values[k] for k in INFO_FIELDS if k in values}, **setup)
    if revealed_at is not None and challenge.freeze_at is None:
        raise _fail(line_no, "revealed_at: only with a freeze_at.")
    challenge.revealed_at = revealed_at
    return challenge, (active, created_at)


_VERSION_KEYS = {"type", "number", "reason", "created_by", "created_at", *SETUP_FIELDS}


def _version_from(
    line_no: int, item: dict[str, Any], expected: int
) -> tuple[ScoringVersion, datetime]:
    """The unsaved version and when it was made (``created_at`` is set on save, so the
    caller writes the exported time afterwards)."""
    unknown = sorted(set(item) - _VERSION_KEYS)
    if unknown:
        raise _fail(line_no, f"unknown field(s): {', '.join(unknown)}.")
    if item.get("number") != expected:
        raise _fail(line_no, f"number: expected {expected} (versions in order, from 1).")
    reason = item.get("reason", "")
    if not isinstance(reason, str) or len(reason) > 200:
        raise _fail(line_no, "reason: a string of at most 200 characters.")
    author = item.get("created_by")
    if author is not None and not isinstance(author, str):
        raise _fail(line_no, "created_by: a username or null.")
    version = ScoringVersion(number=expected, reason=reason, **_setup(line_no, item))
    version.created_by = (
        get_user_model().objects.filter(**{get_user_model().USERNAME_FIELD: author}).first()
        if author
        else None
    )
    made = _datetime(line_no, "created_at", item.get("created_at"), required=True)
    return version, made


def _attempt_from(line_no: int, item: dict[str, Any]) -> tuple[AttemptInput, dict[str, Any]]:
    kept = (*MODERATION_FLAGS, "recorded_at")
    data = {k: v for k, v in item.items() if k != "type" and k not in kept}
    flags: dict[str, Any] = {flag: item[flag] for flag in MODERATION_FLAGS if flag in item}
    if any(type(value) is not bool for value in flags.values()):
        raise _fail(line_no, "practice, hidden: true or false.")
    recorded = _datetime(line_no, "recorded_at", item.get("recorded_at"), required=False)
    if recorded is not None:
        flags["recorded_at"] = recorded
    checked = AttemptInSerializer(data=data)
    if not checked.is_valid():
        raise _fail(line_no, _field_errors(checked.errors))
    if data.get("created_at") is None:
        raise _fail(line_no, "created_at: required in an import.")
    return checked.to_input(checked.validated_data), flags


def _attempts_write(challenge: Challenge, batch: list[tuple[AttemptInput, dict]]) -> None:
    players = _players_upsert([item for item, _ in batch])
    attempts = []
    for item, flags in batch:
        attempt = attempt_build(challenge=challenge, item=item, player=players[item.player])
        for flag, value in flags.items():
            if flag != "recorded_at":
                setattr(attempt, flag, value)
        attempts.append(attempt)
    Attempt.objects.bulk_create(attempts)
    # recorded_at is set on insert (auto_now_add): the exported times are written after.
    timed = []
    for attempt, (_, flags) in zip(attempts, batch, strict=True):
        if "recorded_at" in flags:
            attempt.recorded_at = flags["recorded_at"]
            timed.append(attempt)
    if timed:
        Attempt.objects.bulk_update(timed, ["recorded_at"], batch_size=ATTEMPT_BATCH)


def challenge_import(
    *, lines: Iterable[str], slug: str | None = None, by: Any = None
) -> ImportResult:
    """Create a challenge from exported lines, all or nothing; raises ``ImportInvalid``
    naming the line and the field. The active version is scored by a rescore job queued
    when the import commits (run it inline with ``rescoring.job_run_inline``)."""
    with transaction.atomic():
        parsed = _parse(lines)
        first = next(parsed, None)
        if first is None or first[1]["type"] != "challenge":
            raise _fail(first[0] if first else 1, 'the first line must be the "challenge".')
        challenge, (active_number, created_at) = _challenge_from(*first, slug)
        challenge.save()
        versions: dict[int, ScoringVersion] = {}
        batch: list[tuple[AttemptInput, dict]] = []
        attempts = 0
        for line_no, item in parsed:
            kind = item["type"]
            if kind == "version":
                if attempts:
                    raise _fail(line_no, "versions must come before the attempts.")
                version, made = _version_from(line_no, item, expected=len(versions) + 1)
                version.challenge = challenge
                version.save()
                ScoringVersion.objects.filter(pk=version.pk).update(created_at=made)
                versions[version.number] = version
            elif kind == "attempt":
                batch.append(_attempt_from(line_no, item))
                attempts += 1
                if len(batch) >= ATTEMPT_BATCH:
                    _attempts_write(challenge, batch)
                    batch = []
            else:
                raise _fail(line_no, f"unknown type {kind!r} (challenge, version, attempt).")
        if batch:
            _attempts_write(challenge, batch)
        if not versions:
            raise ImportInvalid("the file has no scoring version.")
        if active_number is not None and active_number not in versions:
            raise _fail(1, f"active_version: {active_number} is not among the versions.")
        last = versions[max(versions)]
        if any(getattr(challenge, f) != getattr(last, f) for f in SETUP_FIELDS):
            raise _fail(1, "the challenge's setup differs from its latest version.")
        Challenge.objects.filter(pk=challenge.pk).update(created_at=created_at)
        job = None
        if active_number is not None:
            job = rescoring.rescore_start(
                challenge=challenge, version=versions[active_number], by=by
            )
        audit.audit_record(
            kind=audit.Kind.IMPORT,
            by=by,
            challenge=challenge,
            after={"slug": challenge.slug, "versions": len(versions), "attempts": attempts},
        )
    challenge.refresh_from_db()
    return ImportResult(challenge, len(versions), attempts, job)
