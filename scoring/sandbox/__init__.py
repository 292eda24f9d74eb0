"""The sandbox for Python snippet scorers: plain Python, no Django.

Snippet code never runs in the web or Celery process. It runs in worker processes that
``launch`` starts under bubblewrap (or, where bubblewrap or user namespaces are missing,
directly with Landlock), confined further by ``policy`` (a seccomp filter and resource
limits) before the first line of the snippet runs; ``pool`` keeps them alive and feeds
them batches. ``availability()`` says, once per process, whether this machine can do
that, by starting a real worker and checking that it is confined; where it cannot,
snippets are refused with ``availability().message`` — never run unsandboxed.
"""

from __future__ import annotations

import os
import subprocess
import threading
from dataclasses import dataclass

from scoring.engine.snippet import Program

from . import launch, policy
from .pool import SandboxPool, register

HOW_TO_ENABLE = (
    "To enable them, install bubblewrap (Debian: apt-get install bubblewrap) on a kernel "
    "that allows unprivileged user namespaces, or run on Linux 5.13 or later with "
    "Landlock enabled; libseccomp2 is needed either way."
)


class SandboxUnavailable(ValueError):
    """This machine cannot sandbox snippets; the message says why and what to do."""


@dataclass(frozen=True)
class Availability:
    mode: str | None  # "bwrap", "landlock", or None: snippets are refused
    reasons: tuple[str, ...] = ()  # why a mode could not be had

    @property
    def available(self) -> bool:
        return self.mode is not None

    @property
    def message(self) -> str:
        if self.available:
            return f"Python snippets run sandboxed ({self.mode})."
        why = "; ".join(self.reasons) or "no sandbox mode works"
        return (
            "Python snippet scorers are disabled: this machine cannot provide their "
            f"sandbox ({why}), and snippets never run unsandboxed. {HOW_TO_ENABLE}"
        )


# The probe's snippet checks from the inside that the confinement holds: no socket, no
# file opened for writing, no new process, nothing of /etc to read, no inherited
# environment (Python itself sets LC_CTYPE; bubblewrap sets PWD).
_PROBE = """
import os, socket
def compute_scores(sample):
    attempts = (socket.socket, lambda: open("/tmp/probe", "w"), os.fork,
                lambda: open("/etc/passwd").read())
    for attempt in attempts:
        try:
            attempt()
        except OSError:
            continue
        return {"confined": False}
    return {"confined": set(os.environ) <= {"LC_CTYPE", "PWD"}}
"""


def probe(mode: str) -> str | None:
    """None when ``mode`` works here; else why not."""
    try:
        policy.seccomp_program()
    except policy.PolicyUnavailable as exc:
        return str(exc)
    interp = launch.interpreter()
    if interp is None:
        return "no Python 3.10+ interpreter beneath /usr for the workers"
    if mode == launch.BWRAP and launch.bwrap_path() is None:
        return "bubblewrap (bwrap) is not installed"
    pool = SandboxPool(mode, interp, size=1)
    try:
        program = Program("probe", _PROBE, 1, False, 10_000)
        [(ok, value, _)] = pool.run(program, ["[{},[true,null,null,null,null]]"])
    finally:
        pool.close()
    if not ok:
        detail = _bwrap_says() if mode == launch.BWRAP else ""
        return f"{mode}: {value}{detail}"
    if value != {"confined": True}:
        return f"{mode}: a probe worker was not confined"
    return None


def _bwrap_says() -> str:
    """What bubblewrap itself says when it cannot start (e.g. no user namespaces)."""
    bwrap = launch.bwrap_path()
    if bwrap is None:
        return ""
    argv = [bwrap, "--unshare-all", "--unshare-user", "--ro-bind", "/usr", "/usr"]
    argv += [*launch.root_links(), "--", "/usr/bin/true"]
    try:
        drop = os.geteuid() == 0  # as the workers start: unprivileged
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=30,
            env={},
            user=launch.NOBODY if drop else None,
            group=launch.NOBODY if drop else None,
            extra_groups=[] if drop else None,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f" ({exc})"
    lines = done.stderr.strip().splitlines()
    return f" ({lines[0]})" if done.returncode and lines else ""


_lock = threading.Lock()
_availability: Availability | None = None
_shared: SandboxPool | None = None


def availability(*, refresh: bool = False) -> Availability:
    """Which mode this machine gives (bubblewrap first, then Landlock), found once."""
    global _availability
    with _lock:
        if _availability is None or refresh:
            reasons = []
            for mode in launch.MODES:
                problem = probe(mode)
                if problem is None:
                    _availability = Availability(mode, tuple(reasons))
                    break
                reasons.append(problem)
            else:
                _availability = Availability(None, tuple(reasons))
        return _availability


def pool_size() -> int:
    """One worker per core (up to 4), plus the slot no single program may take (the
    pool's per-program cap is ``size - 1``): a lone challenge still uses every core, and
    another challenge always finds a slot beside a busy one."""
    return max(1, min(4, os.cpu_count() or 1)) + 1


def shared_pool() -> SandboxPool:
    """The process-wide pool. Raises SandboxUnavailable (with the reason)."""
    global _shared
    found = availability()
    if not found.available:
        raise SandboxUnavailable(found.message)
    with _lock:
        if _shared is None or _shared.mode != found.mode:
            interp = launch.interpreter()
            assert interp is not None  # the probe found it
            _shared = register(SandboxPool(found.mode, interp, size=pool_size()))
        return _shared


__all__ = [
    "Availability",
    "SandboxPool",
    "SandboxUnavailable",
    "availability",
    "shared_pool",
]
