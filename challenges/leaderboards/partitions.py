"""Which versions keep their scores, and the O(1) discard of the others (PostgreSQL).

On PostgreSQL the scores table is partitioned by version (``sql.score_partition*``): a
version's partition is made with the version (``partition_for_version``, in the
transaction that creates it) and dropped whole when the version is neither active nor
kept (``scores_discard``, run by the rescore watchdog), so discarding a million scores
is a catalogue change, not a DELETE of a million rows, and no read or write waits for it.

A version's scores are **kept** while the version is

- the active version;
- or was ever the active version (named by a history record, or by one still due):
  the version boards (``?version=<n>``), the history and "make active again" read it;
- or is being scored: a queued or running rescore job, or the batch runs' version;
- or was made, or its last job ended, less than ``PODIUM_SCORES_KEEP_S`` ago (a
  version being set up, a job about to start).

Every other version (a rescore cancelled or superseded before it ever switched, or one
that failed) has its partition dropped at the first watchdog run after that grace. Its
leaderboard rows go with it and it is marked unscored, so "make active again" on it
rescores it from the start (its partition is then made again). SQLite keeps every
version's scores, as before: nothing is dropped there.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, Max, OuterRef, Q
from django.db.models.signals import post_save
from django.dispatch import receiver
from django.utils import timezone

from challenges.leaderboards import sql
from challenges.models import (
    BatchState,
    Challenge,
    HistoryDue,
    HistoryRecord,
    LeaderboardEntry,
    LeaderboardRanking,
    RescoreJob,
    ScoringVersion,
)

logger = logging.getLogger(__name__)


@receiver(post_save, sender=ScoringVersion, dispatch_uid="podium-score-partition")
def partition_for_version(
    sender: object = None, *, instance: ScoringVersion, created: bool = False, **kwargs: object
) -> None:
    """A new version's partition, made in the transaction that makes the version."""
    if created and not kwargs.get("raw"):
        sql.score_partition_make(instance.pk)


def partition_ensure(*, version_id: int) -> None:
    """The version's partition, made again if a discard dropped it (a rescore of it is
    starting). Call in the transaction that starts the job."""
    sql.score_partition_make(version_id)


def versions_kept_q() -> Q:
    """The versions whose scores are kept (the rule in the module docstring), without the
    grace period."""
    active_jobs = RescoreJob.objects.filter(
        version=OuterRef("pk"), status__in=RescoreJob.ACTIVE_STATUSES
    )
    return (
        Q(Exists(Challenge.objects.filter(active_version=OuterRef("pk"))))
        | Q(Exists(HistoryRecord.objects.filter(version=OuterRef("pk"))))
        | Q(Exists(HistoryRecord.objects.filter(previous_version=OuterRef("pk"))))
        | Q(Exists(HistoryDue.objects.filter(version=OuterRef("pk"))))
        | Q(Exists(HistoryDue.objects.filter(previous_version=OuterRef("pk"))))
        | Q(Exists(active_jobs))
        | Q(Exists(BatchState.objects.filter(version=OuterRef("pk"))))
    )


def versions_discardable(*, keep_s: float | None = None) -> list[int]:
    """Ids of the versions with a partition whose scores are no longer kept."""
    with_partition = sql.score_partition_versions()
    if not with_partition:
        return []
    keep_s = settings.PODIUM_SCORES_KEEP_S if keep_s is None else keep_s
    since = timezone.now() - timedelta(seconds=keep_s)
    candidates = (
        ScoringVersion.objects.filter(pk__in=with_partition, created_at__lt=since)
        .exclude(versions_kept_q())
        .annotate(last_job=Max("jobs__finished_at"))
        .filter(Q(last_job__isnull=True) | Q(last_job__lt=since))
    )
    existing = set(candidates.values_list("pk", flat=True))
    gone = set(with_partition) - set(
        ScoringVersion.objects.filter(pk__in=with_partition).values_list("pk", flat=True)
    )  # a deleted version's partition (emptied by the ORM's cascade)
    return sorted(existing | gone)


def scores_discard(*, keep_s: float | None = None) -> list[int]:
    """Drop the partitions of the versions no longer kept; their ids. Outside any
    transaction. Each version is checked again under its challenge's lock and marked
    unscored, with its leaderboard rows removed, before its partition goes. Inside a
    transaction (DETACH ... CONCURRENTLY cannot run there) it drops nothing."""
    if transaction.get_connection().in_atomic_block:
        logger.warning("scores_discard called inside a transaction: nothing dropped")
        return []
    dropped = []
    for version_id in versions_discardable(keep_s=keep_s):
        if _version_release(version_id, keep_s=keep_s):
            sql.score_partition_drop(version_id)
            dropped.append(version_id)
            logger.info("version scores discarded", extra={"version_id": version_id})
            _remake_if_kept(version_id)
    return dropped


def _remake_if_kept(version_id: int) -> None:
    """A rescore of the version that started between its release and its drop gets its
    partition again (a write of it in that moment failed and is retried)."""
    with transaction.atomic():
        if ScoringVersion.objects.filter(pk=version_id).filter(versions_kept_q()).exists():
            sql.score_partition_make(version_id)


def _version_release(version_id: int, *, keep_s: float | None) -> bool:
    """Under the challenge's lock: whether the version is still discardable; if so it is
    marked unscored and its leaderboard rows are removed (a few per player, not its
    scores)."""
    with transaction.atomic():
        version = ScoringVersion.objects.filter(pk=version_id).first()
        if version is None:
            return True  # deleted: only its empty partition is left
        Challenge.objects.select_for_update().filter(pk=version.challenge_id).exists()
        if version_id not in versions_discardable(keep_s=keep_s):
            return False  # kept meanwhile (made active, or a rescore of it started)
        ScoringVersion.objects.filter(pk=version_id).update(scored_at=None)
        LeaderboardRanking.objects.filter(version_id=version_id).delete()
        LeaderboardEntry.objects.filter(version_id=version_id).delete()
    return True
