"""How a sandbox worker process is started, in each of the two modes.

- ``bwrap``: under bubblewrap (``--unshare-all`` namespaces: no network, its own pid,
  ipc, uts and cgroup namespaces; ``--die-with-parent --new-session --clearenv``; an
  unprivileged uid; ``/usr`` read-only, a private ``/tmp``, a minimal ``/dev``, no
  ``/etc``, no ``/proc``, no project file), then rlimits, Landlock where the kernel has
  it, and the seccomp filter inside.
- ``landlock`` (the fallback where bubblewrap or user namespaces are missing): the same
  worker started directly, with an empty environment, an unprivileged uid when Podium
  runs as root, its own session, then rlimits, Landlock (required: reading beneath the
  interpreter's directories only) and the seccomp filter.

The interpreter inside is a system Python whose standard library lies beneath ``/usr``
(the project's virtualenv is a project file and stays outside). Beyond the standard
library a snippet may import only ``LIBRARIES`` (``jsonschema`` and what it needs): each
package directory (or module file) is bound read-only at its own path under bubblewrap
and is readable under Landlock, nothing else of the virtualenv; the worker resolves those
names, and only those, to those paths. The same confinement applies to their code.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

BWRAP = "bwrap"
LANDLOCK = "landlock"
MODES = (BWRAP, LANDLOCK)
NOBODY = 65534
WORKER_SOURCE = Path(__file__).with_name("worker.py")


# Third-party libraries a snippet may import (the Python scorer reference names JSON-schema
# validation as a use case): jsonschema and its dependencies, nothing else.
LIBRARIES = (
    "jsonschema",
    "jsonschema_specifications",
    "referencing",
    "rpds",
    "attrs",
    "attr",
    "typing_extensions",
)


@cache
def libraries() -> dict[str, str]:
    """Name → the package directory or module file of each of ``LIBRARIES`` installed
    here (found without importing them)."""
    found: dict[str, str] = {}
    for name in LIBRARIES:
        spec = importlib.util.find_spec(name)
        if spec is None:
            continue
        if spec.submodule_search_locations:
            found[name] = str(Path(next(iter(spec.submodule_search_locations))).resolve())
        elif spec.origin and spec.origin.endswith(".py"):
            found[name] = str(Path(spec.origin).resolve())
    return found


@dataclass(frozen=True)
class Interpreter:
    executable: str
    read_paths: tuple[str, ...]  # what the worker must read: its stdlib and libraries


@cache
def interpreter() -> Interpreter | None:
    """A Python 3.10+ beneath /usr: the system one, or the one running us if it lives
    there. None when there is none."""
    candidates = [sys._base_executable, "/usr/bin/python3", "/usr/local/bin/python3"]  # type: ignore[attr-defined]
    for candidate in candidates:
        path = Path(candidate).resolve() if candidate else None
        if path is None or not str(path).startswith("/usr/") or not os.access(path, os.X_OK):
            continue
        probe = subprocess.run(
            [str(path), "-I", "-S", "-c", "import sys, ctypes; print(sys.version_info >= (3, 10))"],
            capture_output=True,
            text=True,
            timeout=30,
            env={},
        )
        if probe.returncode == 0 and probe.stdout.strip() == "True":
            return Interpreter(str(path), ("/usr", *libraries().values()))
    return None


def bwrap_path() -> str | None:
    return shutil.which(BWRAP, path="/usr/bin:/bin:/usr/local/bin")


def root_links() -> list[str]:
    """/bin, /lib, /lib64, /sbin: symlinks into /usr on merged-/usr systems (as here),
    read-only binds of the real directories elsewhere."""
    args: list[str] = []
    for name in ("bin", "lib", "lib64", "lib32", "libx32", "sbin"):
        top = Path("/") / name
        if top.is_symlink():
            args += ["--symlink", os.readlink(top), str(top)]
        elif top.is_dir():
            args += ["--ro-bind", str(top), str(top)]
    return args


def command(mode: str, interp: Interpreter) -> list[str]:
    libs = libraries()
    python = [
        interp.executable, "-I", "-S", "-B", "-c", WORKER_SOURCE.read_text(), json.dumps(libs),
    ]  # fmt: skip
    if mode == LANDLOCK:
        return python
    binds = [arg for path in libs.values() for arg in ("--ro-bind", path, path)]
    bwrap = bwrap_path()
    if bwrap is None:
        raise FileNotFoundError("bubblewrap (bwrap) is not installed")
    # fmt: off
    return [
        bwrap,
        "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session",
        "--clearenv", "--cap-drop", "ALL",
        "--uid", str(NOBODY), "--gid", str(NOBODY), "--hostname", "sandbox",
        "--ro-bind", "/usr", "/usr", *root_links(),
        "--dev", "/dev", "--tmpfs", "/tmp",  # noqa: S108 - its own /tmp
        # The libraries after the tmpfs: a checkout (and its virtualenv) under /tmp would
        # otherwise be hidden by it.
        *binds,
        "--chdir", "/tmp",  # noqa: S108
        "--", *python,
    ]
    # fmt: on


def popen(mode: str, interp: Interpreter) -> subprocess.Popen[bytes]:
    """Start a worker; its stdin/stdout are the channel. Raises OSError."""
    drop = os.geteuid() == 0  # never run a snippet as root, even inside a namespace
    return subprocess.Popen(
        command(mode, interp),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        close_fds=True,
        env={},
        cwd="/",
        start_new_session=True,
        user=NOBODY if drop else None,
        group=NOBODY if drop else None,
        extra_groups=[] if drop else None,
    )
