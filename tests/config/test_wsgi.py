"""config/wsgi.py loads the app, then freezes what loading made (gc.freeze)."""

from __future__ import annotations

import gc
import importlib
import sys


def test_the_wsgi_entry_freezes_what_loading_the_app_made(monkeypatch):
    frozen = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(gc.get_freeze_count()))
    monkeypatch.delitem(sys.modules, "config.wsgi", raising=False)
    wsgi = importlib.import_module("config.wsgi")
    assert callable(wsgi.application)
    assert frozen, "gc.freeze() was not called after loading the app"
