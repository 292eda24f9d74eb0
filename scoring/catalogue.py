"""The scorer catalogue: every strategy and registered plugin, as integrators and the
admin see them (``GET /api/scorers/``, the admin's plugin list). One source for both.

A plugin that cannot be loaded is listed with ``status = "broken"`` and its error; a
registration that was refused (a malformed entrypoint, an id taken twice) is listed the
same way. Nothing here raises for a plugin's fault.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scoring.engine import strategies
from scoring.engine.config import schema_defaults
from scoring.engine.protocol import RegistryError
from scoring.project_registry import registry

OK = "ok"
BROKEN = "broken"

_STRATEGY_TEXT = {
    strategies.FIRST: "The earliest successful attempt ranks first.",
    strategies.FASTEST: "The successful attempt with the lowest elapsed_ms ranks first.",
    strategies.FEWEST_TOKENS: "The successful attempt with the fewest tokens_total ranks first.",
    strategies.HIGHEST_RATING: "The successful attempt with the highest rating ranks first.",
    strategies.CUSTOM: (
        "A registered scorer plugin (scoring_plugin_id) computes each attempt's score; "
        "the highest ranks first."
    ),
    strategies.PYTHON: (
        "A Python snippet (scoring_code) defining compute_scores runs in the sandbox; "
        "score_key names the score that ranks (highest first, or lowest when the setup says so)."
    ),
}


@dataclass(frozen=True)
class CatalogueEntry:
    kind: str  # "strategy" or "plugin"
    id: str
    name: str
    description: str
    entrypoint: str = ""
    aliases: tuple[str, ...] = ()
    config_schema: dict[str, Any] | None = None
    config_defaults: dict[str, Any] = field(default_factory=dict)
    isolated: bool | None = None  # plugins: run in a separate scorer process
    status: str = OK
    error: str = ""


def strategies_catalogue() -> list[CatalogueEntry]:
    return [
        CatalogueEntry("strategy", s.name, s.label, _STRATEGY_TEXT.get(s.name, s.label))
        for s in strategies.STRATEGIES.values()
    ]


def plugins_catalogue() -> list[CatalogueEntry]:
    """Every registered plugin (broken ones included, with their error), by id."""
    reg = registry()
    entries = []
    for plugin_id in reg.ids():
        entrypoint = reg.entrypoint_for(plugin_id)
        try:
            info = reg.info(plugin_id)
        except RegistryError as exc:
            entries.append(_broken(plugin_id, entrypoint, str(exc)))
            continue
        entries.append(
            CatalogueEntry(
                "plugin",
                plugin_id,
                info.name,
                info.description,
                info.entrypoint,
                info.aliases,
                info.config_schema,
                schema_defaults(info.config_schema),
                isolated=not info.runs_in_process,
            )
        )
    entries += [_broken(plugin_id, *refused) for plugin_id, refused in reg.refused().items()]
    return sorted(entries, key=lambda e: e.id)


def _broken(plugin_id: str, entrypoint: str, why: str) -> CatalogueEntry:
    """A plugin that cannot be used (it does not load, or its registration was refused)."""
    return CatalogueEntry("plugin", plugin_id, plugin_id, "", entrypoint, status=BROKEN, error=why)


def scorer_catalogue() -> dict[str, list[CatalogueEntry]]:
    return {"strategies": strategies_catalogue(), "plugins": plugins_catalogue()}
