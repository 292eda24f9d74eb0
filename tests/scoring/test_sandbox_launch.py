"""The bubblewrap command line: what the worker can see. No sandbox is started here."""

from __future__ import annotations

import pytest

from scoring.sandbox import launch


def test_libraries_are_bound_after_the_private_tmp(monkeypatch):
    # A checkout (and its virtualenv) under /tmp, as a CI clone may be: bound before the
    # sandbox's own /tmp, the libraries were hidden by it and `import jsonschema` failed.
    libs = {"jsonschema": "/tmp/checkout/.venv/lib/python3.11/site-packages/jsonschema"}  # noqa: S108
    monkeypatch.setattr(launch, "libraries", lambda: libs)
    monkeypatch.setattr(launch, "bwrap_path", lambda: "/usr/bin/bwrap")
    interp = launch.Interpreter("/usr/bin/python3", ("/usr",))
    argv = launch.command(launch.BWRAP, interp)
    tmpfs = argv.index("--tmpfs")
    bind = next(
        i for i in range(len(argv) - 2) if argv[i] == "--ro-bind" and argv[i + 1] in libs.values()
    )
    assert argv[tmpfs + 1] == "/tmp"  # noqa: S108
    assert bind > tmpfs, "a library under /tmp would be hidden by the sandbox's own /tmp"


def test_landlock_mode_runs_the_worker_directly(monkeypatch):
    monkeypatch.setattr(launch, "libraries", lambda: {})
    argv = launch.command(launch.LANDLOCK, launch.Interpreter("/usr/bin/python3", ("/usr",)))
    assert argv[0] == "/usr/bin/python3"
    with pytest.raises(ValueError):
        argv.index("--tmpfs")
