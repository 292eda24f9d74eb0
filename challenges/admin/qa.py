"""QA scorers in the admin (docs/writing-scorers.md): their results
per attempt, filters for failing checks, and the counts on the dashboard and in the
rescore summary. Admins only: nothing here is reachable from a public page.

A QA check fails when its value is 0 (a check returns True when it passes) or when its
QA scorer failed; ``AttemptScore.qa_failed`` counts both per score row.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Count, Exists, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from challenges.models import AttemptScore, Challenge
from scoring.engine.scorers_list import QA


def scores_count(scores: QuerySet[AttemptScore]) -> Coalesce:
    """How many ``scores`` there are (filtered on an outer reference to their version), 0
    when none: a subquery to annotate versions or challenges with."""
    found = scores.order_by().values("version").annotate(value=Count("pk")).values("value")
    return Coalesce(Subquery(found), Value(0), output_field=IntegerField())


def qa_failing_count(version: OuterRef) -> Coalesce:
    """How many scores of ``version`` (an outer reference) have a failing QA check."""
    return scores_count(AttemptScore.objects.filter(version=version, qa_failed__gt=0))


def qa_failing(*, version_id: int) -> int:
    return AttemptScore.objects.filter(version_id=version_id, qa_failed__gt=0).count()


def qa_scorer_keys() -> list[tuple[str, str]]:
    """(key, display name) of the QA scorers of the challenges' active versions."""
    seen: dict[str, str] = {}
    rows = Challenge.objects.exclude(active_version=None).values_list(
        "active_version__scorers", flat=True
    )
    for scorers in rows:
        for spec in scorers or ():
            if spec.get("purpose") == QA:
                seen.setdefault(spec["key"], spec.get("display_name") or spec["key"])
    return sorted(seen.items())


def failing_condition(key: str | None) -> Q:
    """Score rows with a failing QA check (of the QA scorer ``key``, or of any)."""
    if not key:
        return Q(qa_failed__gt=0)
    return Q(**{f"qa__{key}__failed__0__isnull": False}) | Q(**{f"qa__{key}__has_key": "error"})


class QAFailingFilter(admin.SimpleListFilter):
    """Score rows (or attempts, under their challenge's active version) with a failing
    QA check."""

    title = "failing QA check"
    parameter_name = "qa_failing"
    ANY = "any"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, str]]:
        return [(self.ANY, "Any QA check"), *qa_scorer_keys()]

    def condition(self) -> Q | None:
        value = self.value()
        if not value:
            return None
        return failing_condition(None if value == self.ANY else value)

    def queryset(self, request: Any, queryset: QuerySet) -> QuerySet:
        condition = self.condition()
        if condition is None:
            return queryset
        if queryset.model is AttemptScore:
            return queryset.filter(condition)
        scores = AttemptScore.objects.filter(
            condition,
            attempt=OuterRef("pk"),
            version_id=OuterRef("challenge__active_version_id"),
        )
        return queryset.filter(Exists(scores))


def qa_html(qa: Any) -> str:
    """A QA result as a small table: scorer, each check passed or failed, or its error."""
    if not isinstance(qa, dict) or not qa:
        return format_html('<span class="quiet">{}</span>', "no QA results")
    rows = []
    for key, entry in qa.items():
        if not isinstance(entry, dict):
            continue
        failed = set(entry.get("failed") or ())
        checks = format_html_join(
            " · ",
            '<span class="qa-check qa-check--{}">{} {}</span>',
            (
                ("fail" if name in failed else "pass", "✗" if name in failed else "✓", name)
                for name in (entry.get("scores") or {})
            ),
        )
        error = entry.get("error")
        if error:
            checks = format_html('<span class="score-error">Error: {}</span>', error)
        rows.append((key, checks))
    body = format_html_join("", "<tr><th scope='row'>{}</th><td>{}</td></tr>", rows)
    return format_html('<table class="qa-results">{}</table>', body)


def qa_link(count: int, version_id: int, user: Any = None) -> str:
    """ "3 failing QA", linking to those scores for users who may see them."""
    from challenges.admin.views import can_see_failures

    label = f"{count:,} failing QA"
    if not count:
        return format_html('<span class="quiet">{}</span>', label)
    if user is None or not can_see_failures(user):
        return label
    url = reverse("admin:challenges_attemptscore_changelist")
    return format_html('<a href="{}?version={}&amp;qa_failing=any">{}</a>', url, version_id, label)
