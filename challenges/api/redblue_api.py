"""The API of red/blue challenges (docs/api.md, "Red/blue"): teams, submissions, the
judge's pairings and judgements, the public standings. Views parse, call one service or
selector, and render. Prompts, feedback and ``raw`` reach the judge's routes only."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.utils.cache import patch_cache_control, patch_vary_headers
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.permissions import AllowAny, BasePermission
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from challenges.api.competition_api import conflict, refusal_response
from challenges.api.fields import StrictCharField, StrictIntegerField
from challenges.api.serializers import QuerySerializer, StrictSerializer, query_validated, validated
from challenges.api.views import PAGE_PARAMETERS, BodyCheckedMixin, row_or_404
from challenges.ingestion import admission, idempotency
from challenges.leaderboards import precision
from challenges.leaderboards import selectors as board_selectors
from challenges.models import Challenge, ChallengeFormat, Pairing
from challenges.permissions import (
    CanRecordAttempts,
    is_scoring_admin,
    is_staff_member,
    writable_challenges,
)
from challenges.redblue import points as red_blue_points
from challenges.redblue import selectors, services
from challenges.redblue import standings_cache as red_blue_kept
from challenges.text import iso_z

TEAMS = ["red", "blue"]
_NO_CHALLENGE = "No red/blue challenge with this id."


class CanJudge(CanRecordAttempts):
    """The judge: an integration token (its scopes apply) or staff."""

    def has_permission(self, request: Any, view: Any) -> bool:
        return is_staff_member(request.user) or super().has_permission(request, view)


class _RedBlueView(BodyCheckedMixin, APIView):
    permission_classes = [CanRecordAttempts]

    def _writable(self, request: Request, pk: Any) -> Challenge:
        """A red/blue challenge by id (404: unknown or not red/blue) the token may write."""
        challenge = row_or_404(
            Challenge.objects, pk, _NO_CHALLENGE, format=ChallengeFormat.RED_BLUE
        )
        self.check_object_permissions(request, challenge)  # integration scopes
        return challenge


# --- teams and submissions ----------------------------------------------------------------
class JoinSerializer(StrictSerializer):
    player = StrictCharField(max_length=255, help_text="The player's external id.")
    player_name = StrictCharField(max_length=200, required=False, allow_blank=True)
    team = serializers.ChoiceField(choices=TEAMS)


JoinResult = inline_serializer(
    name="TeamJoined",
    fields={
        "player": serializers.CharField(),
        "team": serializers.ChoiceField(choices=TEAMS),
        "joined_at": serializers.DateTimeField(),
    },
)


class TeamJoin(_RedBlueView):
    @extend_schema(
        request=JoinSerializer,
        responses={200: JoinResult},
        description="Put a player on a team (integration tokens, admins). A player never "
        "changes team: the other team is a 409.",
    )
    def post(self, request: Request, pk: str) -> Response:
        challenge = self._writable(request, pk)
        data = validated(JoinSerializer, request.data)
        try:
            member = services.team_join(
                challenge=challenge,
                external_id=data["player"],
                team=data["team"],
                player_name=data.get("player_name") or None,
                may_rename=writable_challenges(request.user) is None,
            )
        except services.TeamConflict as exc:
            return conflict(exc)
        return Response(
            {"player": data["player"], "team": member.team, "joined_at": iso_z(member.joined_at)}
        )


class SubmissionSerializer(JoinSerializer):
    prompt = StrictCharField(
        max_length=100_000,
        trim_whitespace=False,
        help_text="An attack (red) or a defence system prompt (blue). Never public.",
    )


class PairingRef(serializers.Serializer):
    id = serializers.IntegerField()
    attack = serializers.IntegerField()
    defense = serializers.IntegerField()


SubmissionResult = inline_serializer(
    name="SubmissionRecorded",
    fields={
        "id": serializers.IntegerField(),
        "player": serializers.CharField(),
        "team": serializers.ChoiceField(choices=TEAMS),
        "active": serializers.BooleanField(),
        "created_at": serializers.DateTimeField(),
        "pairings": PairingRef(many=True),
        "waiting": serializers.BooleanField(help_text="Not paired yet: no counterpart."),
    },
)


def _submission_out(recorded: services.Recorded) -> dict[str, Any]:
    new = recorded.submission
    return {
        "id": new.pk,
        "player": new.player.external_id,
        "team": new.team,
        "active": new.active,
        "created_at": iso_z(new.created_at),
        "pairings": [
            {"id": p.pk, "attack": p.attack_id, "defense": p.defense_id} for p in recorded.pairings
        ],
        "waiting": not recorded.pairings,
    }


class SubmissionCreate(_RedBlueView):
    @extend_schema(
        request=SubmissionSerializer,
        responses={201: SubmissionResult},
        parameters=[
            OpenApiParameter(
                idempotency.HEADER,
                OpenApiTypes.STR,
                location=OpenApiParameter.HEADER,
                required=False,
                description="As for attempts: a retry with the same key and body returns "
                "the first response and writes nothing.",
            )
        ],
        description="Store a player's submission (their earlier one becomes inactive) "
        "and pair it by the challenge's policy, or leave it waiting. 409: the other team, "
        "or outside the window; 429: over a cap.",
    )
    def post(self, request: Request, pk: str) -> Response:
        challenge = self._writable(request, pk)
        data = validated(SubmissionSerializer, request.data)

        def record(within: Any) -> services.Recorded:
            return services.submission_record(
                challenge=challenge,
                external_id=data["player"],
                team=data["team"],
                prompt=data["prompt"],
                player_name=data.get("player_name") or None,
                may_rename=writable_challenges(request.user) is None,
                within=within,
            )

        def render(recorded: services.Recorded) -> Response:
            return Response(_submission_out(recorded), status=status.HTTP_201_CREATED)

        try:
            return idempotency.respond_once(
                request=request, challenge=challenge, record=record, render=render
            )
        except services.TeamConflict as exc:
            return conflict(exc)
        except (admission.ScheduleClosed, admission.LimitExceeded) as exc:
            return refusal_response(exc)


# --- the judge ----------------------------------------------------------------------------
class PairingsQuery(QuerySerializer):
    integers = ("limit",)
    status = serializers.ChoiceField(choices=["pending", "judged"], required=False)
    limit = StrictIntegerField(min_value=1, max_value=500, required=False, default=100)


class PairingSide(serializers.Serializer):
    id = serializers.IntegerField()
    player = serializers.CharField()
    prompt = serializers.CharField()


class PairingOut(serializers.Serializer):
    """A pairing as the judge reads it (integration tokens, staff)."""

    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=["pending", "judged"])
    suite = serializers.ListField(child=serializers.CharField())
    attack = PairingSide()
    defense = PairingSide()
    created_at = serializers.DateTimeField()
    categories = serializers.DictField(child=serializers.BooleanField(), allow_null=True)
    rating = serializers.IntegerField(allow_null=True)
    red_points = serializers.FloatField(allow_null=True)
    blue_points = serializers.FloatField(allow_null=True)
    points_error = serializers.CharField(
        help_text="Why a judged pairing has no points (its pairing scorer failed); empty otherwise."
    )


def _pairing_out(p: Pairing, suite: list[str]) -> dict[str, Any]:
    return {
        "id": p.pk,
        "status": "pending" if p.judged_at is None else "judged",
        "suite": suite,
        "attack": {
            "id": p.attack_id,
            "player": p.attack.player.external_id,
            "prompt": p.attack.prompt,
        },
        "defense": {
            "id": p.defense_id,
            "player": p.defense.player.external_id,
            "prompt": p.defense.prompt,
        },
        "created_at": iso_z(p.created_at),
        "categories": p.categories,
        "rating": p.rating,
        "red_points": precision.served(p.red_points),
        "blue_points": precision.served(p.blue_points),
        "points_error": p.points_error,
    }


class PairingList(_RedBlueView):
    permission_classes = [CanJudge]

    @extend_schema(
        parameters=[
            OpenApiParameter("status", OpenApiTypes.STR, enum=["pending", "judged"]),
            OpenApiParameter("limit", OpenApiTypes.INT, description="1–500, default 100"),
        ],
        responses={200: PairingOut(many=True)},
        description="The pairings for the judge (integration tokens, staff), oldest first, "
        "with both prompts and the suite. Never public.",
    )
    def get(self, request: Request, pk: str) -> Response:
        challenge = self._writable(request, pk)
        query = validated(PairingsQuery, request.query_params)
        found = selectors.pairings_list(
            challenge=challenge, status=query.get("status"), limit=query["limit"]
        )
        return Response([_pairing_out(p, challenge.judge_suite) for p in found])


class JudgementSerializer(StrictSerializer):
    categories = serializers.DictField(
        child=serializers.JSONField(), help_text="{code: breached} for every code of the suite."
    )
    rating = StrictIntegerField(min_value=0, max_value=10)
    feedback = StrictCharField(required=False, allow_blank=True, default="", max_length=100_000)
    tokens_total = StrictIntegerField(
        min_value=0, max_value=2**53, required=False, allow_null=True, default=None
    )
    elapsed_ms = StrictIntegerField(
        min_value=0, max_value=2**53, required=False, allow_null=True, default=None
    )
    raw = serializers.JSONField(required=False, allow_null=True, default=None)


class CanPostJudgement(BasePermission):
    message = "Only an integration token or an admin may judge pairings."

    def has_permission(self, request: Any, view: Any) -> bool:
        return is_scoring_admin(request.user) or CanRecordAttempts().has_permission(request, view)


class JudgementCreate(BodyCheckedMixin, APIView):
    permission_classes = [CanPostJudgement]

    @extend_schema(
        request=JudgementSerializer,
        responses={200: PairingOut},
        description="Judge a pairing once (a second judgement is a 409, unless an admin "
        "re-judges it: audited, points recomputed). A category missing or not in the "
        "suite is a 400 naming it.",
    )
    def post(self, request: Request, pk: str) -> Response:
        pairing = row_or_404(
            Pairing.objects.select_related("challenge"), pk, "No pairing with this id."
        )
        if not CanRecordAttempts().has_object_permission(request, self, pairing.challenge):
            return Response({"detail": "This token may not judge this challenge."}, status=403)
        judgement = validated(JudgementSerializer, request.data)
        try:
            judged = services.judgement_record(
                pairing=pairing,
                judgement=judgement,
                by=request.user,
                may_rejudge=is_scoring_admin(request.user),
            )
        except services.JudgementInvalid as exc:
            return Response(exc.errors, status=status.HTTP_400_BAD_REQUEST)
        except (services.AlreadyJudged, red_blue_points.RuleChanged) as exc:
            return conflict(exc)
        judged = Pairing.objects.select_related("attack__player", "defense__player").get(
            pk=judged.pk
        )
        return Response(_pairing_out(judged, judged.challenge.judge_suite))


# --- the public standings -------------------------------------------------------------------
class StandingsQuery(QuerySerializer):
    """``?limit=&offset=`` of the standings' player boards, as a leaderboard's."""

    integers = ("limit", "offset")
    limit = StrictIntegerField(min_value=1, max_value=500, required=False, default=50)
    offset = StrictIntegerField(min_value=0, max_value=10**9, required=False, default=0)


_STANDINGS_QUERY = StandingsQuery()


class TeamPoints(serializers.Serializer):
    points = serializers.FloatField()
    ratio = serializers.FloatField(allow_null=True, help_text="red/(red+blue); null: no points")


class PlayerPointsOut(serializers.Serializer):
    rank = serializers.IntegerField()
    player = serializers.CharField()
    display_name = serializers.CharField()
    points = serializers.FloatField()


class StandingsOut(serializers.Serializer):
    red = TeamPoints()
    blue = TeamPoints()
    red_count = serializers.IntegerField(help_text="Players on the red board.")
    blue_count = serializers.IntegerField(help_text="Players on the blue board.")
    red_players = PlayerPointsOut(many=True)
    blue_players = PlayerPointsOut(many=True)


def standings_out(found: selectors.Standings, *, limit: int, offset: int) -> dict[str, Any]:
    def board(rows: list[selectors.PlayerPoints]) -> list[dict[str, Any]]:
        return [
            {
                "rank": r.rank,
                "player": r.player,
                "display_name": r.display_name,
                "points": precision.served(r.points),
            }
            for r in rows[offset : offset + limit]
        ]

    return {
        "red": {"points": precision.served(found.red), "ratio": found.ratio("red")},
        "blue": {"points": precision.served(found.blue), "ratio": found.ratio("blue")},
        "red_count": len(found.red_players),
        "blue_count": len(found.blue_players),
        "red_players": board(found.red_players),
        "blue_players": board(found.blue_players),
    }


class StandingsView(APIView):
    permission_classes = [AllowAny]

    @extend_schema(
        parameters=PAGE_PARAMETERS,
        responses={200: StandingsOut},
        description="Each team's points and ratio, and a board per team (players paged "
        "with limit and offset). No prompt, feedback or judge output.",
    )
    def get(self, request: Request, pk: str) -> HttpResponse:
        # Polled: the leaderboard's constant probe (a cached copy of the challenge), and
        # the JSON kept until the standings change (challenges/redblue/standings_cache.py).
        challenge = board_selectors.challenge_for_board(
            pk=pk, include_inactive=is_staff_member(request.user)
        )
        if challenge is None or challenge.format != ChallengeFormat.RED_BLUE:
            raise NotFound(_NO_CHALLENGE)
        params = query_validated(_STANDINGS_QUERY, request.query_params)

        def body() -> dict[str, Any]:
            found = selectors.standings_read(challenge=challenge)
            return standings_out(found, **params)

        if request.accepted_media_type != "application/json":
            return Response(body())  # the browsable API
        key = (
            "api-standings",
            challenge.pk,
            challenge.updated_at.isoformat(),
            red_blue_kept.generation(challenge.pk),
            params["limit"],
            params["offset"],
        )
        content = red_blue_kept.kept(key, lambda: JSONRenderer().render(body()))
        response = HttpResponse(content, content_type="application/json")
        patch_vary_headers(response, ("Authorization", "Cookie"))
        if not challenge.is_active:
            patch_cache_control(response, private=True)
        return response
