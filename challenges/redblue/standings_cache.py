"""What readers built from a red/blue challenge's standings (the API's JSON, the page),
kept until the standings change.

Each red/blue challenge has a **generation** in the cache: a random token replaced by
every change of what its standings are computed from: a judgement or re-judge, a
recomputation of points, a hide or unhide that applies to it, a deleted pairing. A
build is kept under (the challenge as saved, its generation, what was asked), so a read
with nothing changed costs the challenge's probe and a cache read. A change replaces
the generation at once (inside its transaction: the writer's own reads see it) and
again when it commits (a reader that built from the rows before the commit kept its
build under the generation the commit then leaves behind). A lost generation (the cache
evicted it) is a new one: builds are made again, never served stale. A rename through
a player's save (the admin, a submission) is a change too; one made by recording
attempts elsewhere (a bulk update) shows at the next change.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from typing import Any

from django.core.cache import cache
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from challenges.leaderboards.kept import kept as kept_build
from challenges.models import (
    Challenge,
    ChallengeFormat,
    Pairing,
    Player,
    PlayerHide,
    TeamMember,
)

KEY = "redblue-generation:{}"


def generation(challenge_id: int) -> str:
    key = KEY.format(challenge_id)
    found = cache.get(key)
    if found is None:
        cache.add(key, secrets.token_hex(8), timeout=None)
        found = cache.get(key) or secrets.token_hex(8)
    return found


def _renew(ids: list[int]) -> None:
    cache.set_many({KEY.format(pk): secrets.token_hex(8) for pk in ids}, timeout=None)


def changed(*, challenge_ids: Iterable[int] | None) -> None:
    """The standings of these red/blue challenges (None: all of them) changed."""
    if challenge_ids is None:
        ids = list(
            Challenge.objects.filter(format=ChallengeFormat.RED_BLUE).values_list("pk", flat=True)
        )
    else:
        ids = list(challenge_ids)
    if not ids:
        return
    _renew(ids)
    transaction.on_commit(lambda: _renew(ids))


def kept(key: tuple[Any, ...], build: Callable[[], Any]) -> Any:
    """What ``build`` makes, kept under ``key`` (which must name the generation), in this
    process too (``leaderboards.kept``)."""
    return kept_build("redblue", key, build, ttl=3600, local=True)


@receiver(post_save, sender=PlayerHide, dispatch_uid="podium-redblue-hide-saved")
@receiver(post_delete, sender=PlayerHide, dispatch_uid="podium-redblue-hide-deleted")
def _hide_changed(sender: type, instance: PlayerHide, **kwargs: Any) -> None:
    changed(challenge_ids=None if instance.challenge_id is None else [instance.challenge_id])


@receiver(post_delete, sender=Pairing, dispatch_uid="podium-redblue-pairing-deleted")
def _pairing_deleted(sender: type, instance: Pairing, **kwargs: Any) -> None:
    changed(challenge_ids=[instance.challenge_id])


@receiver(post_save, sender=Player, dispatch_uid="podium-redblue-player-saved")
def _player_saved(sender: type, instance: Player, created: bool, **kwargs: Any) -> None:
    # A rename (the admin's, or a submission's player_name): the boards showing the name.
    if not created:
        teams = TeamMember.objects.filter(player_id=instance.pk)
        changed(challenge_ids=teams.values_list("challenge_id", flat=True))
