"""The API of running a competition (docs/competitions.md): refusals of
attempts outside the schedule or over a cap, moderation (hide / unhide a player or an
attempt) and the audit trail. Views parse, call one service or selector, and render."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from challenges.api.fields import StrictBooleanField, StrictCharField
from challenges.api.serializers import StrictSerializer, validated
from challenges.audit import Kind
from challenges.ingestion import admission, moderation
from challenges.models import Attempt, AuditEvent, Challenge, Player
from challenges.permissions import IsScoringAdmin, IsStaffMember
from challenges.text import row_id


def conflict(exc: Exception) -> Response:
    """409 saying why."""
    return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)


def refusal_response(exc: admission.ScheduleClosed | admission.LimitExceeded) -> Response:
    """409 for an attempt outside the window, 429 (with Retry-After when waiting helps)
    for one over a cap. Nothing was written."""
    if isinstance(exc, admission.ScheduleClosed):
        body = {
            "detail": exc.message,
            "opens_at": exc.opens_at.isoformat() if exc.opens_at else None,
            "closes_at": exc.closes_at.isoformat() if exc.closes_at else None,
        }
        return Response(body, status=status.HTTP_409_CONFLICT)
    body = {"detail": exc.message, "cap": exc.cap, "player": exc.player}
    response = Response(body, status=status.HTTP_429_TOO_MANY_REQUESTS)
    if exc.retry_after is not None:
        response["Retry-After"] = str(exc.retry_after)
    return response


# --- moderation -------------------------------------------------------------------------
class HideSerializer(StrictSerializer):
    reason = StrictCharField(max_length=moderation.REASON_MAX, help_text="Why (kept in the audit).")
    all_challenges = StrictBooleanField(
        required=False,
        default=False,
        help_text="Players only: hide from (or unhide from) every challenge, not this one.",
    )


ModerationResult = inline_serializer(
    name="ModerationResult",
    fields={
        "hidden": serializers.BooleanField(),
        "player": serializers.CharField(required=False),
        "attempt": serializers.IntegerField(required=False),
        "challenge": serializers.IntegerField(allow_null=True, required=False),
    },
)


class _Moderation(APIView):
    """Staff (and admins) may hide; only admins may undo a hide."""

    hidden = True

    def get_permissions(self) -> list[BasePermission]:
        return [IsStaffMember()] if self.hidden else [IsScoringAdmin()]


class PlayerModeration(_Moderation):
    @extend_schema(request=HideSerializer, responses={200: ModerationResult})
    def post(self, request: Request, pk: int, external_id: str) -> Response:
        challenge = get_object_or_404(Challenge, pk=pk)
        player = get_object_or_404(Player, external_id=external_id)
        body = validated(HideSerializer, request.data)
        scope = None if body["all_challenges"] else challenge
        change = moderation.player_hide if self.hidden else moderation.player_unhide
        try:
            change(player=player, challenge=scope, reason=body["reason"], by=request.user)
        except moderation.ModerationError as exc:
            return conflict(exc)
        return Response(
            {"hidden": self.hidden, "player": external_id, "challenge": scope.pk if scope else None}
        )


class AttemptModeration(_Moderation):
    @extend_schema(request=HideSerializer, responses={200: ModerationResult})
    def post(self, request: Request, pk: int) -> Response:
        attempt = get_object_or_404(Attempt, pk=pk)
        body = validated(HideSerializer, request.data)
        if body["all_challenges"]:
            raise serializers.ValidationError({"all_challenges": ["Only for players."]})
        try:
            moderation.attempt_set_hidden(
                attempt=attempt, hidden=self.hidden, reason=body["reason"], by=request.user
            )
        except moderation.ModerationError as exc:
            return conflict(exc)
        return Response({"hidden": self.hidden, "attempt": attempt.pk})


# --- the audit trail ------------------------------------------------------------------------
class AuditEventSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    at = serializers.DateTimeField()
    actor = serializers.CharField(source="actor_name", help_text="Username; blank: the system.")
    via = serializers.ChoiceField(choices=AuditEvent.Via.values)
    kind = serializers.ChoiceField(choices=Kind.ALL)
    challenge = serializers.IntegerField(source="challenge_id", allow_null=True)
    challenge_name = serializers.CharField()
    before = serializers.JSONField(allow_null=True)
    after = serializers.JSONField(allow_null=True)
    reason = serializers.CharField()


AUDIT_PAGE = 200


class AuditList(APIView):
    """The audit trail (admins), newest first, read-only."""

    permission_classes = [IsScoringAdmin]

    @extend_schema(
        parameters=[
            OpenApiParameter("challenge", OpenApiTypes.INT, description="a challenge id"),
            OpenApiParameter("actor", OpenApiTypes.STR, description="a username"),
            OpenApiParameter("kind", OpenApiTypes.STR, enum=list(Kind.ALL)),
            OpenApiParameter("before", OpenApiTypes.INT, description="events with lower ids"),
        ],
        responses={200: AuditEventSerializer(many=True)},
        description=f"At most {AUDIT_PAGE} events per request; page with ?before=<last id>.",
    )
    def get(self, request: Request) -> Response:
        events = AuditEvent.objects.all()
        params = request.query_params
        errors = {}
        for name in ("challenge", "before"):
            raw = params.get(name)
            if raw:
                pk = row_id(raw)
                if pk is None:
                    errors[name] = ["Must be an id (a whole number)."]
                else:
                    events = events.filter(
                        **({"challenge_id": pk} if name == "challenge" else {"pk__lt": pk})
                    )
        if params.get("kind"):
            if params["kind"] not in Kind.ALL:
                errors["kind"] = [f"Choose one of: {', '.join(Kind.ALL)}."]
            events = events.filter(kind=params["kind"])
        if params.get("actor"):
            events = events.filter(actor_name=params["actor"])
        if errors:
            raise serializers.ValidationError(errors)
        events = events.order_by("-id")[:AUDIT_PAGE]
        return Response(AuditEventSerializer(events, many=True).data)
