"""The Python client's types (clients/python/podium_client/types.py) against the schema
the server generates: every component the client declares has the schema's fields, with
the same required set and the same types; every route it calls exists with the bodies it
declares; the limits ``--dry-run`` checks are the schema's. Add a field to a serializer
without the client and this fails.
"""

from __future__ import annotations

import sys
import types as pytypes
import typing
from pathlib import Path
from typing import Any

import pytest

CLIENT_DIR = Path(__file__).resolve().parents[2] / "clients" / "python"
sys.path.insert(0, str(CLIENT_DIR))
try:
    from podium_client import types as ct  # standard library only: no httpx needed
finally:
    sys.path.remove(str(CLIENT_DIR))

JSON_KINDS = {
    "integer": int,
    "number": float,
    "string": str,
    "boolean": bool,
    "array": list,
    "object": dict,
}


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in node:
        return schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    if len(node.get("allOf", [])) == 1:
        return {
            **_resolve(schema, node["allOf"][0]),
            **{k: v for k, v in node.items() if k != "allOf"},
        }
    return node


def _expected(schema: dict[str, Any], node: dict[str, Any]) -> tuple[Any, bool]:
    """(python kind or an enum's value set or Any, nullable) a property's schema says."""
    node = _resolve(schema, node)
    nullable = bool(node.get("nullable"))
    if "enum" in node:
        return frozenset(node["enum"]), nullable
    if "oneOf" in node:  # e.g. the slug: a pattern, or empty
        kinds = {_expected(schema, one)[0] for one in node["oneOf"]}
        return (kinds.pop() if len(kinds) == 1 else Any), nullable
    if "type" not in node:
        return Any, nullable
    return JSON_KINDS[node["type"]], nullable


def _actual(annotation: Any) -> tuple[Any, bool]:
    """The same pair, read from a TypedDict's annotation."""
    args = typing.get_args(annotation)
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, pytypes.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        assert len(rest) == 1, annotation
        return _actual(rest[0])[0], True
    if annotation is Any:
        return Any, False
    if origin is typing.Literal:
        return frozenset(args), False
    if origin is not None:
        return origin, False
    if typing.is_typeddict(annotation):
        return dict, False
    return annotation, False


def test_every_component_the_client_declares_matches_the_schema(schema):
    components = schema["components"]["schemas"]
    problems = []
    for name, typed in ct.COMPONENTS.items():
        component = components.get(name)
        if component is None:
            problems.append(f"{name}: not in the schema")
            continue
        properties = component["properties"]
        hints = typing.get_type_hints(typed)
        for field in sorted(set(properties) - set(hints)):
            problems.append(f"{name}.{field}: in the schema, not in the client")
        for field in sorted(set(hints) - set(properties)):
            problems.append(f"{name}.{field}: in the client, not in the schema")
        required = set(component.get("required", []))
        # A body sent: what the client must send; one answered: what it may count on.
        declared = set(typed.__required_keys__)
        if declared != required:
            problems.append(f"{name}: required {sorted(declared)} != schema {sorted(required)}")
        for field in sorted(set(properties) & set(hints)):
            want = _expected(schema, properties[field])
            have = _actual(hints[field])
            if want[0] is Any:  # the schema says nothing of the type: anything goes
                want = (Any, have[1] if have[0] is Any else want[1])
            if want != have:
                problems.append(f"{name}.{field}: client {have} != schema {want}")
    assert not problems, "\n".join(problems)


def _shape(schema: dict[str, Any], node: dict[str, Any] | None) -> str | None:
    """A body's schema written as OPERATIONS writes it: "X", "[X]" or "X|[X]"."""
    if node is None:
        return None
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[1]
        resolved = schema["components"]["schemas"][name]
        return _shape(schema, resolved) if "oneOf" in resolved else name
    if node.get("type") == "array":
        return f"[{_shape(schema, node['items'])}]"
    if "oneOf" in node:
        return "|".join(_shape(schema, one) or "?" for one in node["oneOf"])
    return "?"


def _body(operation: dict[str, Any], *, answered: bool) -> dict[str, Any] | None:
    if not answered:
        content = operation.get("requestBody", {}).get("content", {})
        return content.get("application/json", {}).get("schema")
    for code in ("200", "201", "202"):
        content = operation.get("responses", {}).get(code, {}).get("content", {})
        if "application/json" in content:
            return content["application/json"]["schema"]
    return None


def test_every_route_the_client_calls_exists_with_its_bodies(schema):
    problems = []
    for (method, path), (sent, answered) in ct.OPERATIONS.items():
        operation = schema["paths"].get(path, {}).get(method)
        if operation is None:
            problems.append(f"{method.upper()} {path}: not in the schema")
            continue
        got = (
            _shape(schema, _body(operation, answered=False)),
            _shape(schema, _body(operation, answered=True)),
        )
        if got != (sent, answered):
            problems.append(f"{method.upper()} {path}: client {(sent, answered)} != schema {got}")
    assert not problems, "\n".join(problems)


def test_the_dry_run_limits_are_the_schemas(schema):
    attempt = schema["components"]["schemas"]["AttemptInRequest"]
    assert set(ct.ATTEMPT_FIELDS) == set(attempt["properties"])
    assert {n for n, f in ct.ATTEMPT_FIELDS.items() if f.required} == set(attempt["required"])
    for name, field in ct.ATTEMPT_FIELDS.items():
        prop = attempt["properties"][name]
        assert field.nullable == bool(prop.get("nullable")), name
        assert field.min_length == prop.get("minLength"), name
        assert field.max_length == prop.get("maxLength"), name
        assert field.minimum == prop.get("minimum"), name
        assert field.maximum == prop.get("maximum"), name
        kind = _expected(schema, prop)[0]
        if kind is not Any:
            assert kind in field.kinds, name


def test_the_check_fails_when_a_serializer_gains_a_field(schema):
    """The drift check is live: a field only the schema has is reported."""
    drifted = {**schema, "components": {**schema["components"]}}
    drifted["components"]["schemas"] = {**schema["components"]["schemas"]}
    board = drifted["components"]["schemas"]["LeaderboardRow"]
    drifted["components"]["schemas"]["LeaderboardRow"] = {
        **board,
        "properties": {**board["properties"], "country": {"type": "string"}},
    }
    with pytest.raises(AssertionError, match=r"LeaderboardRow\.country: in the schema"):
        test_every_component_the_client_declares_matches_the_schema(drifted)
