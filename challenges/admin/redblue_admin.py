"""The admin of red/blue challenges: teams, submissions (prompts are for admins only)
and pairings with the judge's verdict and points, read-only (a verdict is changed by a
re-judge, audited, through the API), and the pairing matrix of a challenge."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from challenges.admin.competition_admin import ReadOnly
from challenges.models import Challenge, ChallengeFormat, Pairing, Submission, TeamMember
from challenges.redblue import selectors


@admin.register(TeamMember)
class TeamMemberAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("player", "team", "challenge", "joined_at")
    list_filter = ("team",)
    search_fields = ("player__external_id", "player__display_name", "challenge__slug")
    list_select_related = ("player", "challenge")


@admin.register(Submission)
class SubmissionAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("pk", "player", "team", "active", "challenge", "created_at")
    list_filter = ("team", "active")
    search_fields = ("player__external_id", "challenge__slug")
    list_select_related = ("player", "challenge")


@admin.register(Pairing)
class PairingAdmin(ReadOnly, admin.ModelAdmin):
    list_display = (
        "pk",
        "challenge",
        "attack_player",
        "defense_player",
        "judged_at",
        "breached",
        "rating",
        "red_points",
        "blue_points",
        "points_error",
        "matrix",
    )
    list_filter = (("judged_at", admin.EmptyFieldListFilter),)
    search_fields = ("attack__player__external_id", "defense__player__external_id")
    list_select_related = ("challenge", "attack__player", "defense__player")

    @admin.display(description="Attack by")
    def attack_player(self, obj: Pairing) -> str:
        return obj.attack.player.external_id

    @admin.display(description="Defence by")
    def defense_player(self, obj: Pairing) -> str:
        return obj.defense.player.external_id

    @admin.display(description="Matrix")
    def matrix(self, obj: Pairing) -> str:
        url = reverse("admin:challenges_pairing_matrix", args=[obj.challenge_id])
        return format_html('<a href="{}">Pairing matrix</a>', url)

    @admin.display(description="Breached")
    def breached(self, obj: Pairing) -> str:
        return ", ".join(code for code, hit in (obj.categories or {}).items() if hit)

    def get_urls(self) -> list[Any]:
        matrix = self.admin_site.admin_view(self.matrix_view)
        return [
            path("matrix/<int:challenge_id>/", matrix, name="challenges_pairing_matrix"),
            *super().get_urls(),
        ]

    def matrix_view(self, request: HttpRequest, challenge_id: int) -> HttpResponse:
        challenge = get_object_or_404(Challenge, pk=challenge_id, format=ChallengeFormat.RED_BLUE)
        if not self.has_view_permission(request):
            raise PermissionDenied
        context = {
            **self.admin_site.each_context(request),
            "title": f"Pairing matrix · {challenge.name}",
            "challenge": challenge,
            "matrix": selectors.pairing_matrix(challenge=challenge),
        }
        return TemplateResponse(request, "admin/challenges/pairing_matrix.html", context)
