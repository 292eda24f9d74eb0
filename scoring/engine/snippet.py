"""Python snippet scorers (docs/scorers.md, "Python snippet scorers"): the contract.

A snippet author needs only this docstring:

    def compute_scores(sample):                  # or (sample, solver_output); def or async def
        field = "<< config.field >>"              # filled from scoring_config["field"]
        value = sample.get(field)
        return {"is_complete": bool(value), "has_field": field in sample}

- ``sample`` is exactly the attempt's ``sample`` object (the dataset row), nothing added;
  ``solver_output`` has ``.output`` (text), ``.messages`` (a list) and ``.metrics`` (the
  attempt's five metrics: ``succeeded``, ``tokens_total``, ``elapsed_ms``, ``rating``,
  ``created_at``). Either signature may also read the module global ``attempt_metrics``
  (the same dict), set before each call. Python challenges saved before this rule (the
  setup's ``sample_with_metrics``) still get the metrics merged into ``sample``.
- The reference's annotations run as written: ``SolverOutput`` and ``Any`` are defined
  in the snippet's namespace.
- ``<< config.KEY >>`` is replaced by ``scoring_config["KEY"]`` before the code runs:
  inside a plain string literal by the value's text (escaped), standing alone by a Python
  literal of the value (``<< config.threshold >>`` → ``0.5``); in a comment it stays as
  it is. A value is data, never code: in an f-string, a raw or bytes literal, a string
  used as a ``.format``/``%`` template or across a comment and code, the code is refused
  with the line, as is a placeholder without a value.
- Return a flat dict (any Mapping) of scores (``{"accuracy": 0.95, "is_correct": True}``)
  or ``{"scores": {...}, "metadata": {...}}``. Scores are numbers, booleans (1.0/0.0),
  strings (labels, at most 256 characters: for frequency and classification metrics) or
  None. Metadata is any JSON, stored with the attempt, never aggregated.
- ``score_key`` names the score that ranks the leaderboard (not needed with one score).
  No numeric value there → the attempt gets ``score = None`` and the reason. The ranking
  value is not clamped (a negative error ranks); the setup's ``lower_is_better`` says
  which way it orders.
- At most 64 scores and 64 metadata keys, each name 1–64 printable characters; integers
  within ±2**53; no NaN or infinity; 16 KiB of JSON in all. An exception, a timeout or a
  result outside these rules gives ``score = None`` with the error kept for admins.

This module checks code on save (``prepare``), turns attempts into the sandbox's input
and its answers into outcomes (``SnippetScorer``), trusting nothing that comes back.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from . import placeholders
from .outcome import MAX_DETAILS_BYTES as MAX_DETAILS
from .outcome import Outcome
from .placeholders import PLACEHOLDER
from .protocol import AttemptMetrics, FieldErrors, ScoringContext
from .strategies import PYTHON, get_strategy

FUNCTION = "compute_scores"
MAX_CODE_CHARS = 100_000
MAX_KEYS = 64
MAX_KEY_CHARS = 64
MAX_DEPTH = 16
MAX_LABEL_CHARS = 256
_MAX_SAFE_INT = 2**53


class SnippetInvalid(FieldErrors):
    """Code that cannot be saved; ``errors`` maps a setup field to a message."""


# --- checking and preparing the code (on save, and before it runs) --------------------------
@dataclass(frozen=True)
class PreparedCode:
    code: str  # placeholders filled in
    arity: int  # 1: compute_scores(sample); 2: compute_scores(sample, solver_output)
    is_async: bool
    # The score names compute_scores can return, when every return statement is a dict
    # literal with literal keys; None when they cannot be known without running it.
    score_names: frozenset[str] | None = None


def prepare(code: Any, config: dict[str, Any]) -> PreparedCode:
    """Fill the placeholders and check the code statically. Raises SnippetInvalid."""
    if not isinstance(code, str) or not code.strip():
        raise SnippetInvalid({"scoring_code": f"Required: Python code defining {FUNCTION}."})
    if len(code) > MAX_CODE_CHARS:
        raise SnippetInvalid({"scoring_code": f"At most {MAX_CODE_CHARS:,} characters."})
    if "\x00" in code:
        line = code.count("\n", 0, code.index("\x00")) + 1
        raise SnippetInvalid({"scoring_code": f"Line {line}: the code contains a null byte."})
    missing = {}
    for match in PLACEHOLDER.finditer(code):
        key = match.group(1)
        if config.get(key) is None and key not in missing:
            missing[key] = code.count("\n", 0, match.start()) + 1
    if missing:
        raise SnippetInvalid(
            {
                "scoring_config": "; ".join(
                    f"no value for << config.{key} >> (used on line {line})"
                    for key, line in missing.items()
                )
            }
        )
    rendered = render(code, config)
    try:
        tree = ast.parse(rendered, "<snippet>")
    except SyntaxError as exc:
        raise SnippetInvalid({"scoring_code": f"Line {exc.lineno}: {exc.msg}."}) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise SnippetInvalid({"scoring_code": f"The code cannot be parsed: {exc}."}) from None
    arity, is_async = _entry_point(tree)
    return PreparedCode(rendered, arity, is_async, _score_names(tree))


def _literal_keys(node: ast.expr | None) -> frozenset[str] | None:
    """The keys of a dict literal whose keys are all string literals, else None."""
    if not isinstance(node, ast.Dict) or any(
        not (isinstance(k, ast.Constant) and isinstance(k.value, str)) for k in node.keys
    ):
        return None
    return frozenset(k.value for k in node.keys)  # type: ignore[union-attr]


def _returns(node: ast.AST) -> list[ast.Return]:
    """The return statements of a function body, not of the functions nested in it."""
    found = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if isinstance(child, ast.Return):
            found.append(child)
        found.extend(_returns(child))
    return found


def _score_names(tree: ast.Module) -> frozenset[str] | None:
    """What the last compute_scores returns, read from the code without running it: the
    union of the score names of its return statements when each returns a dict literal
    (flat, or ``{"scores": {...}, "metadata": ...}`` with a literal ``scores``)."""
    function = [
        n
        for n in tree.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == FUNCTION
    ][-1]
    names: set[str] = set()
    returns = _returns(function)
    if not returns:
        return None
    for statement in returns:
        keys = _literal_keys(statement.value)
        if keys is None:
            return None
        if "scores" in keys:
            assert isinstance(statement.value, ast.Dict)
            inner = statement.value.values[
                [k.value for k in statement.value.keys].index("scores")  # type: ignore[union-attr]
            ]
            keys = _literal_keys(inner)
            if keys is None:
                return None
        names |= keys
    return frozenset(names)


def _entry_point(tree: ast.Module) -> tuple[int, bool]:
    found: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == FUNCTION:
            found = node  # the last definition wins, as when the module runs
    if found is None:
        raise SnippetInvalid(
            {
                "scoring_code": f"Define {FUNCTION}(sample) or {FUNCTION}(sample, solver_output)"
                " at the top level (def or async def)."
            }
        )
    args = found.args
    positional = len(args.posonlyargs) + len(args.args)
    required = positional - len(args.defaults)
    if any(default is None for default in args.kw_defaults):
        raise SnippetInvalid(
            {
                "scoring_code": f"Line {found.lineno}: {FUNCTION} has a required "
                "keyword-only parameter."
            }
        )

    def accepts(count: int) -> bool:
        return required <= count and (count <= positional or args.vararg is not None)

    if accepts(2) and (positional >= 2 or args.vararg is not None):
        arity = 2
    elif accepts(1):
        arity = 1
    else:
        raise SnippetInvalid(
            {
                "scoring_code": f"Line {found.lineno}: {FUNCTION} must take 1 or 2 parameters "
                "(sample, and optionally solver_output)."
            }
        )
    return arity, isinstance(found, ast.AsyncFunctionDef)


def render(code: str, config: dict[str, Any]) -> str:
    """The code with every placeholder filled (``scoring.engine.placeholders``). Raises
    SnippetInvalid where a placeholder may not stand or its value cannot be data."""
    try:
        return placeholders.render(code, config)
    except placeholders.PlaceholderInvalid as exc:
        raise SnippetInvalid({"scoring_code": str(exc)}) from None


# --- the sandbox's input and answers ----------------------------------------------------------
class AttemptPayload(NamedTuple):
    """The parts of an attempt a snippet sees besides its metrics, as JSON text."""

    sample_json: str = "null"
    output: str = ""
    messages_json: str = "null"


_EMPTY = AttemptPayload()


@dataclass(frozen=True)
class Program:
    """What a sandbox worker runs. ``owner`` names whose code it is (a challenge's
    version): a worker never runs two owners' code, even the same text."""

    owner: str
    code: str
    arity: int
    is_async: bool
    timeout_ms: int


# One attempt's raw answer from the sandbox: (True, the returned dict, ms) or
# (False, error text, ms); ms may be None.
Raw = tuple[bool, Any, float | None]


class Sandbox(Protocol):
    def run(self, program: Program, items: Sequence[str]) -> list[Raw]: ...


def _int_json(value: int | None) -> str:
    return "null" if value is None else f"{value:d}"


def encode_item(metrics: AttemptMetrics, payload: AttemptPayload, arity: int) -> str:
    """One attempt as the worker reads it: [sample, metrics(, output, messages)]."""
    m = metrics
    head = (
        f"[{payload.sample_json},[{'true' if m.succeeded else 'false'},"
        f"{_int_json(m.tokens_total)},{_int_json(m.elapsed_ms)},{_int_json(m.rating)},"
        f"{_int_json(m.created_at)}]"
    )
    if arity == 1:
        return head + "]"
    return f"{head},{json.dumps(payload.output)},{payload.messages_json}]"


class Rejected(ValueError):
    pass


def _key(key: Any, where: str) -> str:
    if type(key) is not str or not 1 <= len(key) <= MAX_KEY_CHARS or not key.isprintable():
        shown = repr(key)[:40]
        raise Rejected(f"{where} name {shown} is not 1–{MAX_KEY_CHARS} printable characters")
    return key


def _score_value(key: str, value: Any) -> float | str | None:
    kind = type(value)
    if kind is float:
        if value != value or value in (math.inf, -math.inf):
            raise Rejected(f"score {key!r} is {value}, not a finite number")
        return value
    if kind is bool:
        return 1.0 if value else 0.0
    if kind is int:
        if not -_MAX_SAFE_INT <= value <= _MAX_SAFE_INT:
            raise Rejected(f"score {key!r} is an integer beyond ±2**53")
        return float(value)
    if value is None:
        return None
    if kind is str:
        if len(value) > MAX_LABEL_CHARS or not _storable(value):
            raise Rejected(
                f"score {key!r} is a label over {MAX_LABEL_CHARS} characters or not storable text"
            )
        return value
    raise Rejected(f"score {key!r} is {kind.__name__}, not a number, a label or None")


def _metadata(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if type(value) is not dict:
        raise Rejected(f"'metadata' is {type(value).__name__}, not a dict")
    if len(value) > MAX_KEYS:
        raise Rejected(f"'metadata' has {len(value)} keys; at most {MAX_KEYS}")
    for key in value:
        _key(key, "a metadata")
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if kind is dict or kind is list:
            if depth >= MAX_DEPTH:
                raise Rejected(f"'metadata' is nested over {MAX_DEPTH} levels deep")
            if kind is dict:
                for key, sub in item.items():
                    if type(key) is not str or not _storable(key):
                        raise Rejected("a metadata key is not storable text")
                    stack.append((sub, depth + 1))
            else:
                stack.extend((sub, depth + 1) for sub in item)
        elif kind is str:
            if not _storable(item):
                raise Rejected("metadata text holds a null character or a lone surrogate")
        elif kind is float:
            if item != item or item in (math.inf, -math.inf):
                raise Rejected("metadata holds a number that is not finite")
        elif kind is int:
            if not -_MAX_SAFE_INT <= item <= _MAX_SAFE_INT:
                raise Rejected("metadata holds an integer beyond ±2**53")
        elif not (kind is bool or item is None):
            raise Rejected(f"metadata holds a {kind.__name__}")
    return value


def _storable(text: str) -> bool:
    """No NUL (PostgreSQL text and jsonb refuse it) and valid UTF-8 (no lone surrogate)."""
    if "\x00" in text:
        return False
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _clean_error(text: str) -> str:
    return text.replace("\x00", "\\0").encode("utf-8", "replace").decode("utf-8")[:2000]


class Result(NamedTuple):
    """An attempt's outcome with the snippet's own view of it (for "Try it")."""

    outcome: Outcome
    scores: dict[str, float | str | None]
    metadata: dict[str, Any]
    ms: float | None


_KEY_OK: dict[str, bool] = {}  # score names seen and checked (a cache: names repeat)


def _flat_scores(value: dict[str, Any]) -> dict[str, float | str | None] | None:
    """The fast path for the usual answer, a small flat dict of numbers under names seen
    before: the same rules as below with exact types, or None to take the full path."""
    if not value or len(value) > MAX_KEYS or "scores" in value:
        return None
    scores: dict[str, float | str | None] = {}
    for key, item in value.items():
        if _KEY_OK.get(key) is not True:
            return None
        kind = type(item)
        if kind is float:
            if item - item != 0.0:  # NaN or an infinity
                return None
        elif kind is bool:
            item = 1.0 if item else 0.0
        elif kind is int and -_MAX_SAFE_INT <= item <= _MAX_SAFE_INT:
            item = float(item)
        elif item is not None:
            return None
        scores[key] = item
    return scores


def interpret(raw: Raw, score_key: str) -> Result:
    """Apply the contract to one raw answer; never raises."""
    ok, value, ms = raw
    if ms is not None and not (type(ms) is float and 0.0 <= ms < 1e9):
        ms = None
    if not ok:
        return _failed(_clean_error(str(value)), ms)
    metadata: dict[str, Any] = {}
    scores = _flat_scores(value) if type(value) is dict else None
    if scores is None:
        try:
            scores, metadata = _checked(value)
        except Rejected as exc:
            return _failed(str(exc), ms)
    details = {"scores": scores, "metadata": metadata}
    if score_key:
        if score_key not in scores:
            reason = f"the result has no {score_key!r} score (it has: {', '.join(scores)})"
            return _unranked(details, reason, ms)
        ranking = scores[score_key]
    elif len(scores) == 1:
        (ranking,) = scores.values()
    else:
        reason = f"several scores ({', '.join(scores)}): set score_key to the one that ranks"
        return _unranked(details, reason, ms)
    if ranking is None:
        return _unranked(details, f"the {score_key or 'only'} score is None", ms)
    if isinstance(ranking, str):
        reason = f"the {score_key or 'only'} score is a label ({ranking[:40]!r}), not a number"
        return _unranked(details, reason, ms)
    return Result(Outcome(ranking, details), scores, metadata, ms)  # not clamped


def _checked(value: Any) -> tuple[dict[str, float | str | None], dict[str, Any]]:
    """Scores and metadata of an answer, every rule checked. Raises Rejected."""
    if type(value) is not dict:
        raise Rejected(f"compute_scores returned {type(value).__name__}, not a dict")
    metadata: dict[str, Any] = {}
    structured = type(value.get("scores")) is dict and set(value) <= {"scores", "metadata"}
    if structured:
        raw_scores, metadata = value["scores"], _metadata(value.get("metadata"))
    else:
        raw_scores = value
    if not raw_scores:
        raise Rejected("compute_scores returned no scores")
    if len(raw_scores) > MAX_KEYS:
        raise Rejected(f"{len(raw_scores)} scores; at most {MAX_KEYS}")
    scores: dict[str, float | str | None] = {}
    for key, item in raw_scores.items():
        scores[_key(key, "a score")] = _score_value(key, item)
    # Without metadata the size is bounded by the key rules (64 keys of 64 characters).
    if metadata and len(json.dumps({"scores": scores, "metadata": metadata})) > MAX_DETAILS:
        raise Rejected(f"the result is over {MAX_DETAILS} bytes of JSON")
    if len(_KEY_OK) < 10_000:
        _KEY_OK.update(dict.fromkeys(scores, True))
    return scores, metadata


def _failed(error: str, ms: float | None) -> Result:
    return Result(Outcome(None, {"scores": {}, "metadata": {}, "error": error}, error), {}, {}, ms)


def _unranked(details: dict[str, Any], reason: str, ms: float | None) -> Result:
    outcome = Outcome(None, {**details, "error": reason}, reason)
    return Result(outcome, details["scores"], details["metadata"], ms)


# --- the scorer ----------------------------------------------------------------------------
@dataclass(frozen=True)
class SnippetSetup:
    code: str
    config: dict[str, Any]
    score_key: str
    timeout_ms: int
    owner: str
    sample_with_metrics: bool = False  # legacy: the metrics merged into ``sample``


def _with_metrics(metrics: AttemptMetrics, payload: AttemptPayload) -> AttemptPayload:
    """The legacy sample: the attempt's ``sample`` plus each metric it lacks."""
    sample = json.loads(payload.sample_json)
    sample = dict(sample) if isinstance(sample, dict) else {}
    for key, value in metrics.items():
        sample.setdefault(key, value)
    return payload._replace(sample_json=json.dumps(sample))


class SnippetScorer:
    """Scores attempts by running the snippet in the sandbox; never raises for what the
    snippet does. ``score_many`` takes the attempts' payloads beside the usual items."""

    def __init__(self, setup: SnippetSetup, sandbox: Sandbox):
        self.strategy = get_strategy(PYTHON)
        prepared = prepare(setup.code, setup.config)
        self.program = Program(
            owner=setup.owner,
            code=prepared.code,
            arity=prepared.arity,
            is_async=prepared.is_async,
            timeout_ms=setup.timeout_ms,
        )
        self.score_key = setup.score_key
        self.sample_with_metrics = setup.sample_with_metrics
        self.sandbox = sandbox

    def results(
        self,
        items: Sequence[tuple[AttemptMetrics, ScoringContext]],
        payloads: Sequence[AttemptPayload] | None = None,
    ) -> list[Result]:
        arity = self.program.arity
        if payloads is None:
            payloads = [_EMPTY] * len(items)
        if self.sample_with_metrics:
            payloads = [
                _with_metrics(metrics, payload)
                for (metrics, _), payload in zip(items, payloads, strict=True)
            ]
        encoded = [
            encode_item(metrics, payload, arity)
            for (metrics, _), payload in zip(items, payloads, strict=True)
        ]
        raws = self.sandbox.run(self.program, encoded)
        key = self.score_key
        return [interpret(raw, key) for raw in raws]

    def score_many(
        self,
        items: Sequence[tuple[AttemptMetrics, ScoringContext]],
        payloads: Sequence[AttemptPayload] | None = None,
    ) -> list[Outcome]:
        return [result.outcome for result in self.results(items, payloads)]
