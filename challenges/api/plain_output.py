"""A serializer's output without its per-field machinery, generated from the serializer.

A bulk attempts request answers up to a thousand attempts, and DRF's ``Serializer.data``
walks every field of every row with its checks. ``writer(AttemptOutSerializer)`` reads
the serializer's fields once, at import: each field's attribute path (``source``) and how
it writes a value. Fields whose writing is a plain conversion (integers, text, booleans,
JSON) are converted directly; every other field writes through its own
``to_representation``. The serializer is the one list of fields: add one there and the
writer writes it, in the serializer's order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from operator import attrgetter
from typing import Any

from rest_framework import serializers

# Exact field types whose to_representation is this conversion (subclasses keep theirs).
_CONVERSIONS: dict[type, Callable[[Any], Any]] = {
    serializers.IntegerField: int,
    serializers.CharField: str,
    serializers.BooleanField: bool,
}


def _same(value: Any) -> Any:
    return value


def _getter(path: str, default: Any) -> Callable[[Any], Any]:
    get = attrgetter(path)

    def get_or_default(instance: Any) -> Any:
        try:
            return get(instance)
        except AttributeError:
            return default

    return get_or_default


def writer(
    serializer_class: type[serializers.Serializer],
    *,
    filled_by_caller: Iterable[str] = (),
    defaults: Mapping[str, Any] | None = None,
) -> Callable[[Any], dict[str, Any]]:
    """A function writing an instance as ``serializer_class`` would: the same keys in the
    same order, ``None`` for a missing value. ``filled_by_caller`` names fields the caller
    sets afterwards (written as ``None``); ``defaults`` gives the value of a field whose
    attribute the instance may not have."""
    fields = serializer_class().fields
    defaults = dict(defaults or {})
    unknown = (set(filled_by_caller) | set(defaults)) - set(fields)
    if unknown:
        raise ValueError(f"{serializer_class.__name__} has no field {sorted(unknown)}")
    plan: list[tuple[str, Callable[[Any], Any] | None, Callable[[Any], Any]]] = []
    for name, field in fields.items():
        if name in filled_by_caller:
            plan.append((name, None, _same))
            continue
        path = ".".join(field.source_attrs)
        get = _getter(path, defaults[name]) if name in defaults else attrgetter(path)
        if isinstance(field, serializers.JSONField) and type(field) is serializers.JSONField:
            represent = field.to_representation if field.binary else _same
        else:
            represent = _CONVERSIONS.get(type(field), field.to_representation)
        plan.append((name, get, represent))

    def write(instance: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, get, represent in plan:
            value = None if get is None else get(instance)
            out[name] = None if value is None else represent(value)
        return out

    return write
