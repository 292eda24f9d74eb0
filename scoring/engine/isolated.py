"""Runs a scorer plugin in a long-lived child process, with a hard per-attempt timeout.

The child (``scoring.engine.child``) gets a batch of attempts in one frame and answers
one frame per attempt. The parent waits at most ``timeout_ms`` + a grace period for each
answer; past that it kills the child, records a timeout for that attempt, starts a fresh
child and goes on with the rest. So a plugin that sleeps for a minute costs its attempt
``timeout_ms`` and nothing more, and the calling process stays healthy.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from .framing import FrameEOF, FrameReader, FrameTimeout, write_frame
from .outcome import Outcome, normalize_result
from .protocol import AttemptMetrics, ScoringContext
from .red_blue import PAIRING_METHOD, PairingOutcome, pairing_result

GRACE_S = 0.25  # how long past the child's own alarm the parent waits before killing it
START_TIMEOUT_S = 30.0
BATCH_SIZE = 500
R = TypeVar("R")


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    paths = [p or os.getcwd() for p in sys.path]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


class IsolatedScorer:
    """One plugin class in one child process; thread-safe, restarted when needed."""

    def __init__(self, entrypoint: str):
        self.entrypoint = entrypoint
        self._proc: subprocess.Popen[bytes] | None = None
        self._reader: FrameReader | None = None
        self._pid_owner = 0
        self._lock = threading.Lock()

    # -- process management --------------------------------------------------------
    def _start(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "scoring.engine.child", self.entrypoint],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=_child_env(),
            close_fds=True,
        )
        self._pid_owner = os.getpid()
        assert self._proc.stdout is not None
        self._reader = FrameReader(self._proc.stdout.fileno())
        try:
            hello = json.loads(self._reader.read(time.monotonic() + START_TIMEOUT_S))
        except (FrameTimeout, FrameEOF):
            self.stop()
            raise RuntimeError(
                f"the scorer process for {self.entrypoint!r} did not start"
            ) from None
        if hello[0] != "ready":
            self.stop()
            raise RuntimeError(str(hello[1]))

    def stop(self) -> None:
        proc, self._proc, self._reader = self._proc, None, None
        if proc is None or self._pid_owner != os.getpid():
            return  # a process inherited across fork belongs to the parent
        proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()

    def _ensure_started(self) -> None:
        if self._proc is not None and self._pid_owner != os.getpid():
            self._proc = self._reader = None  # forked: start our own
        if self._proc is None or self._proc.poll() is not None:
            if self._proc is not None:
                self.stop()
            self._start()

    # -- scoring -------------------------------------------------------------------
    def run(
        self,
        items: Sequence[tuple[AttemptMetrics, ScoringContext]],
        config: dict[str, Any],
        timeout_ms: int,
    ) -> list[Outcome]:
        payloads = [[m.as_dict(), c.as_dict()] for m, c in items]
        return self._run(payloads, config, timeout_ms, None, normalize_result, Outcome.failed)

    def run_pairings(
        self, judgements: Sequence[dict[str, Any]], config: dict[str, Any], timeout_ms: int
    ) -> list[PairingOutcome]:
        """A pairing scorer's points for each judgement (``red_blue.pairing_judgement``),
        through the same timeouts and failure rules."""
        return self._run(
            list(judgements),
            config,
            timeout_ms,
            PAIRING_METHOD,
            pairing_result,
            PairingOutcome.failed,
        )

    def _run(
        self,
        payloads: list[Any],
        config: dict[str, Any],
        timeout_ms: int,
        method: str | None,
        ok: Callable[[Any], R],
        failed: Callable[[str], R],
    ) -> list[R]:
        with self._lock:
            outcomes: list[R] = []
            for start in range(0, len(payloads), BATCH_SIZE):
                pending = payloads[start : start + BATCH_SIZE]
                while pending:
                    try:
                        self._ensure_started()
                        assert self._proc is not None and self._proc.stdin is not None
                        payload: dict[str, Any] = {
                            "config": config,
                            "timeout_ms": timeout_ms,
                            "items": pending,
                        }
                        if method is not None:
                            payload["method"] = method
                        write_frame(self._proc.stdin, json.dumps(payload).encode())
                    except (RuntimeError, OSError) as exc:
                        self.stop()
                        outcomes += [failed(str(exc))] * len(pending)
                        break
                    done = self._collect(len(pending), timeout_ms, outcomes, ok, failed)
                    pending = pending[done:]
            return outcomes

    def _collect(
        self,
        count: int,
        timeout_ms: int,
        outcomes: list[R],
        ok: Callable[[Any], R],
        failed: Callable[[str], R],
    ) -> int:
        """Read up to ``count`` answers; return how many attempts were settled."""
        assert self._reader is not None
        for index in range(count):
            deadline = time.monotonic() + timeout_ms / 1000.0 + GRACE_S
            try:
                kind, *rest = json.loads(self._reader.read(deadline))
            except FrameTimeout:
                self.stop()
                outcomes.append(failed(f"timed out after {timeout_ms} ms"))
                return index + 1
            except (FrameEOF, ValueError):
                code = None
                if self._proc is not None:
                    try:
                        code = self._proc.wait(timeout=1)
                    except subprocess.TimeoutExpired:
                        pass  # alive but talking nonsense: killed below
                self.stop()
                outcomes.append(failed(f"the scorer process died (exit code {code})"))
                return index + 1
            if kind == "ok":
                outcomes.append(ok(rest[0]))
            else:
                outcomes.append(failed(str(rest[0])))
        return count


_POOL: dict[str, IsolatedScorer] = {}
_POOL_LOCK = threading.Lock()


def isolated_scorer(entrypoint: str) -> IsolatedScorer:
    """The process-wide isolated scorer for a (registry-verified) entrypoint."""
    with _POOL_LOCK:
        scorer = _POOL.get(entrypoint)
        if scorer is None:
            scorer = _POOL[entrypoint] = IsolatedScorer(entrypoint)
        return scorer


@atexit.register
def _stop_all() -> None:
    for scorer in list(_POOL.values()):
        scorer.stop()
