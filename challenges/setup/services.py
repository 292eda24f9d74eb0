"""Services that write a challenge and its scoring setup: create, update, the merge of a
partial setup change, and the rescore of the current setup.

A scoring change makes a new version (``ScoringVersion.objects.create_next``) and queues its
rescore (``rescoring.jobs.rescore_start``); the active version stays until that is done.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from challenges import audit
from challenges.fieldsets import (
    BOARD_FIELDS,
    EMPTY_SETUP,
    INFO_FIELDS,
    RED_BLUE_POINTS_FIELDS,
    SETUP_FIELDS,
    SINGLE_SCORER,
)
from challenges.ingestion import admission
from challenges.leaderboards import evaluation, freeze
from challenges.models import Challenge, ChallengeFormat, RescoreJob, ScoringVersion
from challenges.redblue import points as red_blue_points
from challenges.redblue.validation import red_blue_validate
from challenges.rescoring import jobs as rescoring
from challenges.text import line_breaks_normalised, unique_slug
from scoring import services as scoring
from scoring.engine import strategies


@transaction.atomic
def challenge_create(*, data: dict[str, Any], by: Any = None) -> Challenge:
    """Create a challenge and its scoring version 1 (active at once: nothing to score).

    ``data`` has been validated for types; the scoring setup is validated here.
    Raises ``scoring.SetupInvalid``.
    """
    data = line_breaks_normalised(data)
    setup = {name: data[name] for name in SETUP_FIELDS if name in data}
    setup.setdefault("scoring_strategy", strategies.FIRST)
    setup = scoring.setup_validate(setup=setup)
    challenge = Challenge(**{k: v for k, v in data.items() if k in INFO_FIELDS}, **setup)
    admission.competition_validate(challenge=challenge)
    _board_validate(challenge)
    red_blue_validate(challenge=challenge)
    if not challenge.slug:
        challenge.slug = unique_slug(challenge.name, Challenge.objects.all(), "challenge")
    challenge.save()
    version = ScoringVersion.objects.create_next(challenge=challenge, by=by, reason="created")
    version.scored_at = timezone.now()
    version.save(update_fields=["scored_at"])
    challenge.active_version = version
    challenge.save(update_fields=["active_version"])
    audit.audit_challenge_saved(challenge=challenge, before=None, by=by)
    return challenge


def _board_validate(challenge: Challenge) -> None:
    """Raises ``scoring.SetupInvalid`` (a 400 naming the field) for bad board fields."""
    errors = evaluation.board_errors({n: getattr(challenge, n) for n in BOARD_FIELDS})
    if errors:
        raise scoring.SetupInvalid(errors)


def setup_merge(*, challenge: Challenge, changes: dict[str, Any]) -> dict[str, Any]:
    """The setup a partial change leads to. When the strategy changes, the fields the new
    strategy does not use and the change does not mention are cleared."""
    merged = challenge.setup_dict()
    if changes.get("scoring_strategy", merged["scoring_strategy"]) != merged["scoring_strategy"]:
        merged.update(copy.deepcopy(EMPTY_SETUP))
    # Switching between one scorer and a list: the form the change does not use is cleared.
    if changes.get("scorers") and not any(name in changes for name in SINGLE_SCORER):
        merged.update({name: copy.deepcopy(EMPTY_SETUP[name]) for name in SINGLE_SCORER})
    elif changes.get("scoring_code") and "scorers" not in changes:
        merged.update(scorers=[], rank_by="")
    merged.update({k: v for k, v in changes.items() if k in SETUP_FIELDS})
    return merged


@dataclass(frozen=True)
class ChallengeUpdate:
    challenge: Challenge
    new_version: ScoringVersion | None  # set when the scoring setup changed
    job: RescoreJob | None  # the rescore queued for the new version


def challenge_update(
    *, challenge: Challenge, data: dict[str, Any], by: Any = None
) -> ChallengeUpdate:
    """Update a challenge. A change of the scoring setup makes a new version and queues
    its rescore; the active version stays until that rescore is done. A change of a
    red/blue challenge's points rule recomputes every judged pairing's points and makes
    them active as a new version in one step (a pairing scorer plugin runs first,
    outside the transaction). A change that changes nothing (the same values, line
    breaks aside) writes and records nothing."""
    data = line_breaks_normalised(data)
    for _ in range(red_blue_points.RETRIES):
        planned = _points_plan(challenge, data)
        try:
            return _challenge_update(challenge=challenge, data=data, by=by, planned=planned)
        except red_blue_points.RuleChanged:
            continue  # judged meanwhile: compute again
    raise red_blue_points.RuleChanged(
        "Pairings kept being judged while the new points were computed; save again."
    )


def _points_plan(challenge: Challenge, data: dict[str, Any]) -> red_blue_points.Planned | None:
    """The points a change to a ``custom`` points rule gives the judged pairings,
    computed before the transaction (None: no such change). A change that does not
    validate is left to the transaction to refuse."""
    if not any(name in data for name in RED_BLUE_POINTS_FIELDS):
        return None
    draft = Challenge.objects.get(pk=challenge.pk)
    if draft.format != ChallengeFormat.RED_BLUE and data.get("format") != ChallengeFormat.RED_BLUE:
        return None
    rule, before = draft.red_blue_rule(), audit.challenge_values(draft)
    for name in INFO_FIELDS:
        if name in data:
            setattr(draft, name, data[name])
    try:  # as the transaction will: the plugin checked (and normalised) when touched
        red_blue_validate(challenge=draft, before=before)
    except scoring.SetupInvalid:
        return None
    if draft.red_blue_rule() == rule:
        return None
    return red_blue_points.points_plan(draft=draft)


@transaction.atomic
def _challenge_update(
    *,
    challenge: Challenge,
    data: dict[str, Any],
    by: Any,
    planned: red_blue_points.Planned | None,
) -> ChallengeUpdate:
    challenge = Challenge.objects.select_for_update().get(pk=challenge.pk)
    before = audit.challenge_values(challenge)
    for name in INFO_FIELDS:
        if name in data:
            setattr(challenge, name, data[name])
    admission.competition_validate(challenge=challenge)
    _board_validate(challenge)
    red_blue_validate(challenge=challenge, before=before)
    refreeze = challenge.freeze_at != before["freeze_at"]
    if refreeze:  # a new freeze: revealed again only by a new reveal
        challenge.revealed_at = None
    if not challenge.slug:
        challenge.slug = unique_slug(
            challenge.name, Challenge.objects.exclude(pk=challenge.pk), "challenge"
        )
    new_version = None
    if any(name in data for name in SETUP_FIELDS):
        setup = scoring.setup_validate(setup=setup_merge(challenge=challenge, changes=data))
        if setup != challenge.setup_dict():
            for name, value in setup.items():
                setattr(challenge, name, value)
            new_version = ScoringVersion.objects.create_next(
                challenge=challenge, by=by, reason="setup change"
            )
    after = audit.challenge_values(challenge)
    if new_version is None and audit.fields_changed(before, after, tuple(after)) is None:
        return ChallengeUpdate(challenge, None, None)
    challenge.save()
    if refreeze:
        freeze.frozen_drop(challenge_ids=[challenge.pk])
    points_version = None
    if challenge.format == ChallengeFormat.RED_BLUE and audit.fields_changed(
        before, after, RED_BLUE_POINTS_FIELDS
    ):
        points_version = red_blue_points.points_switch(
            challenge=challenge, planned=planned, by=by, new_version=new_version is None
        )
    made = new_version or points_version
    audit.audit_challenge_saved(
        challenge=challenge,
        before=before,
        by=by,
        new_version_number=made.number if made else None,
    )
    job = None
    if new_version is not None:
        job = rescoring.rescore_start(challenge=challenge, version=new_version, by=by)
    return ChallengeUpdate(challenge, new_version, job)


def challenge_rescore(*, challenge: Challenge, by: Any = None) -> RescoreJob:
    """Rescore the challenge's current setup: ``rescore_start`` plans the chunks, then
    makes the version holding the setup and the job under the challenge lock."""
    return rescoring.rescore_start(challenge=challenge, by=by)


@transaction.atomic
def challenge_delete(*, challenge: Challenge, by: Any = None) -> None:
    """Delete a challenge with its attempts, versions and boards; a ``challenge_delete``
    audit event keeps what it was (the trail outlives the challenge)."""
    audit.audit_record(
        kind=audit.Kind.CHALLENGE_DELETE,
        by=by,
        challenge=challenge,
        before={**audit.challenge_values(challenge), "attempts": challenge.attempts.count()},
    )
    challenge.delete()
