"""What scoring one attempt ends in, and the failure rules that produce it."""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

MAX_DETAILS_BYTES = 16_384


class Outcome(NamedTuple):
    """``score`` None means the attempt does not count; ``error`` says why, for admins.

    For a failed plugin call ``details`` is ``{"error": ...}`` (the failure rules keep the error
    in the details, for admins only); for an attempt a built-in strategy does not count,
    score, details and error are all empty.
    """

    score: float | None
    details: dict[str, Any] | None = None
    error: str = ""
    clamped_from: float | None = None  # the negative score a plugin returned (not stored)
    # The score's ascending ranking key under its setup (``ranked``); None: not counted.
    sort_key: float | None = None

    @classmethod
    def failed(cls, error: str) -> Outcome:
        return cls(None, {"error": error}, error)


def ranked(outcomes: Sequence[Outcome], key: Callable[[float], float]) -> list[Outcome]:
    """The outcomes with their ``sort_key``: ``key`` of each score (``strategies.
    sort_key_for`` of the setup that scored them), None where the score is None."""
    new = tuple.__new__  # a million _replace calls add up: the same tuple, built directly
    return [
        o if (s := o[0]) is None else new(Outcome, (s, o[1], o[2], o[3], key(s))) for o in outcomes
    ]


def _type_name(value: Any) -> str:
    return type(value).__name__


_INFINITIES = (math.inf, -math.inf)
_MAX_FLAT_KEYS = 64
_MAX_SAFE_INT = 2**53


def _flat_plain_copy(details: Mapping[str, Any]) -> dict[str, Any] | None:
    """A copy of a small flat dict of plain JSON scalars, or None when the JSON path
    must decide (nested values, odd types, NaN, big ints, much text). The fast path for
    the common case: it accepts only what the JSON round trip would accept as it is."""
    if len(details) > _MAX_FLAT_KEYS:
        return None
    text = 0  # characters of keys and strings: a bound on the JSON size, with the numbers
    for key, value in details.items():
        if type(key) is not str:
            return None
        text += len(key) + 32
        kind = type(value)
        if kind is float:
            if not math.isfinite(value):
                return None
        elif kind is int:
            if not -_MAX_SAFE_INT <= value <= _MAX_SAFE_INT:
                return None
        elif kind is str:
            text += len(value)
        elif kind is not bool and value is not None:
            return None
    if text * 2 > MAX_DETAILS_BYTES:  # escapes can double a string's JSON size
        return None
    return dict(details)


def normalize_result(raw: Any) -> Outcome:
    """Apply the failure rules (docs/scorers.md) to what a scorer returned."""
    # Fast path for the usual shape (a plain dict, a float score, flat details): the same
    # checks with exact types, which cost a fraction of the ABC checks below.
    if type(raw) is dict:
        value = raw.get("score")
        if type(value) is float and value == value and value not in _INFINITIES:
            details = raw.get("details")
            if details is None:
                if value < 0.0:
                    return Outcome(0.0, None, "", value)
                return Outcome(value, None)
            if type(details) is dict:
                fast = _flat_plain_copy(details)
                if fast is not None:
                    if value < 0.0:
                        return Outcome(0.0, fast, "", value)
                    return Outcome(value, fast)
    if not isinstance(raw, Mapping):
        return Outcome.failed(f"the scorer returned {_type_name(raw)}, not a dict with a 'score'")
    if "score" not in raw:
        return Outcome.failed("the scorer's result has no 'score'")
    value = raw["score"]
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return Outcome.failed(f"'score' is {_type_name(value)}, not a number")
    try:
        score = float(value)
    except (OverflowError, ValueError, TypeError):
        return Outcome.failed("'score' is not representable as a float")
    if not math.isfinite(score):
        return Outcome.failed(f"'score' is {score}, not a finite number")
    details = raw.get("details")
    if details is not None:
        if not isinstance(details, Mapping):
            return Outcome.failed(f"'details' is {_type_name(details)}, not a dict")
        fast = _flat_plain_copy(details)
        if fast is not None:
            return _clamped(score, fast)
        try:
            encoded = json.dumps(details, allow_nan=False)
        except (TypeError, ValueError) as exc:
            return Outcome.failed(f"'details' is not plain JSON: {exc}")
        if len(encoded) > MAX_DETAILS_BYTES:
            return Outcome.failed(f"'details' is over {MAX_DETAILS_BYTES} bytes of JSON")
        details = json.loads(encoded)  # a plain dict, detached from the plugin's objects
    return _clamped(score, details)


def _clamped(score: float, details: dict[str, Any] | None) -> Outcome:
    """A negative score is clamped to 0 (docs/scorers.md); the outcome remembers it."""
    if score < 0.0:
        return Outcome(0.0, details, "", score)
    return Outcome(score, details)
