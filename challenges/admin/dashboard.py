"""The dashboard at ``/admin/``: each challenge's attempts, players, active version, last
attempt and running rescore, in two queries whatever the number of challenges."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, IntegerField, Max, OuterRef, Prefetch, Subquery, Value
from django.db.models.functions import Coalesce

from challenges.admin.qa import qa_failing_count, scores_count
from challenges.models import Attempt, AttemptScore, Challenge, RescoreJob

MOST = 200  # challenges shown (the changelist has the rest)


@dataclass(frozen=True)
class DashboardRow:
    challenge: Challenge
    attempts: int
    players: int
    last_attempt: datetime | None
    running: list[RescoreJob]  # queued or running rescore jobs, newest first
    failures: int  # attempts whose scorer failed under the active version
    qa_failing: int = 0  # attempts with a failing QA check under the active version


def _count(aggregate: Count) -> Coalesce:
    return Coalesce(_per_challenge(aggregate), Value(0), output_field=IntegerField())


def _per_challenge(aggregate: Count | Max) -> Subquery:
    return Subquery(
        Attempt.objects.filter(challenge=OuterRef("pk"))
        .order_by()
        .values("challenge")
        .annotate(value=aggregate)
        .values("value")
    )


def failures_count(version: OuterRef) -> Coalesce:
    """How many scores of ``version`` (an outer reference) failed, 0 when none (the
    partial index ``score_failed`` holds only those rows)."""
    return scores_count(AttemptScore.objects.filter(version=version).exclude(error=""))


def dashboard_rows() -> list[DashboardRow]:
    running = RescoreJob.objects.filter(status__in=RescoreJob.ACTIVE_STATUSES).select_related(
        "version", "challenge"
    )
    challenges = (
        Challenge.objects.select_related("active_version")
        .annotate(
            attempt_count=_count(Count("pk")),
            player_count=_count(Count("player", distinct=True)),
            last_attempt_at=_per_challenge(Max("created_at")),
            failure_count=failures_count(OuterRef("active_version")),
            qa_count=qa_failing_count(OuterRef("active_version")),
        )
        .prefetch_related(Prefetch("rescore_jobs", queryset=running, to_attr="running_jobs"))
        .order_by("name", "pk")[:MOST]
    )
    return [
        DashboardRow(
            c,
            c.attempt_count,
            c.player_count,
            c.last_attempt_at,
            c.running_jobs,
            c.failure_count,
            c.qa_count,
        )
        for c in challenges
    ]
