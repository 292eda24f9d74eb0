"""The admin of webhooks (admins only): add an endpoint (its signing secret is shown
once, in the message after saving), see why one was disabled and enable it again, and
read each endpoint's delivery log, with redelivery. Every change goes through
``events.webhook_delivery``, as the API's does."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from challenges.admin.competition_admin import AdminsOnly, AppendOnly
from challenges.events import webhook_delivery
from challenges.models import Event, WebhookDelivery, WebhookEndpoint
from challenges.permissions import is_scoring_admin


class EndpointForm(forms.ModelForm):
    url = forms.URLField(max_length=2000, assume_scheme="https")
    events = forms.MultipleChoiceField(
        choices=Event.Type.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None checked: every event type.",
    )

    class Meta:
        model = WebhookEndpoint
        fields = ["challenge", "url", "events", "description"]

    def clean_url(self) -> str:
        url = self.cleaned_data["url"]
        if not url.lower().startswith(("http://", "https://")):
            raise forms.ValidationError("Only http and https URLs are allowed.")
        return url


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(AdminsOnly, admin.ModelAdmin):
    form = EndpointForm
    list_display = ["url", "challenge", "is_active", "failures_in_row", "disabled_reason"]
    list_filter = ["is_active", "challenge"]
    readonly_fields = ["is_active", "disabled_reason", "failures_in_row", "created_at"]
    actions = ["enable_selected"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return is_scoring_admin(request.user)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_scoring_admin(request.user)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_scoring_admin(request.user)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        # The challenge of an endpoint is fixed once its deliveries exist.
        return [*self.readonly_fields, "challenge"] if obj is not None else self.readonly_fields

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        # The form's fields (Meta.fields) are the service's arguments, as the API's body.
        endpoint = webhook_delivery.endpoint_create(**form.cleaned_data)
        obj.pk = endpoint.pk
        obj.secret = endpoint.secret
        self.message_user(
            request,
            f"The signing secret of {endpoint.url} is {endpoint.secret} — copy it now: it is "
            "not shown again.",
            messages.WARNING,
        )

    @admin.action(description="Enable selected endpoints again")
    def enable_selected(self, request: HttpRequest, queryset: QuerySet[WebhookEndpoint]) -> None:
        for endpoint in queryset:
            webhook_delivery.endpoint_enable(endpoint=endpoint)
        self.message_user(request, f"{queryset.count()} enabled.", messages.SUCCESS)


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(AdminsOnly, AppendOnly, admin.ModelAdmin):
    """The delivery log: each event to each endpoint, its tries, status codes, excerpt."""

    list_display = [
        "id",
        "endpoint",
        "event_type",
        "status",
        "tries",
        "last_status_code",
        "duration_ms",
        "created_at",
    ]
    list_filter = ["status", "endpoint"]
    list_select_related = ["endpoint", "event"]
    readonly_fields = [f.name for f in WebhookDelivery._meta.fields]
    actions = ["redeliver_selected"]

    @admin.display(description="event")
    def event_type(self, delivery: WebhookDelivery) -> str:
        return f"{delivery.event.type} #{delivery.event_id}"

    @admin.action(description="Redeliver selected deliveries")
    def redeliver_selected(self, request: HttpRequest, queryset: QuerySet[WebhookDelivery]) -> None:
        sent, refused = 0, []
        for delivery in queryset.select_related("endpoint"):
            try:
                webhook_delivery.delivery_redeliver(delivery=delivery)
            except webhook_delivery.WebhookInvalid as exc:
                refused.append(f"{delivery.pk}: {exc}")
                continue
            webhook_delivery.delivery_send(delivery_id=delivery.pk)
            sent += 1
        if sent:
            self.message_user(request, f"{sent} queued again.", messages.SUCCESS)
        for message in refused:
            self.message_user(request, message, messages.WARNING)
