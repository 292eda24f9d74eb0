"""The original project's import paths, for plugins ported from it unchanged.

Plugins written for the original project import their types with::

    from services.challenge_scorer_protocol import AttemptMetrics, ScoringContext, ScoringResult

and its built-in weighted scorer lives at ``services.scorers.weighted``. Podium serves
exactly these names through a meta-path finder that the registry installs
(``install()``) before it imports a plugin, and the scoring app at start-up.

Why a finder and not a real top-level ``services`` package: ``services`` is a common
name, and a package of ours on ``sys.path`` would shadow a user's own ``services``
package (or be shadowed by it, depending on the path order). The finder sits *last* on
``sys.meta_path``: a real ``services`` package anywhere on the path is found first and
stays the user's; only what nothing else provides is answered here, and then only for
the names below (``services.anything_else`` is not found, as usual). Under a user's own
``services`` package the finder still answers ``services.challenge_scorer_protocol`` if
the package has no such module, so the guide's import line keeps working there too.

Each served module is a fresh module object re-exporting Podium's objects (the same
classes: ``isinstance`` and annotations behave), not Podium's module under a second
name, so nothing of Podium's own modules is changed.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import threading
from types import ModuleType
from typing import Any

# legacy name → the Podium module it re-exports ("" for a namespace-like package)
SERVED: dict[str, str] = {
    "services": "",
    "services.challenge_scorer_protocol": "scoring.engine.protocol",
    "services.scorers": "",
    "services.scorers.weighted": "scoring.scorers.weighted",
}
_lock = threading.Lock()


class _Loader(importlib.abc.Loader):
    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # the default: a fresh module

    def exec_module(self, module: ModuleType) -> None:
        if not self.target:
            module.__doc__ = "Podium's compatibility package for the original project's imports."
            return
        real = importlib.import_module(self.target)
        public: dict[str, Any] = {
            name: value for name, value in vars(real).items() if not name.startswith("__")
        }
        module.__dict__.update(public)
        module.__doc__ = f"Compatibility alias of {self.target} (see scoring.engine.legacy)."
        setattr(module, "__all__", [name for name in public if not name.startswith("_")])  # noqa: B010 - a module made at run time


class LegacyFinder(importlib.abc.MetaPathFinder):
    """Answers only the names in ``SERVED``, and only when no other finder did."""

    def find_spec(
        self, fullname: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in SERVED:
            return None
        target_name = SERVED[fullname]
        is_package = not target_name
        spec = importlib.machinery.ModuleSpec(
            fullname, _Loader(target_name), origin=f"alias of {target_name or 'nothing'}"
        )
        if is_package:
            spec.submodule_search_locations = []  # only this finder adds submodules
        return spec


def install() -> None:
    """Put the finder last on ``sys.meta_path`` (once per process)."""
    with _lock:
        if not any(isinstance(finder, LegacyFinder) for finder in sys.meta_path):
            sys.meta_path.append(LegacyFinder())
