"""The API reference at /api/docs/: the OpenAPI schema (the one /api/schema/ serves)
read as a page, rendered on the server: no script, a few kilobytes, readable on a phone
and by a screen reader. The interactive explorer (Swagger UI) stays at
/api/docs/explorer/ for trying requests.

``operations`` turns a schema into what the page lists; it reads only the schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

METHODS = ("get", "post", "put", "patch", "delete")


@dataclass(frozen=True)
class Field:
    name: str
    where: str  # path, query, header, body
    kind: str
    required: bool
    description: str


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    anchor: str
    summary: str
    description: str
    public: bool
    fields: list[Field] = field(default_factory=list)
    responses: list[tuple[str, str]] = field(default_factory=list)


def _resolve(schema: dict[str, Any], node: Any) -> dict[str, Any]:
    seen = 0
    while isinstance(node, dict) and "$ref" in node and seen < 20:
        name = str(node["$ref"]).rsplit("/", 1)[-1]
        node = schema.get("components", {}).get("schemas", {}).get(name, {})
        seen += 1
    return node if isinstance(node, dict) else {}


def _kind(schema: dict[str, Any], node: Any) -> str:
    node = _resolve(schema, node)
    if "oneOf" in node or "anyOf" in node:
        kinds = [_kind(schema, n) for n in node.get("oneOf") or node.get("anyOf") or []]
        return " or ".join(dict.fromkeys(k for k in kinds if k)) or "value"
    kind = node.get("type", "")
    if isinstance(kind, list):
        kind = " or ".join(str(k) for k in kind)
    if kind == "array":
        return f"list of {_kind(schema, node.get('items', {})) or 'values'}"
    if node.get("enum"):
        return "one of " + ", ".join(str(v) for v in node["enum"] if v is not None)
    return str(kind or ("object" if "properties" in node else "value"))


def _body_fields(schema: dict[str, Any], operation: dict[str, Any]) -> list[Field]:
    content = operation.get("requestBody", {}).get("content", {})
    body = content.get("application/json") or next(iter(content.values()), {})
    node = _resolve(schema, body.get("schema", {}))
    for option in node.get("oneOf") or node.get("anyOf") or []:  # an object or a list of them
        resolved = _resolve(schema, option)
        if "properties" in resolved:
            node = resolved
            break
    required = set(node.get("required", []))
    return [
        Field(
            name,
            "body",
            _kind(schema, prop),
            name in required,
            str(_resolve(schema, prop).get("description") or prop.get("description") or ""),
        )
        for name, prop in node.get("properties", {}).items()
        if not _resolve(schema, prop).get("readOnly")
    ]


def operations(schema: dict[str, Any]) -> list[Operation]:
    """Every operation of the schema, in its order, with its parameters, body fields and
    response codes."""
    found = []
    for path, item in schema.get("paths", {}).items():
        for method in METHODS:
            operation = item.get(method)
            if not isinstance(operation, dict):
                continue
            fields = [
                Field(
                    str(p.get("name", "")),
                    str(p.get("in", "")),
                    _kind(schema, p.get("schema", {})),
                    bool(p.get("required")),
                    str(p.get("description") or ""),
                )
                for p in operation.get("parameters", [])
            ] + _body_fields(schema, operation)
            description = str(operation.get("description") or "")
            found.append(
                Operation(
                    method=method.upper(),
                    path=path,
                    anchor=str(operation.get("operationId") or f"{method}-{path}"),
                    summary=str(operation.get("summary") or description.split(". ")[0]),
                    description=description,
                    public={} in operation.get("security", [{}]),
                    fields=fields,
                    responses=[
                        (str(code), str(r.get("description") or ""))
                        for code, r in operation.get("responses", {}).items()
                    ],
                )
            )
    return found


@lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    """The public schema, generated once per process (it follows from the code)."""
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


@require_safe
def reference_page(request: HttpRequest) -> HttpResponse:
    schema = _schema()
    return render(
        request,
        "api/reference.html",
        {"info": schema.get("info", {}), "operations": operations(schema)},
    )
