"""Display names as they were at a moment: what a frozen board shows.

A player's display name is global and changes: an attempt sent with a new
``player_name`` (``ingestion.services``, an import) or an admin's edit renames them on
every board at once. Each change is kept as a ``PlayerRename`` (old name, new name, when),
so that a board frozen before it still shows the name as it was: a player's name **as of
a moment T** is the old name of their first rename at or after T, else the name they have
now (a rename at T is after the freeze, as an attempt recorded at T is).

The rule is written once, as ``sql.NAME_AS_OF``: the rows of a frozen board (its page,
fragment and search, the API, the exports) read it in their own statement, and every
other reader (cards, charts, the player page, aggregate boards) asks ``names_as_of``, one
statement for all the players it shows.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from challenges.leaderboards import sql
from challenges.models import Player, PlayerRename


def renames_record(*, renames: Iterable[tuple[int, str, str]], at: datetime) -> None:
    """Keep these renames (player id, old name, new name) made at ``at``: one insert.
    Call it in the transaction that renames them."""
    rows = [
        PlayerRename(player_id=player_id, old_name=old, new_name=new, at=at)
        for player_id, old, new in renames
        if old != new
    ]
    if rows:
        PlayerRename.objects.bulk_create(rows)


def names_now(*, player_ids: Iterable[int]) -> dict[int, tuple[str, str]]:
    """{player id: (external id, display name now)} of these players (unknown ids are
    left out), in one query."""
    rows = Player.objects.filter(pk__in=player_ids).values_list("pk", "external_id", "display_name")
    return {pk: (external_id, name) for pk, external_id, name in rows}


def names_as_of(*, player_ids: Iterable[int], at: datetime) -> dict[int, str]:
    """{player id: display name as of ``at``} of these players (unknown ids are left
    out), in one statement."""
    return sql.names_as_of(sorted(set(player_ids)), at)
