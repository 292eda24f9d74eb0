"""The live progress block of a rescore job in the admin, the small HTML helpers the
admin's rescoring columns and messages share, and the scoring section's Try it, Preview
and versions pages (thin: ``preview`` and ``versions`` do the work).

``job_progress`` turns a job row into what the block shows (rate, ETA, …); the
``progress_fragment`` view returns the block alone, and htmx swaps it in every two
seconds while the job is queued or running. A finished job's block carries no
``hx-trigger``, so polling stops by itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django.contrib.admin import AdminSite
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.views.decorators.cache import never_cache

from challenges.admin import preview
from challenges.admin import scorers_admin as admin_scorers
from challenges.models import RescoreJob
from challenges.permissions import is_staff_member
from challenges.rescoring import jobs as rescoring
from challenges.setup import versions
from challenges.text import exact_time

FRAGMENT_TEMPLATE = "admin/challenges/rescorejob/progress.html"
POLL_SECONDS = 2


@dataclass(frozen=True)
class JobProgress:
    job: RescoreJob
    percent: int
    rate: float | None  # attempts per second since the job started
    eta_seconds: float | None  # at that rate, for the attempts still to score
    elapsed_seconds: float | None

    @property
    def polling(self) -> bool:
        return self.job.is_active

    @property
    def rate_display(self) -> str:
        if self.rate is None:
            return "– /s"
        return f"{self.rate:,.0f}/s" if self.rate >= 10 else f"{self.rate:.1f}/s"

    @property
    def eta_display(self) -> str:
        return duration_display(self.eta_seconds) if self.eta_seconds is not None else "–"

    @property
    def elapsed_display(self) -> str:
        return duration_display(self.elapsed_seconds) if self.elapsed_seconds is not None else "–"


def job_progress(job: RescoreJob, *, now: datetime | None = None) -> JobProgress:
    """Rate = processed / (now − started_at); ETA = remaining / rate. A finished job's
    rate is measured up to ``finished_at``."""
    now = now or timezone.now()
    percent = min(100, job.processed * 100 // job.total) if job.total else 0
    if job.status == RescoreJob.Status.SUCCEEDED:
        percent = 100
    pace = rescoring.job_pace(job, now=now)
    return JobProgress(
        job=job,
        percent=percent,
        rate=pace.rate,
        eta_seconds=pace.eta_seconds,
        elapsed_seconds=pace.elapsed_seconds,
    )


def duration_display(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def failures_url(*, version_id: int) -> str:
    """The AttemptScore changelist, filtered to the version's attempts whose scorer
    failed (admin pages only: the public never sees scoring errors)."""
    query = urlencode({"version": version_id, "has_error": "yes"})
    return f"{reverse('admin:challenges_attemptscore_changelist')}?{query}"


def can_see_failures(user: Any) -> bool:
    return bool(user.has_perm("challenges.view_attemptscore"))


def progress_context(request: HttpRequest, job: RescoreJob, *, compact: bool = False) -> dict:
    progress = job_progress(job)
    poll_url = reverse("admin:challenges_rescorejob_progress", args=[job.pk])
    return {
        "p": progress,
        "job": job,
        "compact": compact,
        "poll_url": f"{poll_url}?compact=1" if compact else poll_url,
        "poll_seconds": POLL_SECONDS,
        "job_url": reverse("admin:challenges_rescorejob_change", args=[job.pk]),
        "failures_url": (
            failures_url(version_id=job.version_id)
            if job.failed and can_see_failures(request.user)
            else None
        ),
    }


def render_progress(request: HttpRequest, job: RescoreJob, *, compact: bool = False) -> str:
    return render_to_string(
        FRAGMENT_TEMPLATE, progress_context(request, job, compact=compact), request=request
    )


@never_cache
def progress_fragment(request: HttpRequest, job_id: int, *, site: AdminSite) -> HttpResponse:
    """GET: the job's progress block alone (what htmx polls).

    Not wrapped in ``admin_view``: a poll from an expired session gets a plain 403, not a
    redirect whose login page htmx would swap into the block."""
    if not (site.has_permission(request) and is_staff_member(request.user)):
        return HttpResponseForbidden("Only staff may watch rescoring.")
    if request.method != "GET":
        return HttpResponse(status=405, headers={"Allow": "GET"})
    compact = request.GET.get("compact") == "1"
    job = RescoreJob.objects.select_related("challenge", "version").filter(pk=job_id).first()
    if job is None:  # deleted with its challenge: a final block, so polling stops
        return HttpResponse(
            '<p class="rescore-progress rescore-progress--gone">This job no longer exists.</p>'
        )
    return HttpResponse(render_progress(request, job, compact=compact))


# --- display helpers (the admin's columns and messages) ----------------------------------
def jobs_html(jobs: Iterable[RescoreJob]) -> str:
    """Links like "job #12 (Quiz, version 3), …", to the jobs' admin pages."""
    return format_html_join(
        ", ",
        '<a href="{}">job #{}</a> ({}, version {})',
        (
            (
                reverse("admin:challenges_rescorejob_change", args=[job.pk]),
                job.pk,
                job.challenge.name,
                job.version.number,
            )
            for job in jobs
        ),
    )


def failures_link(count: int, version_id: int, user: Any) -> str:
    """The text "3 failures", linking to the failed scores if ``user`` may see them."""
    label = f"{count:,} failure{'s' if count != 1 else ''}"
    if not count:
        return format_html('<span class="quiet">{}</span>', label)
    if user is not None and can_see_failures(user):
        return format_html('<a href="{}">{}</a>', failures_url(version_id=version_id), label)
    return label


def when_html(moment: datetime | None, *, day_of: datetime | None = None) -> str:
    """A timestamp as every page writes it, "2026-11-21 11:01:07 UTC"; only the time,
    "11:01:07 UTC", on the same (UTC) day as ``day_of``."""
    if moment is None:
        return ""
    text = exact_time(moment)
    if day_of is not None and exact_time(day_of)[:10] == text[:10]:
        text = text[11:]
    return format_html('<time datetime="{}">{}</time>', moment.isoformat(), text)


# --- the scoring section: Try it, Preview, versions ---------------------------------------
# These views are methods' bodies of ChallengeAdmin (which wraps them in admin_view:
# login, staff, CSRF); the work is done by ``preview`` and ``versions``.
TRY_TEMPLATE = "admin/challenges/challenge/try_result.html"
PREVIEW_TEMPLATE = "admin/challenges/challenge/preview_result.html"
VERSIONS_TEMPLATE = "admin/challenges/challenge/versions.html"


def scoring_form_for(model_admin: Any, request: HttpRequest, challenge: Any) -> Any:
    """The challenge form bound to the POSTed page, validating the setup only."""
    form_class = model_admin.get_form(request, challenge, change=True)
    form_class = type(form_class.__name__, (form_class,), {"for_preview": True})
    form = form_class(request.POST, instance=challenge)
    form.is_valid()
    return form


def setup_try(model_admin: Any, request: HttpRequest, challenge: Any) -> HttpResponse:
    """POST (htmx): the page's unsaved setup scored on the picked or latest attempts."""
    form = scoring_form_for(model_admin, request, challenge)
    context: dict[str, Any] = {"errors": form.scoring_errors(), "challenge": challenge}
    if form.setup is not None:
        try:
            ids = preview.parse_attempt_ids(request.POST.get("try_attempts", ""))
            context["result"] = preview.try_setup(
                challenge=challenge, setup=form.setup, attempt_ids=ids
            )
            context["rank_by_options"] = admin_scorers.rank_by_choices(
                context["result"].rows, form.setup
            )
        except preview.PreviewError as exc:
            context["errors"] = {"Attempts": [str(exc)]}
    return HttpResponse(render_to_string(TRY_TEMPLATE, context, request=request))


def setup_preview(model_admin: Any, request: HttpRequest, challenge: Any) -> HttpResponse:
    """POST (htmx): the leaderboard under the page's unsaved setup beside the current."""
    form = scoring_form_for(model_admin, request, challenge)
    context: dict[str, Any] = {"errors": form.scoring_errors(), "challenge": challenge}
    if form.setup is not None:
        context["preview"] = preview.leaderboard_preview(
            challenge=challenge,
            setup=form.setup,
            player=request.POST.get("preview_player", "").strip(),
        )
    return HttpResponse(render_to_string(PREVIEW_TEMPLATE, context, request=request))


def versions_page(
    model_admin: Any, request: HttpRequest, challenge: Any, *, can_activate: bool
) -> HttpResponse:
    """GET: the challenge's scoring versions, each with its diff and "Make active again"."""
    opts = model_admin.model._meta
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": opts,
        "original": challenge,
        "title": f"Scoring versions of {challenge.name}",
        "history": versions.version_history(challenge=challenge),
        "can_activate": can_activate,
        "change_url": reverse("admin:challenges_challenge_change", args=[challenge.pk]),
    }
    return TemplateResponse(request, VERSIONS_TEMPLATE, context)
