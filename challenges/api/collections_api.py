"""The API of collections (docs/api.md, "Collections"): the public reads a collection
and its standings; admins create one. Views parse, call one service or selector, and
render."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from challenges.api.fields import StrictCharField, StrictIntegerField
from challenges.api.serializers import (
    LeaderboardQuerySerializer,
    StrictSerializer,
    query_validated,
    validated,
)
from challenges.api.views import (
    ID_PATTERN,
    PAGE_PARAMETERS,
    PLAYER_PARAMETER,
    BodyCheckedMixin,
    or_404,
)
from challenges.collections import selectors, services
from challenges.collections.standings import Standing
from challenges.leaderboards import precision
from challenges.models import MAX_COLLECTION_CHALLENGES, Collection, CollectionStrategy
from challenges.permissions import DenyAll, IsScoringAdmin
from challenges.text import ROW_ID_MAX, iso_z


class CollectionInSerializer(StrictSerializer):
    """What ``POST /api/collections/`` takes."""

    name = StrictCharField(max_length=200)
    slug = serializers.SlugField(max_length=200, required=False, allow_blank=True, default="")
    description = StrictCharField(required=False, allow_blank=True, default="")
    challenges = serializers.ListField(
        child=StrictIntegerField(min_value=1, max_value=ROW_ID_MAX),
        min_length=1,
        max_length=MAX_COLLECTION_CHALLENGES,
        help_text="Challenge ids, in the order of the collection's columns.",
    )
    strategy = serializers.ChoiceField(
        choices=CollectionStrategy.values, required=False, default=CollectionStrategy.SUM
    )


class CollectionChallengeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    slug = serializers.CharField()


class CollectionSerializer(serializers.Serializer):
    """A collection as everyone reads it."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    slug = serializers.CharField()
    description = serializers.CharField()
    strategy = serializers.ChoiceField(choices=CollectionStrategy.values)
    challenges = CollectionChallengeSerializer(
        many=True, help_text="The member challenges the public may see, in order."
    )
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class CollectionCellSerializer(serializers.Serializer):
    challenge = serializers.IntegerField()
    rank = serializers.IntegerField(help_text="The player's rank on that challenge's board.")
    score = serializers.FloatField(help_text="The player's value on that challenge's board.")
    attempt_id = serializers.IntegerField()
    counted = serializers.BooleanField(help_text="Whether it counts under the strategy.")


class CollectionRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    player = serializers.CharField()
    display_name = serializers.CharField()
    score = serializers.FloatField(
        help_text="sum: the sum of board values; fastest_total: milliseconds; "
        "fewest_tokens_total: tokens; highest_avg_rating: the mean rating."
    )
    completed = serializers.IntegerField(help_text="Challenges counted.")
    created_at = serializers.DateTimeField(
        help_text="When the newest counted best attempt was made (ties: earlier first)."
    )
    challenges = CollectionCellSerializer(
        many=True, help_text="The player's row on each member board they are on, in order."
    )


class CollectionBoardSerializer(serializers.Serializer):
    strategy = serializers.ChoiceField(choices=CollectionStrategy.values)
    count = serializers.IntegerField()
    results = CollectionRowSerializer(many=True)


def _collection_out(collection: Collection) -> dict[str, Any]:
    return {
        "id": collection.pk,
        "name": collection.name,
        "slug": collection.slug,
        "description": collection.description,
        "strategy": collection.strategy,
        "challenges": [
            {"id": c.pk, "name": c.name, "slug": c.slug}
            for c in selectors.collection_challenges(collection)
        ],
        "created_at": iso_z(collection.created_at),
        "updated_at": iso_z(collection.updated_at),
    }


def _row_out(row: Standing, challenge_ids: list[int]) -> dict[str, Any]:
    zone = timezone.get_current_timezone()
    return {
        "rank": row.rank,
        "player": row.player,
        "display_name": row.display_name,
        "score": precision.served(row.value),
        "completed": row.completed,
        "created_at": iso_z(row.completed_at, zone),
        "challenges": [
            {
                "challenge": pk,
                "rank": cell.rank,
                "score": precision.served(float(cell.score)),
                "attempt_id": cell.attempt_id,
                "counted": counted,
            }
            for pk, cell, counted in zip(challenge_ids, row.cells, row.counted, strict=True)
            if cell is not None
        ],
    }


# Stateless once built: shared by every request. ``version`` is not a collection's.
_QUERY = LeaderboardQuerySerializer()


class CollectionViewSet(BodyCheckedMixin, viewsets.GenericViewSet):
    """Collections: public read, admin create."""

    lookup_value_regex = ID_PATTERN
    serializer_class = CollectionSerializer
    pagination_class = None
    permissions_by_action = {
        "list": AllowAny,
        "retrieve": AllowAny,
        "leaderboard": AllowAny,
        "create": IsScoringAdmin,
        "metadata": IsScoringAdmin,
        None: AllowAny,  # a method the route does not have: the answer is 405, nothing runs
    }

    def get_permissions(self) -> list[Any]:
        return [self.permissions_by_action.get(self.action, DenyAll)()]

    @extend_schema(responses=CollectionSerializer(many=True))
    def list(self, request: Request) -> Response:
        return Response([_collection_out(c) for c in selectors.collection_list()])

    @extend_schema(responses=CollectionSerializer)
    def retrieve(self, request: Request, pk: str | None = None) -> Response:
        return Response(_collection_out(or_404(selectors.collection_by_id(pk))))

    @extend_schema(request=CollectionInSerializer, responses={201: CollectionSerializer})
    def create(self, request: Request) -> Response:
        data = validated(CollectionInSerializer, request.data)
        try:
            collection = services.collection_create(
                name=data["name"],
                slug=data["slug"],
                description=data["description"],
                strategy=data["strategy"],
                challenge_ids=data["challenges"],
                by=request.user,
            )
        except services.CollectionInvalid as exc:
            raise serializers.ValidationError({k: [v] for k, v in exc.errors.items()}) from exc
        except IntegrityError as exc:  # a concurrent create took the slug
            raise serializers.ValidationError(
                {"slug": ["A collection with this slug already exists."]}
            ) from exc
        collection = selectors.collection_by_id(collection.pk)
        return Response(_collection_out(collection), status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[*PAGE_PARAMETERS, PLAYER_PARAMETER],
        responses={200: CollectionBoardSerializer},
        description=(
            "The collection's standings over its member challenges' public boards: more "
            "challenges counted first, then the strategy's value, then the earlier "
            "completion (docs/ranking.md)."
        ),
    )
    @action(detail=True, methods=["get"])
    def leaderboard(self, request: Request, pk: str | None = None) -> Response:
        collection = or_404(selectors.collection_by_id(pk))
        params = query_validated(_QUERY, request.query_params)
        if "version" in params:
            raise serializers.ValidationError({"version": ["A collection has no versions."]})
        board = selectors.collection_board(collection=collection)
        if "player" in params:
            found = board.player(params["player"])
            rows = [found] if found else []
        else:
            rows = board.page(limit=params["limit"], offset=params["offset"])
        ids = [c.pk for c in board.challenges]
        return Response(
            {
                "strategy": collection.strategy,
                "count": len(board.standings),
                "results": [_row_out(r, ids) for r in rows],
            }
        )
