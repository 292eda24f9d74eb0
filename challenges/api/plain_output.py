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
from typing import Any

from rest_framework import ISO_8601, serializers
from rest_framework.settings import api_settings

from challenges.text import iso_z

# Exact field types whose to_representation is this conversion (subclasses keep theirs).
_CONVERSIONS: dict[type, Callable[[Any], Any]] = {
    serializers.IntegerField: int,
    serializers.CharField: str,
    serializers.BooleanField: bool,
}


def writer(
    serializer_class: type[serializers.Serializer],
    *,
    filled_by_caller: Iterable[str] = (),
    defaults: Mapping[str, Any] | None = None,
) -> Callable[[Any], dict[str, Any]]:
    """A function writing an instance as ``serializer_class`` would: the same keys in the
    same order, ``None`` for a missing value. ``filled_by_caller`` names fields the caller
    sets afterwards (written as ``None``); ``defaults`` gives the value of a field whose
    attribute the instance may not have.

    The function is compiled once from the fields, one expression per field (a loop over
    the fields per row cost a thousand-attempt answer several milliseconds more)."""
    fields = serializer_class().fields
    defaults = dict(defaults or {})
    unknown = (set(filled_by_caller) | set(defaults)) - set(fields)
    if unknown:
        raise ValueError(f"{serializer_class.__name__} has no field {sorted(unknown)}")
    scope: dict[str, Any] = {}
    reads, items = [], []
    for n, (name, field) in enumerate(fields.items()):
        if name in filled_by_caller:
            items.append(f"{name!r}: None")
            continue
        path = field.source_attrs
        if not all(part.isidentifier() for part in path):
            raise ValueError(f"{serializer_class.__name__}.{name}: source {field.source!r}")
        if name in defaults:
            scope[f"d{n}"] = defaults[name]
            *owner, last = path
            reads.append(f"    v{n} = getattr({'.'.join(['o', *owner])}, {last!r}, d{n})")
        else:
            reads.append(f"    v{n} = {'.'.join(['o', *path])}")
        represent = _representation(field)
        if represent is None:
            items.append(f"{name!r}: v{n}")
        else:
            scope[f"r{n}"] = represent
            items.append(f"{name!r}: None if v{n} is None else r{n}(v{n})")
    source = "def write(o):\n" + "\n".join(reads) + "\n    return {" + ", ".join(items) + "}\n"
    exec(compile(source, f"<writer of {serializer_class.__name__}>", "exec"), scope)  # noqa: S102 - made from the serializer's own field names
    return scope["write"]


def _representation(field: serializers.Field) -> Callable[[Any], Any] | None:
    """How ``field`` writes a value that is not None; None: as it is (plain JSON)."""
    if type(field) is serializers.JSONField and not field.binary:
        return None
    output = getattr(field, "format", api_settings.DATETIME_FORMAT)
    if type(field) is serializers.DateTimeField and output == ISO_8601:
        return iso_z  # DRF's ISO 8601 in the current time zone, UTC as Z
    return _CONVERSIONS.get(type(field), field.to_representation)
