"""The one notice that a public board may have changed: ``board_touch``.

Every writer of a board's rows calls it (``scores``: entries upserted, repaired,
rebuilt; ``freeze``: frozen boards dropped; the version switch), so no entry point has
to remember to. Once the writer's transaction commits, ``board_touched`` is sent once
per challenge touched; the events capability (challenges/events/) compares the public
top 10 with what it last saw and announces what changed. A receiver's failure (the
broker away) is logged, never raised into the writer's request: the periodic tick
looks again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.db import transaction
from django.dispatch import Signal

logger = logging.getLogger(__name__)

board_touched = Signal()  # kwargs: challenge_id


class _Touched:
    """One on-commit callback per transaction, holding every challenge it touched."""

    def __init__(self) -> None:
        self.challenge_ids: set[int] = set()
        self.pending = True

    def __call__(self) -> None:
        self.pending = False
        for challenge_id in sorted(self.challenge_ids):
            for receiver, result in board_touched.send_robust(
                sender=None, challenge_id=challenge_id
            ):
                if isinstance(result, Exception):
                    logger.warning(
                        "board_touched receiver %r failed for challenge %s: %r",
                        receiver,
                        challenge_id,
                        result,
                    )


def board_touch(*, challenge_ids: Iterable[int]) -> None:
    """Say, once the current transaction commits, that these challenges' boards may have
    changed (at once outside a transaction)."""
    ids = {int(pk) for pk in challenge_ids if pk is not None}
    if not ids:
        return
    connection = transaction.get_connection()
    if connection.in_atomic_block:
        # Joined to this transaction's callback only within the same savepoint: one
        # registered in a savepoint that is later rolled back is dropped with it.
        here = set(connection.savepoint_ids)
        for savepoints, func, _ in connection.run_on_commit:
            if isinstance(func, _Touched) and func.pending and set(savepoints) == here:
                func.challenge_ids.update(ids)
                return
    touched = _Touched()
    touched.challenge_ids.update(ids)
    transaction.on_commit(touched)
