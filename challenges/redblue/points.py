"""The points of judged pairings under the challenge's rule (``scoring.engine.red_blue``),
and their recomputation as a new scoring version when the rule changes.

Two rules: ``red_blue_ratio`` (arithmetic, computed anywhere) and ``custom`` (a
registered pairing scorer plugin, run in its isolated scorer process). A plugin never
runs inside a database transaction: its points are computed first (``points_compute``)
and written afterwards by a short transaction that checks the rule and the judgements
it computed from are still the ones in force (else ``RuleChanged``: the caller computes
again).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from challenges.models import Challenge, HistoryRecord, Pairing, RedBlueScoring, ScoringVersion
from challenges.redblue import standings_cache as red_blue_kept
from scoring.engine.isolated import isolated_scorer
from scoring.engine.protocol import RegistryError
from scoring.engine.red_blue import (
    PAIRING_METHOD,
    PairingOutcome,
    pairing_judgement,
    ratio_points,
)
from scoring.project_registry import registry

RETRIES = 3


class RuleChanged(Exception):
    """The points rule or the judgements changed while points were being computed
    outside the transaction (409 when it keeps happening)."""


def judgement_of(*, challenge: Challenge, verdict: dict[str, Any]) -> dict[str, Any]:
    """What a rule scores (``red_blue.pairing_judgement``) from a verdict
    (``categories``, ``rating``, ``elapsed_ms``, ``tokens_total``). A verdict given
    under another suite keeps what it has: codes no longer in the suite count for
    neither side, new codes as held."""
    suite = list(challenge.judge_suite)
    categories = verdict.get("categories") or {}
    return pairing_judgement(
        suite=suite,
        categories={code: bool(categories.get(code)) for code in suite},
        rating=verdict.get("rating") or 0,
        elapsed_ms=verdict.get("elapsed_ms"),
        tokens_total=verdict.get("tokens_total"),
    )


def points_compute(
    *, challenge: Challenge, judgements: Sequence[dict[str, Any]]
) -> list[PairingOutcome]:
    """The points of each judgement (``judgement_of``) under the challenge's rule, as
    it stands on ``challenge`` (saved or not). A plugin that cannot load, raises, runs
    past the challenge's ``timeout_ms`` or returns anything but ``{"red": number,
    "blue": number}`` gives a failed outcome with the reason; this never raises. Call
    it outside any transaction when the rule is ``custom``."""
    if challenge.red_blue_scoring != RedBlueScoring.CUSTOM:
        return [
            PairingOutcome(
                ratio_points(
                    suite=j["suite"],
                    categories=j["categories"],
                    rating=j["rating"],
                    severity_divisor=challenge.severity_divisor,
                    elapsed_ms=j["elapsed_ms"],
                    tokens_total=j["tokens_total"],
                    time_penalty=challenge.time_penalty,
                    token_penalty=challenge.token_penalty,
                )
            )
            for j in judgements
        ]
    if not judgements:
        return []
    reg = registry()
    try:
        entrypoint = reg.verify(challenge.red_blue_plugin_id, challenge.red_blue_entrypoint)
        if not callable(getattr(reg.load(challenge.red_blue_plugin_id), PAIRING_METHOD, None)):
            raise RegistryError(f"the plugin has no {PAIRING_METHOD}(judgement, config) method")
    except RegistryError as exc:
        return [PairingOutcome.failed(f"the pairing scorer cannot be used: {exc}")] * len(
            judgements
        )
    return isolated_scorer(entrypoint).run_pairings(
        list(judgements), dict(challenge.red_blue_config or {}), challenge.timeout_ms
    )


def outcome_fields(outcome: PairingOutcome) -> dict[str, Any]:
    """A pairing's ``red_points``, ``blue_points`` and ``points_error`` for an outcome:
    both points or neither."""
    if outcome.points is None:
        return {"red_points": None, "blue_points": None, "points_error": outcome.error}
    return {
        "red_points": outcome.points.red,
        "blue_points": outcome.points.blue,
        "points_error": "",
    }


# --- a change of the rule ----------------------------------------------------------------
VERDICT = ("categories", "rating", "elapsed_ms", "tokens_total")


@dataclass(frozen=True)
class Planned:
    """Points computed outside the transaction, for ``rule`` over the judged pairings
    as they were (``judged``: pairing id → when judged)."""

    rule: dict[str, Any] | None
    judged: dict[int, datetime]
    outcomes: dict[int, PairingOutcome]


def _judged(challenge_id: int) -> list[dict[str, Any]]:
    return list(
        Pairing.objects.filter(challenge_id=challenge_id, judged_at__isnull=False)
        .order_by("pk")
        .values("pk", "judged_at", *VERDICT)
    )


def points_plan(*, draft: Challenge) -> Planned | None:
    """For a change to a ``custom`` rule (``draft``: the challenge with the change,
    unsaved): every judged pairing's points under it, computed now, outside any
    transaction. None when the rule is arithmetic (computed in the transaction)."""
    if draft.red_blue_scoring != RedBlueScoring.CUSTOM:
        return None
    rows = _judged(draft.pk)
    outcomes = points_compute(
        challenge=draft, judgements=[judgement_of(challenge=draft, verdict=r) for r in rows]
    )
    return Planned(
        draft.red_blue_rule(),
        {r["pk"]: r["judged_at"] for r in rows},
        {r["pk"]: o for r, o in zip(rows, outcomes, strict=True)},
    )


def points_switch(
    *, challenge: Challenge, planned: Planned | None, by: Any, new_version: bool
) -> ScoringVersion | None:
    """Inside the transaction that saves a change of the points rule (the challenge row
    locked): every judged pairing gets its points under the new rule, all in this
    transaction, so readers see the old points or the new, never a mix; and, unless
    the same save made a version already (``new_version`` False), a new scoring
    version holding the rule becomes active by the one switch a rescore ends with.
    Raises ``RuleChanged`` when ``planned`` was computed for another rule or other
    judgements."""
    from challenges.rescoring.switch import version_switch

    rows = list(
        Pairing.objects.select_for_update()
        .filter(challenge_id=challenge.pk, judged_at__isnull=False)
        .order_by("pk")
        .values("pk", "judged_at", "red_points", "blue_points", "points_error", *VERDICT)
    )
    if challenge.red_blue_scoring == RedBlueScoring.CUSTOM:
        judged = {r["pk"]: r["judged_at"] for r in rows}
        if planned is None or planned.rule != challenge.red_blue_rule() or planned.judged != judged:
            raise RuleChanged("The judgements changed while their points were computed.")
        outcomes = planned.outcomes
    else:
        computed = points_compute(
            challenge=challenge,
            judgements=[judgement_of(challenge=challenge, verdict=r) for r in rows],
        )
        outcomes = {r["pk"]: o for r, o in zip(rows, computed, strict=True)}
    changed = []
    for row in rows:
        fields = outcome_fields(outcomes[row["pk"]])
        if any(row[name] != value for name, value in fields.items()):
            changed.append(Pairing(pk=row["pk"], **fields))
    Pairing.objects.bulk_update(
        changed, ["red_points", "blue_points", "points_error"], batch_size=1000
    )
    red_blue_kept.changed(challenge_ids=[challenge.pk])
    if not new_version:
        return None
    version = ScoringVersion.objects.create_next(
        challenge=challenge, by=by, reason="red/blue points rule change"
    )
    version.scored_at = timezone.now()
    version.save(update_fields=["scored_at"])
    version_switch(
        challenge=challenge,
        version=version,
        after_id=0,  # a red/blue challenge records no attempts: nothing to score
        cancel_reason=f"The points rule changed: version {version.number} is active.",
        reason=HistoryRecord.Reason.RESCORE,
    )
    transaction.on_commit(lambda: _history(challenge.pk))
    return version


def _history(challenge_id: int) -> None:
    from challenges.rescoring.switch import history_after_switch

    history_after_switch(challenge_id=challenge_id)
