"""The one switch: a version becomes its challenge's active version.

Two paths end here: a rescore job whose chunks are all done (``jobs.job_finalize``) and
"make active again" (``setup.versions.version_activate``). Both have scored the version
and rebuilt its leaderboard outside any lock; the switch is the short last step, under
the challenge row lock its caller holds, so that readers see the old version or the new
one, never a mix, and no attempt recorded meanwhile is missed:

1. attempts above ``after_id`` (recorded since the caller's last look) that still lack a
   score under the version get one (a safety net: rare, and few; the one place a scorer
   runs under a lock, docs/rescoring.md);
2. the players of attempts above ``after_id`` scored under the version get their entries
   recomputed (ingestion scores a pending version but writes none of its entries);
3. every other queued or running rescore job of the challenge is cancelled (it would
   switch to its own version later and undo this one);
4. the pointer moves;
5. the public boards' watchers are told (``changes.board_touch``: events), and the
   history record of the switch is noted as due (``leaderboards.history``): the
   public rank diff of the previous version's board and this one's is computed after
   the switch commits, outside the lock (the caller calls ``history_after_switch``), so
   the switch does not wait for it; ``rescore.finished`` is announced once it is stored.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from django.utils import timezone

from challenges.events import moments
from challenges.leaderboards import changes, history, scores
from challenges.models import AttemptScore, Challenge, RescoreJob, ScoringVersion

LATE_PLAYERS_BATCH = 500
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Switched:
    scored: int  # attempts the switch itself scored (step 1)
    failed: int  # of which the scorer failed
    late: int  # attempts above ``after_id`` with a score under the version, however made
    late_failed: int  # of which the scorer failed


def version_switch(
    *,
    challenge: Challenge,
    version: ScoringVersion,
    after_id: int,
    cancel_reason: str,
    reason: str,
    keep_job_id: int | None = None,
    also_save: Sequence[str] = (),
) -> Switched:
    """Make ``version`` the active version of ``challenge``, whose row the caller's
    transaction holds (``select_for_update``). ``keep_job_id``: the job that is
    switching (not cancelled); ``also_save``: other challenge fields the caller changed
    (its setup); ``reason``: the record's (``HistoryRecord.Reason``)."""
    version.challenge = challenge
    scored, failed = scores.scores_catch_up(version=version, after_id=after_id)
    late = AttemptScore.objects.filter(version=version, attempt_id__gt=after_id)
    players = sorted(set(late.filter(sort_key__isnull=False).values_list("player_id", flat=True)))
    for start in range(0, len(players), LATE_PLAYERS_BATCH):
        batch = players[start : start + LATE_PLAYERS_BATCH]
        scores.entries_repair(version_id=version.pk, player_ids=batch)
    RescoreJob.objects.filter(challenge=challenge, status__in=RescoreJob.ACTIVE_STATUSES).exclude(
        pk=keep_job_id
    ).update(status=RescoreJob.Status.CANCELLED, finished_at=timezone.now(), error=cancel_reason)
    previous_id = challenge.active_version_id
    challenge.active_version = version
    challenge.save(update_fields=["active_version", "updated_at", *also_save])
    changes.board_touch(challenge_ids=[challenge.pk])
    history.record_due(
        challenge=challenge,
        version=version,
        previous_version_id=previous_id,
        reason=reason,
        switched_at=challenge.updated_at,
    )
    return Switched(scored, failed, late.count(), late.exclude(error="").count())


def history_after_switch(*, challenge_id: int) -> None:
    """Once a switch has committed: write its history record now and announce it
    (``rescore.finished``). If that fails, the record stays due and the rescore watchdog
    writes it (``history_write_due``)."""
    try:
        history_write_due(challenge_id=challenge_id)
    except Exception:
        logger.exception(
            "history record left for the watchdog", extra={"challenge_id": challenge_id}
        )


def history_write_due(*, challenge_id: int | None = None, older_than_s: float = 0) -> int:
    """Write the history records left due (``history.records_write_due``) and announce
    each once it is stored; how many were written."""
    written = history.records_write_due(challenge_id=challenge_id, older_than_s=older_than_s)
    for record_id in written:
        moments.rescore_finished(record_id=record_id)
    return len(written)
