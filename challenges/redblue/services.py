"""Writes of red/blue challenges: joining a team, recording a submission and pairing it,
recording the judge's verdict. One service per rule, so the API, the admin and the
commands behave alike.

Pairing is decided under the challenge's row lock (``select_for_update``): two
submissions arriving together are paired one after the other, so ``round_robin`` counts
every pairing made before it and a waiting submission is paired once. A judgement's
points are computed before its transaction (a pairing scorer plugin never runs inside
one: ``redblue.points``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Count, Exists, OuterRef, Q
from django.utils import timezone

from challenges.audit import Kind, audit_record
from challenges.ingestion import admission
from challenges.ingestion.services import DISPLAY_NAME_MAX
from challenges.leaderboards import exclusions
from challenges.models import (
    Challenge,
    ChallengeFormat,
    Pairing,
    Player,
    Submission,
    Team,
    TeamMember,
)
from challenges.redblue import points as red_blue_points
from challenges.redblue import policies
from challenges.redblue import standings_cache as red_blue_kept

OTHER = {Team.RED: Team.BLUE, Team.BLUE: Team.RED}


class NotRedBlue(Exception):
    """The challenge is not a red/blue challenge (409)."""


class TeamConflict(Exception):
    """A player on the other team, or a pairing against oneself (409)."""


class AlreadyJudged(Exception):
    """A judged pairing judged again by someone who may not re-judge (409)."""


class JudgementInvalid(ValueError):
    """A judgement that does not fit the suite: ``errors`` by field (400)."""

    def __init__(self, errors: dict[str, list[str]]):
        super().__init__(str(errors))
        self.errors = errors


def _red_blue(challenge: Challenge) -> None:
    if challenge.format != ChallengeFormat.RED_BLUE:
        raise NotRedBlue(f"Challenge {challenge.pk} is not a red/blue challenge.")


def _player(external_id: str, name: str | None, *, may_rename: bool) -> Player:
    """The player of this external id, made with ``name`` if new; renamed only when
    ``may_rename`` (an unscoped writer: a scoped one never renames the players of
    boards it does not write to, as for attempts)."""
    player, created = Player.objects.get_or_create(
        external_id=external_id,
        defaults={"display_name": (name or external_id)[:DISPLAY_NAME_MAX]},
    )
    if not created and may_rename and name and player.display_name != name[:DISPLAY_NAME_MAX]:
        player.display_name = name[:DISPLAY_NAME_MAX]
        player.save(update_fields=["display_name"])  # its boards re-rank on commit
    return player


def _join(challenge: Challenge, player: Player, team: str) -> TeamMember:
    member, _ = TeamMember.objects.get_or_create(
        challenge=challenge, player=player, defaults={"team": team}
    )
    if member.team != team:
        raise TeamConflict(
            f"Player {player.external_id!r} is on the {member.team} team of this challenge; "
            "a player never changes team."
        )
    return member


@transaction.atomic
def team_join(
    *,
    challenge: Challenge,
    external_id: str,
    team: str,
    player_name: str | None = None,
    may_rename: bool = True,
) -> TeamMember:
    """Put a player on a team (joining the same team again changes nothing). Raises
    ``TeamConflict`` for a player on the other team."""
    _red_blue(challenge)
    Challenge.objects.select_for_update().filter(pk=challenge.pk).exists()
    return _join(challenge, _player(external_id, player_name, may_rename=may_rename), team)


@dataclass
class Recorded:
    submission: Submission
    pairings: list[Pairing] = field(default_factory=list)


def _caps(challenge: Challenge, player: Player, now: Any) -> None:
    """The challenge's caps count a player's submissions as they count attempts."""
    if not admission.has_limits(challenge):
        return
    mine = Submission.objects.filter(challenge=challenge, player=player)
    total, today = mine.count(), mine.filter(created_at__gt=now - timedelta(hours=24)).count()
    if challenge.attempts_total is not None and total + 1 > challenge.attempts_total:
        raise admission.LimitExceeded(
            f"Player {player.external_id!r} may make at most {challenge.attempts_total} "
            f"submissions to this challenge in total (attempts_total); {total} recorded.",
            cap="attempts_total",
            player=player.external_id,
            retry_after=None,
        )
    if challenge.attempts_per_day is not None and today + 1 > challenge.attempts_per_day:
        oldest = mine.filter(created_at__gt=now - timedelta(hours=24)).order_by("created_at")
        leaving = oldest.values_list("created_at", flat=True)[today - challenge.attempts_per_day]
        wait = max(1, int((leaving + timedelta(hours=24) - now).total_seconds()) + 1)
        raise admission.LimitExceeded(
            f"Player {player.external_id!r} may make at most {challenge.attempts_per_day} "
            "submissions to this challenge in any 24 hours (attempts_per_day); "
            f"{today} recorded in the last 24 hours.",
            cap="attempts_per_day",
            player=player.external_id,
            retry_after=wait,
        )


def _pair(challenge: Challenge, new: Submission, other: Submission) -> Pairing:
    if new.player_id == other.player_id:  # never by construction: one team per player
        raise TeamConflict("A player is never paired against their own submission.")
    attack, defense = (new, other) if new.team == Team.RED else (other, new)
    return Pairing.objects.create(challenge=challenge, attack=attack, defense=defense)


def _pool(challenge: Challenge, team: str) -> Any:
    """The other team's active submissions that may be paired: not a hidden player's."""
    pool = Submission.objects.filter(challenge=challenge, team=team, active=True)
    hidden = exclusions.hidden_player_ids(
        challenge_id=challenge.pk, player_ids=pool.values_list("player_id", flat=True)
    )
    return pool.exclude(player_id__in=hidden)


def _candidates(pool: Any, player: Player, team: str) -> list[policies.Candidate]:
    """The other team's pool as the policies see it: each submission's time, how often
    it was paired, and whether ``player`` met it already."""
    theirs = "defense" if team == Team.RED else "attack"
    mine = "attack" if team == Team.RED else "defense"
    rows = list(pool.values_list("pk", "created_at"))
    against = Pairing.objects.filter(**{f"{theirs}_id__in": [pk for pk, _ in rows]})
    counts = dict(
        against.values(f"{theirs}_id").annotate(n=Count("pk")).values_list(f"{theirs}_id", "n")
    )
    met = set(against.filter(**{f"{mine}__player": player}).values_list(f"{theirs}_id", flat=True))
    return [policies.Candidate(pk, at, counts.get(pk, 0), pk in met) for pk, at in rows]


@transaction.atomic
def submission_record(
    *,
    challenge: Challenge,
    external_id: str,
    team: str,
    prompt: str,
    player_name: str | None = None,
    may_rename: bool = True,
    rng: random.Random | None = None,
    within: Any = None,
) -> Recorded:
    """Store a player's submission (their earlier one becomes inactive) and pair it: with
    every submission of the other team that waits for a counterpart, else with the one
    the challenge's policy picks, else it waits. Raises ``NotRedBlue``,
    ``TeamConflict``, ``rules.ScheduleClosed`` (outside the window: submissions are
    never practice) and ``rules.LimitExceeded``."""
    _red_blue(challenge)
    challenge = Challenge.objects.select_for_update().get(pk=challenge.pk)
    now = timezone.now()
    phase = admission.schedule_phase(challenge=challenge, now=now)
    if phase != admission.Phase.OPEN:
        state = "has not opened yet" if phase == admission.Phase.UPCOMING else "is closed"
        raise admission.ScheduleClosed(
            f"This challenge {state}: it accepts submissions {admission.window_text(challenge)}.",
            opens_at=challenge.opens_at,
            closes_at=challenge.closes_at,
        )
    player = _player(external_id, player_name, may_rename=may_rename)
    _join(challenge, player, team)
    _caps(challenge, player, now)
    Submission.objects.filter(challenge=challenge, player=player, active=True).update(active=False)
    new = Submission.objects.create(challenge=challenge, player=player, team=team, prompt=prompt)
    recorded = Recorded(new)
    pool = _pool(challenge, OTHER[team])
    paired = Exists(
        Pairing.objects.filter(Q(attack_id=OuterRef("pk")) | Q(defense_id=OuterRef("pk")))
    )
    waiting = list(pool.exclude(paired).order_by("created_at", "id"))
    if waiting:
        recorded.pairings = [_pair(challenge, new, w) for w in waiting]
    else:
        picked = policies.counterpart_pick(
            challenge.defense_selection_policy
            if team == Team.RED
            else challenge.attack_selection_policy,
            _candidates(pool, player, team),
            rng=rng,
        )
        if picked is not None:
            recorded.pairings = [_pair(challenge, new, pool.get(pk=picked.id))]
    if within is not None:
        within(recorded)
    return recorded


def judgement_errors(*, suite: list[str], categories: Any) -> dict[str, list[str]]:
    """What is wrong with a verdict set: a category of the suite missing, or a code the
    suite does not have, each named."""
    if not isinstance(categories, dict):
        return {"categories": ["An object {code: breached} for every code of the suite."]}
    errors = []
    missing = [code for code in suite if code not in categories]
    unknown = sorted(code for code in categories if code not in suite)
    if missing:
        errors.append(f"Missing a verdict for: {', '.join(missing)}.")
    if unknown:
        errors.append(f"Not in the challenge's judge_suite: {', '.join(unknown)}.")
    if not errors:
        wrong = [code for code in suite if not isinstance(categories[code], bool)]
        if wrong:
            errors.append(f"A verdict is true (breached) or false (held): {', '.join(wrong)}.")
    return {"categories": errors} if errors else {}


def _verdict(pairing: Pairing) -> dict[str, Any]:
    return {
        "pairing": pairing.pk,
        "categories": pairing.categories,
        "rating": pairing.rating,
        "red_points": pairing.red_points,
        "blue_points": pairing.blue_points,
    }


def judgement_record(
    *, pairing: Pairing, judgement: dict[str, Any], by: Any = None, may_rejudge: bool = False
) -> Pairing:
    """Record the judge's verdict on a pairing and its points. A judged pairing is judged
    once: again only when ``may_rejudge`` (an admin), audited with the verdict before.
    The points are computed first, outside any transaction (a ``custom`` rule runs its
    plugin; a plugin that fails leaves the pairing judged without points, the reason
    kept for admins), then written with the verdict in one short transaction. Raises
    ``AlreadyJudged``, ``JudgementInvalid`` and, when the points rule keeps changing
    meanwhile, ``red_blue_points.RuleChanged``."""
    for _ in range(red_blue_points.RETRIES):
        challenge = Challenge.objects.get(pk=pairing.challenge_id)
        _judgement_check(challenge, pairing.pk, judgement, may_rejudge=may_rejudge)
        verdict = red_blue_points.judgement_of(challenge=challenge, verdict=judgement)
        [outcome] = red_blue_points.points_compute(challenge=challenge, judgements=[verdict])
        try:
            return _judgement_write(
                challenge_id=challenge.pk,
                pairing_id=pairing.pk,
                judgement=judgement,
                outcome=outcome,
                rule=challenge.red_blue_rule(),
                by=by,
                may_rejudge=may_rejudge,
            )
        except red_blue_points.RuleChanged:
            continue
    raise red_blue_points.RuleChanged(
        "The challenge's points rule kept changing while this judgement was scored; post it again."
    )


def _judgement_check(
    challenge: Challenge,
    pairing_id: int,
    judgement: dict[str, Any],
    *,
    may_rejudge: bool,
    lock: bool = False,
) -> Pairing:
    found = Pairing.objects.select_for_update() if lock else Pairing.objects
    pairing = found.get(pk=pairing_id)
    errors = judgement_errors(suite=challenge.judge_suite, categories=judgement.get("categories"))
    if errors:
        raise JudgementInvalid(errors)
    if pairing.judged_at is not None and not may_rejudge:
        raise AlreadyJudged(
            f"Pairing {pairing.pk} was judged at {pairing.judged_at:%Y-%m-%d %H:%M:%S} UTC; "
            "only an admin may judge it again."
        )
    return pairing


@transaction.atomic
def _judgement_write(
    *,
    challenge_id: int,
    pairing_id: int,
    judgement: dict[str, Any],
    outcome: Any,
    rule: dict[str, Any] | None,
    by: Any,
    may_rejudge: bool,
) -> Pairing:
    # The challenge row lock orders this write with a change of the rule (which holds
    # it while it recomputes every judged pairing): the points written here are under
    # the rule in force when they commit.
    challenge = Challenge.objects.select_for_update().get(pk=challenge_id)
    if challenge.red_blue_rule() != rule:
        raise red_blue_points.RuleChanged("The points rule changed.")
    pairing = _judgement_check(challenge, pairing_id, judgement, may_rejudge=may_rejudge, lock=True)
    before = _verdict(pairing) if pairing.judged_at is not None else None
    pairing.categories = {code: judgement["categories"][code] for code in challenge.judge_suite}
    pairing.rating = judgement["rating"]
    pairing.feedback = judgement.get("feedback") or ""
    pairing.tokens_total = judgement.get("tokens_total")
    pairing.elapsed_ms = judgement.get("elapsed_ms")
    pairing.raw = judgement.get("raw")
    for name, value in red_blue_points.outcome_fields(outcome).items():
        setattr(pairing, name, value)
    pairing.judged_at = timezone.now()
    pairing.judged_by = by if getattr(by, "is_authenticated", False) else None
    pairing.save()
    red_blue_kept.changed(challenge_ids=[challenge.pk])
    audit_record(
        kind=Kind.PAIRING_JUDGEMENT if before is None else Kind.PAIRING_REJUDGE,
        by=by,
        challenge=challenge,
        before=before,
        after=_verdict(pairing),
    )
    return pairing
