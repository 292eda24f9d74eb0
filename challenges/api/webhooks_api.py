"""The webhooks API (admins): add and list a challenge's endpoints, read an endpoint's
delivery log, redeliver (docs/events.md). Views parse, call one service, render."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from challenges.api.fields import StrictCharField
from challenges.api.serializers import StrictSerializer, validated
from challenges.api.views import row_or_404
from challenges.events import webhook_delivery
from challenges.models import Challenge, Event, WebhookDelivery, WebhookEndpoint
from challenges.permissions import IsScoringAdmin
from challenges.text import row_id


class EndpointInSerializer(StrictSerializer):
    url = serializers.URLField(max_length=2000, help_text="http:// or https:// only.")
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=Event.Type.choices),
        required=False,
        default=list,
        max_length=len(Event.Type.values),
        help_text="The event types to deliver; empty or absent: every type.",
    )
    description = StrictCharField(max_length=500, required=False, default="", allow_blank=True)


class EndpointSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.CharField()
    events = serializers.ListField(child=serializers.CharField())
    description = serializers.CharField()
    is_active = serializers.BooleanField()
    disabled_reason = serializers.CharField()
    failures_in_row = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class EndpointCreatedSerializer(EndpointSerializer):
    secret = serializers.CharField(
        help_text="The signing secret (whsec_…): shown this once, keep it."
    )


class DeliveryEventSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    type = serializers.ChoiceField(choices=Event.Type.choices)


class DeliveryTrySerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    status_code = serializers.IntegerField(allow_null=True)
    error = serializers.CharField()
    duration_ms = serializers.FloatField()


class DeliverySerializer(serializers.Serializer):
    """One event to one endpoint (``webhooks.delivery_json``)."""

    id = serializers.IntegerField()
    event = DeliveryEventSerializer()
    status = serializers.ChoiceField(choices=WebhookDelivery.Status.values)
    attempts = serializers.IntegerField(help_text="Tries made so far.")
    next_try_at = serializers.DateTimeField(allow_null=True)
    status_codes = serializers.ListField(child=serializers.IntegerField(allow_null=True))
    last_status_code = serializers.IntegerField(allow_null=True)
    last_error = serializers.CharField()
    response_excerpt = serializers.CharField()
    duration_ms = serializers.FloatField(allow_null=True)
    tries = DeliveryTrySerializer(many=True)
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


DELIVERIES_PAGE = 200


class EndpointList(APIView):
    permission_classes = [IsScoringAdmin]

    @extend_schema(responses={200: EndpointSerializer(many=True)})
    def get(self, request: Request, pk: str) -> Response:
        challenge = row_or_404(Challenge.objects, pk)
        endpoints = WebhookEndpoint.objects.filter(challenge=challenge).order_by("pk")
        return Response(EndpointSerializer(endpoints, many=True).data)

    @extend_schema(
        request=EndpointInSerializer,
        responses={201: EndpointCreatedSerializer},
        description="Add an endpoint; the response shows its signing secret, once.",
    )
    def post(self, request: Request, pk: str) -> Response:
        challenge = row_or_404(Challenge.objects, pk)
        body = validated(EndpointInSerializer, request.data)
        try:
            endpoint = webhook_delivery.endpoint_create(challenge=challenge, **body)
        except webhook_delivery.WebhookInvalid as exc:
            raise serializers.ValidationError({exc.field: [str(exc)]}) from None
        return Response(EndpointCreatedSerializer(endpoint).data, status=status.HTTP_201_CREATED)


class DeliveryList(APIView):
    permission_classes = [IsScoringAdmin]

    @extend_schema(
        responses={200: DeliverySerializer(many=True)},
        description=f"The endpoint's deliveries, newest first (at most {DELIVERIES_PAGE}).",
    )
    def get(self, request: Request, pk: str, wid: str) -> Response:
        endpoint = row_or_404(WebhookEndpoint.objects, wid, challenge_id=row_id(pk))
        deliveries = (
            WebhookDelivery.objects.filter(endpoint=endpoint)
            .select_related("event")
            .order_by("-pk")[:DELIVERIES_PAGE]
        )
        return Response(
            DeliverySerializer(
                [webhook_delivery.delivery_json(d) for d in deliveries], many=True
            ).data
        )


class Redeliver(APIView):
    permission_classes = [IsScoringAdmin]

    @extend_schema(request=None, responses={202: DeliverySerializer})
    def post(self, request: Request, pk: str, wid: str, did: str) -> Response:
        endpoint = row_or_404(WebhookEndpoint.objects, wid, challenge_id=row_id(pk))
        delivery = row_or_404(WebhookDelivery.objects, did, endpoint=endpoint)
        try:
            delivery = webhook_delivery.delivery_redeliver(delivery=delivery)
        except webhook_delivery.WebhookInvalid as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        webhook_delivery.delivery_send(delivery_id=delivery.pk)
        body = DeliverySerializer(webhook_delivery.delivery_json(delivery)).data
        return Response(body, status=status.HTTP_202_ACCEPTED)
