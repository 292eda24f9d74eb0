"""API serializers: parse and check types; services decide the rest."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from django.conf import settings
from django.core.validators import (
    MaxLengthValidator,
    MaxValueValidator,
    MinLengthValidator,
    MinValueValidator,
    ProhibitNullCharactersValidator,
)
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from challenges.api.fields import (
    MAX_EPOCH_MS,
    MIN_EPOCH_MS,
    EpochOrISODateTimeField,
    JSONListField,
    JSONObjectField,
    StrictBooleanField,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
    epoch_ms_datetime,
)
from challenges.boards import display
from challenges.fieldsets import BOARD_FIELDS
from challenges.ingestion.admission import schedule_phase
from challenges.ingestion.budget import SCORE_STATUSES
from challenges.ingestion.services import AttemptInput
from challenges.leaderboards import precision
from challenges.models import MAX_METRIC, Challenge
from challenges.redblue.policies import POLICIES
from challenges.rescoring.jobs import job_pace
from challenges.text import BAD_CHAR
from scoring.engine import strategies
from scoring.engine.protocol import MAX_TIMEOUT_MS


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


def validated(serializer: type[serializers.Serializer], data: Any) -> Any:
    """``serializer(data=data)``'s validated data (a 400 naming the errors otherwise)."""
    body = serializer(data=data)
    body.is_valid(raise_exception=True)
    return body.validated_data


def query_validated(query: serializers.Serializer, params: Any) -> Any:
    """``params`` validated by ``query`` as is_valid(raise_exception=True) would, without a
    serializer per request."""
    try:
        return query.run_validation(params)
    except serializers.ValidationError as exc:
        raise serializers.ValidationError(serializers.as_serializer_error(exc)) from None


_STRATEGY_ERROR = (
    "Unknown strategy {input!r}; choose one of: " + ", ".join(strategies.STRATEGIES) + "."
)


class ChallengeSerializer(StrictSerializer):
    id = serializers.IntegerField(read_only=True)
    name = StrictCharField(max_length=200)
    slug = serializers.SlugField(max_length=200, required=False, allow_blank=True)
    description = StrictCharField(required=False, allow_blank=True, default="")
    is_active = StrictBooleanField(required=False, default=True)
    scoring_strategy = serializers.ChoiceField(
        choices=list(strategies.STRATEGIES),
        required=False,
        default=strategies.FIRST,
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
    metrics = JSONListField(required=False, default=list, allow_null=True)
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
    lower_is_better = StrictBooleanField(
        required=False,
        default=False,
        help_text="Python snippets: the ranking score orders ascending (a loss, an error).",
    )
    sample_with_metrics = StrictBooleanField(
        required=False,
        default=False,
        help_text="Python snippets saved before the sample became exactly the attempt's "
        "row: the five metrics are merged into `sample` (legacy; new code reads them from "
        "`solver_output.metrics` or `attempt_metrics`).",
    )
    tenant_id = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    app_id = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    workflow_id = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    timeout_ms = StrictIntegerField(
        min_value=1, max_value=MAX_TIMEOUT_MS, required=False, default=5000
    )
    # Running a competition (docs/competitions.md): the window, late attempts, player caps.
    opens_at = serializers.DateTimeField(required=False, allow_null=True, default=None)
    closes_at = serializers.DateTimeField(required=False, allow_null=True, default=None)
    late_attempts = serializers.ChoiceField(
        choices=["refuse", "practice"],
        required=False,
        default="refuse",
        help_text="Outside the window: refuse (409) or record as practice (never ranked).",
    )
    attempts_per_day = StrictIntegerField(
        min_value=1,
        max_value=1_000_000,
        required=False,
        allow_null=True,
        default=None,
        help_text="Per player, in any rolling 24 hours; over it: 429 with Retry-After.",
    )
    attempts_total = StrictIntegerField(
        min_value=1,
        max_value=1_000_000_000,
        required=False,
        allow_null=True,
        default=None,
        help_text="Per player; over it: 429.",
    )
    freeze_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        default=None,
        help_text="From then until the reveal the public sees the standings as of it.",
    )
    # The evaluation board (docs/ranking.md, "Evaluation boards").
    board = serializers.ChoiceField(
        choices=["best_attempt", "aggregate"],
        required=False,
        default="best_attempt",
        help_text="best_attempt: each player's best attempt; aggregate: a statistic over "
        "all their counted attempts, with intervals, rank intervals and tiers.",
    )
    aggregate = serializers.ChoiceField(
        choices=["mean", "sum"],
        required=False,
        default="mean",
        help_text="Aggregate boards: the per-player statistic of the ranking score.",
    )
    min_attempts = StrictIntegerField(
        min_value=1,
        max_value=1_000_000,
        required=False,
        default=1,
        help_text="Aggregate boards: fewer counted attempts → listed as not ranked.",
    )
    ci_level = StrictFloatField(
        min_value=0.5,
        required=False,
        default=0.95,
        help_text="Aggregate boards: the level of the intervals, from 0.5 up to 1 (excluded).",
    )
    bootstrap_samples = StrictIntegerField(
        min_value=100,
        max_value=10_000,
        required=False,
        default=1000,
        help_text="Aggregate boards: bootstrap replicates (100–10000).",
    )
    sample_key = StrictCharField(
        max_length=64,
        required=False,
        allow_blank=True,
        default="id",
        help_text="Aggregate boards: the field of `sample` naming the test item (paired "
        "bootstrap); empty: each player's attempts are resampled on their own.",
    )
    slice_by = StrictCharField(
        max_length=64,
        required=False,
        allow_blank=True,
        allow_null=True,
        default=None,
        help_text="Aggregate boards: a field of `sample` whose values split the board.",
    )

    # Red/blue (docs/api.md, "Red/blue"): checked together by challenges/redblue/validation.py.
    format = serializers.ChoiceField(
        choices=["single", "red_blue"], required=False, default="single"
    )
    judge_suite = serializers.ListField(
        child=StrictCharField(max_length=32),
        required=False,
        default=list,
        max_length=20,
        help_text="red_blue: 1–20 harm category codes the judge rules on, each once.",
    )
    defense_selection_policy = serializers.ChoiceField(
        choices=list(POLICIES), required=False, default="latest_best"
    )
    attack_selection_policy = serializers.ChoiceField(
        choices=list(POLICIES), required=False, default="latest_best"
    )
    red_blue_scoring = serializers.ChoiceField(
        choices=["red_blue_ratio", "custom"], required=False, default="red_blue_ratio"
    )
    red_blue_plugin_id = StrictCharField(
        max_length=200,
        required=False,
        allow_blank=True,
        default="",
        help_text="red_blue_scoring custom: a registered pairing scorer plugin id.",
    )
    red_blue_entrypoint = StrictCharField(
        max_length=300,
        required=False,
        allow_blank=True,
        default="",
        help_text="Its registered 'module:Class' (or empty: filled in).",
    )
    red_blue_config = JSONObjectField(
        required=False, default=dict, help_text="Its config, checked by its config_schema."
    )
    severity_divisor = serializers.FloatField(
        required=False, default=3.0, min_value=0.001, max_value=1e6
    )
    time_penalty = serializers.FloatField(required=False, default=0.0, min_value=0, max_value=1e6)
    token_penalty = serializers.FloatField(required=False, default=0.0, min_value=0, max_value=1e6)
    instructions = StrictCharField(required=False, allow_blank=True, default="")
    reveal_attacks_after_close = StrictBooleanField(required=False, default=False)
    revealed_at = serializers.DateTimeField(
        read_only=True,
        allow_null=True,
        help_text="Set by POST /api/challenges/{id}/reveal/; null while frozen.",
    )
    schedule_status = serializers.SerializerMethodField(
        help_text="upcoming, open or ended (now, by the server's clock)."
    )
    active_version = serializers.SerializerMethodField()
    scoring_summary = serializers.SerializerMethodField(
        help_text="How scoring works, in words, as on the challenge's public page."
    )
    created_at = serializers.DateTimeField(read_only=True)
    updated_at = serializers.DateTimeField(read_only=True)

    def get_schedule_status(self, obj: Challenge) -> str:
        return schedule_phase(challenge=obj, now=timezone.now())

    def get_active_version(self, obj: Challenge) -> int | None:
        return obj.active_version.number if obj.active_version_id else None

    def get_scoring_summary(self, obj: Challenge) -> str:
        setup = obj.active_version if obj.active_version_id else obj  # what the page shows
        return f"{display.strategy_words(setup)}. {display.scoring_sentence(setup)}"

    def validate_ci_level(self, value: float) -> float:
        if value >= 1:
            raise serializers.ValidationError("Ensure this value is less than 1.")
        return value

    def validate_slice_by(self, value: str | None) -> str | None:
        return value or None  # empty: no slices

    def validate_metrics(self, value: list[Any] | None) -> list[Any]:
        return [] if value is None else value  # the reference's default is None

    def validate_slug(self, value: str) -> str:
        taken = Challenge.objects.filter(slug=value)
        if self.instance is not None:
            taken = taken.exclude(pk=self.instance.pk)
        if value and taken.exists():
            raise serializers.ValidationError("A challenge with this slug already exists.")
        return value


# Fields only staff and admins see (docs/words-and-data.md, "Roles"): the scoring setup (a
# snippet or a config may hold an answer key) and the integration ids.
STAFF_ONLY_FIELDS = (
    "scoring_plugin_id",
    "scoring_entrypoint",
    "scoring_config",
    "scoring_code",
    "score_key",
    "metrics",
    "lower_is_better",
    "sample_with_metrics",
    "scorers",
    "rank_by",
    "tenant_id",
    "app_id",
    "workflow_id",
    "timeout_ms",
    *BOARD_FIELDS,
    "red_blue_plugin_id",
    "red_blue_entrypoint",
    "red_blue_config",
)


class PublicChallengeSerializer(ChallengeSerializer):
    """The public view of a challenge: anonymous users and integration tokens. Read only."""

    def get_fields(self) -> dict[str, Any]:
        fields = super().get_fields()
        for name in STAFF_ONLY_FIELDS:
            del fields[name]
        return fields


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

    @staticmethod
    def to_input(data: dict[str, Any]) -> AttemptInput:
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


# --- the plain path, made from AttemptInSerializer's fields -----------------------------
# DRF's per-field machinery costs a bulk request a third of its time. The usual item is
# read instead by a reader per field, made from that field's settings (type, bounds, null,
# blank, trim), into the same validated data for ``to_input``; the serializer takes the
# rest and names what is wrong. What the readers cannot mirror fails at import.
_REFUSED = object()
_KNOWN_VALIDATORS = (ProhibitNullCharactersValidator, ProhibitSurrogateCharactersValidator)
_KNOWN_VALIDATORS += (MaxLengthValidator, MinLengthValidator, MaxValueValidator, MinValueValidator)


def _text_reader(field: StrictCharField) -> Callable[[str], Any]:
    least, most = field.min_length or 0, field.max_length or math.inf
    blank, trim = field.allow_blank, field.trim_whitespace

    def read(value: str) -> Any:
        text = value.strip() if trim else value
        if not least <= len(text) <= most or not (text or blank) or BAD_CHAR.search(text):
            return _REFUSED
        return text

    return read


def _int_reader(field: StrictIntegerField) -> Callable[[int], Any]:
    least = -math.inf if field.min_value is None else field.min_value
    most = math.inf if field.max_value is None else field.max_value
    return lambda value: value if least <= value <= most else _REFUSED


def _epoch_reader(field: EpochOrISODateTimeField) -> Callable[[int], Any]:
    epochs = range(MIN_EPOCH_MS, MAX_EPOCH_MS + 1)  # ISO text: the field's own parser
    return lambda value: epoch_ms_datetime(value) if value in epochs else _REFUSED


# A field's JSON type, and its reader's maker (None: any value of the type, as it is).
_READERS_BY_FIELD: dict[type, tuple[type, Callable[[Any], Callable[[Any], Any]] | None]] = {
    StrictCharField: (str, _text_reader),
    StrictBooleanField: (bool, None),
    StrictIntegerField: (int, _int_reader),
    EpochOrISODateTimeField: (int, _epoch_reader),
    JSONObjectField: (dict, None),
    JSONListField: (list, None),
}


def _plain_readers(
    serializer: type[serializers.Serializer],
) -> dict[str, tuple[bool, bool, type, Callable[[Any], Any] | None]]:
    """name: (required, allow_null, JSON type, reader) for every field of ``serializer``;
    TypeError for what the readers cannot mirror."""
    if any(name == "validate" or name.startswith("validate_") for name in vars(serializer)):
        raise TypeError(f"{serializer.__name__}: the plain path runs no validation method")
    readers = {}
    for name, field in serializer._declared_fields.items():
        if type(field) not in _READERS_BY_FIELD:
            raise TypeError(f"{serializer.__name__}.{name}: the plain path has no reader")
        if not all(isinstance(v, _KNOWN_VALIDATORS) for v in field.validators):
            raise TypeError(f"{serializer.__name__}.{name}: a validator the plain path lacks")
        kind, make = _READERS_BY_FIELD[type(field)]
        read = make(field) if make else None
        readers[name] = (field.required, field.allow_null, kind, read)
    return readers


_ATTEMPT_READERS = _plain_readers(AttemptInSerializer)
_ATTEMPT_KEYS = frozenset(_ATTEMPT_READERS)
_ATTEMPT_REQUIRED = frozenset(name for name, how in _ATTEMPT_READERS.items() if how[0])


def _plain_input(item: Any) -> AttemptInput | None:
    """The usual attempt read by the fields' readers (above): exactly what
    ``AttemptInSerializer`` gives for it (tests/challenges/api/test_plain_parse.py tries
    generated items). None for anything else, which the serializer then validates."""
    if type(item) is not dict or not _ATTEMPT_REQUIRED <= item.keys() <= _ATTEMPT_KEYS:
        return None
    data = {}
    for name, value in item.items():
        _, nullable, kind, read = _ATTEMPT_READERS[name]
        if value is None:
            if not nullable:
                return None
        elif type(value) is not kind or (read and (value := read(value)) is _REFUSED):
            return None
        data[name] = value
    return AttemptInSerializer.to_input(data)


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
    # One serializer validates every item (as is_valid would, item by item): building
    # one per item deep-copies its eleven fields each time, most of a bulk request's
    # parsing.
    serializer = AttemptInSerializer()
    parsed, errors = [], {}
    for index, item in enumerate(items):
        fast = _plain_input(item)
        if fast is not None:
            parsed.append(fast)
            continue
        try:
            parsed.append(serializer.to_input(serializer.run_validation(item)))
        except serializers.ValidationError as exc:
            errors[str(index)] = serializers.as_serializer_error(exc)
    if errors:
        raise serializers.ValidationError(errors if many else errors["0"])
    return parsed, many


class ServedFloatField(serializers.FloatField):
    """A score as served: rounded by the precision policy (leaderboards.precision)."""

    def to_representation(self, value: Any) -> Any:
        return precision.served(super().to_representation(value))


class ServedJSONField(serializers.JSONField):
    """Details as served: every float in them rounded by the precision policy."""

    def to_representation(self, value: Any) -> Any:
        return precision.served_json(super().to_representation(value))


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
    score = ServedFloatField(allow_null=True)
    details = ServedJSONField(allow_null=True)
    score_status = serializers.ChoiceField(
        choices=list(SCORE_STATUSES),
        help_text=(
            "scored: the score is final (null when the strategy does not count the "
            "attempt); failed: the scorer failed, the score is null; pending: stored, not "
            "scored yet (the request's scoring budget ran out): the workers score it and "
            "it appears on the leaderboard then."
        ),
    )


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
    rate = serializers.SerializerMethodField(
        help_text="Attempts scored per second since the job started (null before any)."
    )
    eta_seconds = serializers.SerializerMethodField(
        help_text="At that rate, seconds until every attempt is scored (null when over)."
    )

    @extend_schema_field(serializers.FloatField(allow_null=True))
    def get_rate(self, job: Any) -> float | None:
        pace = job_pace(job)
        return round(pace.rate, 1) if pace.rate is not None else None

    @extend_schema_field(serializers.FloatField(allow_null=True))
    def get_eta_seconds(self, job: Any) -> float | None:
        pace = job_pace(job)
        return round(pace.eta_seconds, 1) if pace.eta_seconds is not None else None


class RescoreStartedSerializer(serializers.Serializer):
    job = serializers.IntegerField()


class QuerySerializer(serializers.Serializer):
    """A query string's parameters: others (format=, cache busters) are not ours, and the
    ``integers`` are text turned into ints before the strict checks."""

    integers: tuple[str, ...] = ()

    def to_internal_value(self, data: Any) -> Any:
        converted = {}
        for key, value in data.items():
            if key not in self.fields:
                continue
            if key in self.integers:
                try:
                    value = int(value)
                except ValueError:
                    raise serializers.ValidationError({key: ["Must be an integer."]}) from None
            converted[key] = value
        return super().to_internal_value(converted)


class LeaderboardQuerySerializer(QuerySerializer):
    integers = ("limit", "offset", "version")
    limit = StrictIntegerField(min_value=1, max_value=500, required=False, default=50)
    offset = StrictIntegerField(min_value=0, max_value=10**9, required=False, default=0)
    player = serializers.CharField(max_length=255, required=False)
    version = StrictIntegerField(
        min_value=1,
        max_value=2**31 - 1,
        required=False,
        help_text="A past version's board, as that version ranked it (404 if never active).",
    )
    slice = serializers.CharField(
        max_length=200,
        required=False,
        help_text="Aggregate boards with slice_by: rank over the attempts whose "
        "sample[slice_by] equals this value.",
    )


class LeaderboardRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField(
        allow_null=True, help_text="null: not ranked (aggregate boards: under min_attempts)."
    )
    player = serializers.CharField(source="player_external_id")
    display_name = serializers.CharField()
    score = ServedFloatField()
    attempt_id = serializers.IntegerField(required=False, help_text="Best-attempt boards.")
    created_at = serializers.DateTimeField(required=False, help_text="Best-attempt boards.")
    scores = serializers.DictField(
        child=serializers.FloatField(allow_null=True),
        required=False,
        help_text="Python scorers: every score of the ranking scorer, the ranking one first.",
    )
    # Aggregate boards (docs/ranking.md, "Evaluation boards"): null when not ranked.
    n = serializers.IntegerField(required=False, help_text="Attempts counted.")
    ci_low = ServedFloatField(required=False, allow_null=True)
    ci_high = ServedFloatField(required=False, allow_null=True)
    rank_low = serializers.IntegerField(required=False, allow_null=True)
    rank_high = serializers.IntegerField(required=False, allow_null=True)
    tier = serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="1 + the number of players whose ci_low is greater than this ci_high.",
    )


class LeaderboardSerializer(serializers.Serializer):
    version = serializers.IntegerField(allow_null=True)
    count = serializers.IntegerField()
    results = LeaderboardRowSerializer(many=True)
    # Aggregate boards: the intervals as last computed.
    board = serializers.CharField(required=False, help_text="aggregate")
    computed_at = serializers.DateTimeField(required=False, allow_null=True)
    attempts = serializers.IntegerField(required=False, help_text="Attempts covered.")
    ci_level = serializers.FloatField(required=False)
    slice = serializers.CharField(required=False, allow_null=True)
    slices = serializers.DictField(
        child=serializers.IntegerField(), required=False, help_text="{value: attempts}"
    )
    pending = serializers.BooleanField(
        required=False, help_text="True until the first intervals of the version are computed."
    )


class HistoryPlayerSerializer(serializers.Serializer):
    external_id = serializers.CharField()
    display_name = serializers.CharField()
    rank_before = serializers.IntegerField(allow_null=True)
    rank_after = serializers.IntegerField(allow_null=True)


class HistoryRecordSerializer(serializers.Serializer):
    """One switch of the active version (``HistoryRecord``), as the public reads it."""

    version = serializers.IntegerField(source="version.number")
    previous_version = serializers.IntegerField(  # always there: null for the first
        source="previous_version.number", allow_null=True
    )
    switched_at = serializers.DateTimeField()
    reason = serializers.ChoiceField(choices=["rescore", "rollback", "batch"])
    summary = serializers.SerializerMethodField()
    players_ranked = serializers.SerializerMethodField()
    moved = serializers.IntegerField()
    entered_top = HistoryPlayerSerializer(many=True)
    left_top = HistoryPlayerSerializer(many=True)
    largest_moves = HistoryPlayerSerializer(many=True)
    kendall_tau = serializers.FloatField(allow_null=True)

    def get_summary(self, record: Any) -> str:
        return display.switch_summary(
            version=record.version, previous=record.previous_version, reason=record.reason
        )

    def get_players_ranked(self, record: Any) -> dict[str, int]:
        return {"before": record.players_before, "after": record.players_after}
