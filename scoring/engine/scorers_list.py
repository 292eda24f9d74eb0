"""Several scorers per python challenge (docs/writing-scorers.md).

A python challenge may carry ``scorers``, an ordered list of 1–8 of

    {"key": "completeness", "type": "python" | "python_batch",
     "display_name": "Completeness", "purpose": "score" | "qa",
     "compute_scores_snippet": "def compute_scores(sample): ...",
     "config": {...}, "metrics": [...]}

and ``rank_by: "<scorer key>.<score name>"``, the score that ranks the leaderboard.
Each ``python`` scorer is an ordinary snippet (``snippet.py``) run in the sandbox under
the same failure rules. One attempt's outcome is the ranking scorer's; the other
scorers' results ride along in its details:

    {"scores": {...}, "metadata": {...},          # the ranking scorer's, as before
     "scorers": {key: {"scores", "metadata", "error"?}},   # the other score scorers
     "qa": {key: {"scores", "metadata", "failed": [...], "error"?}}}  # QA scorers

``qa`` is taken out of the details before they are stored (it has a column of its own,
for admins only). A QA check *fails* when its value is 0 (a check returns True when it
passes), or when the QA scorer itself failed. Only a failing *ranking* scorer makes the
attempt unranked: the others' failures stay in their own entries.

``python_batch`` scorers score the whole challenge at once, in the background
(``shims.py``, run by the batch service); here they leave their entry out and, when
one ranks, the attempt waits (``PENDING``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .config import validate_config
from .metrics import MetricsInvalid, validate_metrics
from .outcome import Outcome
from .protocol import AttemptMetrics, ConfigError, FieldErrors, ScoringContext
from .shims import batch_check
from .snippet import (
    AttemptPayload,
    Program,
    Sandbox,
    SnippetInvalid,
    SnippetScorer,
    SnippetSetup,
    encode_item,
    interpret,
    prepare,
)
from .strategies import PYTHON, get_strategy

SCORE, QA = "score", "qa"
PYTHON_TYPE, BATCH_TYPE = "python", "python_batch"
TYPES = (PYTHON_TYPE, BATCH_TYPE)
PURPOSES = (SCORE, QA)
MAX_SCORERS = 8
KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")
FIELDS = ("key", "type", "display_name", "purpose", "compute_scores_snippet", "config", "metrics")
PENDING = "pending: waiting for the next batch run"


class ScorersInvalid(FieldErrors):
    """A scorers list that cannot be saved; ``errors`` maps a field path
    (``scorers[2].config``, ``rank_by``) to a message."""


def validate_scorers(scorers: Any, rank_by: Any) -> tuple[list[dict[str, Any]], str]:
    """The list normalised (every field present) and ``rank_by`` filled in when only
    one score is possible. Raises ScorersInvalid naming each bad field."""
    errors: dict[str, str] = {}
    if not isinstance(scorers, list) or not 1 <= len(scorers) <= MAX_SCORERS:
        raise ScorersInvalid({"scorers": f"A list of 1 to {MAX_SCORERS} scorers."})
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for n, raw in enumerate(scorers):
        where = f"scorers[{n}]"
        if not isinstance(raw, Mapping):
            errors[where] = "Must be an object with key, type and compute_scores_snippet."
            continue
        unknown = sorted(set(raw) - set(FIELDS))
        if unknown:
            errors[f"{where}.{unknown[0]}"] = f"Unknown field; known: {', '.join(FIELDS)}."
            continue
        key = raw.get("key")
        if not isinstance(key, str) or not KEY.fullmatch(key):
            errors[f"{where}.key"] = "Required: 1–64 letters, digits, '_' or '-'."
        elif key in seen:
            errors[f"{where}.key"] = f"The key {key!r} is used by another scorer."
        else:
            seen.add(key)
        kind = raw.get("type", PYTHON_TYPE)
        if kind not in TYPES:
            errors[f"{where}.type"] = f"One of: {', '.join(TYPES)}."
        purpose = raw.get("purpose") or SCORE
        if purpose not in PURPOSES:
            errors[f"{where}.purpose"] = f"One of: {', '.join(PURPOSES)}."
        name = raw.get("display_name") or ""
        if not isinstance(name, str) or len(name) > 100 or not name.isprintable():
            errors[f"{where}.display_name"] = "At most 100 printable characters."
            name = ""
        config = raw.get("config")
        try:
            config = validate_config(None, {} if config is None else config)
        except ConfigError as exc:
            errors[f"{where}.config"] = exc.field_message
            config = {}
        code = raw.get("compute_scores_snippet")
        try:
            if kind == BATCH_TYPE:
                batch_check(code, config)
            else:
                prepare(code, config)
        except SnippetInvalid as exc:
            for field, message in exc.errors.items():
                sub = "config" if field == "scoring_config" else "compute_scores_snippet"
                errors.setdefault(f"{where}.{sub}", message)
        try:
            metrics = validate_metrics(raw.get("metrics"))
        except MetricsInvalid as exc:
            errors[f"{where}.metrics"] = str(exc)
            metrics = []
        out.append(
            {
                "key": key,
                "type": kind,
                "display_name": name or (key if isinstance(key, str) else ""),
                "purpose": purpose,
                "compute_scores_snippet": code,
                "config": config,
                "metrics": metrics,
            }
        )
    if not any(s["purpose"] == SCORE for s in out):
        errors.setdefault("scorers", "At least one scorer must have purpose 'score'.")
    if rank_by in (None, ""):
        rank_by = ""
    message = _rank_by_error(out, rank_by)
    if message:
        errors["rank_by"] = message
    if errors:
        raise ScorersInvalid(errors)
    return out, rank_by


def _rank_by_error(scorers: list[dict[str, Any]], rank_by: Any) -> str:
    """Why ``rank_by`` cannot rank this list ("" when it can)."""
    if not isinstance(rank_by, str) or len(rank_by) > 200:
        return "'<scorer key>.<score name>'."
    if not rank_by:
        return ""
    key, _, score = rank_by.partition(".")
    found = next((s for s in scorers if s["key"] == key), None)
    if found is None or not score:
        keys = ", ".join(str(s["key"]) for s in scorers)
        return f"'<scorer key>.<score name>' with a key among: {keys}."
    if found["purpose"] == QA:
        return f"{key!r} is a QA scorer; QA is never ranked."
    if not score.isprintable() or len(score) > 64:
        return "The score name: 1–64 printable characters."
    return ""


def ranking_of(scorers: Sequence[Mapping[str, Any]], rank_by: str) -> tuple[str, str]:
    """(scorer key, score name) that ranks; the score name is "" when the ranking
    scorer's only score ranks (as with a single-score snippet)."""
    if rank_by:
        key, _, score = rank_by.partition(".")
        return key, score
    first = next(s for s in scorers if s.get("purpose", SCORE) == SCORE)
    return first["key"], ""


def _entry(result: Any, *, qa: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {"scores": result.scores, "metadata": result.metadata}
    if not result.scores and result.outcome.error:
        entry["error"] = result.outcome.error
    if qa:
        entry["failed"] = [name for name, value in result.scores.items() if value == 0.0]
    return entry


class ScorerList:
    """Scores attempts with every per-attempt scorer of a list; never raises for what a
    snippet does. ``score_many`` takes the attempts' payloads, as SnippetScorer's does."""

    def __init__(
        self,
        scorers: Sequence[Mapping[str, Any]],
        rank_by: str,
        *,
        timeout_ms: int,
        owner: str,
        sandbox: Sandbox,
    ):
        self.strategy = get_strategy(PYTHON)
        self.specs = list(scorers)
        self.rank_key, self.rank_score = ranking_of(self.specs, rank_by)
        self.runners: list[tuple[Mapping[str, Any], SnippetScorer | None]] = []
        for spec in self.specs:
            runner = None
            if spec.get("type", PYTHON_TYPE) == PYTHON_TYPE:
                ranks = spec["key"] == self.rank_key
                runner = SnippetScorer(
                    SnippetSetup(
                        code=spec["compute_scores_snippet"],
                        config=spec.get("config") or {},
                        score_key=self.rank_score if ranks else "",
                        timeout_ms=timeout_ms,
                        owner=f"{owner} scorer {spec['key']}",
                    ),
                    sandbox,
                )
            self.runners.append((spec, runner))
        arities = [r.program.arity for _, r in self.runners if r is not None]
        self.arity = max(arities, default=1)
        live = [(s["key"], r) for s, r in self.runners if r is not None]
        self.sandbox = sandbox
        # Two or more per-attempt scorers run as one program (one worker turn per batch,
        # not one per scorer: the pool has a few workers, and switching programs starts
        # them afresh). An attempt the joint run cannot answer as a whole (a timeout, a
        # result over the size cap, a crash) is scored by each scorer alone.
        self.joint: Program | None = None
        if len(live) > 1:
            self.joint = Program(
                owner=f"{owner} scorers",
                code=joint_code([(key, r.program) for key, r in live]),
                arity=self.arity,
                is_async=any(r.program.is_async for _, r in live),
                timeout_ms=min(timeout_ms * len(live), 60_000),
            )

    def _score_key(self, key: str) -> str:
        return self.rank_score if key == self.rank_key else ""

    def results(
        self,
        items: Sequence[tuple[AttemptMetrics, ScoringContext]],
        payloads: Sequence[AttemptPayload] | None = None,
    ) -> dict[str, list[Any]]:
        """Each per-attempt scorer's snippet Results, by key (batch scorers absent)."""
        live = [(spec["key"], r) for spec, r in self.runners if r is not None]
        if self.joint is None or not items:
            return {key: runner.results(items, payloads) for key, runner in live}
        if payloads is None:
            payloads = [AttemptPayload()] * len(items)
        encoded = [
            encode_item(metrics, payload, self.arity)
            for (metrics, _), payload in zip(items, payloads, strict=True)
        ]
        out: dict[str, list[Any]] = {key: [None] * len(items) for key, _ in live}
        alone: list[int] = []
        for i, (ok, value, _ms) in enumerate(self.sandbox.run(self.joint, encoded)):
            answers = value if ok and type(value) is dict else None
            if answers is None or any(_joint_answer(answers.get(k)) is None for k, _ in live):
                alone.append(i)
                continue
            for key, _ in live:
                answer = _joint_answer(answers[key])
                assert answer is not None  # checked just above
                out[key][i] = interpret(answer, self._score_key(key))
        if alone:
            subset_items = [items[i] for i in alone]
            subset_payloads = [payloads[i] for i in alone]
            for key, runner in live:
                for i, result in zip(
                    alone, runner.results(subset_items, subset_payloads), strict=True
                ):
                    out[key][i] = result
        return out

    def score_many(
        self,
        items: Sequence[tuple[AttemptMetrics, ScoringContext]],
        payloads: Sequence[AttemptPayload] | None = None,
    ) -> list[Outcome]:
        return combine(self.specs, self.rank_key, self.results(items, payloads), len(items))


def _joint_answer(entry: Any) -> tuple[bool, Any, float | None] | None:
    """One scorer's part of a joint answer as a raw snippet answer, or None when it is
    not [0 or 1, value, ms]."""
    if type(entry) is not list or len(entry) != 3 or entry[0] not in (0, 1):
        return None
    ms = entry[2] if type(entry[2]) is float else None
    if entry[0] == 1 and type(entry[1]) is not str:
        return None
    return (entry[0] == 0, entry[1], ms)


_JOINT = """

import copy as _podium_copy
import time as _podium_time

_podium_scorers = []
for _podium_key, _podium_source, _podium_arity in _PODIUM_SOURCES:
    _podium_namespace = {{"__name__": "scorer_" + _podium_key}}
    exec(compile(_podium_source, "<scorer " + _podium_key + ">", "exec"), _podium_namespace)
    _podium_scorers.append(
        (_podium_key, _podium_namespace["compute_scores"], _podium_arity, _podium_namespace)
    )
del _podium_key, _podium_source, _podium_arity, _podium_namespace


def _podium_own(solver_output):
    # A scorer's own copy of the solver output: nothing it changes reaches another.
    if solver_output is None:
        return None
    metrics = solver_output.metrics
    return type(solver_output)(
        solver_output.output,
        _podium_copy.deepcopy(solver_output.messages),
        dict(metrics) if metrics is not None else None,
    )


{kw}def compute_scores(sample, solver_output=None):
    answers = {{}}
    metrics = globals().get("attempt_metrics") or {{}}
    for key, function, arity, namespace in _podium_scorers:
        started = _podium_time.perf_counter()
        try:
            # Each scorer its own deep copies: a scorer that changes its sample, the
            # solver output or the metrics changes no other's.
            own = _podium_copy.deepcopy(sample)
            namespace["attempt_metrics"] = dict(metrics)
            if arity == 1:
                result = function(own)
            else:
                result = function(own, _podium_own(solver_output))
            if {is_async} and hasattr(result, "__await__"):
                result = {aw}result
            answers[key] = [0, result, (_podium_time.perf_counter() - started) * 1000.0]
        except Exception as exc:
            text = (type(exc).__name__ + ": " + str(exc))[:2000]
            answers[key] = [1, text, (_podium_time.perf_counter() - started) * 1000.0]
    return answers
"""


def joint_code(programs: Sequence[tuple[str, Program]]) -> str:
    """One module running several scorers' (rendered) code, each in its own namespace;
    its compute_scores answers {key: [0, result, ms] or [1, error, ms]}."""
    is_async = any(p.is_async for _, p in programs)
    sources = [(key, p.code, p.arity) for key, p in programs]
    return f"_PODIUM_SOURCES = {sources!r}\n" + _JOINT.format(
        kw="async " if is_async else "", aw="await " if is_async else "", is_async=is_async
    )


def combine(
    specs: Sequence[Mapping[str, Any]],
    rank_key: str,
    results: Mapping[str, Sequence[Any]],
    count: int,
) -> list[Outcome]:
    """One Outcome per attempt from each scorer's Results (a batch scorer has none here:
    ``merge_batch`` adds a batch run's)."""
    outcomes = []
    for i in range(count):
        ranking = results.get(rank_key)
        if ranking is None:
            details: dict[str, Any] = {"scores": {}, "metadata": {}, "pending": True}
            score, error = None, ""
        else:
            r = ranking[i]
            details = dict(r.outcome.details or {"scores": r.scores, "metadata": r.metadata})
            score, error = r.outcome.score, r.outcome.error
        others: dict[str, Any] = {}
        qa: dict[str, Any] = {}
        for spec in specs:
            key = spec["key"]
            if key == rank_key or key not in results:
                continue
            if spec.get("purpose", SCORE) == QA:
                qa[key] = _entry(results[key][i], qa=True)
            else:
                others[key] = _entry(results[key][i], qa=False)
        if others:
            details["scorers"] = others
        if qa:
            details["qa"] = qa
        outcomes.append(Outcome(score, details, error))
    return outcomes


def split_qa(details: Any) -> tuple[Any, dict[str, Any] | None, int]:
    """(details without QA, the QA results, how many QA checks or scorers failed)."""
    if type(details) is not dict or "qa" not in details:
        return details, None, 0
    details = dict(details)
    qa = details.pop("qa")
    failed = sum(len(e.get("failed", ())) + (1 if "error" in e else 0) for e in qa.values())
    return details, qa, min(failed, 32767)


def batch_specs(scorers: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [s for s in scorers if s.get("type", PYTHON_TYPE) == BATCH_TYPE]


def merge_batch(
    *,
    score: float | None,
    details: Any,
    error: str,
    qa: Any,
    spec: Mapping[str, Any],
    rank_key: str,
    result: Any,
) -> tuple[float | None, dict[str, Any], str, dict[str, Any] | None, int]:
    """A stored score row with one batch scorer's Result merged in: (score, details,
    error, qa, qa_failed). Only a ranking batch scorer changes the score."""
    details = dict(details) if isinstance(details, dict) else {"scores": {}, "metadata": {}}
    qa = dict(qa) if isinstance(qa, dict) else None
    key = spec["key"]
    if spec.get("purpose", SCORE) == QA:
        qa = {**(qa or {}), key: _entry(result, qa=True)}
    elif key == rank_key:
        others = details.get("scorers")
        details = dict(result.outcome.details or {"scores": result.scores, "metadata": {}})
        if others:
            details["scorers"] = others
        score, error = result.outcome.score, result.outcome.error
    else:
        details["scorers"] = {**(details.get("scorers") or {}), key: _entry(result, qa=False)}
    _, _, failed = split_qa({"qa": qa} if qa else None)
    return score, details, error, qa, failed
