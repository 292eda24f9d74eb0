"""Scoring services: validate a scoring setup and score attempts under a version.

Django-facing glue around ``scoring.engine``: it turns model rows into engine types and
engine errors into field errors.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db.models import TextField
from django.db.models.functions import Cast

from scoring import sandbox
from scoring.engine import strategies
from scoring.engine.config import validate_config
from scoring.engine.metrics import MetricsInvalid, validate_metrics
from scoring.engine.outcome import Outcome, ranked
from scoring.engine.protocol import (
    MAX_TIMEOUT_MS,
    AttemptMetrics,
    ConfigError,
    FieldErrors,
    RegistryError,
    ScoringContext,
)
from scoring.engine.runner import Scorer, ScoringSetup, build_scorer
from scoring.engine.scorers_list import FIELDS as SCORER_FIELDS
from scoring.engine.scorers_list import ScorerList, ScorersInvalid, validate_scorers
from scoring.engine.snippet import (
    AttemptPayload,
    SnippetInvalid,
    SnippetScorer,
    prepare,
)
from scoring.project_registry import registry


class SetupInvalid(FieldErrors):
    """A scoring setup that cannot be saved; ``errors`` maps a field name to a message."""


def setup_validate(*, setup: dict[str, Any]) -> dict[str, Any]:
    """Check a scoring setup (the fields of docs/words-and-data.md) and return it normalised.

    Normalised: the registered entrypoint (never the alias or the caller's string),
    the plugin config with its schema defaults. Raises ``SetupInvalid``.
    """
    out = dict(setup)
    errors: dict[str, str] = {}
    strategy = setup.get("scoring_strategy")
    if strategy not in strategies.STRATEGIES:
        known = ", ".join(strategies.STRATEGIES)
        raise SetupInvalid(
            {"scoring_strategy": f"Unknown strategy {strategy!r}; choose one of: {known}."}
        )
    timeout = setup.get("timeout_ms", 5000)
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int)
        or not 1 <= timeout <= MAX_TIMEOUT_MS
    ):
        errors["timeout_ms"] = f"Must be an integer from 1 to {MAX_TIMEOUT_MS}."

    def unused(empty: Any, *fields: str) -> None:
        for field in fields:
            if setup.get(field, empty) not in (empty, None):
                errors[field] = f"Not used by the {strategy!r} strategy; leave it empty."

    for flag in ("lower_is_better", "sample_with_metrics"):
        value = setup.get(flag, False)
        if not isinstance(value, bool):
            errors[flag] = "Must be true or false."
        out[flag] = value is True
        if strategy != strategies.PYTHON and value is True:
            errors[flag] = f"Only for the 'python' strategy; not used by {strategy!r}."

    if strategy == strategies.PYTHON:
        unused("", "scoring_plugin_id", "scoring_entrypoint")
        folded = _fold_single(setup)
        if folded is not None:
            setup = folded
            out.update(folded)
        found = sandbox.availability()
        if not found.available:
            errors["scoring_strategy"] = found.message
        if setup.get("scorers"):
            _validate_scorers(setup, out, errors)
        else:
            unused("", "rank_by")
            _validate_snippet(setup, out, errors)
    elif strategy == strategies.CUSTOM:
        unused("", "scoring_code", "score_key", "rank_by")
        unused([], "metrics", "scorers")
        _validate_plugin(setup, out, errors)
    else:
        unused(
            "", "scoring_plugin_id", "scoring_entrypoint", "scoring_code", "score_key", "rank_by"
        )
        unused([], "scorers")
        unused({}, "scoring_config")
        unused([], "metrics")
    if errors:
        raise SetupInvalid(errors)
    return out


def code_normalise(code: Any) -> Any:
    """Code as stored and compared: plain ``\\n`` line endings (a browser's textarea sends
    ``\\r\\n``) and exactly one newline after the last non-blank character. Anything
    else is left to the code's author: whitespace inside a line can matter to Python."""
    if not isinstance(code, str) or not code.strip():
        return code
    return code.replace("\r\n", "\n").replace("\r", "\n").rstrip() + "\n"


def setup_same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two setups score the same way: equal once their code is normalised (a save
    that only rewrites line endings makes no version and no rescore)."""

    def normal(setup: dict[str, Any]) -> dict[str, Any]:
        out = dict(setup)
        if "scoring_code" in out:
            out["scoring_code"] = code_normalise(out["scoring_code"]) or ""
        return out

    return normal(a) == normal(b)


def _validate_plugin(setup: dict[str, Any], out: dict[str, Any], errors: dict[str, str]) -> None:
    plugin_id = setup.get("scoring_plugin_id") or ""
    if not plugin_id:
        errors["scoring_plugin_id"] = "Required with the 'custom' strategy: a registered plugin id."
        return
    reg = registry()
    try:
        out["scoring_entrypoint"] = reg.verify(plugin_id, setup.get("scoring_entrypoint") or "")
    except RegistryError as exc:
        field = "scoring_plugin_id" if plugin_id not in reg.ids() else "scoring_entrypoint"
        errors[field] = str(exc)
        return
    try:
        if not callable(getattr(reg.load(plugin_id), "score", None)):
            errors["scoring_plugin_id"] = (
                f"Plugin {plugin_id!r} scores red/blue pairings, not attempts: it has no "
                "score(metrics, config, ctx) method."
            )
            return
        schema = reg.info(plugin_id).config_schema
        out["scoring_config"] = validate_config(schema, setup.get("scoring_config", {}))
    except RegistryError as exc:
        errors["scoring_plugin_id"] = f"The plugin cannot be loaded: {exc}"
    except ConfigError as exc:
        errors["scoring_config"] = exc.field_message


def _validate_snippet(setup: dict[str, Any], out: dict[str, Any], errors: dict[str, str]) -> None:
    """The python strategy's one snippet: the code compiles and defines compute_scores,
    every placeholder has a value, score_key and metrics are well formed."""
    config = setup.get("scoring_config")
    config = {} if config is None else config
    try:
        out["scoring_config"] = config = validate_config(None, config)
    except ConfigError as exc:
        errors["scoring_config"] = exc.field_message
        config = {}
    out["scoring_code"] = code = code_normalise(setup.get("scoring_code"))
    prepared = None
    try:
        prepared = prepare(code, config)
    except SnippetInvalid as exc:
        for field, message in exc.errors.items():
            errors.setdefault(field, message)
    score_key = setup.get("score_key") or ""
    if not isinstance(score_key, str) or len(score_key) > 64 or not score_key.isprintable():
        errors["score_key"] = "The name of one score: at most 64 printable characters."
    elif prepared is not None:
        problem = score_key_problem(prepared.score_names, score_key)
        if problem:
            errors.setdefault("score_key", problem)
    out["score_key"] = score_key
    try:
        out["metrics"] = validate_metrics(setup.get("metrics"))
    except MetricsInvalid as exc:
        errors["metrics"] = str(exc)


def _fold_single(setup: dict[str, Any]) -> dict[str, Any] | None:
    """A list of one scorer without a key (the Python scorer guide's own example) is the
    single-scorer form: stored in the first round's fields, so it ranks, shows and
    exports exactly as they do. ``rank_by`` then names the score alone."""
    scorers = setup.get("scorers")
    if not isinstance(scorers, list) or len(scorers) != 1 or not isinstance(scorers[0], dict):
        return None
    only = scorers[0]
    if only.get("key") or only.get("purpose", "score") != "score":
        return None
    if only.get("type", "python") != "python" or not set(only) <= set(SCORER_FIELDS) - {"key"}:
        return None
    if any(setup.get(name) for name in ("scoring_code", "score_key", "scoring_config", "metrics")):
        return None  # both forms at once: the list's validation names the clash
    rank_by = setup.get("rank_by") or ""
    return {
        **setup,
        "scorers": [],
        "rank_by": "",
        "scoring_code": only.get("compute_scores_snippet"),
        "scoring_config": only.get("config") or {},
        "metrics": only.get("metrics") or [],
        "score_key": rank_by.partition(".")[2] if "." in rank_by else rank_by,
    }


def _validate_scorers(setup: dict[str, Any], out: dict[str, Any], errors: dict[str, str]) -> None:
    """Several scorers: the single-scorer fields stay empty (the list holds everything)."""
    for name, empty in (("scoring_code", ""), ("score_key", ""), ("scoring_config", {})):
        if setup.get(name) not in (empty, None):
            errors[name] = "Leave it empty with 'scorers': each scorer has its own."
    if setup.get("metrics") not in ([], None):
        errors["metrics"] = "Leave it empty with 'scorers': each scorer has its own metrics."
    out.update(scoring_code="", score_key="", scoring_config={}, metrics=[])
    try:
        out["scorers"], out["rank_by"] = validate_scorers(setup["scorers"], setup.get("rank_by"))
    except ScorersInvalid as exc:
        errors.update(exc.errors)


def score_key_problem(names: Iterable[str] | None, score_key: str) -> str:
    """What is wrong with ``score_key`` for a snippet returning the scores ``names`` (None:
    not known without running it; then Try it and the save's probe decide), or ""."""
    if names is None:
        return ""
    names = sorted(names)
    listed = ", ".join(names)
    if not score_key and len(names) > 1:
        return f"compute_scores returns several scores ({listed}): name the one that ranks."
    if score_key and names and score_key not in names:
        return f"compute_scores returns no {score_key!r} score; it returns: {listed}."
    return ""


def setup_of(version: Any) -> ScoringSetup:
    """The engine's view of a scoring version (or a challenge's current setup)."""
    return ScoringSetup(
        strategy=version.scoring_strategy,
        plugin_id=version.scoring_plugin_id,
        entrypoint=version.scoring_entrypoint,
        config=version.scoring_config or {},
        timeout_ms=version.timeout_ms,
        code=version.scoring_code,
        score_key=version.score_key,
        owner=_owner(version),
        scorers=tuple(getattr(version, "scorers", None) or ()),
        rank_by=getattr(version, "rank_by", "") or "",
        lower_is_better=bool(getattr(version, "lower_is_better", False)),
        sample_with_metrics=bool(getattr(version, "sample_with_metrics", False)),
    )


def _owner(version: Any) -> str:
    """Whose code a sandbox worker runs: a saved version, or the unsaved draft of one
    challenge (Try it, Preview): drafts of two challenges never share a worker."""
    if version.pk is not None:
        return f"{type(version).__name__} {version.pk}"
    return f"draft of challenge {getattr(version, 'challenge_id', None)}"


def scorer_for(version: Any) -> Scorer:
    """Raises ValueError when the version's setup can no longer run (e.g. its plugin was
    unregistered, or this machine has no sandbox for its snippet); callers record that
    as every attempt's error."""
    pool = sandbox.shared_pool() if version.scoring_strategy == strategies.PYTHON else None
    return build_scorer(setup_of(version), registry(), pool)


def runs_in_process(version: Any) -> bool:
    """Whether the version's scorer is a built-in plugin this process runs itself (no
    sandbox: microseconds an attempt); False for a setup that cannot run."""
    try:
        info = registry().info(version.scoring_plugin_id)
    except ValueError:
        return False
    return version.scoring_strategy == strategies.CUSTOM and info.runs_in_process


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def epoch_ms(dt: datetime) -> int:
    """Exact epoch milliseconds (integer arithmetic: a float loses a millisecond)."""
    return (dt - _EPOCH) // _MS


class _Contexts:
    """One ScoringContext per player of a challenge (they differ only by end user), kept
    under the player's id (a rescore's rows) or external id (``items_from_attempts``)."""

    def __init__(self, challenge: Any, timeout_ms: int):
        self._id = None if challenge.pk is None else str(challenge.pk)
        self._rest = (challenge.tenant_id, challenge.app_id, challenge.workflow_id, timeout_ms)
        self.cache: dict[Any, ScoringContext] = {}

    def __call__(self, end_user_id: str | None, key: Any = None) -> ScoringContext:
        key = end_user_id if key is None else key
        ctx = self.cache.get(key)
        if ctx is None:  # one per player of a rescore's chunk: the tuple built directly
            ctx = tuple.__new__(ScoringContext, (self._id, end_user_id, *self._rest))
            self.cache[key] = ctx
        return ctx


Item = tuple[AttemptMetrics, ScoringContext]


class Items(list):
    """Engine inputs for Attempt instances, which can also give the attempts' payloads
    (sample, output, messages) that snippet scorers need; only they pay for it."""

    def __init__(self, items: Iterable[Item], attempts: Sequence[Any]):
        super().__init__(items)
        self.attempts = attempts

    def payloads(self, *, arity: int = 2) -> list[AttemptPayload]:
        attempts = self.attempts
        fields = {"sample", "output", "messages"}
        deferred = [a.pk for a in attempts if fields & a.get_deferred_fields()]
        loaded: dict[int, tuple[Any, str, Any]] = {}
        if deferred:  # read with .only(): one query for them all, not one per attempt
            model = type(attempts[0])
            rows = model._default_manager.filter(pk__in=deferred)
            loaded = {pk: rest for pk, *rest in rows.values_list("pk", *sorted(fields))}
        out = []
        for a in attempts:
            if a.pk in loaded:
                messages, output, sample = loaded[a.pk]  # sorted field order
            else:
                sample, output, messages = a.sample, a.output, a.messages
            out.append(_payload(json.dumps(sample), output, json.dumps(messages), arity))
        return out


def _payload(sample_json: str | None, output: str | None, messages_json: str | None, arity: int):
    if arity == 1:  # compute_scores(sample): output and messages are never sent
        return AttemptPayload(sample_json or "null")
    return AttemptPayload(sample_json or "null", output or "", messages_json or "null")


def items_from_attempts(attempts: Iterable[Any], *, challenge: Any, timeout_ms: int) -> Items:
    """Engine inputs for Attempt instances (each with ``player`` loaded, or a
    ``player_external_id`` attribute)."""
    attempts = list(attempts)
    context = _Contexts(challenge, timeout_ms)
    items = []
    for a in attempts:
        external_id = getattr(a, "player_external_id", None)
        if external_id is None:
            external_id = a.player.external_id
        metrics = AttemptMetrics(
            a.succeeded, a.tokens_total, a.elapsed_ms, a.rating, epoch_ms(a.created_at)
        )
        items.append((metrics, context(external_id)))
    return Items(items, attempts)


def _row_payloads(
    challenge: Any, rows: Sequence[Any], arity: int
) -> dict[int, tuple[str | None, str | None, str | None]]:
    """Payloads of attempt rows (id first, in id order) by id, as the database's own
    JSON text: one range query, nothing decoded and encoded again."""
    if not rows:
        return {}
    columns = ["pk", Cast("sample", TextField())]
    if arity == 2:
        columns += ["output", Cast("messages", TextField())]
    query = challenge.attempts.filter(pk__gte=rows[0][0], pk__lte=rows[-1][0]).order_by()
    return {row[0]: (*row[1:], None, None)[:3] for row in query.values_list(*columns)}


def rows_scorer(
    *,
    version: Any,
    challenge: Any,
    attempts: Sequence[Any] | None = None,
    names: Mapping[int, str] | None = None,
) -> Callable[[Sequence[Any]], list[Outcome]]:
    """A function scoring batches of plain attempt rows under ``version`` (the scorer is
    built once, the contexts cached across batches); never raises for a scorer's fault.

    ``attempts``: every row the function will be given, when known. A snippet scorer
    then reads their payloads here, at once, rather than per batch: the batches are
    scored while PostgreSQL's COPY holds the connection, when no query can run.
    ``names``: the players' external ids by player id, for rows read without them."""
    context = _Contexts(challenge, version.timeout_ms)
    try:
        scorer = scorer_for(version)
    except ValueError as exc:
        failure = Outcome.failed(f"this scoring setup cannot run: {exc}")
        return lambda rows: [failure] * len(rows)

    contexts = context.cache  # looked up inline: a million method calls add up
    snippet = scorer if payload_arity(scorer) else None
    prefetched = None
    if snippet is not None and attempts is not None:
        prefetched = _row_payloads(challenge, attempts, payload_arity(snippet))

    key = _sort_key(version)

    def new_context(row: Any) -> ScoringContext:
        return context(row[2] if names is None else names[row[1]], row[1])

    def score(rows: Sequence[Any]) -> list[Outcome]:
        new = tuple.__new__  # a million records: built directly, as NamedTuple._make does
        items = [
            (new(AttemptMetrics, r[3:8]), contexts[r[1]] if r[1] in contexts else new_context(r))
            for r in rows
        ]
        if snippet is None:
            return ranked(scorer.score_many(items), key)
        arity = payload_arity(snippet)
        found = prefetched if prefetched is not None else _row_payloads(challenge, rows, arity)
        missing = (None, None, None)
        payloads = [_payload(*found.get(r[0], missing), arity) for r in rows]
        return ranked(snippet.score_many(items, payloads), key)

    if isinstance(scorer, ScorerList) and attempts:
        # Several scorers take turns on the pool's few workers: each batch would start
        # them afresh. Every attempt of the range is scored at the first call instead
        # (one turn per scorer), and each batch is served from that.
        done: dict[int, Outcome] = {}

        def score_all(rows: Sequence[Any]) -> list[Outcome]:
            if not done:
                done.update(zip((a[0] for a in attempts), score(attempts), strict=True))
            return [done[r[0]] if r[0] in done else score([r])[0] for r in rows]

        return score_all

    return score


def scores_compute(*, version: Any, items: Sequence[Item]) -> list[Outcome]:
    """One outcome per item under ``version``; never raises for a scorer's fault."""
    try:
        scorer = scorer_for(version)
    except ValueError as exc:
        return [Outcome.failed(f"this scoring setup cannot run: {exc}")] * len(items)
    arity = payload_arity(scorer)
    if arity:
        payloads = items.payloads(arity=arity) if isinstance(items, Items) else None
        return ranked(scorer.score_many(items, payloads), _sort_key(version))
    return ranked(scorer.score_many(items), _sort_key(version))


def _sort_key(version: Any) -> Callable[[float], float]:
    """Which way the version's setup ranks (the engine says: ``strategies.sort_key_for``)."""
    return strategies.sort_key_for(
        version.scoring_strategy, lower_is_better=getattr(version, "lower_is_better", False)
    )


def payload_arity(scorer: Any) -> int:
    """0 for a scorer that reads metrics only; else 1 (samples) or 2 (and outputs)."""
    if isinstance(scorer, SnippetScorer):
        return scorer.program.arity
    if isinstance(scorer, ScorerList):
        return scorer.arity
    return 0


def sort_key_of(version: Any, score: float | None) -> float | None:
    """The ranking key of one score under a version (outcomes carry theirs:
    ``Outcome.sort_key``)."""
    return None if score is None else _sort_key(version)(score)
