"""The JSON API under /api/ (docs/api.md). Views parse, call a service or a
selector, and render."""

from __future__ import annotations

import json
from typing import Any

from django.db import IntegrityError
from django.db.models import QuerySet
from django.http import HttpResponse
from django.utils.cache import patch_cache_control, patch_vary_headers
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_view,
    inline_serializer,
)
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, NotFound
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from challenges.api import plain_output
from challenges.api.competition_api import refusal_response
from challenges.api.serializers import (
    STAFF_ONLY_FIELDS,
    AttemptInSerializer,
    AttemptOutSerializer,
    ChallengeSerializer,
    HistoryRecordSerializer,
    LeaderboardQuerySerializer,
    LeaderboardSerializer,
    PublicChallengeSerializer,
    RescoreJobSerializer,
    RescoreStartedSerializer,
    attempts_parse,
    query_validated,
)
from challenges.api.throttles import AttemptsThrottle
from challenges.boards import read
from challenges.boards.query import BoardQuery, viewer_of
from challenges.boards.shapes import leaderboard_body
from challenges.ingestion import admission, idempotency, moderation, services
from challenges.leaderboards import evaluation, exclusions, freeze, history, precision, selectors
from challenges.leaderboards.kept import kept
from challenges.leaderboards.metric_counts import challenge_metrics, public_metrics
from challenges.leaderboards.score_columns import public_details
from challenges.leaderboards.tie_rule import TIE_RULE
from challenges.models import Player, RescoreJob
from challenges.permissions import (
    CanRecordAttempts,
    DenyAll,
    IsScoringAdmin,
    IsStaffMember,
    is_scoring_admin,
    is_staff_member,
    writable_challenges,
)
from challenges.redblue import points as red_blue_points
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from challenges.setup.probe import setup_probe
from challenges.text import row_id
from scoring.engine import metrics as engine_metrics
from scoring.services import SetupInvalid

# Ids are ASCII digits: "１" (full-width) is not an alias of 1, and anything else is a 404
# from the router. Numbers too large for the column are unknown ids (404) too.
ID_PATTERN = "[0-9]+"
# The paging of the boards the API serves: a challenge's, a collection's, the standings.
PAGE_PARAMETERS = [
    OpenApiParameter("limit", OpenApiTypes.INT, description="1–500, default 50"),
    OpenApiParameter("offset", OpenApiTypes.INT, description="default 0"),
]
PLAYER_PARAMETER = OpenApiParameter(
    "player", OpenApiTypes.STR, description="an external id: that player's row"
)
_SLUG_TAKEN = {"slug": ["A challenge with this slug already exists."]}


class Conflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"


def or_404(found: Any, detail: str | None = None) -> Any:
    """What a probe found, or a 404 (saying ``detail``) when it found nothing."""
    if found is None:
        raise NotFound(detail)
    return found


def row_or_404(rows: QuerySet, raw_pk: Any, detail: str | None = None, **where: Any) -> Any:
    """The row of ``rows`` whose id is ``raw_pk``: a 404 when it is not an id, or none is."""
    pk = row_id(raw_pk)
    return or_404(None if pk is None else rows.filter(pk=pk, **where).first(), detail)


def _setup_errors(exc: SetupInvalid) -> serializers.ValidationError:
    return serializers.ValidationError({field: [msg] for field, msg in exc.errors.items()})


class BodyCheckedMixin:
    """Every write parses its body, even a route that reads none (rescore, cancel): a
    body that is not JSON, or holds a lone surrogate or a NUL, is a 400 on every route,
    after authentication and permissions."""

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if request.method in ("POST", "PUT", "PATCH", "DELETE"):
            request.data  # noqa: B018 - parsing is the point


_VIEWS = (  # the list is STAFF_ONLY_FIELDS itself: the words cannot drift from the rule
    "Staff and admins get every field; anonymous users and integration tokens the public "
    f"view: the fields marked staff-only ({', '.join(STAFF_ONLY_FIELDS)}) are left out."
)


@extend_schema_view(
    list=extend_schema(responses=ChallengeSerializer(many=True), description=_VIEWS),
    retrieve=extend_schema(responses=ChallengeSerializer, description=_VIEWS),
)
class ChallengeViewSet(BodyCheckedMixin, viewsets.ModelViewSet):
    """Challenges: public read (active ones; staff see all), admin write."""

    serializer_class = ChallengeSerializer
    pagination_class = None
    lookup_value_regex = ID_PATTERN
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]  # no PUT

    # Who may use each action; an action missing here is denied (DenyAll).
    permissions_by_action = {
        "list": AllowAny,
        "retrieve": AllowAny,
        "leaderboard": AllowAny,
        "metrics": AllowAny,
        "history": AllowAny,
        "attempts": CanRecordAttempts,
        "rescore": IsStaffMember,
        "reveal": IsScoringAdmin,
        "create": IsScoringAdmin,
        "partial_update": IsScoringAdmin,
        "destroy": IsScoringAdmin,
        "metadata": IsScoringAdmin,  # OPTIONS
        None: AllowAny,  # a method the route does not have: the answer is 405, nothing runs
    }

    def get_queryset(self) -> Any:
        user = self.request.user
        # Staff and admins see inactive challenges; integrations may record attempts
        # before a challenge is public.
        include_inactive = self.action == "attempts" or is_staff_member(user)
        return selectors.challenge_list(include_inactive=include_inactive)

    def get_permissions(self) -> list[Any]:
        return [self.permissions_by_action.get(self.action, DenyAll)()]

    def get_serializer_class(self) -> Any:
        # Staff and admins see every field; the public and integration tokens the public
        # view (docs/words-and-data.md, "Roles"). Writes are admins' only, with every field.
        if self.action in ("list", "retrieve") and not is_staff_member(self.request.user):
            return PublicChallengeSerializer
        return ChallengeSerializer

    def perform_create(self, serializer: ChallengeSerializer) -> None:
        try:
            serializer.instance = setup_services.challenge_create(
                data=dict(serializer.validated_data), by=self.request.user
            )
        except SetupInvalid as exc:
            raise _setup_errors(exc) from exc
        except IntegrityError as exc:  # a concurrent create took the slug
            raise serializers.ValidationError(_SLUG_TAKEN) from exc

    def perform_update(self, serializer: ChallengeSerializer) -> None:
        challenge, data = serializer.instance, dict(serializer.validated_data)
        try:
            # Outside the update's transaction: the probe may run the snippet.
            setup_probe(
                challenge=challenge,
                setup=setup_services.setup_merge(challenge=challenge, changes=data),
            )
            result = setup_services.challenge_update(
                challenge=challenge, data=data, by=self.request.user
            )
        except SetupInvalid as exc:
            raise _setup_errors(exc) from exc
        except IntegrityError as exc:  # a concurrent save took the slug
            raise serializers.ValidationError(_SLUG_TAKEN) from exc
        except red_blue_points.RuleChanged as exc:
            raise Conflict(str(exc)) from exc
        serializer.instance = result.challenge

    def perform_destroy(self, instance: Any) -> None:
        setup_services.challenge_delete(challenge=instance, by=self.request.user)

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
        parameters=[
            OpenApiParameter(
                idempotency.HEADER,
                OpenApiTypes.STR,
                location=OpenApiParameter.HEADER,
                required=False,
                description=(
                    "Optional, 1–200 printable characters, chosen by the client per "
                    "request. A retry with the same key and the same body returns the "
                    "first response (same ids, header Idempotent-Replayed: true) and "
                    "writes nothing; the same key with another body is a 409. Keys are "
                    "kept at least 24 hours, per token user and challenge."
                ),
            )
        ],
        description=(
            "Record one attempt (a JSON object) or many (a JSON list), all or nothing. "
            "Returns them with their score and details under the active version, and each "
            "one's score_status: scored, failed (the scorer failed; score null) or pending. "
            "Scoring inline stops when the request's budget (PODIUM_SCORING_BUDGET_MS) is "
            "spent: the attempts not reached are stored as pending, scored by the workers "
            "and shown on the leaderboard once scored. Text must be valid: a lone "
            "surrogate or a NUL anywhere in the body is a 400 naming the field."
            " Send an Idempotency-Key to retry safely after a lost response."
        ),
    )
    @action(detail=True, methods=["post"], throttle_classes=[AttemptsThrottle])
    def attempts(self, request: Request, pk: str | None = None) -> Response:
        # As get_object over get_queryset (inactive challenges included for integrations),
        # by a constant statement: compiling get_object's query was a fifth of a small
        # request's CPU.
        challenge = or_404(selectors.challenge_by_id(pk))
        self.check_object_permissions(request, challenge)
        show_errors = is_scoring_admin(request.user)
        many = isinstance(request.data, list)

        def record(within: idempotency.Within | None) -> list[services.RecordedAttempt]:
            inputs, _ = attempts_parse(request.data)
            return services.attempts_record(
                challenge=challenge,
                inputs=inputs,
                within=within,
                renames_within=writable_challenges(request.user),
            )

        def render(recorded: list[services.RecordedAttempt]) -> Response:
            out = [_attempt_out(r, show_errors) for r in recorded]
            return Response(out if many else out[0], status=status.HTTP_201_CREATED)

        try:
            return idempotency.respond_once(
                request=request, challenge=challenge, record=record, render=render
            )
        except (admission.ScheduleClosed, admission.LimitExceeded) as exc:
            return refusal_response(exc)  # nothing written: the transaction rolled back
        except admission.WrongFormat as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        except SetupInvalid as exc:  # a challenge made without the service, unusable
            raise _setup_errors(exc) from exc

    @extend_schema(request=None, responses={202: RescoreStartedSerializer})
    @action(detail=True, methods=["post"])
    def rescore(self, request: Request, pk: str | None = None) -> Response:
        """Queue a rescore of the current setup (staff). The leaderboard keeps the active
        version until every attempt is scored, then switches in one step."""
        job = setup_services.challenge_rescore(challenge=self.get_object(), by=request.user)
        return Response({"job": job.pk}, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        parameters=[
            *PAGE_PARAMETERS,
            PLAYER_PARAMETER,
            OpenApiParameter(
                "slice",
                OpenApiTypes.STR,
                description="aggregate boards with slice_by: the board of one slice",
            ),
        ],
        responses={200: LeaderboardSerializer},
        description=(
            "The active version's leaderboard: each player's best attempt, in rank order. "
            + TIE_RULE
            + " An aggregate board (board = aggregate) ranks each player by the mean or sum "
            "of all their counted attempts instead, with n, ci_low, ci_high, rank_low, "
            "rank_high and tier per row (docs/ranking.md)."
        ),
    )
    @action(detail=True, methods=["get"])
    def leaderboard(self, request: Request, pk: str | None = None) -> Response:
        # Polled by bots: one constant probe instead of get_object (which inactive
        # challenges it finds follows get_queryset), rows from the ranking checkpoints,
        # JSON from plain dicts (LeaderboardSerializer documents the shape).
        user = request.user
        challenge = or_404(
            selectors.challenge_for_board(pk=pk, include_inactive=is_staff_member(user))
        )
        params = query_validated(_LEADERBOARD_QUERY, request.query_params)
        if "version" in params:
            return Response(_version_read(challenge, params, user))
        query = BoardQuery(
            challenge,
            "json",
            player=params.get("player", ""),
            offset=params["offset"],
            limit=params["limit"],
            viewer=viewer_of(user),
            slice=_slice_checked(challenge, params),
        )
        content = read.board_read(query)  # the bytes DRF's Response would send, kept
        if request.accepted_media_type == "application/json":
            response = HttpResponse(content, content_type="application/json")
        else:  # the browsable API, an indented rendering
            response = Response(json.loads(content))
        return _private_when_needed(challenge, response, user=user)

    @extend_schema(
        responses={200: HistoryRecordSerializer(many=True)},
        description=(
            "Every switch of the challenge's active version, newest first: what changed "
            "on the public board (docs/api.md)."
        ),
    )
    @action(detail=True, methods=["get"])
    def history(self, request: Request, pk: str | None = None) -> Response:
        # As the leaderboard: one probe instead of get_object, and the JSON kept as the
        # bytes DRF would send, under a stamp naming what the records show.
        user = request.user
        challenge = or_404(
            selectors.challenge_for_board(pk=pk, include_inactive=is_staff_member(user))
        )

        def build() -> Any:
            records = history.history_public(challenge=challenge, user=user)
            return [dict(item) for item in HistoryRecordSerializer(records, many=True).data]

        stamp = history.history_stamp(challenge=challenge, user=user)
        if request.accepted_media_type != "application/json":
            response: HttpResponse = Response(build())  # the browsable API
        else:
            content = kept(
                "history-api", (challenge.pk, stamp), lambda: JSONRenderer().render(build())
            )
            response = HttpResponse(content, content_type="application/json")
        # Staff read the records made after a freeze: never kept by a shared cache.
        return _private_when_needed(challenge, response, user=user)

    @extend_schema(
        responses={
            200: inline_serializer(
                name="ChallengeMetric",
                many=True,
                fields={
                    "name": serializers.CharField(),
                    "type": serializers.ChoiceField(choices=engine_metrics.ALL_TYPES),
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
        parameters=[
            OpenApiParameter(
                "player",
                OpenApiTypes.STR,
                description="an external id: the metrics over that player's attempts only",
            )
        ],
        description=(
            "The aggregates of the challenge's `metrics` (Python snippet scorers) over the "
            "active version's scored attempts (`?player=`: that player's), in the order "
            "they are configured."
        ),
    )
    @action(detail=True, methods=["get"])
    def metrics(self, request: Request, pk: str | None = None) -> Response:
        challenge = self.get_object()
        frozen = freeze.frozen_for(challenge, request.user)
        before = challenge.freeze_at if frozen else None
        player_id = None
        if "player" in request.query_params:
            player_id = _metrics_player(challenge, request.query_params["player"], request.user)
        found = challenge_metrics(challenge=challenge, before=before, player_id=player_id)
        if not is_scoring_admin(request.user):
            found = public_metrics(found)  # a python metric's error is for admins
        return Response(found)

    @extend_schema(request=None, responses={200: ChallengeSerializer})
    @action(detail=True, methods=["post"])
    def reveal(self, request: Request, pk: str | None = None) -> Response:
        """End the board freeze (admins): the public sees the live board again. 409 when
        there is nothing to reveal."""
        try:
            challenge = moderation.challenge_reveal(challenge=self.get_object(), by=request.user)
        except freeze.RevealRefused as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(ChallengeSerializer(challenge).data)


class RescoreJobViewSet(BodyCheckedMixin, viewsets.GenericViewSet):
    """Rescore jobs: staff watch and cancel them."""

    serializer_class = RescoreJobSerializer
    permissions_by_action = {
        "retrieve": IsStaffMember,
        "cancel": IsStaffMember,
        "metadata": IsStaffMember,
        None: AllowAny,  # a method the route does not have: the answer is 405, nothing runs
    }
    lookup_value_regex = ID_PATTERN
    queryset = RescoreJob.objects.select_related("version")

    def get_permissions(self) -> list[Any]:
        return [self.permissions_by_action.get(self.action, DenyAll)()]

    def retrieve(self, request: Request, pk: str | None = None) -> Response:
        return Response(RescoreJobSerializer(self.get_object()).data)

    @extend_schema(request=None, responses={200: RescoreJobSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """Stop the job; the active version does not change. 409 if it has finished."""
        try:
            job = rescoring.job_cancel(job=self.get_object(), by=request.user)
        except rescoring.JobStateError as exc:
            return Response({"status": [str(exc)]}, status=status.HTTP_409_CONFLICT)
        return Response(RescoreJobSerializer(job).data)


# Stateless once built (run_validation keeps nothing on it): shared by every request.
_LEADERBOARD_QUERY = LeaderboardQuerySerializer()


def _metrics_player(challenge: Any, external_id: str, user: Any) -> int:
    """The player whose metrics are asked for: 404 when unknown, or hidden from the public."""
    player_id = Player.objects.filter(external_id=external_id).values_list("pk", flat=True).first()
    if player_id is None or (
        not is_staff_member(user)
        and exclusions.player_is_hidden(challenge_id=challenge.pk, player_id=player_id)
    ):
        raise NotFound("No player with this external id.")
    return player_id


def _private_when_needed(challenge: Any, response: HttpResponse, *, user: Any) -> HttpResponse:
    """The answer depends on who asks (staff read the live board during a freeze, and
    inactive challenges): a shared cache must key it by the credentials, and never keep
    a view the public may not see."""
    patch_vary_headers(response, ("Authorization", "Cookie"))
    live_in_freeze = freeze.is_frozen(challenge) and not freeze.frozen_for(challenge, user)
    if live_in_freeze or not challenge.is_active:
        patch_cache_control(response, private=True)
    return response


def _slice_checked(challenge: Any, params: dict[str, Any]) -> str:
    """An aggregate board's ``?slice=``, checked (a 400 naming it); other boards have none."""
    if not evaluation.is_aggregate(challenge):
        return ""
    try:
        return evaluation.slice_check(challenge, params.get("slice"))
    except evaluation.SliceUnknown as exc:
        raise serializers.ValidationError({"slice": [str(exc)]}) from None


def _version_read(challenge: Any, params: dict[str, Any], user: Any) -> dict[str, Any]:
    """A past (or the current) version's board, as that version ranked it."""
    found = history.version_board(challenge=challenge, number=params["version"], user=user)
    if found is None:
        raise NotFound("This version was never the challenge's active version.")

    def build() -> dict[str, Any]:
        asked = {"offset": params["offset"], "limit": params["limit"]}
        asked["player"] = params.get("player", "")
        body = leaderboard_body(challenge, board_id=found.board_id, version=found.version, **asked)
        return {**body, "version": found.version.number, "current": found.current}

    # Kept under the board's ranking token while it names every row (history.board_token).
    if found.token is None:
        return build()
    asked = tuple(sorted((k, str(v)) for k, v in params.items()))
    board = (found.version_id, found.board_id, found.current)
    return kept("version-api", (challenge.pk, board, found.token, asked), build)


def _attempt_out(recorded: services.RecordedAttempt, show_errors: bool) -> dict[str, Any]:
    attempt, score = recorded.attempt, recorded.score
    details = score.details if score else None
    if details and not show_errors:  # scorer errors are for admins only
        details = public_details(details)
    attempt.score_status = recorded.status
    data = attempt_fields(attempt)
    data.update(
        version=recorded.version_number,
        score=precision.served(score.score) if score else None,
        details=precision.served_json(details),
    )
    return data


# What AttemptOutSerializer gives for a recorded attempt (it documents the shape), built
# from its fields without its per-row machinery: a bulk request returns a thousand. The
# caller fills version, score and details; score_status is "pending" until it is set.
attempt_fields = plain_output.writer(
    AttemptOutSerializer,
    filled_by_caller=("version", "score", "details"),
    defaults={"score_status": "pending"},
)
