"""The Django admin for challenges (a later issue makes the scoring screen rich).

Saving goes through the same services as the API, so the admin validates the scoring
setup identically and a setup change makes a new version and queues its rescore.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin

from scoring.services import SetupInvalid, setup_validate

from . import services
from .models import Attempt, AttemptScore, Challenge, Player, ScoringVersion


class ChallengeAdminForm(forms.ModelForm):
    class Meta:
        model = Challenge
        fields = [
            "name",
            "slug",
            "description",
            "is_active",
            "tenant_id",
            "app_id",
            "workflow_id",
            *services.SETUP_FIELDS,
        ]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        changes = {k: cleaned[k] for k in services.SETUP_FIELDS if k in cleaned}
        if self.instance.pk:
            changes = services.setup_merge(challenge=self.instance, changes=changes)
        try:
            setup_validate(setup=changes)
        except SetupInvalid as exc:
            for field, message in exc.errors.items():
                self.add_error(field if field in self.fields else None, message)
        return cleaned


@admin.register(Challenge)
class ChallengeAdmin(admin.ModelAdmin):
    form = ChallengeAdminForm
    list_display = ["name", "slug", "is_active", "scoring_strategy", "active_version"]
    list_filter = ["is_active", "scoring_strategy"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    readonly_fields = ["active_version", "created_at", "updated_at"]

    def save_model(self, request: Any, obj: Challenge, form: Any, change: bool) -> None:
        data = {k: v for k, v in form.cleaned_data.items()}
        if change:
            result = services.challenge_update(challenge=obj, data=data, by=request.user)
            form.instance = result.challenge
        else:
            form.instance = services.challenge_create(data=data, by=request.user)
        obj.pk = form.instance.pk

    def save_related(self, request: Any, form: Any, formsets: Any, change: bool) -> None:
        pass  # no related objects are edited here


@admin.register(Player)
class PlayerAdmin(admin.ModelAdmin):
    list_display = ["display_name", "external_id", "created_at"]
    search_fields = ["display_name", "external_id"]


@admin.register(Attempt)
class AttemptAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "challenge",
        "player",
        "succeeded",
        "tokens_total",
        "elapsed_ms",
        "rating",
        "created_at",
    ]
    list_filter = ["challenge", "succeeded"]
    list_select_related = ["challenge", "player"]
    raw_id_fields = ["player"]
    search_fields = ["player__external_id", "player__display_name"]


@admin.register(ScoringVersion)
class ScoringVersionAdmin(admin.ModelAdmin):
    list_display = [
        "challenge",
        "number",
        "scoring_strategy",
        "scoring_plugin_id",
        "created_by",
        "created_at",
        "scored_at",
    ]
    list_filter = ["challenge"]
    list_select_related = ["challenge", "created_by"]

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False  # history is never rewritten


@admin.register(AttemptScore)
class AttemptScoreAdmin(admin.ModelAdmin):
    list_display = ["attempt", "version", "score", "error"]
    list_filter = ["version__challenge"]
    list_select_related = ["attempt", "version"]
    raw_id_fields = ["attempt", "version"]

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False
