"""The scorer plugin registry: ``plugin_id → "module:Class"``.

One registry holds every scorer plugin Podium may run: the built-ins, packages that
declare the ``podium.scorers`` entry-point group, and the ``SCORING_PLUGINS`` setting.
A challenge names a plugin id; the entrypoint it stores must be the one registered for
that id (or a registered alias of it). An entrypoint string that came from a request or
a database row is never imported on its own say-so: only registered ones are.
Classes are imported lazily on first use, checked against ``ScorerProtocol`` and cached.
Red/blue pairing scorers (``score_pairing``, ``scoring.engine.red_blue``) are registered
the same way, in the same registry; each kind of challenge accepts only its kind.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from . import legacy
from .protocol import RegistryError
from .red_blue import PAIRING_METHOD

ENTRY_POINT_GROUP = "podium.scorers"
WEIGHTED_ID = "builtin.weighted_scorer"
WEIGHTED_ENTRYPOINT = "scoring.scorers.weighted:WeightedScorer"
WEIGHTED_LEGACY_ENTRYPOINT = "services.scorers.weighted:WeightedScorer"


@dataclass(frozen=True)
class PluginInfo:
    """What the admin and the API show of a registered plugin."""

    plugin_id: str
    entrypoint: str
    name: str
    description: str
    config_schema: dict[str, Any] | None
    # True only for built-in plugins that declare themselves pure and bounded: they run
    # in the scoring process; every other plugin runs isolated, under a hard timeout.
    runs_in_process: bool = False
    aliases: tuple[str, ...] = field(default=())


def _parse_entrypoint(entrypoint: str) -> tuple[str, str]:
    module, sep, attr = entrypoint.partition(":")
    if (
        not sep
        or not module
        or not attr
        or not all(part.isidentifier() for part in [*module.split("."), *attr.split(".")])
    ):
        raise RegistryError(f"Entrypoint {entrypoint!r} is not of the form 'package.module:Class'.")
    return module, attr


def import_entrypoint(entrypoint: str) -> type:
    module_name, attr = _parse_entrypoint(entrypoint)
    legacy.install()  # plugins ported unchanged import `services.challenge_scorer_protocol`
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception as exc:  # ImportError, AttributeError, or the module's own error
        raise RegistryError(f"Cannot import {entrypoint!r}: {exc}") from exc
    if not isinstance(obj, type):
        raise RegistryError(f"{entrypoint!r} is not a class.")
    if not callable(getattr(obj, "score", None)) and not callable(
        getattr(obj, PAIRING_METHOD, None)
    ):
        raise RegistryError(
            f"{entrypoint!r} has no score(metrics, config, ctx) method (nor "
            f"{PAIRING_METHOD}(judgement, config), for a red/blue pairing scorer)."
        )
    schema = getattr(obj, "config_schema", None)
    if schema is not None and not isinstance(schema, dict):
        raise RegistryError(f"{entrypoint!r}.config_schema must be a dict (a JSON Schema).")
    return obj


class ScorerRegistry:
    def __init__(self) -> None:
        self._entrypoints: dict[str, str] = {}
        self._aliases: dict[str, set[str]] = {}
        self._classes: dict[str, type] = {}
        self._builtin: set[str] = set()
        # Why a plugin is broken: its class failed to load (cached: a module that raises
        # on import is not re-run for every attempt), or its registration was refused.
        self._failures: dict[str, str] = {}
        self._refused: dict[str, tuple[str, str]] = {}  # plugin_id → (entrypoint, why)
        self._lock = threading.Lock()

    # -- registration -------------------------------------------------------------
    def register(
        self,
        plugin_id: str,
        entrypoint: str,
        *,
        aliases: tuple[str, ...] = (),
        builtin: bool = False,
    ) -> None:
        """Register a plugin. ``builtin`` marks plugins shipped with Podium: only those
        may skip the isolated scoring process (see ``PluginInfo.runs_in_process``)."""
        if not plugin_id or not isinstance(plugin_id, str):
            raise RegistryError("A plugin id must be a non-empty string.")
        _parse_entrypoint(entrypoint)
        for alias in aliases:
            _parse_entrypoint(alias)
        with self._lock:
            current = self._entrypoints.get(plugin_id)
            if current is not None and current != entrypoint:
                raise RegistryError(
                    f"Plugin id {plugin_id!r} is already registered as {current!r}; "
                    f"refusing to re-register it as {entrypoint!r}."
                )
            self._entrypoints[plugin_id] = entrypoint
            self._aliases.setdefault(plugin_id, set()).update(aliases)
            self._classes.pop(plugin_id, None)
            self._failures.pop(plugin_id, None)
            self._refused.pop(plugin_id, None)
            if builtin:
                self._builtin.add(plugin_id)

    def unregister(self, plugin_id: str) -> None:
        with self._lock:
            for table in (self._entrypoints, self._aliases, self._classes, self._failures):
                table.pop(plugin_id, None)
            self._refused.pop(plugin_id, None)
            self._builtin.discard(plugin_id)

    def register_entry_points(self, group: str = ENTRY_POINT_GROUP) -> None:
        """Register every ``podium.scorers`` entry point of the installed packages."""
        for ep in entry_points(group=group):
            self._register_or_note(ep.name, ep.value.replace(" ", ""))

    def register_mapping(self, mapping: dict[str, str]) -> None:
        """Register a ``{plugin_id: "module:Class"}`` mapping (the SCORING_PLUGINS setting)."""
        for plugin_id, entrypoint in mapping.items():
            self._register_or_note(plugin_id, entrypoint)

    def _register_or_note(self, plugin_id: str, entrypoint: str) -> None:
        """Register, or note the plugin as broken: one bad registration (a malformed
        entrypoint, an id taken by another plugin) never stops the others or the site."""
        try:
            self.register(plugin_id, entrypoint)
        except RegistryError as exc:
            free = plugin_id and isinstance(plugin_id, str) and plugin_id not in self._entrypoints
            # A taken id: the existing registration stands, the clash is noted.
            key = plugin_id if free else f"{plugin_id} (duplicate)"
            with self._lock:
                self._refused[key] = (str(entrypoint), str(exc))

    @contextmanager
    def temporarily(self, plugin_id: str, entrypoint: str) -> Iterator[None]:
        """Test helper: register a plugin for the duration of a ``with`` block."""
        with self._lock:
            saved = (
                self._entrypoints.get(plugin_id),
                set(self._aliases.get(plugin_id, ())),
                plugin_id in self._builtin,
            )
        self.unregister(plugin_id)
        self.register(plugin_id, entrypoint)
        try:
            yield
        finally:
            self.unregister(plugin_id)
            if saved[0] is not None:
                self.register(plugin_id, saved[0], aliases=tuple(saved[1]), builtin=saved[2])

    # -- lookup -------------------------------------------------------------------
    def ids(self) -> list[str]:
        """The registered plugins (loadable or not)."""
        return sorted(self._entrypoints)

    def refused(self) -> dict[str, tuple[str, str]]:
        """Registrations that were refused: ``{plugin_id: (entrypoint, why)}``."""
        return dict(self._refused)

    def problem(self, plugin_id: str) -> str:
        """Why the plugin cannot be used ("" when it loads)."""
        if plugin_id in self._refused:
            return self._refused[plugin_id][1]
        try:
            self.load(plugin_id)
        except RegistryError as exc:
            return str(exc)
        return ""

    def entrypoint_for(self, plugin_id: str) -> str:
        try:
            return self._entrypoints[plugin_id]
        except KeyError:
            if plugin_id in self._refused:
                entrypoint, why = self._refused[plugin_id]
                raise RegistryError(
                    f"Scorer plugin {plugin_id!r} ({entrypoint!r}) could not be registered: {why}"
                ) from None
            known = ", ".join(self.ids()) or "none"
            raise RegistryError(
                f"Unknown scorer plugin {plugin_id!r}; registered plugins: {known}. "
                f"Plugins are registered explicitly: add {{{plugin_id!r}: "
                "'package.module:Class'} to the SCORING_PLUGINS setting (environment "
                "variable SCORING_PLUGINS, JSON), or declare it in the 'podium.scorers' "
                "entry-point group of an installed package; then restart Podium."
            ) from None

    def verify(self, plugin_id: str, entrypoint: str | None) -> str:
        """Return the registered entrypoint for ``plugin_id``.

        ``entrypoint`` (what a request or a row says) may be empty, the registered one
        or a registered alias; anything else is refused. It is never imported.
        """
        registered = self.entrypoint_for(plugin_id)
        if (
            entrypoint
            and entrypoint != registered
            and entrypoint not in self._aliases.get(plugin_id, ())
        ):
            raise RegistryError(
                f"Entrypoint {entrypoint!r} is not the one registered for plugin "
                f"{plugin_id!r} (expected {registered!r})."
            )
        return registered

    def load(self, plugin_id: str) -> type:
        """The plugin's class, imported on first use and cached."""
        cls = self._classes.get(plugin_id)
        if cls is None:
            entrypoint = self.entrypoint_for(plugin_id)
            failure = self._failures.get(plugin_id)
            if failure is not None:
                raise RegistryError(failure)
            try:
                cls = import_entrypoint(entrypoint)
            except RegistryError as exc:
                with self._lock:
                    self._failures[plugin_id] = str(exc)
                raise
            with self._lock:
                self._classes[plugin_id] = cls
        return cls

    def info(self, plugin_id: str) -> PluginInfo:
        cls = self.load(plugin_id)
        doc = (cls.__doc__ or "").strip().split("\n\n")[0]
        return PluginInfo(
            plugin_id=plugin_id,
            entrypoint=self.entrypoint_for(plugin_id),
            name=str(getattr(cls, "name", "") or cls.__name__),
            description=str(getattr(cls, "description", "") or doc),
            config_schema=getattr(cls, "config_schema", None),
            runs_in_process=plugin_id in self._builtin
            and bool(getattr(cls, "runs_in_process", False)),
            aliases=tuple(sorted(self._aliases.get(plugin_id, ()))),
        )


def builtin_registry() -> ScorerRegistry:
    """A registry holding only the plugins shipped with Podium."""
    registry = ScorerRegistry()
    registry.register(
        WEIGHTED_ID, WEIGHTED_ENTRYPOINT, aliases=(WEIGHTED_LEGACY_ENTRYPOINT,), builtin=True
    )
    return registry
