"""Placeholders in snippet code: ``<< config.KEY >>`` filled from ``scoring_config``.

A placeholder's value is data, never code. Where it may stand: inside a plain string
literal ("..." or '...', optionally u-prefixed, any quote style) it becomes that
literal's text, escaped; standing alone as a value (``t = << config.threshold >>``) it
becomes a Python literal of a plain JSON value; in a comment it is left alone. Anywhere
else (f-strings, raw or bytes literals, a literal used as a str.format or % template or
run by eval/exec/compile, straddling a comment and code) the code is refused with the
line. Positions come from the tokenizer, fed the very lines the offsets are computed
from (split at "\\n" only: a form feed or U+2028 in a comment shifts nothing). The
result is then parsed and must be the code's own program with the values in it: the same
syntax tree as the code with a mark in each literal and a variable for each standing
placeholder, the variables replaced by the values' literals.
"""

from __future__ import annotations

import ast
import json
import math
import re
import tokenize
from typing import Any, NamedTuple

PLACEHOLDER = re.compile(r"<<\s*config\.([A-Za-z_][A-Za-z0-9_]*)\s*>>")


class PlaceholderInvalid(ValueError):
    """A placeholder that may not stand where it is, or a value that cannot be data; the
    message starts with "Line N:"."""


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


def _refuse(code: str, offset: int, why: str) -> PlaceholderInvalid:
    line = code.count("\n", 0, offset) + 1
    return PlaceholderInvalid(f"Line {line}: {why}")


def _unreadable(code: str, exc: Exception) -> str:
    """Why the code is not Python, as the parser says it (its line and words: an
    unclosed bracket is reported where it opens, "'{' was never closed"), not as the
    tokenizer does (at the end of the file: "EOF in multi-line statement")."""
    try:
        ast.parse(code, "<snippet>")
    except SyntaxError as parsed:
        return f"Line {parsed.lineno or 1}: {parsed.msg}."
    except (ValueError, RecursionError, MemoryError):
        pass
    if isinstance(exc, tokenize.TokenError):
        at = exc.args[1][0]
    else:  # a SyntaxError of the tokenizer (an indentation error, say)
        at = getattr(exc, "lineno", None) or 1
    why = exc.args[0] if exc.args else exc
    return f"Line {at}: the code cannot be read as Python ({why})."


def _sites(code: str) -> list[_Site]:
    """Where each placeholder stands, by the tokenizer's own offsets. Raises
    PlaceholderInvalid for one that may not stand there."""
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
        raise PlaceholderInvalid(_unreadable(code, exc)) from None
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
    PlaceholderInvalid where a placeholder may not stand or its value cannot be data."""
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
    literals: the same program, whatever the values. Raises PlaceholderInvalid if not."""
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
            raise PlaceholderInvalid(
                f"Line {line}: a placeholder is inside a string joined to an f-string; {_WHERE}"
            )
        if isinstance(node, ast.Call) and _runs_code(node) and _marked(node.args):
            raise PlaceholderInvalid(
                f"Line {line}: a placeholder's text is run as code "
                f"(eval, exec or compile); {_WHERE}"
            )
    for node in _format_templates(marked_tree):
        if isinstance(node.value, str) and _MARK in node.value:
            raise PlaceholderInvalid(
                f"Line {node.lineno}: a placeholder is inside a string used "
                f"as a format template (.format, .format_map or %); {_WHERE}"
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
