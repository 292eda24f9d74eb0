"""Settings helpers fail loudly on malformed values; plugin registration is checked."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from config.settings import env_bool, env_int, env_json_dict, env_list


def test_env_bool(monkeypatch):
    monkeypatch.setenv("X_FLAG", "yes")
    assert env_bool("X_FLAG", False) is True
    monkeypatch.setenv("X_FLAG", "off")
    assert env_bool("X_FLAG", True) is False
    monkeypatch.setenv("X_FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="X_FLAG"):
        env_bool("X_FLAG", True)


def test_env_int(monkeypatch):
    monkeypatch.setenv("X_NUM", "12")
    assert env_int("X_NUM", 1) == 12
    monkeypatch.setenv("X_NUM", "twelve")
    with pytest.raises(ImproperlyConfigured, match="X_NUM"):
        env_int("X_NUM", 1)
    monkeypatch.setenv("X_NUM", "0")
    with pytest.raises(ImproperlyConfigured, match="at least 1"):
        env_int("X_NUM", 5, minimum=1)


def test_env_list_and_json(monkeypatch):
    monkeypatch.setenv("X_HOSTS", "a.example, b.example,")
    assert env_list("X_HOSTS", []) == ["a.example", "b.example"]
    monkeypatch.setenv("X_PLUGINS", '{"acme.x": "acme.scorers:X"}')
    assert env_json_dict("X_PLUGINS", {}) == {"acme.x": "acme.scorers:X"}
    for bad in ("{not json", '["a"]', '{"a": 1}'):
        monkeypatch.setenv("X_PLUGINS", bad)
        with pytest.raises(ImproperlyConfigured, match="X_PLUGINS"):
            env_json_dict("X_PLUGINS", {})


def test_check_warns_about_a_broken_plugin_and_goes_on(settings, capsys):
    # A broken plugin never takes the site down (issue 20): a warning, not an error.
    settings.SCORING_PLUGINS = {"acme.broken": "tests.plugins:NotAScorer"}
    call_command("check")
    err = capsys.readouterr().err
    assert "acme.broken" in err and "podium.W002" in err
    with pytest.raises(SystemCheckError, match=r"acme\.broken"):
        call_command("check", fail_level="WARNING")


def test_check_passes_with_a_good_plugin(settings):
    settings.SCORING_PLUGINS = {"acme.const": "tests.plugins:Constant"}
    call_command("check")


def test_plugins_setting_registers_plugins(settings):
    from scoring.project_registry import registry

    settings.SCORING_PLUGINS = {"acme.const": "tests.plugins:Constant"}
    assert "acme.const" in registry().ids()
    settings.SCORING_PLUGINS = {}
    assert "acme.const" not in registry().ids()
