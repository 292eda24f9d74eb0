"""API serializers: parse and check types; services decide the rest."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.utils import timezone
from rest_framework import serializers

from scoring.engine import strategies as S

from .fields import (
    EpochOrISODateTimeField,
    JSONListField,
    JSONObjectField,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
)
from .models import MAX_METRIC, Challenge
from .permissions import is_staff_member
from .services import AttemptInput


class StrictSerializer(serializers.Serializer):
    """Refuses keys it does not know, naming them, instead of dropping them silently."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise serializers.ValidationError(
                {"non_field_errors": [f"Expected a JSON object, got {type(data).__name__}."]}
            )
        unknown = sorted(set(data) - set(self.fields))
        read_only = sorted(k for k in data if k in self.fields and self.fields[k].read_only)
        errors = {key: ["Unknown field."] for key in unknown}
        errors.update({key: ["This field is read-only."] for key in read_only})
        if errors:
            raise serializers.ValidationError(errors)
        return super().to_internal_value(data)


_STRATEGY_ERROR = "Unknown strategy {input!r}; choose one of: " + ", ".join(S.STRATEGIES) + "."


class ChallengeSerializer(StrictSerializer):
    id = serializers.IntegerField(read_only=True)
    name = StrictCharField(max_length=200)
    slug = serializers.SlugField(max_length=200, required=False, allow_blank=True)
    description = StrictCharField(required=False, allow_blank=True, default="")
    is_active = StrictBooleanField(required=False, default=True)
    scoring_strategy = serializers.ChoiceField(
        choices=list(S.STRATEGIES),
        required=False,
        default=S.FIRST,
        error_messages={"invalid_choice": _STRATEGY_ERROR},
    )
    scoring_plugin_id = StrictCharField(
        max_length=200, required=False, allow_blank=True, default=""
    )
    scoring_entrypoint = StrictCharField(
        max_length=300, required=False, allow_blank=True, default=""
    )
    scoring_config = JSONObjectField(required=False, default=dict)
    scoring_code = StrictCharField(
        required=False, allow_blank=True, default="", trim_whitespace=False
    )
    score_key = StrictCharField(max_length=64, required=False, allow_blank=True, default="")
    metrics = JSONListField(required=False, default=list)
    scorers = JSONListField(
        required=False,
        default=list,
        help_text="Several scorers (python): [{key, type, display_name, purpose, "
        "compute_scores_snippet, config, metrics}]; staff and admins only.",
    )
    rank_by = StrictCharField(
        max_length=200,
        required=False,
        allow_blank=True,
        default="",
        help_text="'<scorer key>.<score name>': the score that ranks, with scorers.",
    )
    tenant_id = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    app_id = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    workflow_id = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    timeout_ms = StrictIntegerField(min_value=1, max_value=60_000, required=False, default=5000)
    active_version = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField(read_only=True)
    updated_at = serializers.DateTimeField(read_only=True)

    def to_representation(self, instance: Any) -> Any:
        data = super().to_representation(instance)
        request = self.context.get("request")
        if not is_staff_member(getattr(request, "user", None)):
            data.pop("scorers", None)  # scorers' code, configs and QA checks: staff only
        return data

    def get_active_version(self, obj: Challenge) -> int | None:
        return obj.active_version.number if obj.active_version_id else None

    def validate_slug(self, value: str) -> str:
        taken = Challenge.objects.filter(slug=value)
        if self.instance is not None:
            taken = taken.exclude(pk=self.instance.pk)
        if value and taken.exists():
            raise serializers.ValidationError("A challenge with this slug already exists.")
        return value


class AttemptInSerializer(StrictSerializer):
    player = StrictCharField(max_length=255, help_text="The player's external id.")
    player_name = StrictCharField(
        max_length=200, required=False, allow_null=True, help_text="Sets the display name."
    )
    succeeded = StrictBooleanField()
    tokens_total = StrictIntegerField(
        min_value=0, max_value=MAX_METRIC, required=False, allow_null=True
    )
    elapsed_ms = StrictIntegerField(
        min_value=0, max_value=MAX_METRIC, required=False, allow_null=True
    )
    rating = StrictIntegerField(min_value=0, max_value=10, required=False, allow_null=True)
    created_at = EpochOrISODateTimeField(
        required=False, allow_null=True, help_text="Epoch milliseconds or ISO 8601; absent: now."
    )
    sample = JSONObjectField(required=False, allow_null=True)
    output = StrictCharField(required=False, allow_blank=True, trim_whitespace=False)
    messages = JSONListField(required=False, allow_null=True)

    def to_input(self, data: dict[str, Any]) -> AttemptInput:
        created = data.get("created_at") or timezone.now()
        return AttemptInput(
            player=data["player"],
            player_name=data.get("player_name") or None,
            succeeded=data["succeeded"],
            tokens_total=data.get("tokens_total"),
            elapsed_ms=data.get("elapsed_ms"),
            rating=data.get("rating"),
            created_at=created.replace(microsecond=created.microsecond // 1000 * 1000),
            sample=data.get("sample"),
            output=data.get("output") or "",
            messages=data.get("messages"),
        )


def attempts_parse(payload: Any) -> tuple[list[AttemptInput], bool]:
    """Parse an attempts body: an object or a non-empty list of objects.

    Returns the inputs and whether the body was a list. Every item is checked before
    anything is written; errors name the item index and the field.
    """
    many = isinstance(payload, list)
    items = payload if many else [payload]
    if many and not items:
        raise serializers.ValidationError({"non_field_errors": ["Send at least one attempt."]})
    limit = settings.PODIUM_MAX_ATTEMPTS_PER_REQUEST
    if len(items) > limit:
        raise serializers.ValidationError(
            {"non_field_errors": [f"At most {limit} attempts per request; got {len(items)}."]}
        )
    if not many and not isinstance(payload, Mapping):
        raise serializers.ValidationError(
            {"non_field_errors": ["Expected an attempt object or a list of attempt objects."]}
        )
    parsed, errors = [], {}
    for index, item in enumerate(items):
        serializer = AttemptInSerializer(data=item)
        if serializer.is_valid():
            parsed.append(serializer.to_input(serializer.validated_data))
        else:
            errors[str(index)] = serializer.errors
    if errors:
        raise serializers.ValidationError(errors if many else errors["0"])
    return parsed, many


class AttemptOutSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    challenge = serializers.IntegerField(source="challenge_id")
    player = serializers.CharField(source="player.external_id")
    display_name = serializers.CharField(source="player.display_name")
    succeeded = serializers.BooleanField()
    tokens_total = serializers.IntegerField(allow_null=True)
    elapsed_ms = serializers.IntegerField(allow_null=True)
    rating = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField()
    sample = serializers.JSONField(allow_null=True)
    output = serializers.CharField()
    messages = serializers.JSONField(allow_null=True)
    version = serializers.IntegerField(allow_null=True, help_text="The active scoring version.")
    score = serializers.FloatField(allow_null=True)
    details = serializers.JSONField(allow_null=True)


class RescoreJobSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    challenge = serializers.IntegerField(source="challenge_id")
    status = serializers.ChoiceField(
        choices=["queued", "running", "succeeded", "failed", "cancelled"]
    )
    processed = serializers.IntegerField()
    total = serializers.IntegerField()
    failed = serializers.IntegerField(help_text="Attempts whose scorer failed (score null).")
    version = serializers.IntegerField(source="version.number")
    error = serializers.CharField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class RescoreStartedSerializer(serializers.Serializer):
    job = serializers.IntegerField()


class LeaderboardQuerySerializer(serializers.Serializer):
    limit = StrictIntegerField(min_value=1, max_value=500, required=False, default=50)
    offset = StrictIntegerField(min_value=0, max_value=10**9, required=False, default=0)
    player = serializers.CharField(max_length=255, required=False)

    def to_internal_value(self, data: Any) -> Any:
        # Query strings are text: turn digit strings into ints before the strict checks.
        converted = {}
        for key, value in data.items():
            if key not in self.fields:
                continue  # other query parameters (format=, cache busters) are not ours
            if key in ("limit", "offset"):
                try:
                    value = int(value)
                except ValueError:
                    raise serializers.ValidationError({key: ["Must be an integer."]}) from None
            converted[key] = value
        return super().to_internal_value(converted)


class LeaderboardRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    player = serializers.CharField(source="player_external_id")
    display_name = serializers.CharField()
    score = serializers.FloatField()
    attempt_id = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    scores = serializers.DictField(
        child=serializers.FloatField(allow_null=True),
        required=False,
        help_text="Python scorers: every score of the ranking scorer, the ranking one first.",
    )


class LeaderboardSerializer(serializers.Serializer):
    version = serializers.IntegerField(allow_null=True)
    count = serializers.IntegerField()
    results = LeaderboardRowSerializer(many=True)
