"""Validation of a plugin's config against its ``config_schema`` (JSON Schema)."""

from __future__ import annotations

import copy
import functools
import json
import math
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from .protocol import ConfigError


def _named_errors(error: Any) -> dict[str, str]:
    """Path → message for one jsonschema error, one entry per offending key."""
    prefix = ".".join(str(p) for p in error.absolute_path)

    def under(key: str) -> str:
        return f"{prefix}.{key}" if prefix else key

    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = set(error.schema.get("properties", {}))
        extra = sorted(str(k) for k in error.instance if k not in known)
        if extra:
            return {under(k): "unknown key" for k in extra}
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [k for k in error.validator_value if k not in error.instance]
        if missing:
            return {under(k): "required" for k in missing}
    return {prefix: error.message}


def _check_finite(value: Any, path: str, errors: dict[str, str]) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        errors[path] = "must be a finite number"
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_finite(v, f"{path}.{k}" if path else str(k), errors)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_finite(v, f"{path}.{i}" if path else str(i), errors)


def validate_config(schema: dict[str, Any] | None, config: Any) -> dict[str, Any]:
    """Return ``config`` with the schema's top-level defaults filled in.

    Raises ``ConfigError`` naming each offending key. A plugin without a schema accepts
    any JSON object.
    """
    if not isinstance(config, dict):
        raise ConfigError({"": "must be a JSON object"})
    errors: dict[str, str] = {}
    _check_finite(config, "", errors)
    if errors:
        raise ConfigError(errors)
    if not schema:
        return copy.deepcopy(config)
    try:
        found = list(_validator(json.dumps(schema, sort_keys=True)).iter_errors(config))
    except SchemaError as exc:  # the plugin's fault, reported as such
        raise ConfigError({"": f"the plugin's config_schema is invalid: {exc.message}"}) from exc
    except Exception as exc:
        raise ConfigError({"": f"the plugin's config_schema cannot be used: {exc}"}) from exc
    for error in sorted(found, key=lambda e: [str(p) for p in e.absolute_path]):
        for path, message in _named_errors(error).items():
            errors.setdefault(path, message)
    if errors:
        raise ConfigError(errors)
    filled = copy.deepcopy(config)
    for key, prop in (schema.get("properties") or {}).items():
        if key not in filled and isinstance(prop, dict) and "default" in prop:
            filled[key] = copy.deepcopy(prop["default"])
    return filled


@functools.lru_cache(maxsize=128)
def _validator(schema_text: str) -> Draft202012Validator:
    """A checked validator per schema (as JSON text). Checking a schema costs
    milliseconds and a scorer is built for every slice of a request's attempts: each
    plugin's schema is checked once per process. A schema that fails its check raises,
    and is checked again next time (exceptions are not cached)."""
    schema = json.loads(schema_text)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def schema_defaults(schema: dict[str, Any] | None) -> dict[str, Any]:
    """The top-level defaults a schema declares (the admin pre-fills its form with them)."""
    props = (schema or {}).get("properties") or {}
    return {k: copy.deepcopy(p["default"]) for k, p in props.items() if "default" in p}
