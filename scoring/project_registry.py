"""The project's scorer registry: built-ins + ``podium.scorers`` entry points +
the ``SCORING_PLUGINS`` setting, built once per process and rebuilt when the setting
changes (tests use ``override_settings`` or ``registry().temporarily(...)``)."""

from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from scoring.engine.registry import ScorerRegistry, builtin_registry

logger = logging.getLogger("podium.scoring")
_registry: ScorerRegistry | None = None
_lock = threading.Lock()


def registry() -> ScorerRegistry:
    global _registry
    if _registry is None:
        with _lock:
            if _registry is None:
                built = builtin_registry()
                built.register_entry_points()
                built.register_mapping(settings.SCORING_PLUGINS)
                for plugin_id, (entrypoint, why) in built.refused().items():
                    logger.warning(
                        "scorer plugin not registered: %s",
                        why,
                        extra={"plugin_id": plugin_id, "entrypoint": entrypoint},
                    )
                _registry = built
    return _registry


@receiver(setting_changed)
def _reset_on_setting_change(setting: str, **kwargs: object) -> None:
    global _registry
    if setting == "SCORING_PLUGINS":
        _registry = None
