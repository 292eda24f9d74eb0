"""What a red/blue challenge's settings must be, checked by the services that save a
challenge (the API and the admin alike). Errors name the field."""

from __future__ import annotations

import re
from typing import Any

from challenges.fieldsets import RED_BLUE_FIELDS
from challenges.models import Attempt, Challenge, ChallengeFormat, RedBlueScoring, Submission
from scoring.engine.config import validate_config
from scoring.engine.protocol import ConfigError, RegistryError
from scoring.engine.red_blue import MAX_SUITE, PAIRING_METHOD
from scoring.project_registry import registry

CODE = re.compile(r"[A-Za-z0-9_-]{1,32}")


PLUGIN_FIELDS = ("red_blue_scoring", "red_blue_plugin_id", "red_blue_entrypoint", "red_blue_config")


def plugin_touched(values: dict[str, Any], saved: Any) -> bool:
    """Whether ``values`` change the pairing scorer of ``saved`` (a challenge, or None
    for a new one): only then is the plugin checked, so a challenge whose plugin has
    left the registry can still be edited otherwise (its judgements record the error)."""
    return saved is None or any(values.get(n) != getattr(saved, n) for n in PLUGIN_FIELDS)


def red_blue_errors(values: dict[str, Any], *, plugin: bool = True) -> dict[str, str]:
    """What is wrong with the red/blue fields of a challenge, by field (the pairing
    scorer too when ``plugin``)."""
    if values.get("format") != ChallengeFormat.RED_BLUE:
        return {}
    errors = {}
    suite = values.get("judge_suite")
    if not isinstance(suite, list) or not 1 <= len(suite) <= MAX_SUITE:
        errors["judge_suite"] = f"A red/blue challenge needs 1 to {MAX_SUITE} category codes."
    elif bad := [c for c in suite if not isinstance(c, str) or not CODE.fullmatch(c)]:
        errors["judge_suite"] = (
            f"A category code is 1–32 letters, digits, '_' or '-': {bad[0]!r} is not."
        )
    elif len(set(suite)) != len(suite):
        errors["judge_suite"] = "Each category code may appear once."
    if plugin and values.get("red_blue_scoring") == RedBlueScoring.CUSTOM:
        _, plugin_errors = pairing_plugin_clean(values)
        errors.update(plugin_errors)
    return errors


def pairing_plugin_clean(values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The pairing scorer fields (``red_blue_plugin_id``, ``red_blue_entrypoint``,
    ``red_blue_config``) normalised (the registered entrypoint, the config with its
    schema's defaults), and what is wrong with them, by field. Under the scorer plugins'
    rules: a registered plugin id, its registered entrypoint (or none), a config its
    ``config_schema`` accepts; the plugin must load and have ``score_pairing``. Not
    ``custom``: the fields are emptied."""
    empty = {"red_blue_plugin_id": "", "red_blue_entrypoint": "", "red_blue_config": {}}
    if values.get("red_blue_scoring") != RedBlueScoring.CUSTOM:
        return empty, {}
    plugin_id = values.get("red_blue_plugin_id") or ""
    if not isinstance(plugin_id, str) or not plugin_id:
        return empty, {
            "red_blue_plugin_id": "Required with red_blue_scoring 'custom': a registered "
            "pairing scorer plugin id."
        }
    reg = registry()
    out = dict(empty, red_blue_plugin_id=plugin_id)
    try:
        out["red_blue_entrypoint"] = reg.verify(plugin_id, values.get("red_blue_entrypoint") or "")
    except RegistryError as exc:
        field = "red_blue_plugin_id" if plugin_id not in reg.ids() else "red_blue_entrypoint"
        return out, {field: str(exc)}
    try:
        cls = reg.load(plugin_id)
    except RegistryError as exc:
        return out, {"red_blue_plugin_id": f"The plugin cannot be loaded: {exc}"}
    if not callable(getattr(cls, PAIRING_METHOD, None)):
        return out, {
            "red_blue_plugin_id": f"Plugin {plugin_id!r} scores attempts, not pairings: it "
            f"has no {PAIRING_METHOD}(judgement, config) method."
        }
    try:
        out["red_blue_config"] = validate_config(
            reg.info(plugin_id).config_schema, values.get("red_blue_config", {})
        )
    except ConfigError as exc:
        return out, {"red_blue_config": exc.field_message}
    return out, {}


def red_blue_validate(*, challenge: Challenge, before: dict[str, Any] | None = None) -> None:
    """Raises ``scoring.SetupInvalid`` (a 400 naming the field) for bad red/blue settings,
    or a change of format once the challenge has attempts or submissions."""
    from scoring.services import SetupInvalid

    values = {n: getattr(challenge, n) for n in RED_BLUE_FIELDS}
    saved = None if before is None else Challenge.objects.filter(pk=challenge.pk).first()
    plugin = plugin_touched(values, saved)
    errors = red_blue_errors(values, plugin=plugin)
    if not errors and plugin:
        for name, value in pairing_plugin_clean(values)[0].items():
            setattr(challenge, name, value)
    changed = before is not None and before.get("format") != challenge.format
    if changed and (
        Attempt.objects.filter(challenge_id=challenge.pk).exists()
        or Submission.objects.filter(challenge_id=challenge.pk).exists()
    ):
        errors["format"] = "The format cannot change once players have taken part."
    if errors:
        raise SetupInvalid(errors)
