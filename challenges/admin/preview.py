"""What an unsaved scoring setup would do: "Try it" and "Preview leaderboard".

Both score with the scoring services (``scoring.services``: the same scorers, failure
rules and ranking keys as a real rescore) under a *candidate* version: an unsaved
``ScoringVersion`` holding the setup. Nothing is written.

- ``try_setup`` scores a few attempts one by one and times each.
- ``leaderboard_preview`` scores the whole challenge (or, past ``PREVIEW_FULL_LIMIT``
  attempts, every attempt of a deterministic sample of players, and says so), ranks
  players as the leaderboard does (best attempt per player; ``sort_key``, then the
  earlier ``created_at``; competition ranks) and compares with the active version's
  leaderboard.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from django.db.models import Max, Min, Q
from django.db.models.functions import Mod

from challenges.leaderboards import bulk
from challenges.leaderboards.names import names_now
from challenges.models import (
    Attempt,
    AttemptScore,
    Challenge,
    LeaderboardEntry,
    Player,
    ScoringVersion,
)
from scoring import sandbox
from scoring import services as scoring
from scoring.engine import strategies
from scoring.engine.scorers_list import batch_specs, merge_batch, ranking_of
from scoring.engine.shims import batch_results
from scoring.engine.snippet import SnippetInvalid

TRY_LATEST = 20
TRY_MOST = 100
TOP = 20
# A preview scores at most about this many attempts: past it, a sample of players.
PREVIEW_FULL_LIMIT = 200_000
READ_SPAN = 50_000  # attempt ids per read


class PreviewError(ValueError):
    """Bad input to a preview (e.g. attempt ids of another challenge)."""


def candidate_version(*, challenge: Challenge, setup: dict[str, Any]) -> ScoringVersion:
    """An unsaved version holding ``setup`` (already validated by ``setup_validate``)."""
    return ScoringVersion(challenge=challenge, number=0, **setup)


# --- try it --------------------------------------------------------------------------------
@dataclass(frozen=True)
class TryRow:
    attempt: Attempt
    score: float | None
    details: dict[str, Any] | None
    error: str
    took_ms: float
    current_score: float | None  # under the active version


@dataclass(frozen=True)
class TryResult:
    rows: list[TryRow]
    picked: bool  # the admin chose the attempts (else: the latest ones)


def parse_attempt_ids(text: str) -> list[int]:
    """ "12, 15 17" → [12, 15, 17]. Raises PreviewError naming the bad part."""
    ids: list[int] = []
    for part in text.replace(",", " ").split():
        part = part.lstrip("#")
        if not part.isdigit():
            raise PreviewError(f"{part!r} is not an attempt id (write ids like 12, 15).")
        ids.append(int(part))
    if len(ids) > TRY_MOST:
        raise PreviewError(f"At most {TRY_MOST} attempts at a time ({len(ids)} given).")
    return list(dict.fromkeys(ids))


def try_setup(
    *, challenge: Challenge, setup: dict[str, Any], attempt_ids: Sequence[int] = ()
) -> TryResult:
    """Score the picked attempts (or the latest ``TRY_LATEST``) under ``setup``, one by
    one, with the time each took. Raises PreviewError for ids not of this challenge."""
    version = candidate_version(challenge=challenge, setup=setup)
    attempts_qs = Attempt.objects.filter(challenge=challenge).select_related("player")
    if attempt_ids:
        attempts = list(attempts_qs.filter(pk__in=attempt_ids).order_by("-created_at", "-pk"))
        unknown = sorted(set(attempt_ids) - {a.pk for a in attempts})
        if unknown:
            listed = ", ".join(str(i) for i in unknown)
            raise PreviewError(f"Not attempts of this challenge: {listed}.")
    else:
        attempts = list(attempts_qs.order_by("-created_at", "-pk")[:TRY_LATEST])
    current = dict(
        AttemptScore.objects.filter(
            version_id=challenge.active_version_id, attempt__in=attempts
        ).values_list("attempt_id", "score")
    )
    items = scoring.items_from_attempts(
        attempts, challenge=challenge, timeout_ms=version.timeout_ms
    )
    rows = []
    for attempt, item in zip(attempts, items, strict=True):
        started = time.perf_counter()
        # One attempt at a time (each is timed), keeping its payload for snippet scorers.
        one = scoring.Items([item], [attempt])
        [outcome] = scoring.scores_compute(version=version, items=one)
        took_ms = (time.perf_counter() - started) * 1000
        details = outcome.details
        if outcome.error and details == {"error": outcome.error}:
            details = None  # the error is shown on its own
        rows.append(
            TryRow(attempt, outcome.score, details, outcome.error, took_ms, current.get(attempt.pk))
        )
    return TryResult(_with_batch(challenge, version, rows), picked=bool(attempt_ids))


def _with_batch(challenge: Challenge, version: ScoringVersion, rows: list[TryRow]) -> list[TryRow]:
    """The tried attempts with the setup's batch scorers run over them as one batch
    (relative to these attempts only: the real run takes the whole challenge)."""
    specs = batch_specs(version.scorers or ()) if version.scoring_strategy == "python" else []
    if not specs or not rows:
        return rows
    rank_key, rank_score = ranking_of(version.scorers, version.rank_by)
    try:
        pool = sandbox.shared_pool()
    except sandbox.SandboxUnavailable:
        return rows
    merged = [[r.score, r.details or {}, r.error, (r.details or {}).get("qa")] for r in rows]
    extra_ms = 0.0
    samples = [r.attempt.sample if isinstance(r.attempt.sample, dict) else {} for r in rows]
    for spec in specs:
        started = time.perf_counter()
        try:
            results = batch_results(
                code=spec["compute_scores_snippet"],
                config=spec.get("config") or {},
                samples=samples,
                outputs=[(r.attempt.output or "", r.attempt.messages) for r in rows],
                owner=f"draft of challenge {challenge.pk} batch {spec['key']}",
                timeout_ms=version.timeout_ms,
                score_key=rank_score if spec["key"] == rank_key else "",
                sandbox=pool,
            )
        except SnippetInvalid:
            continue  # the form's validation reports it
        extra_ms += (time.perf_counter() - started) * 1000 / len(rows)
        for row, result in zip(merged, results, strict=True):
            score, details, error, qa, _ = merge_batch(
                score=row[0],
                details=row[1],
                error=row[2],
                qa=row[3],
                spec=spec,
                rank_key=rank_key,
                result=result,
            )
            details.pop("pending", None)
            if qa:
                details["qa"] = qa
            row[:] = [score, details, error, qa]
    return [
        replace(r, score=m[0], details=m[1], error=m[2], took_ms=r.took_ms + extra_ms)
        for r, m in zip(rows, merged, strict=True)
    ]


# --- preview leaderboard --------------------------------------------------------------------
# A player's best attempt: (sort_key, created_ms, attempt_id, score). Tuples compare in
# the leaderboard's order.
Best = tuple[float, int, int, float]


@dataclass(frozen=True)
class Standing:
    rank: int
    score: float


@dataclass(frozen=True)
class PreviewRow:
    player_id: int
    external_id: str
    display_name: str
    current: Standing | None
    new: Standing | None

    @property
    def rank_change(self) -> str:
        """ "↑3", "↓1", "=", "new" (not ranked now), "dropped" (not ranked under the new
        setup)."""
        if self.current is None:
            return "new" if self.new is not None else ""
        if self.new is None:
            return "dropped"
        moved = self.current.rank - self.new.rank
        if moved > 0:
            return f"↑{moved}"
        if moved < 0:
            return f"↓{-moved}"
        return "="

    @property
    def direction(self) -> str:
        """up, down, same, new or dropped (for styling)."""
        change = self.rank_change
        return {"↑": "up", "↓": "down", "=": "same"}.get(change[:1], change)

    @property
    def score_change(self) -> float | None:
        if self.current is None or self.new is None:
            return None
        return self.new.score - self.current.score


@dataclass
class Preview:
    current_version: ScoringVersion | None
    current_top: list[PreviewRow]
    new_top: list[PreviewRow]
    player: PreviewRow | None
    players_current: int  # ranked players now (in the sample, if sampled)
    players_new: int  # ranked players under the new setup
    players_compared: int  # ranked now or under the new setup (or both)
    changed: int  # of those, players whose rank would change (including new and dropped)
    attempts_scored: int
    failures: int
    seconds: float
    current_strategy: str = ""
    new_strategy: str = ""
    sample_every: int = 1  # 1: the whole challenge; k: the players whose id % k == 0
    attempts_total: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def sampled(self) -> bool:
        return self.sample_every > 1

    @property
    def scores_comparable(self) -> bool:
        """Score changes mean something only in the same unit (points and points, not
        milliseconds and points)."""
        units = {
            strategies.get_strategy(s).unit for s in (self.current_strategy, self.new_strategy) if s
        }
        return len(units) == 1


def _ranks(best: dict[int, Best]) -> dict[int, Standing]:
    """Competition ranks (1, 2, 2, 4): equal sort keys and times share a rank."""
    standings: dict[int, Standing] = {}
    rank, previous = 0, None
    for position, (player_id, b) in enumerate(sorted(best.items(), key=lambda kv: kv[1]), 1):
        if (b[0], b[1]) != previous:
            rank, previous = position, (b[0], b[1])
        standings[player_id] = Standing(rank, b[3])
    return standings


def _current_best(challenge: Challenge, sample_every: int, also: int | None) -> dict[int, Best]:
    """Each player's entry on the active version's leaderboard."""
    if challenge.active_version_id is None:
        return {}
    entries = LeaderboardEntry.objects.filter(version_id=challenge.active_version_id)
    if sample_every > 1:
        entries = entries.annotate(bucket=Mod("player_id", sample_every))
        entries = entries.filter(Q(bucket=0) | Q(player_id=also or 0))
    return {
        player_id: (sort_key, scoring.epoch_ms(created_at), attempt_id, score)
        for player_id, sort_key, created_at, attempt_id, score in entries.values_list(
            "player_id", "sort_key", "created_at", "attempt_id", "score"
        ).iterator(chunk_size=10_000)
    }


def _attempt_rows(
    challenge: Challenge, sample_every: int, also: int | None
) -> Iterable[Sequence[bulk.AttemptRow]]:
    """The challenge's attempts in batches, as the rescore reads them; a sample is picked
    by the database (reading a million rows to keep a tenth would cost most of the time)."""
    if sample_every > 1:
        yield from _sampled_rows(challenge, sample_every, also)
        return
    bounds = Attempt.objects.filter(challenge=challenge).aggregate(first=Min("pk"), last=Max("pk"))
    if bounds["first"] is None:
        return
    first = bounds["first"]
    while first <= bounds["last"]:
        last = first + READ_SPAN - 1
        rows = bulk.attempt_rows(challenge_id=challenge.pk, first_id=first, last_id=last)
        if rows:
            yield rows
        first = last + 1


def _sampled_rows(
    challenge: Challenge, sample_every: int, also: int | None
) -> Iterable[Sequence[bulk.AttemptRow]]:
    """Every attempt of the players whose id % sample_every == 0 (and of ``also``), in
    the shape of ``bulk.attempt_rows``."""
    picked = (
        Attempt.objects.filter(challenge=challenge)
        .annotate(bucket=Mod("player_id", sample_every))
        .filter(Q(bucket=0) | Q(player_id=also or 0))
        .order_by("pk")
        .values_list(
            "pk",
            "player_id",
            "player__external_id",
            "succeeded",
            "tokens_total",
            "elapsed_ms",
            "rating",
            "created_at",
        )
    )
    batch: list[bulk.AttemptRow] = []
    epoch_ms = scoring.epoch_ms
    for pk, player_id, ext, ok, tokens, elapsed, rating, created in picked.iterator(10_000):
        batch.append((pk, player_id, ext, ok, tokens, elapsed, rating, epoch_ms(created), created))
        if len(batch) == 10_000:
            yield batch
            batch = []
    if batch:
        yield batch


def leaderboard_preview(
    *, challenge: Challenge, setup: dict[str, Any], player: str = "", top: int = TOP
) -> Preview:
    """The top ``top`` under ``setup`` beside the current top, each player's rank and score
    change, how many players' ranks change; and the row of ``player`` (an external id)."""
    started = time.perf_counter()
    version = candidate_version(challenge=challenge, setup=setup)
    notes: list[str] = []
    if setup.get("scoring_strategy") == strategies.PYTHON and batch_specs(
        setup.get("scorers") or ()
    ):
        notes.append(
            "Batch scorers (python_batch) are left out of this preview: after saving they "
            "run over the whole challenge in the background (Try it runs them over the "
            "tried attempts). Attempts a batch scorer ranks are unranked here."
        )
    chosen = Player.objects.filter(external_id=player).first() if player else None
    if player and chosen is None:
        notes.append(f"No player with the id {player!r}.")
    also = chosen.pk if chosen else None

    total = Attempt.objects.filter(challenge=challenge).count()
    sample_every = -(-total // PREVIEW_FULL_LIMIT) if total > PREVIEW_FULL_LIMIT else 1

    compute = scoring.rows_scorer(version=version, challenge=challenge)
    new_best: dict[int, Best] = {}
    scored = failures = 0
    for rows in _attempt_rows(challenge, sample_every, also):
        outcomes = compute(rows)
        scored += len(rows)
        for row, outcome in zip(rows, outcomes, strict=True):
            if outcome.error:
                failures += 1
            if outcome.score is None:
                continue
            key = (outcome.sort_key, row[7], row[0], outcome.score)  # ranked by the engine
            held = new_best.get(row[1])
            if held is None or key < held:
                new_best[row[1]] = key

    current = _ranks(_current_best(challenge, sample_every, also))
    new = _ranks(new_best)
    everyone = set(current) | set(new)
    changed = sum(
        1 for p in everyone if p not in current or p not in new or current[p].rank != new[p].rank
    )

    def top_ids(standings: dict[int, Standing]) -> list[int]:
        return sorted(standings, key=lambda p: (standings[p].rank, p))[:top]

    current_ids, new_ids = top_ids(current), top_ids(new)
    shown = {*current_ids, *new_ids, *([also] if also else [])}
    names = names_now(player_ids=shown)

    def row(player_id: int) -> PreviewRow:
        ext, name = names.get(player_id, ("?", "?"))
        return PreviewRow(player_id, ext, name, current.get(player_id), new.get(player_id))

    return Preview(
        current_version=challenge.active_version,
        current_top=[row(p) for p in current_ids],
        new_top=[row(p) for p in new_ids],
        player=row(also) if also else None,
        players_current=len(current),
        players_new=len(new),
        players_compared=len(everyone),
        changed=changed,
        attempts_scored=scored,
        failures=failures,
        seconds=time.perf_counter() - started,
        current_strategy=(
            challenge.active_version.scoring_strategy if challenge.active_version else ""
        ),
        new_strategy=setup["scoring_strategy"],
        sample_every=sample_every,
        attempts_total=total,
        notes=notes,
    )
