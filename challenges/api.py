"""The JSON API under /api/ (DESIGN.md, "HTTP API"). Views parse, call a service or a
selector, and render."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    PolymorphicProxySerializer,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from scoring.engine import metrics as M
from scoring.services import SetupInvalid

from . import rescoring, selectors, services
from .leaderboards.score_columns import public_details, row_scores
from .metrics import challenge_metrics, public_metrics
from .models import RescoreJob
from .permissions import CanRecordAttempts, IsScoringAdmin, IsStaffMember, is_scoring_admin
from .serializers import (
    AttemptInSerializer,
    AttemptOutSerializer,
    ChallengeSerializer,
    LeaderboardQuerySerializer,
    LeaderboardSerializer,
    RescoreJobSerializer,
    RescoreStartedSerializer,
    attempts_parse,
)
from .throttles import AttemptsThrottle


def _setup_errors(exc: SetupInvalid) -> serializers.ValidationError:
    return serializers.ValidationError({field: [msg] for field, msg in exc.errors.items()})


class ChallengeViewSet(viewsets.ModelViewSet):
    """Challenges: public read (active ones; staff see all), admin write."""

    serializer_class = ChallengeSerializer
    pagination_class = None
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]  # no PUT

    def get_queryset(self) -> Any:
        user = self.request.user
        # Staff and admins see inactive challenges; integrations may record attempts
        # before a challenge is public.
        include_inactive = self.action == "attempts" or user.is_staff or is_scoring_admin(user)
        return selectors.challenge_list(include_inactive=include_inactive)

    def get_permissions(self) -> list[Any]:
        if self.action in ("list", "retrieve", "leaderboard", "metrics"):
            return [AllowAny()]
        if self.action == "attempts":
            return [CanRecordAttempts()]
        if self.action == "rescore":
            return [IsStaffMember()]
        return [IsScoringAdmin()]

    def perform_create(self, serializer: ChallengeSerializer) -> None:
        try:
            serializer.instance = services.challenge_create(
                data=dict(serializer.validated_data), by=self.request.user
            )
        except SetupInvalid as exc:
            raise _setup_errors(exc) from exc
        except IntegrityError as exc:  # a concurrent create took the slug
            raise serializers.ValidationError(
                {"slug": ["A challenge with this slug already exists."]}
            ) from exc

    def perform_update(self, serializer: ChallengeSerializer) -> None:
        try:
            result = services.challenge_update(
                challenge=serializer.instance,
                data=dict(serializer.validated_data),
                by=self.request.user,
            )
        except SetupInvalid as exc:
            raise _setup_errors(exc) from exc
        except IntegrityError as exc:
            raise serializers.ValidationError(
                {"slug": ["A challenge with this slug already exists."]}
            ) from exc
        serializer.instance = result.challenge

    @extend_schema(
        request=PolymorphicProxySerializer(
            component_name="AttemptOrAttempts",
            serializers=[AttemptInSerializer, AttemptInSerializer(many=True)],
            resource_type_field_name=None,
            many=False,
        ),
        responses={
            201: PolymorphicProxySerializer(
                component_name="RecordedAttemptOrAttempts",
                serializers=[AttemptOutSerializer, AttemptOutSerializer(many=True)],
                resource_type_field_name=None,
                many=False,
            )
        },
        description=(
            "Record one attempt (a JSON object) or many (a JSON list), all or nothing. "
            "Returns them with their score and details under the active version."
        ),
    )
    @action(detail=True, methods=["post"], throttle_classes=[AttemptsThrottle])
    def attempts(self, request: Request, pk: str | None = None) -> Response:
        challenge = self.get_object()
        inputs, many = attempts_parse(request.data)
        recorded = services.attempts_record(challenge=challenge, inputs=inputs)
        show_errors = is_scoring_admin(request.user)
        out = [_attempt_out(r, show_errors) for r in recorded]
        return Response(out if many else out[0], status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={202: RescoreStartedSerializer})
    @action(detail=True, methods=["post"])
    def rescore(self, request: Request, pk: str | None = None) -> Response:
        """Queue a rescore of the current setup (staff). The leaderboard keeps the active
        version until every attempt is scored, then switches in one step."""
        job = rescoring.rescore_start(challenge=self.get_object(), by=request.user)
        return Response({"job": job.pk}, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        parameters=[
            OpenApiParameter("limit", OpenApiTypes.INT, description="1–500, default 50"),
            OpenApiParameter("offset", OpenApiTypes.INT, description="default 0"),
            OpenApiParameter(
                "player", OpenApiTypes.STR, description="an external id: that player's row"
            ),
        ],
        responses={200: LeaderboardSerializer},
    )
    @action(detail=True, methods=["get"])
    def leaderboard(self, request: Request, pk: str | None = None) -> Response:
        challenge = self.get_object()
        query = LeaderboardQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        if "player" in params:
            page = selectors.leaderboard_player(challenge=challenge, external_id=params["player"])
        else:
            page = selectors.leaderboard_page(
                challenge=challenge, limit=params["limit"], offset=params["offset"]
            )
        body = {
            "version": page.version.number if page.version else None,
            "count": page.count,
            "results": page.rows,
        }
        data = LeaderboardSerializer(body).data
        found = row_scores(version=page.version, attempt_ids=[r.attempt_id for r in page.rows])
        if page.version is not None and page.version.scoring_strategy == "python":
            for row in data["results"]:  # every score of the ranking scorer, ranking first
                row["scores"] = found.get(row["attempt_id"], {})
        return Response(data)

    @extend_schema(
        responses={
            200: inline_serializer(
                name="ChallengeMetric",
                many=True,
                fields={
                    "name": serializers.CharField(),
                    "type": serializers.ChoiceField(choices=M.ALL_TYPES),
                    "value": serializers.JSONField(
                        allow_null=True,
                        help_text="A number; an object for frequency and the "
                        "classification metrics; null when no attempt has the score.",
                    ),
                    "scorer": serializers.CharField(
                        required=False, help_text="With several scorers: the scorer's key."
                    ),
                    "scorer_name": serializers.CharField(required=False),
                    "error": serializers.CharField(
                        required=False, help_text="A python metric's error (admins only)."
                    ),
                },
            )
        },
        description=(
            "The aggregates of the challenge's `metrics` (Python snippet scorers) over the "
            "active version's scored attempts, in the order they are configured."
        ),
    )
    @action(detail=True, methods=["get"])
    def metrics(self, request: Request, pk: str | None = None) -> Response:
        found = challenge_metrics(challenge=self.get_object())
        if not is_scoring_admin(request.user):
            found = public_metrics(found)  # a python metric's error is for admins
        return Response(found)


class RescoreJobViewSet(viewsets.GenericViewSet):
    """Rescore jobs: staff watch and cancel them."""

    serializer_class = RescoreJobSerializer
    permission_classes = [IsStaffMember]
    queryset = RescoreJob.objects.select_related("version")

    def retrieve(self, request: Request, pk: str | None = None) -> Response:
        return Response(RescoreJobSerializer(self.get_object()).data)

    @extend_schema(request=None, responses={200: RescoreJobSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """Stop the job; the active version does not change. 409 if it has finished."""
        try:
            job = rescoring.job_cancel(job=self.get_object())
        except rescoring.JobStateError as exc:
            return Response({"status": [str(exc)]}, status=status.HTTP_409_CONFLICT)
        return Response(RescoreJobSerializer(job).data)


def _attempt_out(recorded: services.RecordedAttempt, show_errors: bool) -> dict[str, Any]:
    attempt, score = recorded.attempt, recorded.score
    details = score.details if score else None
    if details and not show_errors:  # scorer errors are for admins only
        details = public_details(details)
    data = AttemptOutSerializer(attempt).data
    data.update(
        version=recorded.version_number, score=score.score if score else None, details=details
    )
    return data
