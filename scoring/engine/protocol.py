"""The scorer contract (docs/scorers.md, "Class scorer plugins").

A plugin author needs only this module:

    class MyScorer:
        name = "My scorer"                    # optional, shown in the admin
        description = "What it rewards."      # optional
        config_schema = {...}                 # optional JSON Schema, with defaults

        def score(self, metrics: AttemptMetrics, config: dict, ctx: ScoringContext
                  ) -> ScoringResult:
            return {"score": 42.0, "details": {"why": "..."}}

What Podium does with the result:
- ``score`` must be a finite real number (bool is not a number here); a negative score
  is clamped to 0.
- ``details`` is optional; if given it must be a JSON object (a dict with string keys
  and JSON values). It is shown to players as the score breakdown.
- Raising any exception (``ScorerError`` for an expected, explained failure), returning
  something without a numeric ``score``, a NaN or infinite score, or running past
  ``ctx.timeout_ms`` records the attempt with ``score = None``; the error is kept for
  admins and scoring of the other attempts goes on.
- ``config`` has already been validated against ``config_schema`` with its defaults
  filled in; the same instance of the class scores many attempts, so keep no state
  between calls.

Built-in scorers that run in Podium's own process may also define
``score_many(items, config) -> list[ScoringResult]`` over ``(metrics, ctx)`` pairs: the
same results as ``score``, one per item, in order, computed faster. Each result still
goes through the rules above; if ``score_many`` raises, the batch is scored one by one.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import ItemsView, KeysView, Mapping, ValuesView
from typing import Any, Protocol, Required, TypedDict, runtime_checkable

DEFAULT_TIMEOUT_MS = 5000
MAX_METRIC = 2**53 - 1  # tokens, ms: exact in JSON and in a float, no client sees it rounded
MAX_TIMEOUT_MS = 60_000  # the longest a scorer may take per attempt (models, forms, API)
METRIC_KEYS = ("succeeded", "tokens_total", "elapsed_ms", "rating", "created_at")
CONTEXT_KEYS = ("challenge_id", "end_user_id", "tenant_id", "app_id", "workflow_id", "timeout_ms")


class _ReadOnlyRecord(tuple):
    """A named tuple that is also a read-only mapping of its fields.

    Plugins from the guide our users come from read metrics and context as typed dicts
    (``metrics.get("rating", 0)``, ``metrics["rating"]``, ``"rating" in metrics``,
    ``dict(metrics)``, ``for key in metrics``); Podium's own code reads attributes
    (``metrics.rating``). Both work on the same object. It stays a tuple underneath:
    attribute reads and construction cost what a NamedTuple's do, which matters when a
    rescore makes a million of them. As a mapping, iteration yields the field names (as
    a dict's does), so tuple unpacking of a record is not supported: use the names.
    """

    __slots__ = ()
    _fields: tuple[str, ...]
    _index: dict[str, int]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._index = {name: i for i, name in enumerate(cls._fields)}

    # -- the mapping protocol -----------------------------------------------------------
    def __getitem__(self, key: Any) -> Any:  # type: ignore[override]
        index = self._index.get(key) if type(key) is str else None
        if index is None:
            raise KeyError(key)
        return tuple.__getitem__(self, index)

    def get(self, key: str, default: Any = None) -> Any:
        index = self._index.get(key) if type(key) is str else None
        return default if index is None else tuple.__getitem__(self, index)

    def __contains__(self, key: object) -> bool:
        return type(key) is str and key in self._index

    def __iter__(self):  # type: ignore[override]
        return iter(self._fields)

    def keys(self) -> KeysView[str]:
        return KeysView(self)  # type: ignore[arg-type]

    def values(self) -> ValuesView[Any]:
        return ValuesView(self)  # type: ignore[arg-type]

    def items(self) -> ItemsView[str, Any]:
        return ItemsView(self)  # type: ignore[arg-type]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, tuple):
            return tuple.__eq__(self, other)
        if isinstance(other, Mapping):
            return self.as_dict() == dict(other.items())
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = tuple.__hash__

    # -- the named-tuple helpers, which iterate the tuple's values --------------------
    def as_dict(self) -> dict[str, Any]:
        return dict(zip(self._fields, tuple.__iter__(self), strict=True))

    _asdict = as_dict

    def _replace(self, **changes: Any) -> Any:
        values = dict(zip(self._fields, tuple.__iter__(self), strict=True))
        unknown = set(changes) - set(values)
        if unknown:
            raise ValueError(f"Got unexpected field names: {sorted(unknown)!r}")
        values.update(changes)
        return tuple.__new__(type(self), values.values())

    def __getnewargs__(self) -> tuple[Any, ...]:
        return tuple(tuple.__iter__(self))


Mapping.register(_ReadOnlyRecord)


# The fields come from METRIC_KEYS / CONTEXT_KEYS (one list for every reader), which mypy
# cannot follow into a namedtuple: the ignores below are for that alone.
_MetricsFields = namedtuple(  # type: ignore[misc]
    "_AttemptMetricsFields", METRIC_KEYS, defaults=(False, None, None, None, None)
)


class AttemptMetrics(_ReadOnlyRecord, _MetricsFields):  # type: ignore[misc]
    """What every scorer sees of an attempt. Any metric may be None (unknown); all five
    keys are always present.

    - ``succeeded`` (bool), ``tokens_total`` (int | None), ``elapsed_ms`` (int | None),
      ``rating`` (int 0–10 | None), ``created_at`` (epoch milliseconds | None).

    Read it as attributes (``metrics.rating``) or as a read-only mapping
    (``metrics.get("rating", 0)``, ``metrics["rating"]``, ``dict(metrics)``). Build one
    in a test with keywords: ``AttemptMetrics(succeeded=True, rating=7)``.
    """

    __slots__ = ()
    succeeded: bool
    tokens_total: int | None
    elapsed_ms: int | None
    rating: int | None
    created_at: int | None


_ContextFields = namedtuple(  # type: ignore[misc]
    "_ScoringContextFields", CONTEXT_KEYS, defaults=(None, None, "", "", "", DEFAULT_TIMEOUT_MS)
)


class ScoringContext(_ReadOnlyRecord, _ContextFields):  # type: ignore[misc]
    """Where an attempt comes from. Identifiers are blank or None when unknown.

    - ``tenant_id``, ``app_id``, ``workflow_id`` (str; blank unless set on the
      challenge), ``challenge_id`` (str), ``end_user_id`` (the player's external id, or
      None), ``timeout_ms`` (int, default 5000).

    Attributes and read-only mapping, like ``AttemptMetrics``.
    """

    __slots__ = ()
    challenge_id: str | None
    end_user_id: str | None
    tenant_id: str
    app_id: str
    workflow_id: str
    timeout_ms: int


class ScoringResult(TypedDict, total=False):
    score: Required[float]
    details: dict[str, Any] | None


@runtime_checkable
class ScorerProtocol(Protocol):
    def score(
        self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext
    ) -> ScoringResult: ...


class ScorerError(Exception):
    """Raised by a plugin for an expected failure; the message is kept for admins."""


class RegistryError(ValueError):
    """A plugin id or entrypoint that the registry refuses."""


class FieldErrors(ValueError):
    """Input refused field by field: ``errors`` maps each field (or a path in it) to a
    message, and the exception's text lists them all."""

    def __init__(self, errors: dict[str, str]):
        self.errors = errors
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))


class ConfigError(ValueError):
    """A config that does not fit a plugin's ``config_schema``.

    ``errors`` maps a dotted path inside the config (``""`` for the whole object) to a
    message, so callers can name the offending key.
    """

    def __init__(self, errors: dict[str, str]):
        self.errors = errors
        super().__init__("; ".join(f"{k or '(config)'}: {v}" for k, v in errors.items()))

    @property
    def field_message(self) -> str:
        """The errors as one field error: each after its path, the whole object's alone."""
        return "; ".join(f"{k}: {v}" if k else v for k, v in self.errors.items())
