"""The admin of running a competition: moderation (hide / unhide players and attempts,
with a reason, through ``ingestion.moderation``) and the read-only audit trail.

Roles: staff (and admins) may hide; only admins (``is_scoring_admin``) may unhide or read
the audit trail. Nothing here edits or deletes an audit event.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from challenges.ingestion import moderation
from challenges.models import Attempt, AuditEvent, HistoryRecord, PlayerHide
from challenges.permissions import is_scoring_admin, is_staff_member
from challenges.setup.versions import version_diff


class ReasonForm(forms.Form):
    reason = forms.CharField(
        max_length=moderation.REASON_MAX,
        widget=forms.TextInput(attrs={"size": 60, "autofocus": True}),
        help_text="Kept in the audit trail.",
    )


def reason_step(
    model_admin: admin.ModelAdmin,
    request: HttpRequest,
    queryset: QuerySet,
    *,
    title: str,
    action: str,
    apply: Callable[[Any, str], None],
) -> HttpResponse | None:
    """An action that asks for a reason first: the first POST shows the form, the second
    (with ``confirm``) applies ``apply(obj, reason)`` to each selected row. Errors (e.g.
    already hidden) are reported per row, the others still applied."""
    form = ReasonForm(request.POST if "confirm" in request.POST else None)
    if "confirm" in request.POST and form.is_valid():
        done, failed = 0, []
        for obj in queryset:
            try:
                apply(obj, form.cleaned_data["reason"])
                done += 1
            except moderation.ModerationError as exc:
                failed.append(str(exc))
        if done:
            model_admin.message_user(request, f"{title}: {done} done.", messages.SUCCESS)
        for message in failed:
            model_admin.message_user(request, message, messages.WARNING)
        return None
    context = {
        **model_admin.admin_site.each_context(request),
        "title": title,
        "form": form,
        "objects": list(queryset[:200]),
        "count": queryset.count(),
        "ids": [str(pk) for pk in queryset.values_list("pk", flat=True)],
        "action": action,
        "opts": model_admin.model._meta,
    }
    return TemplateResponse(request, "admin/challenges/moderate.html", context)


class AttemptModerationMixin:
    """Actions and columns for the attempts' admin: hidden and practice marked."""

    def has_hide_permission(self, request: HttpRequest) -> bool:
        return is_staff_member(request.user)

    def has_unhide_permission(self, request: HttpRequest) -> bool:
        return is_scoring_admin(request.user)

    @admin.action(description="Hide selected attempts from the public", permissions=["hide"])
    def hide_attempts(self, request: HttpRequest, queryset: QuerySet[Attempt]) -> Any:
        return self._hidden_step(request, queryset, hidden=True)

    @admin.action(description="Unhide selected attempts", permissions=["unhide"])
    def unhide_attempts(self, request: HttpRequest, queryset: QuerySet[Attempt]) -> Any:
        return self._hidden_step(request, queryset, hidden=False)

    def _hidden_step(self, request: HttpRequest, queryset: QuerySet[Attempt], hidden: bool) -> Any:
        verb = "hide" if hidden else "unhide"
        return reason_step(
            self,
            request,
            queryset,
            title=f"{verb.capitalize()} attempts",
            action=f"{verb}_attempts",
            apply=lambda a, reason: moderation.attempt_set_hidden(
                attempt=a, hidden=hidden, reason=reason, by=request.user
            ),
        )


class ReadOnly:
    """An admin of rows written elsewhere: read (or deleted), never added or changed here."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class AppendOnly(ReadOnly):
    """An admin of append-only rows: read, never added, changed or deleted here."""

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class StaffOnly:
    """An admin shown to staff (and admins) only."""

    shown_to = staticmethod(is_staff_member)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.shown_to(request.user)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.shown_to(request.user)


class AdminsOnly(StaffOnly):
    """An admin shown to admins (``is_scoring_admin``) only."""

    shown_to = staticmethod(is_scoring_admin)


class PlayerHideForm(forms.ModelForm):
    class Meta:
        model = PlayerHide
        fields = ["player", "challenge", "reason"]
        help_texts = {"challenge": "Empty: hide the player from every challenge."}


@admin.register(PlayerHide)
class PlayerHideAdmin(StaffOnly, AppendOnly, admin.ModelAdmin):
    """Hidden players. Adding one hides the player (staff); "Unhide" (admins) undoes it,
    with a reason. No plain delete: an undo goes through the service and the audit."""

    form = PlayerHideForm
    list_display = ["player", "challenge_shown", "reason", "hidden_by", "hidden_at"]
    list_filter = ["challenge"]
    list_select_related = ["player", "challenge", "hidden_by"]
    raw_id_fields = ["player"]
    search_fields = ["player__external_id", "player__display_name", "reason"]
    actions = ["unhide_players"]

    @admin.display(description="Challenge")
    def challenge_shown(self, obj: PlayerHide) -> str:
        return str(obj.challenge) if obj.challenge_id else "All challenges"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return is_staff_member(request.user)

    def has_unhide_permission(self, request: HttpRequest) -> bool:
        return is_scoring_admin(request.user)

    def save_model(self, request: HttpRequest, obj: PlayerHide, form: Any, change: bool) -> None:
        try:
            hide = moderation.player_hide(
                player=obj.player, challenge=obj.challenge, reason=obj.reason, by=request.user
            )
        except moderation.ModerationError as exc:  # checked in clean; a race lands here
            self.message_user(request, str(exc), messages.ERROR)
            return
        obj.pk = hide.pk

    def get_form(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, **kwargs)

        def clean(self: forms.ModelForm) -> dict:
            cleaned = forms.ModelForm.clean(self)
            player, challenge = cleaned.get("player"), cleaned.get("challenge")
            if player and PlayerHide.objects.filter(player=player, challenge=challenge).exists():
                where = challenge or "every challenge"
                raise forms.ValidationError(f"{player} is already hidden from {where}.")
            return cleaned

        return type(form.__name__, (form,), {"clean": clean})

    @admin.action(description="Unhide selected players", permissions=["unhide"])
    def unhide_players(self, request: HttpRequest, queryset: QuerySet[PlayerHide]) -> Any:
        return reason_step(
            self,
            request,
            queryset,
            title="Unhide players",
            action="unhide_players",
            apply=lambda hide, reason: moderation.player_unhide(
                player=hide.player, challenge=hide.challenge, reason=reason, by=request.user
            ),
        )


@admin.register(AuditEvent)
class AuditEventAdmin(AdminsOnly, AppendOnly, admin.ModelAdmin):
    """The audit trail: read-only, for admins."""

    list_display = ["at", "kind", "challenge_name", "actor_name", "via", "reason", "history"]
    list_filter = ["kind", "via", "challenge", "actor"]
    search_fields = ["reason", "challenge_name", "actor_name"]
    date_hierarchy = "at"
    readonly_fields = [*(f.name for f in AuditEvent._meta.fields), "history"]

    # The changes that end in a switch of the active version, hence a history record.
    SWITCHING = ("scoring_change", "rescore_start", "version_activate")

    @admin.display(description="history")
    def history(self, obj: AuditEvent) -> str:
        """A link to the challenge's history records (the switch this change led to)."""
        if obj.kind not in self.SWITCHING or obj.challenge_id is None:
            return ""
        url = reverse("admin:challenges_historyrecord_changelist")
        return format_html(
            '<a href="{}?challenge__id__exact={}">records</a>', url, obj.challenge_id
        )


@admin.register(HistoryRecord)
class HistoryRecordAdmin(StaffOnly, AppendOnly, admin.ModelAdmin):
    """The public history records, with the setup diff of each switch: read-only (records
    are append-only)."""

    list_display = ["switched_at", "challenge", "version", "previous_version", "reason", "moved"]
    list_filter = ["reason", "challenge"]
    list_select_related = ["challenge", "version", "previous_version"]
    readonly_fields = [*(f.name for f in HistoryRecord._meta.fields), "setup_diff"]

    @admin.display(description="setup diff")
    def setup_diff(self, obj: HistoryRecord) -> str:
        previous = obj.previous_version
        changes = version_diff(
            previous.setup_dict() if previous else None, obj.version.setup_dict()
        )
        if not changes:
            return "No change of the setup (a first version, a batch run or the same setup)."
        return format_html(
            "<ul>{}</ul>",
            format_html_join(
                "",
                "<li>{}: {} → {}{}</li>",
                (
                    (c.label, c.before, c.after, "\n".join(c.lines) if c.lines else "")
                    for c in changes
                ),
            ),
        )
