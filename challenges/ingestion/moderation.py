"""Moderation: hide a player (from one challenge or from all) or a single attempt, and
undo it.

Nothing is deleted: the attempts and their scores stay, so an undo brings back exactly
what was there. Hiding recomputes the player's leaderboard entries under every version
of the affected challenges (``leaderboards.exclusions`` leaves the hidden out) and marks
those rankings stale, so every public output (pages, ranks, exports, charts, metrics, the
API) changes at once: their caches are keyed by the ranking.

Roles: staff (and admins) may hide, quickly, when they see cheating; only admins may
undo a hide, since it puts a player back in front of the public.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from challenges.audit import Kind, audit_record
from challenges.events import moments
from challenges.leaderboards import exclusions, freeze, scores
from challenges.models import Attempt, Challenge, Player, PlayerHide, ScoringVersion
from challenges.rescoring import batch as batch_scoring

REASON_MAX = PlayerHide._meta.get_field("reason").max_length


class ModerationError(ValueError):
    """A hide or an undo that cannot be done (already hidden, not hidden, no reason)."""


def _reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise ModerationError("Give a reason.")
    if len(reason) > REASON_MAX:
        raise ModerationError(f"A reason has at most {REASON_MAX} characters.")
    return reason


def _refresh(*, player_ids: list[int], challenge_ids: list[int] | None) -> None:
    """Recompute these players' entries under every version of the challenges (None:
    every challenge they played), then drop those rankings' checkpoints."""
    versions = ScoringVersion.objects.all()
    if challenge_ids is None:
        played = Attempt.objects.filter(player_id__in=player_ids).values("challenge_id")
        versions = versions.filter(challenge_id__in=played)
    else:
        versions = versions.filter(challenge_id__in=challenge_ids)
    touched = set()
    for version_id, challenge_id in versions.values_list("pk", "challenge_id"):
        scores.entries_repair(version_id=version_id, player_ids=player_ids)
        touched.add(challenge_id)
    exclusions.rankings_invalidate(challenge_ids=touched)
    freeze.frozen_drop(challenge_ids=touched)  # rebuilt without (or with) them
    # A batch scorer ranks relative to the ranked set, which this changed: a new run.
    for challenge in Challenge.objects.filter(pk__in=touched).select_related("active_version"):
        if batch_scoring.has_batch(challenge.active_version):
            batch_scoring.batch_request(challenge_id=challenge.pk)


def _where(challenge: Challenge | None) -> str:
    return challenge.slug if challenge else "all challenges"


def _player_changed(
    *, player: Player, challenge: Challenge | None, hidden: bool, reason: str, by: Any
) -> None:
    """The entries refreshed and the audit record of a player's hide or unhide."""
    _refresh(player_ids=[player.pk], challenge_ids=[challenge.pk] if challenge else None)
    audit_record(
        kind=Kind.PLAYER_HIDE if hidden else Kind.PLAYER_UNHIDE,
        by=by,
        challenge=challenge,
        before={"player": player.external_id, "hidden": not hidden, "challenge": _where(challenge)},
        after={"player": player.external_id, "hidden": hidden, "challenge": _where(challenge)},
        reason=reason,
    )


@transaction.atomic
def player_hide(
    *, player: Player, challenge: Challenge | None, reason: str, by: Any = None
) -> PlayerHide:
    """Hide ``player`` from ``challenge`` (None: from every challenge)."""
    reason = _reason(reason)
    Player.objects.select_for_update().filter(pk=player.pk).exists()  # one hide at a time
    if PlayerHide.objects.filter(player=player, challenge=challenge).exists():
        raise ModerationError(f"{player.external_id!r} is already hidden from {_where(challenge)}.")
    hide = PlayerHide.objects.create(
        player=player,
        challenge=challenge,
        reason=reason,
        hidden_by=by if getattr(by, "is_authenticated", False) else None,
    )
    _player_changed(player=player, challenge=challenge, hidden=True, reason=reason, by=by)
    return hide


@transaction.atomic
def player_unhide(
    *, player: Player, challenge: Challenge | None, reason: str, by: Any = None
) -> None:
    """Undo ``player_hide`` of the same scope (a hide from every challenge is undone by
    an unhide from every challenge; a per-challenge hide stays until undone itself)."""
    reason = _reason(reason)
    Player.objects.select_for_update().filter(pk=player.pk).exists()
    deleted, _ = PlayerHide.objects.filter(player=player, challenge=challenge).delete()
    if not deleted:
        raise ModerationError(f"{player.external_id!r} is not hidden from {_where(challenge)}.")
    _player_changed(player=player, challenge=challenge, hidden=False, reason=reason, by=by)


@transaction.atomic
def attempt_set_hidden(*, attempt: Attempt, hidden: bool, reason: str, by: Any = None) -> Attempt:
    """Hide one attempt (or undo it): the player's next-best attempt takes its place."""
    reason = _reason(reason)
    attempt = (
        Attempt.objects.select_for_update().select_related("challenge", "player").get(pk=attempt.pk)
    )
    if attempt.hidden == hidden:
        state = "hidden" if hidden else "not hidden"
        raise ModerationError(f"Attempt {attempt.pk} is {state} already.")
    Attempt.objects.filter(pk=attempt.pk).update(hidden=hidden)
    attempt.hidden = hidden
    _refresh(player_ids=[attempt.player_id], challenge_ids=[attempt.challenge_id])
    audit_record(
        kind=Kind.ATTEMPT_HIDE if hidden else Kind.ATTEMPT_UNHIDE,
        by=by,
        challenge=attempt.challenge,
        before={"attempt": attempt.pk, "player": attempt.player.external_id, "hidden": not hidden},
        after={"attempt": attempt.pk, "player": attempt.player.external_id, "hidden": hidden},
        reason=reason,
    )
    return attempt


def challenge_reveal(*, challenge: Challenge, by: Any = None) -> Challenge:
    """End the board freeze (``freeze.board_reveal``: raises ``RevealRefused``). A batch
    scorer ranked relative to the attempts before the freeze until now: it runs again
    over the whole set."""
    with transaction.atomic():
        # Registered first: the reveal is announced before what the board then shows.
        pk = challenge.pk
        transaction.on_commit(lambda: moments.challenge_revealed(challenge_id=pk))
        challenge = freeze.board_reveal(challenge=challenge, by=by)
    if batch_scoring.has_batch(challenge.active_version):
        batch_scoring.batch_request(challenge_id=challenge.pk)
    return challenge
