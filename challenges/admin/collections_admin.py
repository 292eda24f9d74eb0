"""The admin of collections: name, slug, strategy and the member challenges in order
(an inline, sorted by position). Saves and deletions are audited by the collection
services, as the API's are."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import transaction
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from challenges.collections import services
from challenges.models import MAX_COLLECTION_CHALLENGES, Collection, CollectionMember


class CollectionMemberInline(admin.TabularInline):
    model = CollectionMember
    fields = ("position", "challenge")
    autocomplete_fields = ("challenge",)
    extra = 0
    min_num = 1
    max_num = MAX_COLLECTION_CHALLENGES
    ordering = ("position", "id")

    def get_formset(self, request: Any, obj: Any = None, **kwargs: Any) -> Any:
        # The admin passes min_num and max_num to the formset but never asks it to
        # enforce them: a collection with no challenge would save.
        return super().get_formset(request, obj, validate_min=True, validate_max=True, **kwargs)


@admin.register(Collection)
class CollectionAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "strategy", "members", "public_page")
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}
    fields = ("name", "slug", "description", "strategy")
    inlines = (CollectionMemberInline,)

    @admin.display(description="Challenges")
    def members(self, obj: Collection) -> int:
        return obj.members.count()

    @admin.display(description="Public page")
    def public_page(self, obj: Collection) -> str:
        url = reverse("challenges:collection", args=[obj.slug])
        return format_html('<a href="{}">{}</a>', url, url)

    def changeform_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        # The collection and its members are saved in two steps (the form, the inline):
        # one transaction, so the audit event sees both and nothing half-saved stays.
        with transaction.atomic():
            return super().changeform_view(request, *args, **kwargs)

    def save_model(self, request: Any, obj: Collection, form: Any, change: bool) -> None:
        request._collection_before = (
            services.collection_values(Collection.objects.get(pk=obj.pk)) if change else None
        )
        super().save_model(request, obj, form, change)

    def save_related(self, request: Any, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        services.collection_saved(
            collection=form.instance, before=request._collection_before, by=request.user
        )

    def delete_model(self, request: HttpRequest, obj: Collection) -> None:
        services.collection_delete(collection=obj, by=request.user)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for collection in queryset:
            services.collection_delete(collection=collection, by=request.user)
