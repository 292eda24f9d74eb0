"""Which fields of a challenge are which: its information, its scoring setup, its
competition rules. One list each, read by the services, the audit trail, the admin form,
the API and the file transfer."""

from __future__ import annotations

from challenges.models import Challenge, ScoringSetupFields

SCHEDULE_FIELDS = ("opens_at", "closes_at", "late_attempts")
LIMIT_FIELDS = ("attempts_per_day", "attempts_total")
FREEZE_FIELDS = ("freeze_at",)  # revealed_at is set by the reveal alone
COMPETITION_FIELDS = SCHEDULE_FIELDS + LIMIT_FIELDS + FREEZE_FIELDS
# The evaluation board (challenges/leaderboards/evaluation.py): how the board ranks.
BOARD_FIELDS = (
    "board",
    "aggregate",
    "min_attempts",
    "ci_level",
    "bootstrap_samples",
    "sample_key",
    "slice_by",
)
RED_BLUE_FIELDS = (
    "format",
    "judge_suite",
    "defense_selection_policy",
    "attack_selection_policy",
    "red_blue_scoring",
    "red_blue_plugin_id",
    "red_blue_entrypoint",
    "red_blue_config",
    "severity_divisor",
    "time_penalty",
    "token_penalty",
    "instructions",
    "reveal_attacks_after_close",
)
# What changes the points of judged pairings (recomputed on a change, as a new version).
RED_BLUE_POINTS_FIELDS = Challenge.RED_BLUE_RULE_FIELDS
SETUP_FIELDS = ScoringSetupFields.SETUP_FIELDS
INFO_FIELDS = (
    "name",
    "slug",
    "description",
    "is_active",
    "tenant_id",
    "app_id",
    "workflow_id",
    *COMPETITION_FIELDS,
    *BOARD_FIELDS,
    *RED_BLUE_FIELDS,
)
EMPTY_SETUP = {  # a setup's fields but the strategy and timeout, empty
    "scoring_plugin_id": "",
    "scoring_entrypoint": "",
    "scoring_config": {},
    "scoring_code": "",
    "score_key": "",
    "metrics": [],
    "lower_is_better": False,
    "sample_with_metrics": False,
    "scorers": [],
    "rank_by": "",
}
# The single-scorer form of a python setup (a list of ``scorers`` replaces it).
SINGLE_SCORER = ("scoring_code", "scoring_config", "score_key", "metrics")
