"""Python snippet scorers (DESIGN.md, "Python snippet scorers"): the contract.

A snippet author needs only this docstring:

    def compute_scores(sample):                  # or (sample, solver_output); def or async def
        field = "<< config.field >>"              # filled from scoring_config["field"]
        value = sample.get(field)
        return {"is_complete": bool(value), "has_field": field in sample}

- ``sample`` is the attempt's ``sample`` object plus each metric (``succeeded``,
  ``tokens_total``, ``elapsed_ms``, ``rating``, ``created_at``) it does not have already;
  ``solver_output`` has ``.output`` (text) and ``.messages`` (a list).
- ``<< config.KEY >>`` is replaced by ``scoring_config["KEY"]`` before the code runs:
  inside a plain string literal by the value's text (escaped), standing alone by a Python
  literal of the value (``<< config.threshold >>`` → ``0.5``); in a comment it stays as
  it is. A value is data, never code: in an f-string, a raw or bytes literal, a string
  used as a ``.format``/``%`` template or across a comment and code, the code is refused
  with the line, as is a placeholder without a value.
- Return a flat dict of scores (``{"accuracy": 0.95, "is_correct": True}``) or
  ``{"scores": {...}, "metadata": {...}}``. Scores are numbers or None; booleans count
  as 1.0/0.0. Metadata is any JSON, stored with the attempt, never aggregated.
- ``score_key`` names the score that ranks the leaderboard (not needed with one score).
  No numeric value there → the attempt gets ``score = None`` and the reason.
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
import re
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from .outcome import MAX_DETAILS_BYTES as MAX_DETAILS
from .outcome import Outcome
from .protocol import AttemptMetrics, ScoringContext
from .strategies import PYTHON, get_strategy

FUNCTION = "compute_scores"
MAX_CODE_CHARS = 100_000
MAX_KEYS = 64
MAX_KEY_CHARS = 64
MAX_DEPTH = 16
_MAX_SAFE_INT = 2**53
PLACEHOLDER = re.compile(r"<<\s*config\.([A-Za-z_][A-Za-z0-9_]*)\s*>>")


class SnippetInvalid(ValueError):
    """Code that cannot be saved; ``errors`` maps a setup field to a message."""

    def __init__(self, errors: dict[str, str]):
        self.errors = errors
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))


# --- checking and preparing the code (on save, and before it runs) --------------------------
@dataclass(frozen=True)
class PreparedCode:
    code: str  # placeholders filled in
    arity: int  # 1: compute_scores(sample); 2: compute_scores(sample, solver_output)
    is_async: bool


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
    return PreparedCode(rendered, arity, is_async)


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


# --- placeholders ---------------------------------------------------------------------------
# A placeholder's value is data. Where it may stand: inside a plain string literal ("..."
# or '...', optionally u-prefixed, any quote style) it becomes that literal's text,
# escaped; standing alone as a value (``t = << config.threshold >>``) it becomes a Python
# literal of a plain JSON value; in a comment it is left alone. Anywhere else (f-strings,
# raw or bytes literals, a literal used as a str.format or % template, straddling a
# comment and code) the code is refused with the line. Positions come from the
# tokenizer, fed the very lines the offsets are computed from; the result is then
# parsed and must have the shape the code has with an inert value in every literal.
_FSTRING_START = getattr(tokenize, "FSTRING_START", None)  # Python 3.12+
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)
_BARE = ("<<", "config", ".", None, ">>")  # the tokens of a placeholder outside literals
_MARK = "\ue000podium-placeholder\ue001"  # stands for a value in the shape check
_FORMAT_METHODS = ("format", "format_map")
_MAX_LITERAL_DEPTH = 32


class _Site(NamedTuple):
    start: int
    end: int
    key: str
    in_string: bool


def _refuse(code: str, offset: int, why: str) -> SnippetInvalid:
    line = code.count("\n", 0, offset) + 1
    return SnippetInvalid({"scoring_code": f"Line {line}: {why}"})


def _sites(code: str) -> list[_Site]:
    """Where each placeholder stands, by the tokenizer's own offsets. Raises SnippetInvalid
    for one that may not stand there."""
    lines = _split_lines(code)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    tokens = []  # (start, end, type, text, inside an f-string)
    depth = 0
    try:
        for token in tokenize.generate_tokens(iter(lines).__next__):
            (r1, c1), (r2, c2) = token.start, token.end
            if token.type == _FSTRING_START:
                depth += 1
            tokens.append(
                (starts[r1 - 1] + c1, starts[r2 - 1] + c2, token.type, token.string, depth)
            )
            if token.type == _FSTRING_END:
                depth -= 1
    except (tokenize.TokenError, SyntaxError) as exc:
        at = exc.args[1][0] if isinstance(exc, tokenize.TokenError) else exc.lineno or 1
        raise SnippetInvalid(
            {"scoring_code": f"Line {at}: the code cannot be read as Python ({exc.args[0]})."}
        ) from None
    sites = []
    for match in PLACEHOLDER.finditer(code):
        start, end, key = match.start(), match.end(), match.group(1)
        shown = f"<< config.{key} >>"
        covering = [t for t in tokens if t[0] < end and start < t[1] and t[0] != t[1]]
        if len(covering) == 1 and covering[0][0] <= start and end <= covering[0][1]:
            kind, text, in_fstring = covering[0][2], covering[0][3], covering[0][4]
            if kind == tokenize.COMMENT:
                continue
            if kind == tokenize.STRING and not in_fstring:
                prefix = text[: len(text) - len(text.lstrip("rRbBuUfF"))].lower()
                if "f" in prefix:
                    raise _refuse(code, start, f"{shown} is inside an f-string; {_WHERE}")
                if prefix not in ("", "u"):
                    raise _refuse(
                        code, start, f"{shown} is inside a raw or bytes literal; {_WHERE}"
                    )
                sites.append(_Site(start, end, key, True))
                continue
            raise _refuse(code, start, f"{shown} is inside an f-string; {_WHERE}")
        texts = tuple(t[3] for t in covering)
        bare = (
            len(covering) == 5
            and covering[0][0] == start
            and covering[-1][1] == end
            and all(want is None or want == got for want, got in zip(_BARE, texts, strict=True))
            and not any(t[4] for t in covering)
        )
        if not bare:
            raise _refuse(code, start, f"{shown} straddles a comment and code; {_WHERE}")
        sites.append(_Site(start, end, key, False))
    return sites


_WHERE = (
    "a placeholder may only stand inside a plain string literal or alone as a value "
    '(e.g. field = "<< config.field >>", then use field).'
)


def _split_lines(code: str) -> list[str]:
    """Lines as the compiler sees them: split at "\\n" only (not at form feeds, \\x1c or
    U+2028, which ``str.splitlines`` would also split at)."""
    lines = code.split("\n")
    result = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        result.append(lines[-1])
    return result


def _in_string(value: Any) -> str:
    """The value's text, escaped for any plain (non-raw) literal and any quote: a
    backslash, both quotes and every unprintable character (line breaks, surrogates,
    format characters) as an escape."""
    try:
        text = value if isinstance(value, str) else json.dumps(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"its value is not plain JSON ({exc})") from None
    out = []
    for ch in text:
        if ch == "\\" or ch == '"' or ch == "'":
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        else:
            code = ord(ch)
            out.append(
                f"\\x{code:02x}"
                if code < 0x100
                else f"\\u{code:04x}"
                if code < 0x10000
                else f"\\U{code:08x}"
            )
    return "".join(out)


def _literal(value: Any) -> str:
    """A Python literal of a plain JSON value (str, finite number, bool, None, list,
    dict with str keys); raises ValueError for anything else."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if kind is float and not math.isfinite(item):
            raise ValueError(f"its value {item} is not a finite number")
        if kind is list or kind is dict:
            if depth >= _MAX_LITERAL_DEPTH:
                raise ValueError(f"its value is nested over {_MAX_LITERAL_DEPTH} levels deep")
            if kind is dict:
                if any(type(k) is not str for k in item):
                    raise ValueError("its value has a key that is not text")
                stack.extend((sub, depth + 1) for sub in item.values())
            else:
                stack.extend((sub, depth + 1) for sub in item)
        elif kind not in (str, int, float, bool) and item is not None:
            raise ValueError(f"its value is a {kind.__name__}, not plain JSON")
    return repr(value)


def _shape(tree: ast.AST) -> str:
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant):
            node.value, node.kind = None, None
    return ast.dump(tree)


def _format_templates(tree: ast.AST) -> list[ast.Constant]:
    """String constants used as a str.format / format_map / % template."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in _FORMAT_METHODS:
            found.append(node.value)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            found.append(node.left)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _FORMAT_METHODS
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "str"
            and node.args
        ):
            found.append(node.args[0])
    return [n for n in found if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def render(code: str, config: dict[str, Any]) -> str:
    """The code with every placeholder replaced (see the module docstring). Raises
    SnippetInvalid where a placeholder may not stand or its value cannot be data."""
    if not PLACEHOLDER.search(code):
        return code
    code = code.replace("\r\n", "\n").replace("\r", "\n")  # as the compiler reads it
    sites = _sites(code)
    if not sites:
        return code
    text: dict[str, str] = {}
    literal: dict[str, str] = {}
    for site in sites:
        value = config.get(site.key)
        try:
            if site.in_string:
                text.setdefault(site.key, _in_string(value))
            else:
                literal.setdefault(site.key, _literal(value))
        except (ValueError, RecursionError) as exc:
            raise _refuse(code, site.start, f"<< config.{site.key} >>: {exc}.") from None
    real = _fill_sites(code, sites, text, literal)
    try:
        real_tree = ast.parse(real)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return real  # wrong code, value or not: prepare reports where
    _check_shape(code, sites, real_tree, text, literal)
    return real


def _check_shape(
    code: str,
    sites: list[_Site],
    real_tree: ast.Module,
    text: dict[str, str],
    literal: dict[str, str],
) -> None:
    """The rendered code must be the code with a variable for each standing placeholder
    and a mark for each one in a literal, the variables then replaced by the values'
    literals: the same program, whatever the values. Raises SnippetInvalid if not."""
    names = {f"_podium_value_{i}": literal[s.key] for i, s in enumerate(sites) if not s.in_string}
    marked = _fill_sites(
        code,
        sites,
        dict.fromkeys(text, _MARK),
        {},
        [f"_podium_value_{i}" for i in range(len(sites))],
    )
    changed = _refuse(
        code, sites[0].start, f"a placeholder's value would change the code; {_WHERE}"
    )
    try:
        marked_tree = ast.parse(marked)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise changed from None
    for node in ast.walk(marked_tree):
        line = getattr(node, "lineno", 1)
        if isinstance(node, ast.JoinedStr) and any(
            isinstance(part, ast.Constant) and _MARK in str(part.value) for part in ast.walk(node)
        ):
            raise SnippetInvalid(
                {
                    "scoring_code": f"Line {line}: a placeholder is inside a string joined to "
                    f"an f-string; {_WHERE}"
                }
            )
        if isinstance(node, ast.Call) and _runs_code(node) and _marked(node.args):
            raise SnippetInvalid(
                {
                    "scoring_code": f"Line {line}: a placeholder's text is run as code "
                    f"(eval, exec or compile); {_WHERE}"
                }
            )
    for node in _format_templates(marked_tree):
        if _MARK in node.value:
            raise SnippetInvalid(
                {
                    "scoring_code": f"Line {node.lineno}: a placeholder is inside a string used "
                    f"as a format template (.format, .format_map or %); {_WHERE}"
                }
            )
    in_strings = sum(
        n.value.count(_MARK)
        for n in ast.walk(marked_tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    )
    standing = [n for n in ast.walk(marked_tree) if isinstance(n, ast.Name) and n.id in names]
    if in_strings != sum(site.in_string for site in sites) or len(standing) != len(names):
        raise changed

    class _Values(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id in names:
                return ast.parse(names[node.id], mode="eval").body
            return node

    if _shape(real_tree) != _shape(_Values().visit(marked_tree)):
        raise changed


_CODE_RUNNERS = ("eval", "exec", "compile")


def _runs_code(call: ast.Call) -> bool:
    func = call.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    return name in _CODE_RUNNERS


def _marked(nodes: list[ast.expr]) -> bool:
    return any(
        isinstance(n, ast.Constant) and isinstance(n.value, str) and _MARK in n.value
        for arg in nodes
        for n in ast.walk(arg)
    )


def _fill_sites(
    code: str,
    sites: list[_Site],
    text: dict[str, str],
    literal: dict[str, str],
    standing: list[str] | None = None,
) -> str:
    """The code with each site replaced: by ``text[key]`` inside a literal; standing
    alone, by ``literal[key]`` (or the site's own name from ``standing``)."""
    parts, at = [], 0
    for i, site in enumerate(sites):
        parts.append(code[at : site.start])
        if site.in_string:
            parts.append(text[site.key])
        else:
            parts.append(standing[i] if standing is not None else literal[site.key])
        at = site.end
    parts.append(code[at:])
    return "".join(parts)


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


def _score_value(key: str, value: Any) -> float | None:
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
    raise Rejected(f"score {key!r} is {kind.__name__}, not a number")


def _metadata(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if type(value) is not dict:
        raise Rejected(f"'metadata' is {type(value).__name__}, not a dict")
    if len(value) > MAX_KEYS:
        raise Rejected(f"'metadata' has {len(value)} keys; at most {MAX_KEYS}")
    for key in value:
        _key(key, "a metadata")
    stack = [(value, 0)]
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
    scores: dict[str, float | None]
    metadata: dict[str, Any]
    ms: float | None


_KEY_OK: dict[str, bool] = {}  # score names seen and checked (a cache: names repeat)


def _flat_scores(value: dict[str, Any]) -> dict[str, float | None] | None:
    """The fast path for the usual answer, a small flat dict of numbers under names seen
    before: the same rules as below with exact types, or None to take the full path."""
    if not value or len(value) > MAX_KEYS or "scores" in value:
        return None
    scores: dict[str, float | None] = {}
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
    return Result(Outcome(ranking if ranking > 0.0 else 0.0, details), scores, metadata, ms)


def _checked(value: Any) -> tuple[dict[str, float | None], dict[str, Any]]:
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
    scores: dict[str, float | None] = {}
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


class SnippetScorer:
    """Scores attempts by running the snippet in the sandbox; never raises for what the
    snippet does. ``score_many`` takes the attempts' payloads beside the usual items."""

    needs_payloads = True

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
        self.sandbox = sandbox

    def results(
        self,
        items: Sequence[tuple[AttemptMetrics, ScoringContext]],
        payloads: Sequence[AttemptPayload] | None = None,
    ) -> list[Result]:
        arity = self.program.arity
        if payloads is None:
            payloads = [_EMPTY] * len(items)
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
