"""OpenAPI post-processing: document the error responses docs/errors.md promises.

Every operation can answer 401/403 (a bad token, a missing permission); operations with
an id answer 404; operations that read input answer 400 naming the field; those with a
body answer 413 over the size limit and 415 for a body that is not JSON; recording
attempts answers 429 past the per-token rate. Without these, a client generated from
the schema (or a fuzzer) would meet undocumented statuses.
"""

from __future__ import annotations

from typing import Any

ERROR_REF = {"$ref": "#/components/schemas/Error"}
ERROR_SCHEMA = {
    "type": "object",
    "description": (
        'An error. Either {"detail": "…"} or, for bad input, the offending fields each '
        'with a list of messages ({"rating": ["…"]}; for a list body, keyed by the item '
        "index)."
    ),
    "properties": {"detail": {"type": "string"}},
    "additionalProperties": True,
}
MESSAGES = {
    "400": "Bad input: the offending field is named.",
    "401": "Missing or invalid token.",
    "403": "Not allowed for this user.",
    "404": "No such object (or not visible to this user).",
    "409": "The object's state does not allow it (for attempts: outside the challenge's "
    "window, which the message names).",
    "413": "The request body is over the size limit.",
    "415": "The body is not JSON.",
    "429": "Too many requests from this token, or (attempts) a player over the challenge's "
    "attempts_per_day or attempts_total cap, named in the message; see the Retry-After "
    "header (absent when waiting never helps, as for the total cap).",
    "503": "Briefly unavailable (a transient database error); try again after Retry-After.",
}
ATTEMPTS_409 = (
    "Outside the challenge's window (the message names it), or the Idempotency-Key was "
    "used before with a different body. Nothing was written."
)
RETRY_AFTER = {
    "Retry-After": {
        "schema": {"type": "integer"},
        "description": "Seconds to wait before trying again.",
    }
}
METHODS = {"get", "post", "put", "patch", "delete"}


def _error(code: str) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": MESSAGES[code],
        "content": {"application/json": {"schema": ERROR_REF}},
    }
    if code in ("429", "503"):
        response["headers"] = RETRY_AFTER
    return response


def error_responses(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict:
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if method not in METHODS:
                continue
            codes = {"401", "403", "503"}
            params = operation.get("parameters", [])
            if "{" in path:
                codes.add("404")
            if "requestBody" in operation or any(p.get("in") == "query" for p in params):
                codes.add("400")
            if method in {"post", "put", "patch"}:
                codes |= {"400", "413", "415"}
            if path.endswith(("/attempts/", "/submissions/")):
                codes.add("429")
                operation.setdefault("responses", {}).setdefault(
                    "409", {**_error("409"), "description": ATTEMPTS_409}
                )
            # A finished job; already hidden / not hidden; outside the challenge's window;
            # red/blue: the other team, a pairing judged already.
            conflicts = ("/cancel/", "/hide/", "/unhide/", "/attempts/", "/reveal/")
            conflicts += ("/teams/join/", "/submissions/", "/judgement/")
            if path.endswith(conflicts):
                codes.add("409")
            responses = operation.setdefault("responses", {})
            for code in sorted(codes):
                responses.setdefault(code, _error(code))
    return result


STAFF_ONLY_NOTE = "Staff and admins only: left out of the public view."
ID_PATTERN = "^[0-9]+$"


def public_view_and_ids(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict:
    """Mark the challenge fields only staff and admins see (docs/words-and-data.md, "Roles"),
    and document path ids as integers (the routes take ASCII digits only)."""
    from challenges.api.serializers import STAFF_ONLY_FIELDS

    challenge = result.get("components", {}).get("schemas", {}).get("Challenge", {})
    properties = challenge.get("properties", {})
    for name in STAFF_ONLY_FIELDS:
        if name in properties:
            note = properties[name].get("description")
            properties[name]["description"] = (
                f"{note} {STAFF_ONLY_NOTE}" if note else STAFF_ONLY_NOTE
            )
    if "required" in challenge:
        challenge["required"] = [n for n in challenge["required"] if n not in STAFF_ONLY_FIELDS]
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            if method not in METHODS:
                continue
            for param in operation.get("parameters", []):
                if (
                    param.get("in") == "path"
                    and param.get("schema", {}).get("pattern") == ID_PATTERN
                ):
                    param["schema"] = {"type": "integer"}
    return result
