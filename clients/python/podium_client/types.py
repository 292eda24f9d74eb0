"""The request and response shapes of Podium's API, as ``/api/schema/`` names them.

Each ``TypedDict`` here is one component of the OpenAPI schema (``COMPONENTS`` maps the
component's name to it); the server's test suite compares them, field by field and type
by type, with the schema it generates, so a field added to a serializer without the
client fails there. ``ATTEMPT_FIELDS`` holds the limits ``--dry-run`` checks locally;
the same test holds them to the schema's ``minLength``/``maxLength``/``minimum``/``maximum``.

Standard library only: the server's tests import this module without httpx.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypedDict

ScoreStatus = Literal["scored", "failed", "pending"]
RescoreJobStatus = Literal["queued", "running", "succeeded", "failed", "cancelled"]
ScoringStrategy = Literal["first", "fastest", "fewest_tokens", "highest_rating", "custom", "python"]
LateAttempts = Literal["refuse", "practice"]
Board = Literal["best_attempt", "aggregate"]
Aggregate = Literal["mean", "sum"]
ChallengeFormat = Literal["single", "red_blue"]
SelectionPolicy = Literal["latest_best", "random_active", "round_robin", "request_new_if_none"]
RedBlueScoring = Literal["red_blue_ratio", "custom"]
MetricType = Literal[
    "mean", "max", "min", "std_dev", "frequency", "precision", "recall", "f1",
    "binary_classification", "multiclass_classification", "python",
]  # fmt: skip


class _AttemptInRequired(TypedDict):
    player: str
    succeeded: bool


class AttemptIn(_AttemptInRequired, total=False):
    """One attempt to record (``AttemptInRequest``)."""

    player_name: str | None
    tokens_total: int | None
    elapsed_ms: int | None
    rating: int | None
    created_at: str | None  # ISO 8601 (the API takes epoch milliseconds too)
    sample: Any
    output: str
    messages: Any


class AttemptOut(TypedDict):
    """A recorded attempt, as the attempts route answers it."""

    id: int
    challenge: int
    player: str
    display_name: str
    succeeded: bool
    tokens_total: int | None
    elapsed_ms: int | None
    rating: int | None
    created_at: str
    sample: Any
    output: str
    messages: Any
    version: int | None
    score: float | None
    details: Any
    score_status: ScoreStatus


class _ChallengeRequired(TypedDict):
    id: int
    name: str
    active_version: int | None
    created_at: str
    updated_at: str
    revealed_at: str | None
    schedule_status: str
    scoring_summary: str


class Challenge(_ChallengeRequired, total=False):
    """A challenge; the public view leaves the staff-only fields out."""

    slug: str
    description: str
    is_active: bool
    scoring_strategy: ScoringStrategy
    scoring_plugin_id: str
    scoring_entrypoint: str
    scoring_config: Any
    scoring_code: str
    score_key: str
    metrics: Any
    scorers: Any
    rank_by: str
    lower_is_better: bool
    sample_with_metrics: bool
    tenant_id: str
    app_id: str
    workflow_id: str
    timeout_ms: int
    opens_at: str | None
    closes_at: str | None
    late_attempts: LateAttempts
    attempts_per_day: int | None
    attempts_total: int | None
    freeze_at: str | None
    board: Board
    aggregate: Aggregate
    min_attempts: int
    ci_level: float
    bootstrap_samples: int
    sample_key: str
    slice_by: str | None
    format: ChallengeFormat
    judge_suite: list[str]
    defense_selection_policy: SelectionPolicy
    attack_selection_policy: SelectionPolicy
    red_blue_scoring: RedBlueScoring
    red_blue_plugin_id: str
    red_blue_entrypoint: str
    red_blue_config: Any
    severity_divisor: float
    time_penalty: float
    token_penalty: float
    instructions: str
    reveal_attacks_after_close: bool


class _LeaderboardRowRequired(TypedDict):
    rank: int | None
    player: str
    display_name: str
    score: float


class LeaderboardRow(_LeaderboardRowRequired, total=False):
    attempt_id: int  # best-attempt boards
    created_at: str
    scores: dict[str, float | None]
    n: int  # aggregate boards
    ci_low: float | None
    ci_high: float | None
    rank_low: int | None
    rank_high: int | None
    tier: int | None


class _LeaderboardRequired(TypedDict):
    version: int | None
    count: int
    results: list[LeaderboardRow]


class Leaderboard(_LeaderboardRequired, total=False):
    board: str  # aggregate boards
    computed_at: str | None
    attempts: int
    ci_level: float
    slice: str | None
    slices: dict[str, int]
    pending: bool


class _ChallengeMetricRequired(TypedDict):
    name: str
    type: MetricType
    value: Any


class ChallengeMetric(_ChallengeMetricRequired, total=False):
    scorer: str
    scorer_name: str
    error: str


class RescoreStarted(TypedDict):
    job: int


class RescoreJob(TypedDict):
    id: int
    challenge: int
    status: RescoreJobStatus
    processed: int
    total: int
    failed: int
    version: int
    error: str
    created_at: str
    started_at: str | None
    finished_at: str | None
    rate: float | None  # attempts scored per second so far
    eta_seconds: float | None  # at that rate, until every attempt is scored


HistoryReason = Literal["rescore", "rollback", "batch"]


class HistoryPlayer(TypedDict):
    external_id: str
    display_name: str
    rank_before: int | None
    rank_after: int | None


class HistoryRecord(TypedDict):
    """One switch of a challenge's active version, as the public reads it."""

    version: int
    previous_version: int | None
    switched_at: str
    reason: HistoryReason
    summary: str
    players_ranked: dict[str, int]  # {"before": n, "after": n}
    moved: int
    entered_top: list[HistoryPlayer]
    left_top: list[HistoryPlayer]
    largest_moves: list[HistoryPlayer]
    kendall_tau: float | None


COMPONENTS: dict[str, type] = {
    "AttemptInRequest": AttemptIn,
    "AttemptOut": AttemptOut,
    "Challenge": Challenge,
    "Leaderboard": Leaderboard,
    "LeaderboardRow": LeaderboardRow,
    "ChallengeMetric": ChallengeMetric,
    "RescoreStarted": RescoreStarted,
    "RescoreJob": RescoreJob,
    "HistoryPlayer": HistoryPlayer,
    "HistoryRecord": HistoryRecord,
}

# (method, path) → (the component of the JSON body sent or None, the component answered;
# "[X]" is a list of X, "X|[X]" one or a list). The schema test checks each route exists.
OPERATIONS: dict[tuple[str, str], tuple[str | None, str | None]] = {
    ("get", "/api/challenges/"): (None, "[Challenge]"),
    ("get", "/api/challenges/{id}/"): (None, "Challenge"),
    ("post", "/api/challenges/{id}/attempts/"): (
        "AttemptInRequest|[AttemptInRequest]",
        "AttemptOut|[AttemptOut]",
    ),
    ("get", "/api/challenges/{id}/leaderboard/"): (None, "Leaderboard"),
    ("get", "/api/challenges/{id}/metrics/"): (None, "[ChallengeMetric]"),
    ("post", "/api/challenges/{id}/rescore/"): (None, "RescoreStarted"),
    ("get", "/api/rescore-jobs/{id}/"): (None, "RescoreJob"),
    ("post", "/api/rescore-jobs/{id}/cancel/"): (None, "RescoreJob"),
}
# Routes the client supports where the server has them (newer servers).
OPTIONAL_OPERATIONS = {("get", "/api/challenges/{id}/history/")}


@dataclass(frozen=True)
class Field:
    """What the server accepts for one attempt field (``--dry-run`` checks it)."""

    kinds: tuple[type, ...]
    required: bool = False
    nullable: bool = False
    min_length: int | None = None
    max_length: int | None = None
    minimum: int | None = None
    maximum: int | None = None


_ANY = (object,)
_INT = (int,)
BIG = 9007199254740991  # 2**53 - 1: what JSON numbers carry exactly
ATTEMPT_FIELDS: dict[str, Field] = {
    "player": Field((str,), required=True, min_length=1, max_length=255),
    "player_name": Field((str,), nullable=True, min_length=1, max_length=200),
    "succeeded": Field((bool,), required=True),
    "tokens_total": Field(_INT, nullable=True, minimum=0, maximum=BIG),
    "elapsed_ms": Field(_INT, nullable=True, minimum=0, maximum=BIG),
    "rating": Field(_INT, nullable=True, minimum=0, maximum=10),
    "created_at": Field((str, int), nullable=True),
    "sample": Field(_ANY, nullable=True),
    "output": Field((str,)),
    "messages": Field(_ANY, nullable=True),
}


def attempt_problems(item: Any) -> list[str]:
    """What the server would refuse in one attempt, checked locally; [] when none."""
    if not isinstance(item, dict):
        return [f"an attempt is a JSON object, not {type(item).__name__}"]
    problems = [f"{key}: unknown field" for key in item if key not in ATTEMPT_FIELDS]
    for name, field in ATTEMPT_FIELDS.items():
        if name not in item:
            if field.required:
                problems.append(f"{name}: this field is required")
            continue
        value = item[name]
        if value is None:
            if not field.nullable:
                problems.append(f"{name}: may not be null")
            continue
        if field.kinds != _ANY and (
            not isinstance(value, field.kinds)
            or (isinstance(value, bool) and bool not in field.kinds)
        ):
            names = " or ".join(k.__name__ for k in field.kinds)
            problems.append(f"{name}: expected {names}, got {type(value).__name__}")
            continue
        if isinstance(value, str):
            if field.min_length is not None and len(value) < field.min_length:
                problems.append(f"{name}: at least {field.min_length} character(s)")
            if field.max_length is not None and len(value) > field.max_length:
                problems.append(f"{name}: at most {field.max_length} characters")
        if isinstance(value, int) and not isinstance(value, bool):
            if field.minimum is not None and value < field.minimum:
                problems.append(f"{name}: at least {field.minimum}")
            if field.maximum is not None and value > field.maximum:
                problems.append(f"{name}: at most {field.maximum}")
    return problems
