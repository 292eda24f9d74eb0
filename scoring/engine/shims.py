"""Programs for the sandbox built around a user's function that is not
``compute_scores``: a custom metric's ``compute_metric(scores)`` and a batch scorer's
``compute_batch_scores(samples[, solver_outputs])``.

The sandbox worker runs ``compute_scores(sample)`` per item and checks each result (a
flat dict, 16 KiB of JSON at most). A shim appended to the user's code defines that
function in terms of theirs, so these run in the same workers under the same limits.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from typing import Any

from .snippet import SnippetInvalid, prepare

_STAND_IN = "\n\n\ndef compute_scores(sample):  # stand-in\n    return {}\n"


@dataclass(frozen=True)
class Entry:
    arity: int
    is_async: bool


def check_function(
    code: Any, config: dict[str, Any], name: str, arities: tuple[int, ...], field: str
) -> tuple[str, Entry]:
    """Fill placeholders and check that ``code`` defines ``name`` taking one of
    ``arities`` positional parameters. Returns the rendered code. Raises SnippetInvalid
    keyed by ``field``."""
    if not isinstance(code, str) or not code.strip():
        raise SnippetInvalid({field: f"Required: Python code defining {name}."})
    # Every rule of a snippet (size, placeholders, syntax) through snippet.prepare, with
    # a stand-in compute_scores appended (the shim's own replaces it when it runs).
    try:
        rendered = prepare(code + _STAND_IN, config).code
    except SnippetInvalid as exc:
        raise SnippetInvalid(
            {(field if k == "scoring_code" else k): m for k, m in exc.errors.items()}
        ) from None
    rendered = rendered.removesuffix(_STAND_IN)
    try:
        tree = ast.parse(rendered, "<snippet>")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise SnippetInvalid({field: f"The code cannot be parsed: {exc}."}) from None
    found = None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            found = node
    if found is None:
        raise SnippetInvalid({field: f"Define {name} at the top level (def or async def)."})
    args = found.args
    positional = len(args.posonlyargs) + len(args.args)
    required = positional - len(args.defaults)
    usable = [n for n in arities if required <= n and (n <= positional or args.vararg)]
    if not usable:
        counts = " or ".join(map(str, arities))
        raise SnippetInvalid({field: f"Line {found.lineno}: {name} must take {counts} parameters."})
    return rendered, Entry(max(usable), isinstance(found, ast.AsyncFunctionDef))


# --- custom metrics ------------------------------------------------------------------------
METRIC_FUNCTION = "compute_metric"
_METRIC_SHIM = """

def compute_scores(sample):
    result = compute_metric(sample["scores"])
    if isinstance(result, bool) or isinstance(result, (int, float)) or result is None:
        return {"__value__": result}
    if isinstance(result, dict):
        return dict(result)
    raise TypeError(f"compute_metric returned {type(result).__name__}, not a number or a dict")
"""
_METRIC_SHIM_ASYNC = _METRIC_SHIM.replace("def compute_scores", "async def compute_scores").replace(
    "result = compute_metric(", "result = await compute_metric("
)


def metric_program_code(code: str) -> tuple[str, bool]:
    """(the code to run, whether it is async) for a custom metric's snippet."""
    rendered, entry = check_function(code, {}, METRIC_FUNCTION, (1,), "compute_metric_snippet")
    return rendered + (_METRIC_SHIM_ASYNC if entry.is_async else _METRIC_SHIM), entry.is_async


# --- batch scorers -------------------------------------------------------------------------
BATCH_FUNCTION = "compute_batch_scores"
_BATCH_SHIM = """

import json as _podium_json


class _PodiumSolverOutput:
    def __init__(self, output, messages):
        self.output, self.messages = output, messages


_podium_batch = _podium_json.loads({payload!r})
_podium_done = []


{kw}def compute_scores(sample):
    if not _podium_done:
        try:
            samples = _podium_batch["samples"]
            if {arity} == 2:
                outputs = [_PodiumSolverOutput(o, m) for o, m in _podium_batch["outputs"]]
                result = {aw}compute_batch_scores(samples, outputs)
            else:
                result = {aw}compute_batch_scores(samples)
            result = list(result)
            if len(result) != len(samples):
                raise ValueError(
                    f"compute_batch_scores returned {{len(result)}} results for "
                    f"{{len(samples)}} samples"
                )
            _podium_done.append(("ok", result))
        except BaseException as exc:
            _podium_done.append(("error", f"{{type(exc).__name__}}: {{exc}}"[:2000]))
            raise
    state, value = _podium_done[0]
    if state == "error":
        raise RuntimeError("the batch call failed: " + value)
    return value[sample["i"]]
"""


def batch_check(code: Any, config: dict[str, Any]) -> tuple[str, Entry]:
    return check_function(code, config, BATCH_FUNCTION, (2, 1), "compute_scores_snippet")


def batch_program_code(
    code: str, config: dict[str, Any], samples: list[Any], outputs: list[tuple[str, Any]] | None
) -> tuple[str, Entry]:
    """The program scoring one batch: the samples ride in the code (every worker that
    runs it computes the batch once and answers each item, an index, from it)."""
    rendered, entry = batch_check(code, config)
    payload = json.dumps(
        {"samples": samples, "outputs": outputs or []}, ensure_ascii=False, allow_nan=False
    )
    shim = _BATCH_SHIM.format(
        payload=payload,
        arity=entry.arity,
        kw="async " if entry.is_async else "",
        aw="await " if entry.is_async else "",
    )
    return rendered + shim, entry


def batch_results(
    *,
    code: str,
    config: dict[str, Any],
    samples: list[Any],
    outputs: list[tuple[str, Any]],
    owner: str,
    timeout_ms: int,
    score_key: str,
    sandbox: Any,
) -> list[Any]:
    """A batch scorer's snippet Results (``snippet.Result``), one per sample, in order:
    one call of ``compute_batch_scores`` per sandbox worker, every answer checked by the
    snippet contract. A failed call fails every sample with its error. Raises
    SnippetInvalid for code that cannot run."""
    from .protocol import AttemptMetrics
    from .snippet import AttemptPayload, Program, encode_item, interpret

    _, entry = batch_check(code, config)
    program_code, entry = batch_program_code(
        code, config, samples, outputs if entry.arity == 2 else None
    )
    program = Program(
        owner=owner, code=program_code, arity=1, is_async=entry.is_async, timeout_ms=timeout_ms
    )
    metrics = AttemptMetrics()
    items = [encode_item(metrics, AttemptPayload(f'{{"i": {i}}}'), 1) for i in range(len(samples))]
    return [interpret(raw, score_key) for raw in sandbox.run(program, items)]
