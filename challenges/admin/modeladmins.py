"""The Django admin for challenges, scores and rescore jobs.

Saving goes through the same services as the API, so the admin validates the scoring
setup identically and a setup change makes a new version and queues its rescore.
Rescoring (the list action, the "Rescore now" button, cancelling a job) calls the
``rescoring`` services and is open to staff (``is_staff_member``); changing the scoring
setup, trying it and previewing it, and making a version active again are for admins
(``is_scoring_admin``): the form disables its scoring section for anyone else, and the
"Scoring staff" group (view permissions) sees the page read-only. The scoring section is
``admin_forms``; Try it, Preview and the versions pages are rendered by ``admin_views``
from the ``preview`` and ``versions`` services, as are the live progress blocks.
"""

from __future__ import annotations

from functools import partial, wraps
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import OuterRef, QuerySet
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
)
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.text import Truncator

from challenges import audit
from challenges.admin import qa
from challenges.admin import views as admin_views
from challenges.admin.competition_admin import AppendOnly, AttemptModerationMixin, ReadOnly
from challenges.admin.dashboard import failures_count
from challenges.admin.forms import ChallengeAdminForm
from challenges.ingestion import moderation, services
from challenges.leaderboards import freeze
from challenges.leaderboards import names as player_names
from challenges.leaderboards.metric_counts import challenge_metrics
from challenges.models import (
    Attempt,
    AttemptScore,
    Challenge,
    IntegrationScope,
    Player,
    RescoreJob,
    ScoringVersion,
)
from challenges.permissions import is_scoring_admin, is_staff_member
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from challenges.setup import versions
from challenges.setup.probe import setup_probe, unknown_scores_warning
from challenges.text import row_id
from scoring.services import SetupInvalid


def _bind_to_request(model_admin: admin.ModelAdmin, names: Any, request: HttpRequest) -> list:
    """Replace the names in ``model_admin.request_columns`` by columns bound to this
    request (their content depends on who looks). A ModelAdmin instance serves every
    request, on every thread, so the request is never stored on it."""
    bound = []
    for name in names:
        if name in getattr(model_admin, "request_columns", ()):
            method = getattr(model_admin, name)
            name = wraps(method)(lambda obj, method=method: method(obj, request=request))
        bound.append(name)
    return bound


def _refused_post(request: HttpRequest, allowed: bool) -> HttpResponse | None:
    """A 405 for anything but a POST; PermissionDenied unless ``allowed``."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    if not allowed:
        raise PermissionDenied
    return None


def _saved_scoring_message(result: setup_services.ChallengeUpdate) -> str:
    version = result.new_version
    if result.job is None:
        return f"Scoring version {version.number} made."
    return format_html(
        "Scoring version {} made; {} rescores {} attempts. The public leaderboard switches "
        "to it when every attempt is scored.",
        version.number,
        admin_views.jobs_html([result.job]),
        f"{result.job.total:,}",
    )


def _activation_message(done: versions.Activation) -> str:
    number = done.version.number
    if done.job is not None:
        return format_html(
            "Version {} is being rescored ({}); it becomes active when every attempt is scored.",
            number,
            admin_views.jobs_html([done.job]),
        )
    if done.scored:
        return (
            f"Version {number} is active again; {done.scored:,} attempts recorded since it "
            f"was last active were scored ({done.failed:,} failed)."
        )
    return f"Version {number} is active again (its scores were kept)."


# Podium's name on every admin page (templates/admin/base_site.html adds the icon).
admin.site.site_header = "Podium admin"
admin.site.site_title = "Podium admin"
admin.site.index_title = "Dashboard"
# The app list is on the dashboard; a second copy beside every list page took the width
# its columns need (they ended up hidden behind the filter panel).
admin.site.enable_nav_sidebar = False


@admin.register(Challenge)
class ChallengeAdmin(admin.ModelAdmin):
    """A challenge's page: its description, its scoring section (``admin_forms``), Try
    it and Preview (``preview``), its versions and rollback (``versions``), rescoring."""

    form = ChallengeAdminForm
    list_display = ["name", "slug", "is_active", "scoring_strategy", "active_version"]
    list_filter = ["is_active", "scoring_strategy"]
    list_select_related = ["active_version__challenge"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    readonly_fields = ["active_version", "created_at", "updated_at", "revealed_at"]
    actions = ["rescore_selected", "reveal_selected"]
    fieldsets = [
        (None, {"fields": ["name", "slug", "description", "is_active"]}),
        (
            "Integration identifiers",
            {
                "classes": ["collapse"],
                "fields": ["tenant_id", "app_id", "workflow_id"],
                "description": "Passed to scorer plugins in their context.",
            },
        ),
        (
            "Competition",
            {
                "fields": [
                    ("opens_at", "closes_at"),
                    "late_attempts",
                    ("attempts_per_day", "attempts_total"),
                    ("freeze_at", "revealed_at"),
                ],
                "description": "Optional. Outside the window attempts are refused (409) or "
                "recorded as practice (scored, never ranked); the caps count each player's "
                "attempts (per rolling 24 hours, in total) and refuse more with 429. Times "
                "are UTC. From freeze_at the public sees the standings as of then "
                "(staff see the live board) until an admin reveals (the challenge list's "
                "action); a new freeze_at starts a new freeze.",
            },
        ),
        (
            "Board",
            {
                "fields": [
                    "board",
                    ("aggregate", "min_attempts"),
                    ("ci_level", "bootstrap_samples"),
                    ("sample_key", "slice_by"),
                ],
                "description": "Best attempt: each player's best attempt ranks them. "
                "Aggregate: each player's mean (or sum) of the ranking score over all their "
                "counted attempts, with a percentile-bootstrap interval at ci_level, a rank "
                "interval and a tier; the bootstrap pairs players on the test item named by "
                "sample[sample_key] (empty: each player's attempts resampled on their own); "
                "slice_by splits the board by a field of the sample.",
            },
        ),
        (
            "Red/blue",
            {
                "classes": ["collapse"],
                "fields": [
                    "format",
                    "judge_suite",
                    ("defense_selection_policy", "attack_selection_policy"),
                    "red_blue_scoring",
                    ("red_blue_plugin_id", "red_blue_entrypoint"),
                    "red_blue_config",
                    ("severity_divisor", "time_penalty", "token_penalty"),
                    "instructions",
                    "reveal_attacks_after_close",
                ],
                "description": "For a red/blue challenge: red players submit attacks, blue "
                "players defences, an external judge rules on each pairing per category "
                'of the judge suite (a JSON list of codes, e.g. ["SA", "V"]). '
                "Red/blue scoring 'custom' names a registered pairing scorer plugin (its "
                "entrypoint may stay empty) and its JSON config. Changing the points rule "
                "recomputes every judged pairing's points as a new scoring version.",
            },
        ),
    ]

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> list:
        fieldsets = list(super().get_fieldsets(request, obj))
        if obj is not None:
            fieldsets.append(("Status", {"fields": ["active_version", "created_at", "updated_at"]}))
        return fieldsets

    def get_form(self, request: Any, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        # Who may change scoring is a property of the request, not of the form class.
        return type(
            form.__name__,
            (form,),
            {
                "can_edit_scoring": is_scoring_admin(request.user),
                "probe_errors": getattr(request, "podium_probe_errors", {}),
            },
        )

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: Any = None,
    ) -> HttpResponse:
        # A snippet whose scores cannot be read from its code is probed on the challenge's
        # attempts here, before Django's transaction opens: a scorer never runs in one.
        if request.method == "POST" and object_id and is_scoring_admin(request.user):
            challenge = self.get_object(request, unquote(object_id))
            if challenge is not None:
                form = admin_views.scoring_form_for(self, request, challenge)
                if form.setup is not None:
                    try:
                        setup_probe(challenge=challenge, setup=form.setup)
                    except SetupInvalid as exc:
                        request.podium_probe_errors = exc.errors
        return super().changeform_view(request, object_id, form_url, extra_context)

    # Admins (superusers, or the change_scoring permission) edit challenges without the
    # model's own permissions; staff get the model's view permission from their group.
    def has_module_permission(self, request: HttpRequest) -> bool:
        return super().has_module_permission(request) or is_scoring_admin(request.user)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_view_permission(request, obj) or is_scoring_admin(request.user)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return super().has_add_permission(request) or is_scoring_admin(request.user)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_change_permission(request, obj) or is_scoring_admin(request.user)

    def save_model(self, request: Any, obj: Challenge, form: Any, change: bool) -> None:
        data = {k: v for k, v in form.cleaned_data.items() if k in setup_services.INFO_FIELDS}
        if form.can_edit_scoring and form.setup is not None:
            data.update(form.setup)
        if change:
            result = setup_services.challenge_update(challenge=obj, data=data, by=request.user)
            form.instance = result.challenge
            if result.new_version is not None:
                self.message_user(request, _saved_scoring_message(result), messages.INFO)
        else:
            form.instance = setup_services.challenge_create(data=data, by=request.user)
        obj.pk = form.instance.pk
        unknown = unknown_scores_warning(form.instance)
        if unknown:
            self.message_user(request, unknown, messages.WARNING)

    def save_related(self, request: Any, form: Any, formsets: Any, change: bool) -> None:
        pass  # no related objects are edited here

    def delete_model(self, request: HttpRequest, obj: Challenge) -> None:
        setup_services.challenge_delete(challenge=obj, by=request.user)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Challenge]) -> None:
        for challenge in queryset:
            setup_services.challenge_delete(challenge=challenge, by=request.user)

    def get_deleted_objects(self, objs: Any, request: Any) -> Any:
        deleted, model_count, perms_needed, protected = super().get_deleted_objects(objs, request)
        # Rescore jobs and scoring versions are history that goes with their challenge:
        # their admins are read-only (nobody deletes one alone), which must not block
        # deleting a challenge.
        perms_needed.discard(RescoreJob._meta.verbose_name)
        perms_needed.discard(ScoringVersion._meta.verbose_name)
        return deleted, model_count, perms_needed, protected

    # --- the scoring section: Try it, Preview, versions ---------------------------------
    def _challenge_or_404(self, request: HttpRequest, object_id: str) -> Challenge:
        challenge = self.get_object(request, unquote(object_id))
        if challenge is None:
            raise Http404(f"No challenge with the id {object_id!r}.")
        return challenge

    def try_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        refused = _refused_post(request, is_scoring_admin(request.user))
        challenge = self._challenge_or_404(request, object_id)
        return refused or admin_views.setup_try(self, request, challenge)

    def preview_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        refused = _refused_post(request, is_scoring_admin(request.user))
        challenge = self._challenge_or_404(request, object_id)
        return refused or admin_views.setup_preview(self, request, challenge)

    def versions_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        challenge = self._challenge_or_404(request, object_id)
        return admin_views.versions_page(
            self, request, challenge, can_activate=is_scoring_admin(request.user)
        )

    def activate_view(self, request: HttpRequest, object_id: str, version_id: int) -> HttpResponse:
        """POST: make an earlier scoring version active again, back to the versions page."""
        if refused := _refused_post(request, is_scoring_admin(request.user)):
            return refused
        challenge = self._challenge_or_404(request, object_id)
        version = ScoringVersion.objects.filter(challenge=challenge, pk=version_id).first()
        if version is None:
            raise Http404("No such version of this challenge.")
        version.challenge = challenge
        try:
            done = versions.version_activate(version=version, by=request.user)
        except versions.ActivationRefused as exc:
            self.message_user(request, str(exc), messages.ERROR)
        else:
            self.message_user(request, _activation_message(done), messages.SUCCESS)
        return HttpResponseRedirect(
            reverse("admin:challenges_challenge_versions", args=[challenge.pk])
        )

    # --- the board freeze ------------------------------------------------------------
    def has_reveal_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_scoring_admin(request.user)

    @admin.action(
        description="Reveal the frozen board of selected challenges", permissions=["reveal"]
    )
    def reveal_selected(self, request: HttpRequest, queryset: QuerySet[Challenge]) -> None:
        for challenge in queryset:
            try:
                moderation.challenge_reveal(challenge=challenge, by=request.user)
            except freeze.RevealRefused as exc:
                self.message_user(request, f"{challenge}: {exc}", messages.WARNING)
            else:
                self.message_user(request, f"{challenge}: the board is revealed.", messages.SUCCESS)

    # --- rescoring ------------------------------------------------------------------
    def has_rescore_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_staff_member(request.user)

    @admin.action(description="Rescore selected challenges", permissions=["rescore"])
    def rescore_selected(self, request: HttpRequest, queryset: QuerySet[Challenge]) -> None:
        jobs = [setup_services.challenge_rescore(challenge=c, by=request.user) for c in queryset]
        self.message_user(
            request,
            format_html(
                "Queued rescore {}: {}.",
                "job" if len(jobs) == 1 else "jobs",
                admin_views.jobs_html(jobs),
            ),
            messages.SUCCESS,
        )

    def get_urls(self) -> list:
        def view(method: Any) -> Any:
            return self.admin_site.admin_view(method)  # login, staff, CSRF

        routes = [
            ("<path:object_id>/rescore/", self.rescore_view, "challenges_challenge_rescore"),
            ("<path:object_id>/scoring/try/", self.try_view, "challenges_challenge_try"),
            (
                "<path:object_id>/scoring/preview/",
                self.preview_view,
                "challenges_challenge_preview",
            ),
            (
                "<path:object_id>/versions/<int:version_id>/activate/",
                self.activate_view,
                "challenges_challenge_activate",
            ),
            ("<path:object_id>/versions/", self.versions_view, "challenges_challenge_versions"),
        ]
        urls = [path(route, view(method), name=name) for route, method, name in routes]
        return [*urls, *super().get_urls()]

    def rescore_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """POST: queue a rescore of the challenge's current setup, back to its page."""
        if refused := _refused_post(request, self.has_rescore_permission(request)):
            return refused
        challenge = self.get_object(request, unquote(object_id))
        if challenge is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        job = setup_services.challenge_rescore(challenge=challenge, by=request.user)
        self.message_user(request, format_html("Queued rescore {}.", admin_views.jobs_html([job])))
        return HttpResponseRedirect(
            reverse("admin:challenges_challenge_change", args=[challenge.pk])
        )

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        context = {
            **self._rescore_context(request, unquote(object_id)),
            **self._scoring_context(request, unquote(object_id)),
            **(extra_context or {}),
        }
        return super().change_view(request, object_id, form_url, extra_context=context)

    def add_view(self, request: HttpRequest, form_url: str = "", extra_context: Any = None) -> Any:
        context = {"can_edit_scoring": is_scoring_admin(request.user), **(extra_context or {})}
        return super().add_view(request, form_url, extra_context=context)

    def _scoring_context(self, request: HttpRequest, pk: str) -> dict[str, Any]:
        if row_id(pk) is None:
            return {}
        challenge = Challenge.objects.select_related("active_version").filter(pk=pk).first()
        return {
            "can_edit_scoring": is_scoring_admin(request.user),
            "metrics": challenge_metrics(challenge=challenge) if challenge else [],
            "try_url": reverse("admin:challenges_challenge_try", args=[pk]),
            "preview_url": reverse("admin:challenges_challenge_preview", args=[pk]),
            "versions_url": reverse("admin:challenges_challenge_versions", args=[pk]),
        }

    def _rescore_context(self, request: HttpRequest, pk: str) -> dict[str, Any]:
        """The button and the progress of the challenge's queued or running jobs (or, if
        none, the outcome of its latest job)."""
        if not is_staff_member(request.user) or row_id(pk) is None:
            return {}
        jobs = RescoreJob.objects.filter(challenge_id=pk).select_related("challenge", "version")
        try:
            shown = list(jobs.filter(status__in=RescoreJob.ACTIVE_STATUSES)) or list(jobs[:1])
        except (ValueError, ValidationError):  # not a valid id: the change view says so
            return {}
        jobs_url = None
        if request.user.has_perm("challenges.view_rescorejob"):
            jobs_url = (
                reverse("admin:challenges_rescorejob_changelist") + f"?challenge__id__exact={pk}"
            )
        return {
            "show_rescoring": True,
            "can_rescore": self.has_rescore_permission(request),
            "rescore_url": reverse("admin:challenges_challenge_rescore", args=[pk]),
            "rescore_blocks": [admin_views.render_progress(request, job) for job in shown],
            "jobs_url": jobs_url,
        }


@admin.register(IntegrationScope)
class IntegrationScopeAdmin(admin.ModelAdmin):
    """Which challenges an integration token may record attempts to (none listed for a
    user: every challenge)."""

    list_display = ["user", "challenge"]
    list_filter = ["challenge"]
    list_select_related = ["user", "challenge"]
    raw_id_fields = ["user"]
    search_fields = ["user__username", "challenge__name", "challenge__slug"]


@admin.register(Player)
class PlayerAdmin(admin.ModelAdmin):
    list_display = ["display_name", "external_id", "created_at"]
    search_fields = ["display_name", "external_id"]

    def save_model(self, request: HttpRequest, obj: Player, form: Any, change: bool) -> None:
        with transaction.atomic():
            if change and "display_name" in form.changed_data:
                old = form.initial["display_name"]
                audit.audit_record(
                    kind=audit.Kind.PLAYER_RENAME,
                    by=request.user,
                    before={"player": obj.external_id, "display_name": old},
                    after={"player": obj.external_id, "display_name": obj.display_name},
                )
                # Kept: a board frozen before now still shows the old name.
                renames = [(obj.pk, old, obj.display_name)]
                player_names.renames_record(renames=renames, at=timezone.now())
            super().save_model(request, obj, form, change)


@admin.register(Attempt)
class AttemptAdmin(AttemptModerationMixin, admin.ModelAdmin):
    actions = ["hide_attempts", "unhide_attempts"]
    list_display = [
        "id",
        "challenge",
        "player",
        "succeeded",
        "tokens_total",
        "elapsed_ms",
        "rating",
        "created_at",
        "practice",
        "hidden",
    ]
    list_filter = ["challenge", "succeeded", "practice", "hidden", qa.QAFailingFilter]
    list_select_related = ["challenge", "player"]
    raw_id_fields = ["player"]
    search_fields = ["player__external_id", "player__display_name"]
    # hidden: through the actions (and the audit)
    readonly_fields = ["practice", "hidden", "qa_results"]

    @admin.display(description="QA checks (active version)")
    def qa_results(self, obj: Attempt) -> str:
        if obj.pk is None:
            return ""
        found = (
            AttemptScore.objects.filter(attempt=obj, version_id=obj.challenge.active_version_id)
            .values_list("qa", flat=True)
            .first()
        )
        return qa.qa_html(found)

    # Leaderboard entries are a cache without foreign-key constraints: deleting attempts
    # goes through the service that recomputes the entries that pointed at them.
    def delete_model(self, request: HttpRequest, obj: Attempt) -> None:
        services.attempts_delete(attempts=Attempt.objects.filter(pk=obj.pk), by=request.user)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Attempt]) -> None:
        services.attempts_delete(attempts=queryset, by=request.user)


@admin.register(ScoringVersion)
class ScoringVersionAdmin(AppendOnly, admin.ModelAdmin):
    # Versions are made by saving a challenge's scoring setup and never rewritten, nor
    # deleted: the active one is the board, older ones are what "Make active again" and
    # the public history read. Versions go with their challenge only.
    list_display = [
        "challenge",
        "number",
        "scoring_strategy",
        "scoring_plugin_id",
        "failures",
        "created_by",
        "created_at",
        "scored_at",
    ]
    list_filter = ["challenge"]
    list_select_related = ["challenge", "created_by"]
    readonly_fields = ["failures"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ScoringVersion]:
        return super().get_queryset(request).annotate(failure_count=failures_count(OuterRef("pk")))

    request_columns = ("failures",)

    def get_list_display(self, request: HttpRequest) -> list:
        return _bind_to_request(self, super().get_list_display(request), request)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list:
        return _bind_to_request(self, super().get_readonly_fields(request, obj), request)

    @admin.display(description="failures", ordering="failure_count")
    def failures(self, obj: ScoringVersion, request: HttpRequest | None = None) -> str:
        count = getattr(obj, "failure_count", None)
        if count is None:  # an instance not loaded through get_queryset
            count = obj.scores.exclude(error="").count()
        return admin_views.failures_link(count, obj.pk, request.user if request else None)


class HasErrorFilter(admin.SimpleListFilter):
    """Scores whose scorer failed (the error is for admins only)."""

    title = "has error"
    parameter_name = "has_error"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Yes"), ("no", "No")]

    def queryset(self, request: Any, queryset: QuerySet[AttemptScore]) -> QuerySet[AttemptScore]:
        if self.value() == "yes":
            return queryset.exclude(error="")
        if self.value() == "no":
            return queryset.filter(error="")
        return queryset


class VersionFilter(admin.SimpleListFilter):
    """One scoring version; offers the versions of the challenge being looked at."""

    title = "scoring version"
    parameter_name = "version"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, str]]:
        versions = ScoringVersion.objects.select_related("challenge").order_by("-number")
        challenge_id = request.GET.get("version__challenge__id__exact", "")
        if challenge_id.isdigit():
            versions = versions.filter(challenge_id=int(challenge_id))
        elif (self.value() or "").isdigit():
            versions = versions.filter(challenge__versions__pk=int(self.value()))
        else:
            return []  # every version of every challenge would be a long list
        return [(str(v.pk), str(v)) for v in versions[:50]]

    def queryset(self, request: Any, queryset: QuerySet[AttemptScore]) -> QuerySet[AttemptScore]:
        value = self.value()
        if not value:
            return queryset
        if not value.isdigit():
            raise IncorrectLookupParameters(f"version={value!r} is not an id.")
        return queryset.filter(version_id=int(value))


@admin.register(AttemptScore)
class AttemptScoreAdmin(ReadOnly, admin.ModelAdmin):  # scores are written by scoring only
    list_display = [
        "id",
        "attempt_link",
        "player",
        "version",
        "score",
        "error_summary",
        "qa_summary",
    ]
    list_filter = [HasErrorFilter, qa.QAFailingFilter, VersionFilter, "version__challenge"]
    readonly_fields = ["qa_results"]

    @admin.display(description="QA", ordering="qa_failed")
    def qa_summary(self, obj: AttemptScore) -> str:
        if obj.qa is None:
            return ""
        if not obj.qa_failed:
            return format_html('<span class="quiet">{}</span>', "passed")
        return format_html('<span class="score-error">{} failing</span>', obj.qa_failed)

    @admin.display(description="QA checks")
    def qa_results(self, obj: AttemptScore) -> str:
        return qa.qa_html(obj.qa)

    list_select_related = ["player", "version__challenge"]
    raw_id_fields = ["attempt", "version", "player"]
    search_fields = ["player__external_id", "player__display_name"]

    @admin.display(description="attempt", ordering="attempt_id")
    def attempt_link(self, obj: AttemptScore) -> str:
        url = reverse("admin:challenges_attempt_change", args=[obj.attempt_id])
        return format_html('<a href="{}">#{}</a>', url, obj.attempt_id)

    @admin.display(description="error", ordering="error")
    def error_summary(self, obj: AttemptScore) -> str:
        if not obj.error:
            return ""
        return format_html(
            '<span class="score-error" title="{}">{}</span>',
            obj.error,
            Truncator(obj.error).chars(160),
        )


@admin.register(RescoreJob)
class RescoreJobAdmin(AppendOnly, admin.ModelAdmin):
    """Read-only: jobs are made by rescoring and only ever cancelled from here."""

    list_display = [
        "id",
        "challenge",
        "version_number",
        "status_badge",
        "progress",
        "failures",
        "qa_failing",
        "who",
        "created",
        "started",
        "finished",
    ]
    list_display_links = ["id"]
    list_filter = ["status", "challenge"]
    list_select_related = ["challenge", "version", "created_by"]
    fields = [
        "challenge",
        "version",
        "status",
        "total",
        "processed",
        "failed",
        "qa_failing",
        "chunks_total",
        "chunks_done",
        "created_by",
        "created_at",
        "started_at",
        "finished_at",
        "error",
    ]
    readonly_fields = ["qa_failing"]
    actions = ["cancel_selected"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[RescoreJob]:
        return (
            super()
            .get_queryset(request)
            .select_related("challenge", "version")
            .annotate(qa_count=qa.qa_failing_count(OuterRef("version")))
        )

    def has_cancel_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_staff_member(request.user)

    # --- columns --------------------------------------------------------------------
    request_columns = ("progress", "failures", "qa_failing")

    def get_list_display(self, request: HttpRequest) -> list:
        return _bind_to_request(self, super().get_list_display(request), request)

    @admin.display(description="version", ordering="version__number")
    def version_number(self, obj: RescoreJob) -> int:
        return obj.version.number

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj: RescoreJob) -> str:
        return format_html(
            '<span class="rescore-status rescore-status--{}">{}</span>',
            obj.status,
            obj.get_status_display(),
        )

    @admin.display(description="processed / total")
    def progress(self, obj: RescoreJob, request: HttpRequest | None = None) -> str:
        return admin_views.render_progress(request, obj, compact=True)

    @admin.display(description="failing QA")
    def qa_failing(self, obj: RescoreJob, request: HttpRequest | None = None) -> str:
        count = getattr(obj, "qa_count", None)
        if count is None:  # an instance not loaded through get_queryset
            count = qa.qa_failing(version_id=obj.version_id)
        return qa.qa_link(count, obj.version_id, request.user if request else None)

    @admin.display(description="failed", ordering="failed")
    def failures(self, obj: RescoreJob, request: HttpRequest | None = None) -> str:
        return admin_views.failures_link(
            obj.failed, obj.version_id, request.user if request else None
        )

    @admin.display(description="who", ordering="created_by__username")
    def who(self, obj: RescoreJob) -> Any:
        return obj.created_by

    # Short timestamps keep the list on one screen: the times of the same day as the
    # job's creation without the date.
    @admin.display(description="created", ordering="created_at")
    def created(self, obj: RescoreJob) -> str:
        return admin_views.when_html(obj.created_at)

    @admin.display(description="started", ordering="started_at")
    def started(self, obj: RescoreJob) -> str:
        return admin_views.when_html(obj.started_at, day_of=obj.created_at)

    @admin.display(description="finished", ordering="finished_at")
    def finished(self, obj: RescoreJob) -> str:
        return admin_views.when_html(obj.finished_at, day_of=obj.created_at)

    # --- cancelling -----------------------------------------------------------------
    @admin.action(description="Cancel selected jobs", permissions=["cancel"])
    def cancel_selected(self, request: HttpRequest, queryset: QuerySet[RescoreJob]) -> None:
        cancelled = []
        for job in queryset.select_related("challenge", "version"):
            try:
                cancelled.append(rescoring.job_cancel(job=job, by=request.user))
            except rescoring.JobStateError as exc:
                self.message_user(request, str(exc), messages.ERROR)  # it names the job
        if cancelled:
            self.message_user(
                request,
                format_html("Cancelled {}.", admin_views.jobs_html(cancelled)),
                messages.SUCCESS,
            )

    def get_urls(self) -> list:
        urls = [
            path(
                "<int:job_id>/progress/",
                partial(admin_views.progress_fragment, site=self.admin_site),
                name="challenges_rescorejob_progress",
            ),
            path(
                "<path:object_id>/cancel/",
                self.admin_site.admin_view(self.cancel_view),  # login, staff, CSRF
                name="challenges_rescorejob_cancel",
            ),
        ]
        return [*urls, *super().get_urls()]

    def cancel_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """POST: stop the job (the active version does not change), back to its page."""
        if refused := _refused_post(request, self.has_cancel_permission(request)):
            return refused
        job = self.get_object(request, unquote(object_id))
        if job is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        try:
            rescoring.job_cancel(job=job, by=request.user)
        except rescoring.JobStateError as exc:
            self.message_user(request, str(exc), messages.ERROR)
        else:
            self.message_user(request, f"Cancelled rescore job #{job.pk}.", messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:challenges_rescorejob_change", args=[job.pk]))

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        context = dict(extra_context or {})
        job = self.get_object(request, unquote(object_id))
        if job is not None:  # RescoreJob.__str__ shows ids; name the version by its number
            context["subtitle"] = (
                f"Rescore job #{job.pk}: {job.challenge}, version {job.version.number}"
            )
        if job is not None and is_staff_member(request.user):
            context["progress_block"] = admin_views.render_progress(request, job)
            if job.is_active and self.has_cancel_permission(request, job):
                context["cancel_url"] = reverse("admin:challenges_rescorejob_cancel", args=[job.pk])
        return super().change_view(request, object_id, form_url, extra_context=context)
