"""Scoring versions in the admin: a readable summary and diff of setups, and making an
earlier version active again.

``version_activate`` is the rollback. A version keeps its scores after another one
becomes active, so going back is instant: only the attempts recorded since it was last
active lack a score; they are scored, the version's leaderboard is rebuilt, and the
pointer moves under the challenge row lock by the same switch a rescore ends with
(``rescoring.switch.version_switch``). A version that was never fully scored (its
rescore was cancelled or superseded), or one that would need too many attempts scored
inline, is rescored by a background job instead, which switches when it is done.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Exists, Max, OuterRef

from challenges import audit
from challenges.leaderboards import scores
from challenges.models import (
    Attempt,
    AttemptScore,
    Challenge,
    HistoryRecord,
    RescoreJob,
    ScoringVersion,
)
from challenges.rescoring import jobs as rescoring
from challenges.rescoring.switch import history_after_switch, version_switch
from scoring import services as scoring
from scoring.engine import strategies

# More missing scores than this are left to a background job (a web request should not
# score for minutes); fewer are scored inline, which takes well under a second.
INLINE_MISSING_MAX = 20_000

FIELD_LABELS = {
    "scoring_strategy": "Strategy",
    "scoring_plugin_id": "Plugin",
    "scoring_entrypoint": "Entrypoint",
    "scoring_config": "Config",
    "scoring_code": "Code",
    "score_key": "Score key",
    "metrics": "Metrics",
    "timeout_ms": "Timeout",
    "scorers": "Scorers",
    "rank_by": "Ranking score",
}


# --- reading a setup ----------------------------------------------------------------------
def strategy_label(strategy: str) -> str:
    found = strategies.STRATEGIES.get(strategy)
    return found.chosen_as if found else strategy


def _value_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def setup_summary(setup: dict[str, Any]) -> str:
    """One line a person can read: "Scorer plugin builtin.weighted_scorer: rating_weight 20,
    …" or "Fastest success"."""
    strategy = setup.get("scoring_strategy", "")
    text = strategy_label(strategy)
    if strategy == strategies.CUSTOM:
        config = setup.get("scoring_config") or {}
        weights = ", ".join(f"{k} {_value_text(v)}" for k, v in sorted(config.items()))
        text = f"{text} {setup.get('scoring_plugin_id', '')}" + (f": {weights}" if weights else "")
    elif strategy == strategies.PYTHON and setup.get("scorers"):
        scorers = setup["scorers"]
        qa = sum(1 for x in scorers if x.get("purpose") == "qa")
        batch = sum(1 for x in scorers if x.get("type") == "python_batch")
        extra = ", ".join(
            part for part in (f"{qa} QA" if qa else "", f"{batch} batch" if batch else "") if part
        )
        rank = setup.get("rank_by") or scorers[0].get("key", "")
        count = f"{len(scorers)} scorer{'s' if len(scorers) != 1 else ''}"
        text = f"{text}, {count}" + (f" ({extra})" if extra else "") + f", ranked by {rank}"
    elif strategy == strategies.PYTHON:
        lines = len((setup.get("scoring_code") or "").splitlines())
        key = setup.get("score_key") or "(single score)"
        text = f"{text}, {lines} line{'s' if lines != 1 else ''}, ranked by {key}"
    return text


@dataclass(frozen=True)
class Change:
    """One difference between two setups. ``lines`` holds a unified diff for code."""

    label: str
    before: str
    after: str
    lines: tuple[str, ...] = ()


def version_diff(previous: dict[str, Any] | None, current: dict[str, Any]) -> list[Change]:
    """What changed from ``previous`` to ``current`` (two setup dicts), field by field;
    configs key by key, code as a unified diff. ``previous`` None: the first version."""
    if previous is None:
        return []
    changes: list[Change] = []
    for field, label in FIELD_LABELS.items():
        before, after = previous.get(field), current.get(field)
        if field == "scoring_code":
            before, after = scoring.code_normalise(before), scoring.code_normalise(after)
        if before == after:
            continue
        if field == "scoring_strategy":
            changes.append(Change(label, strategy_label(before or ""), strategy_label(after or "")))
        elif field == "scoring_config":
            changes.extend(_config_changes(before or {}, after or {}))
        elif field == "scoring_code":
            changes.append(Change(label, "", "", _code_diff(before or "", after or "")))
        elif field == "timeout_ms":
            changes.append(Change(label, f"{before} ms", f"{after} ms"))
        elif field == "scorers":
            changes.extend(_scorer_changes(before or [], after or []))
        else:
            changes.append(Change(label, _shown(before), _shown(after)))
    return changes


def _scorer_changes(before: list[dict], after: list[dict]) -> list[Change]:
    """Scorers added, removed, moved or changed (code as a unified diff)."""
    old = {x.get("key"): (i, x) for i, x in enumerate(before)}
    new = {x.get("key"): (i, x) for i, x in enumerate(after)}
    changes = []
    for key in dict.fromkeys([*old, *new]):
        label = f"Scorer {key}"
        if key not in new:
            changes.append(Change(label, "present", "(removed)"))
            continue
        if key not in old:
            changes.append(Change(label, "(none)", f"added at position {new[key][0] + 1}"))
            continue
        (i, a), (j, b) = old[key], new[key]
        if i != j:
            changes.append(Change(label, f"position {i + 1}", f"position {j + 1}"))
        for part in ("type", "display_name", "purpose", "config", "metrics"):
            if a.get(part) != b.get(part):
                changes.append(Change(f"{label} {part}", _shown(a.get(part)), _shown(b.get(part))))
        code_a, code_b = (x.get("compute_scores_snippet") or "" for x in (a, b))
        if code_a != code_b:
            changes.append(Change(f"{label} code", "", "", _code_diff(code_a, code_b)))
    return changes


def _code_diff(before: str, after: str) -> tuple[str, ...]:
    """A unified diff of two codes, two lines of context, without its file header."""
    diff = difflib.unified_diff(
        before.splitlines(), after.splitlines(), "before", "after", lineterm="", n=2
    )
    return tuple(diff)[2:]


def _shown(value: Any) -> str:
    if value in ("", None, [], {}):
        return "—"
    return _value_text(value)


def _config_changes(before: dict[str, Any], after: dict[str, Any]) -> list[Change]:
    keys = sorted(set(before) | set(after))
    return [
        Change(
            f"Config {key}",
            _value_text(before[key]) if key in before else "(unset)",
            _value_text(after[key]) if key in after else "(unset)",
        )
        for key in keys
        if before.get(key, _UNSET) != after.get(key, _UNSET)
    ]


_UNSET = object()


@dataclass(frozen=True)
class HistoryRow:
    version: ScoringVersion
    summary: str
    changes: list[Change]
    is_active: bool


def version_history(*, challenge: Challenge) -> list[HistoryRow]:
    """The challenge's versions, newest first, each with its diff against the one before
    (one query)."""
    versions = list(
        ScoringVersion.objects.filter(challenge=challenge)
        .select_related("created_by")
        .order_by("number")
    )
    rows = []
    previous = None
    for version in versions:
        setup = version.setup_dict()
        rows.append(
            HistoryRow(
                version=version,
                summary=setup_summary(setup),
                changes=version_diff(previous, setup),
                is_active=version.pk == challenge.active_version_id,
            )
        )
        previous = setup
    return rows[::-1]


# --- making a version active again --------------------------------------------------------
class ActivationRefused(ValueError):
    """The version cannot be made active (already active, or its setup cannot run)."""


@dataclass(frozen=True)
class Activation:
    version: ScoringVersion
    scored: int  # attempts scored inline (recorded since the version was last active)
    failed: int  # of which the scorer failed
    job: RescoreJob | None  # set when a background rescore will switch instead


def _missing(version: ScoringVersion) -> int:
    has_score = AttemptScore.objects.filter(version=version, attempt=OuterRef("pk"))
    return (
        Attempt.objects.filter(challenge_id=version.challenge_id).filter(~Exists(has_score)).count()
    )


def _adopt_setup(challenge: Challenge, version: ScoringVersion) -> None:
    """The challenge's editable setup becomes the version's (what is active is what the
    admin form shows)."""
    for name, value in version.setup_dict().items():
        setattr(challenge, name, value)


def _audit_activation(
    challenge: Challenge,
    previous_id: int | None,
    version: ScoringVersion,
    by: Any,
    job: RescoreJob | None = None,
) -> None:
    """Record a "make active again": at once, or (``job``) when that rescore is done."""
    previous = ScoringVersion.objects.filter(pk=previous_id).values_list("number", flat=True)
    audit.audit_record(
        kind=audit.Kind.VERSION_ACTIVATE,
        by=by,
        challenge=challenge,
        before={"active_version": previous.first()},
        after={"active_version": version.number, **({"rescore_job": job.pk} if job else {})},
    )


def version_activate(*, version: ScoringVersion, by: Any = None) -> Activation:
    """Make ``version`` its challenge's active version again (see the module docstring).
    Raises ``ActivationRefused``."""
    challenge = version.challenge
    previous = challenge.active_version_id
    if challenge.active_version_id == version.pk:
        raise ActivationRefused(f"Version {version.number} is already active.")
    try:
        scoring.setup_validate(setup=version.setup_dict())
    except scoring.SetupInvalid as exc:
        raise ActivationRefused(f"Version {version.number} can no longer run: {exc}") from exc

    if version.scored_at is None or _missing(version) > INLINE_MISSING_MAX:
        with transaction.atomic():
            challenge = Challenge.objects.select_for_update().get(pk=challenge.pk)
            _adopt_setup(challenge, version)
            challenge.save()
            job = rescoring.rescore_start(challenge=challenge, version=version, by=by)
            _audit_activation(challenge, previous, version, by, job)
        return Activation(version, 0, 0, job)

    # A moment under the lock: every attempt recorded so far has committed (ingestion
    # holds the challenge row in share mode), and any recorded later gets a higher id.
    with transaction.atomic():
        Challenge.objects.select_for_update().filter(pk=challenge.pk).exists()
        seen = (
            Attempt.objects.filter(challenge_id=challenge.pk).aggregate(last=Max("pk"))["last"] or 0
        )
    # Outside the lock: the attempts recorded since the version was last active (scored
    # outside any transaction, then written), and its leaderboard (nobody reads a version
    # that is not active).
    scored, failed = scores.scores_catch_up(version=version, after_id=0)
    with transaction.atomic():
        scores.entries_rebuild(version=version)
    with transaction.atomic():
        challenge = Challenge.objects.select_for_update().get(pk=challenge.pk)
        if challenge.active_version_id == version.pk:
            raise ActivationRefused(f"Version {version.number} is already active.")
        # Only attempts recorded since ``seen`` can lack a score under this version:
        # those scored only under the versions that were live get one (and an entry).
        _adopt_setup(challenge, version)
        previous = challenge.active_version_id
        switched = version_switch(
            challenge=challenge,
            version=version,
            after_id=seen,
            reason=HistoryRecord.Reason.ROLLBACK,
            cancel_reason=f"Superseded: version {version.number} was made active again.",
            also_save=Challenge.SETUP_FIELDS,
        )
        _audit_activation(challenge, previous, version, by)
    history_after_switch(challenge_id=challenge.pk)
    return Activation(version, scored + switched.scored, failed + switched.failed, None)
