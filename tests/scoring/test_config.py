"""validate_config: a plugin's config checked against its config_schema."""

from __future__ import annotations

import copy
import math

import pytest

from scoring.engine.config import schema_defaults, validate_config
from scoring.engine.protocol import ConfigError
from scoring.scorers.weighted import WeightedScorer
from tests.plugins import Constant

WEIGHTED = WeightedScorer.config_schema
DEFAULTS = {
    "success_bonus": 100.0,
    "rating_weight": 10.0,
    "time_penalty": 1.0,
    "token_penalty": 0.01,
}


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        pytest.param({}, DEFAULTS, id="empty"),
        pytest.param(
            {"rating_weight": 15},
            {**DEFAULTS, "rating_weight": 15},
            id="one-given",
        ),
        pytest.param(
            {
                "success_bonus": 1,
                "rating_weight": 2.5,
                "time_penalty": 0,
                "token_penalty": 1e9,
            },
            {
                "success_bonus": 1,
                "rating_weight": 2.5,
                "time_penalty": 0,
                "token_penalty": 1e9,
            },
            id="all-given-bounds",
        ),
    ],
)
def test_fills_defaults(config, expected):
    before = copy.deepcopy(config)
    assert validate_config(WEIGHTED, config) == expected
    assert config == before  # the caller's dict is not modified


def test_returns_a_copy_detached_from_schema_and_input():
    schema = {
        "type": "object",
        "properties": {"tags": {"type": "array", "default": ["a"]}},
    }
    filled = validate_config(schema, {})
    filled["tags"].append("b")
    assert schema["properties"]["tags"]["default"] == ["a"]
    given = {"tags": ["x"]}
    out = validate_config(schema, given)
    out["tags"].append("y")
    assert given == {"tags": ["x"]}


def test_constant_plugin_default():
    assert validate_config(Constant.config_schema, {}) == {"value": 1.0}


@pytest.mark.parametrize(
    ("config", "key"),
    [
        pytest.param({"success_bonus": "100"}, "success_bonus", id="string"),
        pytest.param({"rating_weight": None}, "rating_weight", id="null"),
        pytest.param({"time_penalty": True}, "time_penalty", id="bool"),
        pytest.param({"token_penalty": [0.01]}, "token_penalty", id="list"),
        pytest.param({"token_penalty": {"v": 1}}, "token_penalty", id="object"),
    ],
)
def test_wrong_type_names_the_key(config, key):
    with pytest.raises(ConfigError) as info:
        validate_config(WEIGHTED, config)
    assert list(info.value.errors) == [key]
    assert key in str(info.value)


def test_each_wrong_key_is_named():
    with pytest.raises(ConfigError) as info:
        validate_config(WEIGHTED, {"success_bonus": "x", "time_penalty": -1})
    assert set(info.value.errors) == {"success_bonus", "time_penalty"}


def test_unknown_key_is_named():
    with pytest.raises(ConfigError) as info:
        validate_config(WEIGHTED, {"rating_weight": 1, "bonus": 5})
    assert list(info.value.errors) == ["bonus"]
    assert "bonus" in str(info.value)


def test_every_unknown_key_is_named():
    with pytest.raises(ConfigError) as info:
        validate_config(WEIGHTED, {"bogus_a": 1, "bogus_b": 2})
    assert set(info.value.errors) == {"bogus_a", "bogus_b"}


@pytest.mark.parametrize(
    "config",
    [None, [], ["success_bonus", 1], "{}", 3, 1.5, True],
    ids=["none", "empty-list", "list", "json-string", "int", "float", "bool"],
)
@pytest.mark.parametrize("schema", [WEIGHTED, None], ids=["weighted", "no-schema"])
def test_non_dict_config_refused(schema, config):
    with pytest.raises(ConfigError) as info:
        validate_config(schema, config)
    assert list(info.value.errors) == [""]


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=str)
def test_nan_and_inf_refused(value):
    with pytest.raises(ConfigError) as info:
        validate_config(WEIGHTED, {"rating_weight": value})
    assert list(info.value.errors) == ["rating_weight"]
    assert "finite" in info.value.errors["rating_weight"]


def test_nested_nan_refused_without_schema_naming_the_path():
    with pytest.raises(ConfigError) as info:
        validate_config(None, {"outer": {"inner": [1.0, math.nan]}})
    assert list(info.value.errors) == ["outer.inner.1"]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("success_bonus", -1),
        ("rating_weight", -0.5),
        ("time_penalty", -1e-9),
        ("token_penalty", -100),
        ("success_bonus", 1e9 + 1),
        ("rating_weight", 10**20),
    ],
)
def test_out_of_bounds_refused(key, value):
    with pytest.raises(ConfigError) as info:
        validate_config(WEIGHTED, {key: value})
    assert list(info.value.errors) == [key]


@pytest.mark.parametrize(
    "config",
    [
        {},
        {"anything": 1},
        {"nested": {"a": [1, "two", None, True, {"b": 2.5}]}, "s": "x"},
        {"success_bonus": "not even a number"},
    ],
)
@pytest.mark.parametrize("schema", [None, {}], ids=["none", "empty-dict"])
def test_no_schema_accepts_any_object(schema, config):
    out = validate_config(schema, config)
    assert out == config
    assert out is not config


def test_nested_path_named():
    schema = {
        "type": "object",
        "properties": {
            "inner": {
                "type": "object",
                "properties": {"w": {"type": "number"}},
            }
        },
    }
    with pytest.raises(ConfigError) as info:
        validate_config(schema, {"inner": {"w": "heavy"}})
    assert list(info.value.errors) == ["inner.w"]


def test_required_key_named():
    schema = {"type": "object", "required": ["must"], "properties": {}}
    with pytest.raises(ConfigError) as info:
        validate_config(schema, {})
    assert list(info.value.errors) == ["must"]


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "objekt"},
        {"type": 12},
        {"properties": {"x": {"minimum": "zero"}}},
    ],
    ids=["unknown-type", "type-not-a-string", "minimum-not-a-number"],
)
def test_invalid_schema_is_a_config_error(schema):
    with pytest.raises(ConfigError) as info:
        validate_config(schema, {"x": 1})
    assert list(info.value.errors) == [""]


def test_schema_defaults():
    assert schema_defaults(WEIGHTED) == DEFAULTS
    assert schema_defaults(None) == {}
    assert schema_defaults({"type": "object"}) == {}
