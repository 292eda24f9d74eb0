"""Challenges, players, attempts, and the scores each scoring version gives them.

Scores belong to a scoring version; a challenge points at its active version. A rescore
writes a new version's scores beside the old ones and then moves the pointer, so
switching versions never rewrites history. ``LeaderboardEntry`` keeps each player's best
attempt per version, so a leaderboard page never scans all attempts.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from scoring.engine import strategies
from scoring.engine.protocol import MAX_METRIC, MAX_TIMEOUT_MS

from .text import TextSafeJSONDecoder


class ScoringStrategy(models.TextChoices):
    # One name per strategy, from the engine (scoring/engine/strategies.py).
    FIRST = strategies.FIRST, strategies.STRATEGIES[strategies.FIRST].chosen_as
    FASTEST = strategies.FASTEST, strategies.STRATEGIES[strategies.FASTEST].chosen_as
    FEWEST_TOKENS = (
        strategies.FEWEST_TOKENS,
        strategies.STRATEGIES[strategies.FEWEST_TOKENS].chosen_as,
    )
    HIGHEST_RATING = (
        strategies.HIGHEST_RATING,
        strategies.STRATEGIES[strategies.HIGHEST_RATING].chosen_as,
    )
    CUSTOM = strategies.CUSTOM, strategies.STRATEGIES[strategies.CUSTOM].chosen_as
    PYTHON = strategies.PYTHON, strategies.STRATEGIES[strategies.PYTHON].chosen_as


class ScoringSetupFields(models.Model):
    """The scoring setup, shared by a challenge (what is being edited) and its versions
    (what was in force). Field names follow docs/words-and-data.md."""

    scoring_strategy = models.CharField(
        max_length=32, choices=ScoringStrategy.choices, default=ScoringStrategy.FIRST
    )
    scoring_plugin_id = models.CharField(max_length=200, blank=True)
    scoring_entrypoint = models.CharField(max_length=300, blank=True)
    scoring_config = models.JSONField(default=dict, blank=True, decoder=TextSafeJSONDecoder)
    scoring_code = models.TextField(blank=True)
    score_key = models.CharField(max_length=64, blank=True)
    metrics = models.JSONField(default=list, blank=True, decoder=TextSafeJSONDecoder)
    timeout_ms = models.PositiveIntegerField(default=5000)
    # Several scorers of a python challenge (docs/writing-scorers.md);
    # empty: the single-scorer fields above are the one scorer.
    scorers = models.JSONField(default=list, blank=True)
    rank_by = models.CharField(max_length=200, blank=True)
    # Python snippets: the ranking score orders ascending (a loss, an error) when set.
    lower_is_better = models.BooleanField(default=False)
    # Python snippets saved before issue 20 saw the five metrics merged into ``sample``;
    # those challenges keep it (set by migration), new ones get exactly their row.
    sample_with_metrics = models.BooleanField(default=False)

    SETUP_FIELDS = (
        "scoring_strategy",
        "scoring_plugin_id",
        "scoring_entrypoint",
        "scoring_config",
        "scoring_code",
        "score_key",
        "metrics",
        "timeout_ms",
        "scorers",
        "rank_by",
        "lower_is_better",
        "sample_with_metrics",
    )

    class Meta:
        abstract = True

    def setup_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.SETUP_FIELDS}


class LateAttempts(models.TextChoices):
    REFUSE = "refuse", "Refuse them (409)"
    PRACTICE = "practice", "Record them as practice (scored, never ranked)"


class Board(models.TextChoices):
    BEST_ATTEMPT = "best_attempt", "Best attempt per player"
    AGGREGATE = "aggregate", "Aggregate over every attempt, with intervals"


class Aggregate(models.TextChoices):
    MEAN = "mean", "Mean"
    SUM = "sum", "Sum"


class ChallengeFormat(models.TextChoices):
    SINGLE = "single", "Single: players record attempts"
    RED_BLUE = "red_blue", "Red/blue: attacks against defences, judged"


class SelectionPolicy(models.TextChoices):
    """Which submission of the other team a new submission meets
    (``challenges/redblue/policies.py``)."""

    LATEST_BEST = "latest_best", "The newest active submission"
    RANDOM_ACTIVE = "random_active", "A random active submission"
    ROUND_ROBIN = "round_robin", "The one paired least often (ties: the oldest)"
    REQUEST_NEW_IF_NONE = "request_new_if_none", "One not met yet, else wait for a new one"


class RedBlueScoring(models.TextChoices):
    RED_BLUE_RATIO = "red_blue_ratio", "Red/blue ratio"
    CUSTOM = "custom", "Scorer plugin"


class ScoringSetupUnversioned(ValueError):
    """A challenge's scoring setup was changed and saved without a scoring version."""


VERSIONING_SERVICE = "challenges.setup.services.challenge_update(challenge=..., data={...})"


class Challenge(ScoringSetupFields):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=200, unique=True)
    description = models.TextField(blank=True, help_text="Markdown.")
    is_active = models.BooleanField(default=True, help_text="Listed publicly.")
    tenant_id = models.CharField(max_length=200, blank=True)
    app_id = models.CharField(max_length=200, blank=True)
    workflow_id = models.CharField(max_length=200, blank=True)
    # One active version per challenge, by construction: a single pointer.
    active_version = models.ForeignKey(
        "ScoringVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Running a competition (docs/competitions.md): the window attempts rank in, caps.
    opens_at = models.DateTimeField(null=True, blank=True)
    closes_at = models.DateTimeField(null=True, blank=True)
    late_attempts = models.CharField(
        max_length=16,
        choices=LateAttempts.choices,
        default=LateAttempts.REFUSE,
        db_default=LateAttempts.REFUSE,  # rows written by raw SQL (COPY) get it too
    )
    attempts_per_day = models.PositiveIntegerField(
        null=True, blank=True, help_text="Per player, in any rolling 24 hours."
    )
    attempts_total = models.PositiveIntegerField(null=True, blank=True, help_text="Per player.")
    # The board freeze (challenges/leaderboards/freeze.py): from freeze_at until revealed_at
    # the public sees the standings of the attempts recorded before freeze_at.
    freeze_at = models.DateTimeField(null=True, blank=True)
    revealed_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Evaluation boards (challenges/leaderboards/evaluation.py): rank each player by a
    # statistic over all their counted attempts, with bootstrap intervals and tiers.
    board = models.CharField(
        max_length=16, choices=Board.choices, default=Board.BEST_ATTEMPT, db_default="best_attempt"
    )
    aggregate = models.CharField(
        max_length=8, choices=Aggregate.choices, default=Aggregate.MEAN, db_default="mean"
    )
    min_attempts = models.PositiveIntegerField(default=1, db_default=1)
    ci_level = models.FloatField(default=0.95, db_default=0.95)
    bootstrap_samples = models.PositiveIntegerField(default=1000, db_default=1000)
    sample_key = models.CharField(max_length=64, default="id", db_default="id", blank=True)
    # null, not "": the API's contract says no slicing is null (one meaning, one value)
    slice_by = models.CharField(max_length=64, null=True, blank=True, default=None)  # noqa: DJ001

    # Red/blue (docs/words-and-data.md, "Red/blue"); unused by a single challenge.
    format = models.CharField(
        max_length=16, choices=ChallengeFormat.choices, default=ChallengeFormat.SINGLE
    )
    judge_suite = models.JSONField(
        default=list, blank=True, help_text="1–20 harm category codes the judge rules on."
    )
    defense_selection_policy = models.CharField(
        max_length=32, choices=SelectionPolicy.choices, default=SelectionPolicy.LATEST_BEST
    )
    attack_selection_policy = models.CharField(
        max_length=32, choices=SelectionPolicy.choices, default=SelectionPolicy.LATEST_BEST
    )
    red_blue_scoring = models.CharField(
        max_length=32, choices=RedBlueScoring.choices, default=RedBlueScoring.RED_BLUE_RATIO
    )
    # red_blue_scoring "custom": a registered pairing scorer plugin (the scorer plugins'
    # registry and rules; docs/scorers.md, "Pairing scorers").
    red_blue_plugin_id = models.CharField(max_length=200, blank=True)
    red_blue_entrypoint = models.CharField(max_length=300, blank=True)
    red_blue_config = models.JSONField(default=dict, blank=True, decoder=TextSafeJSONDecoder)
    severity_divisor = models.FloatField(default=3.0)
    time_penalty = models.FloatField(default=0.0, help_text="Red points off per judge second.")
    token_penalty = models.FloatField(default=0.0, help_text="Red points off per judge token.")
    instructions = models.TextField(blank=True, help_text="Markdown, shown to players.")
    reveal_attacks_after_close = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]
        permissions = [("change_scoring", "Can change how a challenge is scored")]
        constraints = [
            models.CheckConstraint(
                condition=Q(opens_at__isnull=True)
                | Q(closes_at__isnull=True)
                | Q(closes_at__gt=F("opens_at")),
                name="challenge_window_ordered",
            ),
            models.CheckConstraint(
                condition=Q(late_attempts__in=LateAttempts.values),
                name="challenge_late_attempts_known",
            ),
            models.CheckConstraint(
                condition=Q(attempts_per_day__isnull=True) | Q(attempts_per_day__gte=1),
                name="challenge_attempts_per_day_positive",
            ),
            models.CheckConstraint(
                condition=Q(attempts_total__isnull=True) | Q(attempts_total__gte=1),
                name="challenge_attempts_total_positive",
            ),
            models.CheckConstraint(
                condition=Q(scoring_strategy__in=ScoringStrategy.values),
                name="challenge_strategy_known",
            ),
            models.CheckConstraint(
                condition=Q(board__in=Board.values) & Q(aggregate__in=Aggregate.values),
                name="challenge_board_known",
            ),
            models.CheckConstraint(
                condition=Q(min_attempts__gte=1)
                & Q(ci_level__gt=0, ci_level__lt=1)
                & Q(bootstrap_samples__gte=100, bootstrap_samples__lte=10_000),
                name="challenge_board_ranges",
            ),
            models.CheckConstraint(
                condition=Q(timeout_ms__gte=1, timeout_ms__lte=MAX_TIMEOUT_MS),
                name="challenge_timeout_range",
            ),
            models.CheckConstraint(
                condition=Q(format__in=ChallengeFormat.values), name="challenge_format_known"
            ),
            models.CheckConstraint(
                condition=Q(defense_selection_policy__in=SelectionPolicy.values)
                & Q(attack_selection_policy__in=SelectionPolicy.values),
                name="challenge_selection_policies_known",
            ),
            models.CheckConstraint(
                condition=Q(red_blue_scoring__in=RedBlueScoring.values),
                name="challenge_red_blue_scoring_known",
            ),
            models.CheckConstraint(
                condition=Q(severity_divisor__gt=0, time_penalty__gte=0, token_penalty__gte=0),
                name="challenge_red_blue_numbers",
            ),
        ]

    # What the points of a red/blue challenge's judged pairings follow: a change of any
    # of them recomputes the points as a new scoring version.
    RED_BLUE_RULE_FIELDS = (
        "judge_suite",
        "red_blue_scoring",
        "red_blue_plugin_id",
        "red_blue_entrypoint",
        "red_blue_config",
        "severity_divisor",
        "time_penalty",
        "token_penalty",
    )

    def __str__(self) -> str:
        return self.name

    def save(self, *args: object, **kwargs: object) -> None:
        """Refuse a scoring setup that no version holds: scores belong to versions, and
        a setup saved beside them would score attempts under no version, silently."""
        update_fields = kwargs.get("update_fields")
        touches_setup = update_fields is None or bool(
            set(update_fields) & set(self.SETUP_FIELDS)  # type: ignore[arg-type]
        )
        if not self._state.adding and touches_setup:
            self._check_setup_versioned()
        super().save(*args, **kwargs)  # type: ignore[arg-type]

    def _check_setup_versioned(self) -> None:
        setup = self.setup_dict()
        versions = ScoringVersion.objects.filter(challenge_id=self.pk)
        if not versions.exists():
            return  # made without the service (fixtures, the ORM): attempts make version 1
        same = versions.filter(
            scoring_strategy=setup["scoring_strategy"],
            scoring_plugin_id=setup["scoring_plugin_id"],
            scoring_entrypoint=setup["scoring_entrypoint"],
            score_key=setup["score_key"],
            timeout_ms=setup["timeout_ms"],
        )
        if any(version.setup_dict() == setup for version in same):
            return
        raise ScoringSetupUnversioned(
            f"The scoring setup of challenge {self.pk} changed but no scoring version holds "
            f"it. Change a setup with {VERSIONING_SERVICE}: it validates the setup, makes a "
            "new version and rescores the attempts (the admin and PATCH /api/challenges/{id}/ "
            "use it)."
        )

    def red_blue_rule(self) -> dict[str, Any] | None:
        """The points rule of a red/blue challenge (None for a single one)."""
        if self.format != ChallengeFormat.RED_BLUE:
            return None
        return {name: getattr(self, name) for name in self.RED_BLUE_RULE_FIELDS}


class Player(models.Model):
    external_id = models.CharField(max_length=255, unique=True)
    display_name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["display_name", "id"]

    def __str__(self) -> str:
        return self.display_name or self.external_id


class PlayerRename(models.Model):
    """A change of a player's display name, kept so that a board frozen before it still
    shows the name as it was (``leaderboards/names.py``). Append-only."""

    player = models.ForeignKey(Player, on_delete=models.CASCADE, related_name="renames")
    old_name = models.CharField(max_length=200)
    new_name = models.CharField(max_length=200)
    at = models.DateTimeField()

    class Meta:
        indexes = [
            models.Index(fields=["player", "at", "id"], name="player_rename_player_at"),
            models.Index(fields=["at"], name="player_rename_at"),
        ]

    def __str__(self) -> str:
        return f"{self.old_name} → {self.new_name}"


class Attempt(models.Model):
    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="attempts")
    player = models.ForeignKey(Player, on_delete=models.CASCADE, related_name="attempts")
    succeeded = models.BooleanField(default=False)
    tokens_total = models.BigIntegerField(null=True, blank=True)
    elapsed_ms = models.BigIntegerField(null=True, blank=True)
    rating = models.SmallIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(db_index=True)  # millisecond precision
    sample = models.JSONField(null=True, blank=True, decoder=TextSafeJSONDecoder)
    output = models.TextField(blank=True)
    messages = models.JSONField(null=True, blank=True, decoder=TextSafeJSONDecoder)
    recorded_at = models.DateTimeField(auto_now_add=True)
    # Recorded outside the challenge's window: stored and scored, never ranked.
    practice = models.BooleanField(default=False, db_default=False)
    # Hidden by a moderator (challenges/ingestion/moderation.py): never in a public output.
    hidden = models.BooleanField(default=False, db_default=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # Small: only the attempts a leaderboard must leave out (the rebuild anti-joins it).
            models.Index(
                fields=["id"], name="attempt_unranked", condition=Q(practice=True) | Q(hidden=True)
            ),
            # The submission caps count a player's recent attempts on a challenge.
            models.Index(
                fields=["player", "challenge", "recorded_at"], name="attempt_player_recorded"
            ),
            models.Index(fields=["challenge", "created_at"], name="attempt_challenge_created"),
            # A rescore plans and reads a challenge's attempts by id ranges.
            models.Index(fields=["challenge", "id"], name="attempt_challenge_id"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(rating__isnull=True) | Q(rating__gte=0, rating__lte=10),
                name="attempt_rating_0_10",
            ),
            models.CheckConstraint(
                condition=Q(tokens_total__isnull=True)
                | Q(tokens_total__gte=0, tokens_total__lte=MAX_METRIC),
                name="attempt_tokens_nonnegative",
            ),
            models.CheckConstraint(
                condition=Q(elapsed_ms__isnull=True)
                | Q(elapsed_ms__gte=0, elapsed_ms__lte=MAX_METRIC),
                name="attempt_elapsed_nonnegative",
            ),
        ]

    def __str__(self) -> str:
        return f"Attempt {self.pk} by {self.player_id} on {self.challenge_id}"


class ScoringVersionManager(models.Manager["ScoringVersion"]):
    def create_next(self, *, challenge: Challenge, by: Any, reason: str) -> ScoringVersion:
        """A new version holding the challenge's current setup (call with the challenge
        row locked, or in its creating transaction, so numbers never collide)."""
        last = challenge.versions.order_by("-number").values_list("number", flat=True).first()
        return self.create(
            challenge=challenge,
            number=(last or 0) + 1,
            reason=reason,
            created_by=by if getattr(by, "is_authenticated", False) else None,
            red_blue_rule=challenge.red_blue_rule(),
            **challenge.setup_dict(),
        )


class ScoringVersion(ScoringSetupFields):
    """A challenge's scoring setup at one point in time; scores belong to a version."""

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    reason = models.CharField(max_length=200, blank=True, help_text="Why it was made.")
    # Set when every attempt has a score under this version (then it may become active).
    scored_at = models.DateTimeField(null=True, blank=True)
    # A red/blue challenge's points rule in force (``Challenge.red_blue_rule``); null for
    # a single challenge.
    red_blue_rule = models.JSONField(null=True, blank=True)

    objects = ScoringVersionManager()

    class Meta:
        ordering = ["challenge", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["challenge", "number"], name="version_number_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.challenge} v{self.number}"


class AttemptScore(models.Model):
    """The score one version gives one attempt. ``score`` None: the attempt does not
    count (or its scorer failed: then ``error`` says why, for admins only)."""

    # No index of its own: the unique (version, attempt) index serves version lookups.
    version = models.ForeignKey(
        ScoringVersion, on_delete=models.CASCADE, related_name="scores", db_index=False
    )
    attempt = models.ForeignKey(Attempt, on_delete=models.CASCADE, related_name="scores")
    # Copies of the attempt's player and time, so a leaderboard rebuild reads this table
    # alone (no join with a million attempts). No database constraint on the player: the
    # attempt's own foreign key already guarantees it, and a rescore would pay a million
    # redundant checks. Deleting a player still cascades (in the ORM).
    player = models.ForeignKey(
        Player, on_delete=models.CASCADE, related_name="+", db_index=False, db_constraint=False
    )
    created_at = models.DateTimeField()
    score = models.FloatField(null=True)
    # Ascending ranking key: the score, negated for "higher is better" strategies.
    sort_key = models.FloatField(null=True)
    details = models.JSONField(null=True, blank=True, decoder=TextSafeJSONDecoder)
    error = models.TextField(blank=True)
    # Results of the version's QA scorers, for admins only (never in ``details``, which
    # the public breakdown and integrations read): {key: {"scores", "metadata",
    # "failed": [check, ...], "error"?}}; ``qa_failed`` counts failing checks and errors.
    qa = models.JSONField(null=True, blank=True)
    qa_failed = models.PositiveSmallIntegerField(default=0, db_default=0)

    class Meta:
        indexes = [
            # Only the failed scores (a handful): failure counts and lists stay instant
            # however many scores a version has, and a rescore's COPY pays nothing for it.
            models.Index(fields=["version"], name="score_failed", condition=~Q(error="")),
        ]
        constraints = [
            models.UniqueConstraint(fields=["version", "attempt"], name="score_version_attempt"),
            models.CheckConstraint(
                condition=Q(score__isnull=True, sort_key__isnull=True)
                | Q(score__isnull=False, sort_key__isnull=False),
                name="score_and_sort_key_together",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.score} for attempt {self.attempt_id} under version {self.version_id}"


class LeaderboardEntry(models.Model):
    """Each player's best counted attempt under a version: one row per player.

    Derived data, a cache of the scores table rebuilt by every rescore (100,000 rows at a
    time), so it is kept lean: the primary key is (version, player) itself (no id, no
    sequence, no extra unique index) and the columns are copies of score rows, whose own
    constraints guarantee them, so there is no foreign-key constraint. Deleting a
    version or a player removes its entries (the primary key and a scan serve those rare
    cascades); deleting attempts goes through ``services.attempts_delete``, which
    recomputes the entries that pointed at them."""

    pk = models.CompositePrimaryKey("version", "player")
    version = models.ForeignKey(
        ScoringVersion,
        on_delete=models.CASCADE,
        related_name="entries",
        db_index=False,
        db_constraint=False,
    )
    player = models.ForeignKey(
        Player, on_delete=models.CASCADE, related_name="+", db_index=False, db_constraint=False
    )
    attempt = models.ForeignKey(
        Attempt, on_delete=models.DO_NOTHING, related_name="+", db_index=False, db_constraint=False
    )
    score = models.FloatField()
    sort_key = models.FloatField()
    created_at = models.DateTimeField()
    # The attempt this row held when the public pages last ranked its version (see
    # challenges/leaderboards/ranking.py): a row holding another attempt is new or improved since.
    # Ingestion never sets it, so an upserted row is "unranked"; a rebuild writes its rows
    # ranked and drops the version's checkpoints (recomputed by the next reader).
    ranked_attempt_id = models.BigIntegerField(null=True, blank=True, editable=False)
    # A stored column (not an expression in the query) so the planner has statistics
    # for it and reads the small partial index below.
    unranked = models.GeneratedField(
        expression=~Q(ranked_attempt_id=F("attempt_id")),
        output_field=models.BooleanField(),
        db_persist=True,
    )

    class Meta:
        indexes = [
            models.Index(
                fields=["version", "sort_key", "created_at", "attempt"], name="entry_rank"
            ),
            # Small: only the rows changed since the last ranking.
            models.Index(fields=["version"], name="entry_unranked", condition=Q(unranked=True)),
        ]

    def __str__(self) -> str:
        return f"{self.player_id}: {self.score} (version {self.version_id})"


class LeaderboardRanking(models.Model):
    """Where each page of a version's leaderboard starts, for the public pages.

    Every ``PAGE``-th entry in rank order is a checkpoint: its ranking key and its
    competition rank. A page is then one index range read from its checkpoint (never a
    large OFFSET), and a player's rank is a checkpoint plus a few rows. Recomputed when
    entries changed (challenges/leaderboards/ranking.py); ``stale`` marks deletions, which leave no
    changed row behind."""

    # No constraint: a frozen board's ranking is keyed by the negated version id (see
    # challenges/leaderboards/freeze.py), which names no version row.
    version = models.OneToOneField(
        ScoringVersion,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="ranking",
        db_constraint=False,
    )
    token = models.CharField(max_length=32, help_text="Changes with every recomputation.")
    stale = models.BooleanField(default=False)
    entries = models.PositiveIntegerField(default=0)
    # [[sort_key, created_at (epoch microseconds), attempt_id, rank], ...] every PAGE rows.
    checkpoints = models.JSONField(default=list)
    computed_at = models.DateTimeField()
    # The token of the first ranking computed since the board last lost rows (created, or
    # marked stale): rankings of one lineage differ only by entries added or improved, so
    # what was built from an earlier one only lags (challenges/leaderboards/kept.py).
    lineage = models.CharField(max_length=32, blank=True, default="")

    def __str__(self) -> str:
        return f"Ranking of {self.version_id} ({self.entries} entries)"


class RescoreJob(models.Model):
    """Background work that scores every attempt of a challenge under one version, in
    chunks, then makes that version active in one step."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    ACTIVE_STATUSES = (Status.QUEUED, Status.RUNNING)

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="rescore_jobs")
    version = models.ForeignKey(ScoringVersion, on_delete=models.CASCADE, related_name="jobs")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    total = models.PositiveIntegerField(default=0, help_text="Attempts to score.")
    processed = models.PositiveIntegerField(default=0, help_text="Attempts scored so far.")
    failed = models.PositiveIntegerField(default=0, help_text="Attempts whose scorer failed.")
    chunks_total = models.PositiveIntegerField(default=0)
    chunks_done = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["challenge", "status"], name="job_challenge_status")]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["queued", "running", "succeeded", "failed", "cancelled"]),
                name="job_status_known",
            ),
            models.CheckConstraint(
                condition=Q(chunks_done__lte=F("chunks_total")), name="job_chunks_done_le_total"
            ),
        ]

    def __str__(self) -> str:
        return f"Rescore job #{self.pk} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE_STATUSES


class RescoreChunk(models.Model):
    """A range of a challenge's attempts (by id, inclusive) that one task scores.

    Its scores are written batch by batch, each batch in a short transaction that
    replaces the batch's rows; ``done_at`` is set once the last batch is written, so a
    retried or duplicated chunk task rewrites the same rows or finds it done."""

    job = models.ForeignKey(RescoreJob, on_delete=models.CASCADE, related_name="chunks")
    number = models.PositiveIntegerField()
    first_attempt_id = models.BigIntegerField()
    last_attempt_id = models.BigIntegerField()
    done_at = models.DateTimeField(null=True, blank=True)
    # When a task last showed it works on the chunk: sent, or a batch of scores written.
    # The watchdog re-sends the chunks of a job whose chunks all fell silent.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    scored = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    # Attempts of the chunk counted into its job's ``processed`` as their batches were
    # written (progress moves with each batch); made exact when the chunk is done.
    partial = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["job", "number"]
        constraints = [
            models.UniqueConstraint(fields=["job", "number"], name="chunk_job_number"),
        ]

    def __str__(self) -> str:
        return f"Chunk {self.number} of job {self.job_id}"


class BatchState(models.Model):
    """The batch scorers of a challenge (``python_batch``): whether a run is scheduled
    (claimed with a conditional update, so a burst of attempts schedules one run) and
    what the last run covered."""

    challenge = models.OneToOneField(
        Challenge, on_delete=models.CASCADE, primary_key=True, related_name="batch_state"
    )
    scheduled = models.BooleanField(default=False)
    requested_at = models.DateTimeField(null=True, blank=True)
    version = models.ForeignKey(
        ScoringVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    covered = models.PositiveIntegerField(default=0, help_text="Attempts the last run scored.")
    last_attempt_id = models.BigIntegerField(default=0)
    runs = models.PositiveIntegerField(default=0)
    last_run_at = models.DateTimeField(null=True, blank=True)
    last_run_ms = models.FloatField(null=True, blank=True)
    error = models.TextField(blank=True)

    def __str__(self) -> str:
        return f"Batch state of {self.challenge_id}"


class IntegrationScope(models.Model):
    """A challenge an integration token (its user) may record attempts to. A user with
    no scope may record to every challenge, as before scopes existed; with some, only to
    those, and the display names it sends rename only players who have played nowhere
    else (docs/words-and-data.md, "Who may write what"). Staff and admins are never
    scoped."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="integration_scopes"
    )
    challenge = models.ForeignKey(
        Challenge, on_delete=models.CASCADE, related_name="integration_scopes"
    )

    class Meta:
        ordering = ["user", "challenge"]
        constraints = [
            models.UniqueConstraint(fields=["user", "challenge"], name="scope_user_challenge"),
        ]

    def __str__(self) -> str:
        return f"{self.user} may record attempts to {self.challenge}"


class PlayerHide(models.Model):
    """A player hidden by a moderator from one challenge, or from all (``challenge``
    null). Their attempts stay (and are scored); no public output shows them."""

    player = models.ForeignKey(Player, on_delete=models.CASCADE, related_name="hides")
    challenge = models.ForeignKey(
        Challenge, null=True, blank=True, on_delete=models.CASCADE, related_name="player_hides"
    )
    reason = models.CharField(max_length=500)
    hidden_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    hidden_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-hidden_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["player", "challenge"],
                condition=Q(challenge__isnull=False),
                name="hide_player_challenge",
            ),
            models.UniqueConstraint(
                fields=["player"], condition=Q(challenge__isnull=True), name="hide_player_all"
            ),
        ]

    def __str__(self) -> str:
        where = self.challenge or "all challenges"
        return f"{self.player} hidden from {where}"


class AppendOnly:
    """A model's rows are never updated or deleted once saved: ``save`` and ``delete``
    refuse, naming the model."""

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None and not self._state.adding:
            raise ValueError(f"{self._meta.verbose_name_plural.capitalize()} are append-only.")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise ValueError(f"{self._meta.verbose_name_plural.capitalize()} are append-only.")


class AuditEvent(AppendOnly, models.Model):
    """One change of what players see: who, when, from where, what (before/after), why.

    Append-only: the admin and the API offer no change or delete, ``save`` refuses to
    update a stored event, and on PostgreSQL a trigger refuses UPDATE and DELETE
    (migration 0010). The challenge and the actor are kept by id without a constraint,
    so deleting either never rewrites the history."""

    class Via(models.TextChoices):
        ADMIN = "admin"
        API = "api"
        COMMAND = "command"

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    actor_name = models.CharField(max_length=150, blank=True)
    via = models.CharField(max_length=16, choices=Via.choices)
    kind = models.CharField(max_length=32, db_index=True)
    challenge = models.ForeignKey(
        Challenge,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    challenge_name = models.CharField(max_length=200, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    reason = models.TextField(blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["challenge", "at"], name="audit_challenge_at")]
        constraints = [
            models.CheckConstraint(
                condition=Q(via__in=["admin", "api", "command"]), name="audit_via_known"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} by {self.actor_name or 'system'} via {self.via}"


class IdempotencyRecord(models.Model):
    """The first response to an attempts POST that carried an ``Idempotency-Key``: a
    retry with the same key gets it back and writes nothing (challenges/ingestion/
    idempotency.py). Written in the transaction that records the attempts, so it exists
    exactly when they do. Kept ``PODIUM_IDEMPOTENCY_KEEP_H`` hours (at least 24)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE)
    key = models.CharField(max_length=200)
    body_sha256 = models.CharField(max_length=64)
    status_code = models.PositiveSmallIntegerField()
    response = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "challenge", "key"], name="idempotency_user_challenge_key"
            ),
        ]

    def __str__(self) -> str:
        return f"Idempotency key {self.key!r} of user {self.user_id}"


class HistoryRecord(AppendOnly, models.Model):
    """What one switch of a challenge's active version did to its board, for the public
    (challenges/leaderboards/history.py computes it from the two boards' entries, which
    already leave out practice, hidden attempts and hidden players).

    Append-only, like the audit trail: ``save`` refuses to update a stored record,
    ``delete`` refuses, and the admin and the API offer neither."""

    class Reason(models.TextChoices):
        RESCORE = "rescore"
        ROLLBACK = "rollback"
        BATCH = "batch"

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="history")
    version = models.ForeignKey(ScoringVersion, on_delete=models.CASCADE, related_name="+")
    previous_version = models.ForeignKey(
        ScoringVersion, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    switched_at = models.DateTimeField()
    reason = models.CharField(max_length=16, choices=Reason.choices)
    players_before = models.PositiveIntegerField(default=0)
    players_after = models.PositiveIntegerField(default=0)
    moved = models.PositiveIntegerField(default=0)
    # [{"external_id", "display_name", "rank_before", "rank_after"}, ...]
    entered_top = models.JSONField(default=list)
    left_top = models.JSONField(default=list)
    largest_moves = models.JSONField(default=list)
    kendall_tau = models.FloatField(null=True, blank=True)
    # Written by the data migration for a switch made before records existed.
    backfilled = models.BooleanField(default=False)

    class Meta:
        ordering = ["-switched_at", "-id"]
        indexes = [models.Index(fields=["challenge", "switched_at"], name="history_challenge_at")]
        constraints = [
            models.CheckConstraint(
                condition=Q(reason__in=["rescore", "rollback", "batch"]),
                name="history_reason_known",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.challenge_id}: version {self.version_id} ({self.reason})"


class HistoryDue(models.Model):
    """A switch whose history record is still to be written. The switch writes this row
    in its transaction (a moment); the record itself (a rank diff of two boards, about a
    second for 100,000 players) is computed after the switch commits, outside its lock,
    by whoever switched, or by the rescore watchdog if that process died meanwhile
    (``leaderboards.history.records_write_due``)."""

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="+")
    version = models.ForeignKey(ScoringVersion, on_delete=models.CASCADE, related_name="+")
    previous_version = models.ForeignKey(
        ScoringVersion, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    switched_at = models.DateTimeField()
    reason = models.CharField(max_length=16, choices=HistoryRecord.Reason.choices)

    def __str__(self) -> str:
        return f"{self.challenge_id}: version {self.version_id} due ({self.reason})"


class EvaluationBoard(models.Model):
    """The last computed intervals of an aggregate board (``leaderboards/evaluation.py``).

    One row per challenge, version, audience (``frozen``: the public's board during a
    freeze) and slice (``""`` for the whole board): the rows as the engine computed them,
    the ``stamp`` (what the board's data was) they were computed from, when, and over how
    many attempts. Readers are served it; a worker replaces it after changes."""

    challenge = models.ForeignKey(
        Challenge, on_delete=models.CASCADE, related_name="evaluation_boards"
    )
    version = models.ForeignKey(ScoringVersion, on_delete=models.CASCADE, related_name="+")
    frozen = models.BooleanField(default=False)
    slice = models.CharField(max_length=200, blank=True)
    stamp = models.CharField(max_length=200)
    setup = models.CharField(max_length=400, blank=True)  # the board fields it was made with
    computed_at = models.DateTimeField()
    attempts = models.PositiveIntegerField()
    items = models.PositiveIntegerField(default=0)
    paired = models.BooleanField(default=False)
    rows = models.JSONField(default=list)
    slices = models.JSONField(default=dict)  # the whole board's: {value: attempts}
    # the whole board's: {metric name: {player id: value}}, each player's own metrics
    metrics = models.JSONField(default=dict)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["challenge", "version", "frozen", "slice"],
                name="evaluation_board_unique",
            )
        ]

    def __str__(self) -> str:
        return f"{self.challenge_id} v{self.version_id} {self.slice or 'all'}"


# --- collections: a season's standings over several challenges -------------------------
class CollectionStrategy(models.TextChoices):
    """How a collection adds up each player's best attempt per member challenge
    (docs/ranking.md, "Collections")."""

    SUM = "sum", "Sum of board values"
    FASTEST_TOTAL = "fastest_total", "Total time of successful best attempts"
    FEWEST_TOKENS_TOTAL = "fewest_tokens_total", "Total tokens of successful best attempts"
    HIGHEST_AVG_RATING = "highest_avg_rating", "Average rating of completed challenges"


MAX_COLLECTION_CHALLENGES = 50  # a collection's board reads every member's board


class Collection(models.Model):
    """Several challenges ranked together: each player's best attempt per challenge (their
    row on its public board), added up by ``strategy``. Derived on read: a collection
    stores no score of its own."""

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=200, unique=True)
    description = models.TextField(blank=True, help_text="Markdown.")
    strategy = models.CharField(
        max_length=32, choices=CollectionStrategy.choices, default=CollectionStrategy.SUM
    )
    challenges = models.ManyToManyField(
        Challenge, through="CollectionMember", related_name="collections", blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(strategy__in=CollectionStrategy.values),
                name="collection_strategy_known",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class CollectionMember(models.Model):
    """One challenge of a collection, at its place in the collection's order."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="members")
    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="+")
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["collection", "position", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["collection", "challenge"], name="collection_member_once"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.collection} · {self.challenge}"


# --- red/blue: attacks against defences, judged per harm category -----------------------
class Team(models.TextChoices):
    RED = "red", "Red (attack)"
    BLUE = "blue", "Blue (defence)"


class TeamMember(models.Model):
    """A player's team in a red/blue challenge: chosen once, never changed."""

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="+")
    player = models.ForeignKey(Player, on_delete=models.CASCADE, related_name="+")
    team = models.CharField(max_length=8, choices=Team.choices)
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["challenge", "player"], name="team_member_once"),
            models.CheckConstraint(condition=Q(team__in=Team.values), name="team_known"),
        ]

    def __str__(self) -> str:
        return f"{self.player} · {self.team}"


class Submission(models.Model):
    """A red player's attack prompt or a blue player's defence (system) prompt. A
    player's newest submission is active; their earlier ones stay stored, inactive.
    Prompts are secret (docs/api.md, "Red/blue")."""

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="+")
    player = models.ForeignKey(Player, on_delete=models.CASCADE, related_name="+")
    team = models.CharField(max_length=8, choices=Team.choices)
    prompt = models.TextField()
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["challenge", "team", "active"], name="submission_pool")]
        constraints = [
            models.UniqueConstraint(
                fields=["challenge", "player"],
                condition=Q(active=True),
                name="submission_one_active",
            ),
            models.CheckConstraint(condition=Q(team__in=Team.values), name="submission_team"),
        ]

    def __str__(self) -> str:
        return f"{self.team} submission {self.pk} by {self.player}"


class Pairing(models.Model):
    """An attack against a defence, waiting for the judge (``judged_at`` null) or
    judged: the verdict per category, the rating and the points each side won."""

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="+")
    attack = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="+")
    defense = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    judged_at = models.DateTimeField(null=True, blank=True)
    judged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    categories = models.JSONField(null=True, blank=True, help_text="{code: breached}")
    rating = models.SmallIntegerField(null=True, blank=True)
    feedback = models.TextField(blank=True)
    tokens_total = models.BigIntegerField(null=True, blank=True)
    elapsed_ms = models.BigIntegerField(null=True, blank=True)
    raw = models.JSONField(null=True, blank=True, decoder=TextSafeJSONDecoder)
    red_points = models.FloatField(null=True, blank=True)
    blue_points = models.FloatField(null=True, blank=True)
    # Why a judged pairing has no points (its pairing scorer failed); for admins only.
    points_error = models.TextField(blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["challenge", "judged_at"], name="pairing_status")]
        constraints = [
            models.UniqueConstraint(fields=["attack", "defense"], name="pairing_once"),
            models.CheckConstraint(
                condition=Q(rating__isnull=True) | Q(rating__gte=0, rating__lte=10),
                name="pairing_rating_range",
            ),
        ]

    def __str__(self) -> str:
        return f"pairing {self.pk}: attack {self.attack_id} vs defence {self.defense_id}"


class Event(models.Model):
    """One thing that happened to a challenge's public board, as the public may see it
    (challenges/events/): the log the event stream resumes from and webhooks deliver.

    Written only under the challenge's ``LiveBoard`` row lock, so that within one
    challenge ids follow commit order (a stream resumed after an id misses nothing)."""

    class Type(models.TextChoices):
        FIRST_BLOOD = "attempt.first_blood"
        RECORD_BEATEN = "record.beaten"
        BOARD_CHANGED = "board.changed"
        RESCORE_FINISHED = "rescore.finished"
        CHALLENGE_OPENED = "challenge.opened"
        CHALLENGE_CLOSED = "challenge.closed"
        CHALLENGE_FROZEN = "challenge.frozen"
        CHALLENGE_REVEALED = "challenge.revealed"

    id = models.BigAutoField(primary_key=True)
    type = models.CharField(max_length=32, choices=Type.choices)
    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="events")
    occurred_at = models.DateTimeField()
    data = models.JSONField(default=dict)
    # Whether its webhook deliveries were made (the periodic tick makes those a broker
    # outage lost).
    fanned_out = models.BooleanField(default=False)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["challenge", "id"], name="event_challenge_id"),
            models.Index(fields=["id"], condition=Q(fanned_out=False), name="event_not_fanned_out"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(
                    type__in=[
                        "attempt.first_blood",
                        "record.beaten",
                        "board.changed",
                        "rescore.finished",
                        "challenge.opened",
                        "challenge.closed",
                        "challenge.frozen",
                        "challenge.revealed",
                    ]
                ),
                name="event_type_known",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.type} #{self.pk}"


class LiveBoard(models.Model):
    """What the events of a challenge were last made from (challenges/events/): the
    public top 10 last seen, whether its first blood was announced, and the schedule
    moments already announced. Its row lock serializes the challenge's event writers."""

    challenge = models.OneToOneField(
        Challenge, on_delete=models.CASCADE, primary_key=True, related_name="live"
    )
    # [{"rank", "player", "display_name", "score"}, ...]; null: not seen yet (a challenge
    # older than events: the first look is a baseline, announced as nothing).
    top = models.JSONField(null=True, blank=True)
    first_blood = models.BooleanField(default=False)
    opened_for = models.DateTimeField(null=True, blank=True)  # the opens_at announced
    closed_for = models.DateTimeField(null=True, blank=True)
    frozen_for = models.DateTimeField(null=True, blank=True)  # the freeze_at announced
    checked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"live board of {self.challenge_id}"


class WebhookEndpoint(models.Model):
    """A URL that gets a challenge's events, signed (Standard Webhooks: docs/events.md).
    ``events``: the types it wants (empty: every type)."""

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=2000)  # http(s) only: URLField's own validator
    events = models.JSONField(default=list, blank=True)
    description = models.CharField(max_length=500, blank=True)
    # "whsec_" + base64 of 24 random bytes; shown once, when the endpoint is made.
    secret = models.CharField(max_length=100, editable=False)
    is_active = models.BooleanField(default=True)
    disabled_reason = models.CharField(max_length=500, blank=True)
    failures_in_row = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["challenge", "id"]

    def __str__(self) -> str:
        return self.url

    def wants(self, type: str) -> bool:
        return not self.events or type in self.events


class WebhookDelivery(models.Model):
    """One event to one endpoint: its tries (``log``), until a 2xx or the last try."""

    class Status(models.TextChoices):
        PENDING = "pending"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="deliveries")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    tries = models.PositiveIntegerField(default=0)
    tries_left = models.PositiveIntegerField(default=0)
    next_try_at = models.DateTimeField(null=True, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)  # a try under way
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    response_excerpt = models.CharField(max_length=1000, blank=True)
    duration_ms = models.FloatField(null=True, blank=True)
    # Every try: [{"at", "status_code", "error", "duration_ms"}, ...] (the last 50).
    log = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        verbose_name_plural = "webhook deliveries"
        constraints = [
            models.UniqueConstraint(fields=["endpoint", "event"], name="delivery_once"),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "succeeded", "failed"]),
                name="delivery_status_known",
            ),
        ]
        indexes = [
            models.Index(
                fields=["next_try_at"],
                condition=Q(status="pending"),
                name="delivery_due",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event_id} → {self.endpoint_id} ({self.status})"
