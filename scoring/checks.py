"""System checks: a broken plugin registration fails loudly at start-up, not at the
first attempt."""

from __future__ import annotations

from django.core import checks

from scoring.engine.protocol import RegistryError


@checks.register()
def scorer_plugins_load(app_configs: object, **kwargs: object) -> list[checks.CheckMessage]:
    from scoring.registry import registry

    try:
        reg = registry()
    except RegistryError as exc:
        return [checks.Error(str(exc), id="podium.E001")]
    problems = []
    for plugin_id in reg.ids():
        try:
            reg.info(plugin_id)
        except RegistryError as exc:
            problems.append(checks.Error(f"Scorer plugin {plugin_id!r}: {exc}", id="podium.E002"))
    return problems
