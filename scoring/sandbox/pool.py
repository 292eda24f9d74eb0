"""A pool of long-lived sandbox workers that score attempts in batches.

A worker runs one program (one challenge version's code) for its whole life. ``run``
splits the attempts into batches of about ``BATCH_SIZE``, hands them to the program's
workers (spawning them as needed, evicting idle workers of other programs), and gathers
the answers without ever blocking on one worker.

Fairness: one program holds at most ``size - 1`` workers at once (``cap``), so another
challenge always finds a slot while one is busy, however slow its snippet;
``scoring.sandbox.pool_size`` adds that spare slot to one worker per core.

The protocol and its deadlines are in ``run``; a worker process, in ``process``.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from scoring.engine.snippet import Program, Raw

from . import launch
from .process import Popen, Worker, program_key
from .run import _Run

IDLE_S = 300.0  # an idle worker is stopped after this long

__all__ = ["SandboxPool", "Worker", "program_key", "register"]


class SandboxPool:
    """Long-lived workers, at most ``size`` alive at once and ``cap`` per program, shared
    by threads. ``popen`` starts a worker process (tests may pass their own)."""

    def __init__(
        self, mode: str, interp: launch.Interpreter, size: int = 2, popen: Popen = launch.popen
    ):
        if mode not in launch.MODES:
            raise ValueError(f"unknown sandbox mode {mode!r}")
        self.mode = mode
        self.interp = interp
        self.size = max(1, size)
        self.cap = max(1, self.size - 1)  # one program never holds every worker
        self.popen = popen
        self.spawned = 0
        self._idle: dict[tuple[Any, ...], list[Worker]] = {}
        self._held: dict[tuple[Any, ...], int] = {}  # busy workers per program
        self._alive = 0
        self._cond = threading.Condition()
        # bwrap --die-with-parent follows the *thread* that started it: workers are started
        # from one long-lived thread, so a request thread ending does not kill them.
        self._spawner = ThreadPoolExecutor(1, thread_name_prefix="podium-sandbox-spawn")
        self._owner_pid = os.getpid()

    # -- workers ---------------------------------------------------------------------------
    def _spawn(self, program: Program) -> Worker:
        if self._owner_pid != os.getpid():  # forked: the executor's thread is gone
            self._spawner = ThreadPoolExecutor(1, thread_name_prefix="podium-sandbox-spawn")
            self._owner_pid = os.getpid()
        start = self._spawner.submit(Worker, program, self.mode, self.interp, self.popen)
        worker = start.result()
        self.spawned += 1
        return worker

    def checkout(self, program: Program, wait: bool) -> Worker | None:
        """An idle worker of ``program``, or a new one (room permitting, the program under
        its cap); None when ``wait`` is False and neither is at hand. Raises OSError if a
        worker cannot start."""
        key = program_key(program)
        with self._cond:
            while True:
                self._reap_idle()
                if self._held.get(key, 0) < self.cap:
                    idle = self._idle.get(key)
                    if idle:
                        self._held[key] = self._held.get(key, 0) + 1
                        return idle.pop()
                    if self._alive >= self.size:
                        victim = self._evict_one()
                        if victim is not None:
                            victim.kill()
                    if self._alive < self.size:
                        self._alive += 1
                        self._held[key] = self._held.get(key, 0) + 1
                        break
                if not wait:
                    return None
                self._cond.wait(timeout=1.0)
        try:
            return self._spawn(program)
        except BaseException:
            with self._cond:
                self._alive -= 1
                self._unhold(key)
                self._cond.notify_all()
            raise

    def _unhold(self, key: tuple[Any, ...]) -> None:
        held = self._held.get(key, 0) - 1
        if held > 0:
            self._held[key] = held
        else:
            self._held.pop(key, None)

    def _evict_one(self) -> Worker | None:
        """The least recently used idle worker (of any program), removed from the pool."""
        oldest: Worker | None = None
        for workers in self._idle.values():
            for worker in workers:
                if oldest is None or worker.last_used < oldest.last_used:
                    oldest = worker
        if oldest is not None:
            self._idle[oldest.key].remove(oldest)
            self._alive -= 1
        return oldest

    def _reap_idle(self) -> None:
        now = time.monotonic()
        for workers in self._idle.values():
            for worker in [w for w in workers if now - w.last_used > IDLE_S]:
                workers.remove(worker)
                self._alive -= 1
                worker.kill()

    def release(self, worker: Worker) -> None:
        """A busy worker done with its run: back to idle, or stopped if it cannot be
        trusted with another batch."""
        if not worker.reusable():
            self.discard(worker)
            return
        worker.last_used = time.monotonic()
        with self._cond:
            self._unhold(worker.key)
            self._idle.setdefault(worker.key, []).append(worker)
            self._cond.notify_all()

    def discard(self, worker: Worker) -> None:
        """Stop a busy worker and free its slot (once: a second call does nothing)."""
        if worker.state == "dead":
            return
        worker.kill()
        with self._cond:
            self._alive -= 1
            self._unhold(worker.key)
            self._cond.notify_all()

    def discard_if_idle(self, worker: Worker) -> None:
        """Stop a worker that was handed back idle, if it still is."""
        with self._cond:
            workers = self._idle.get(worker.key, [])
            if worker not in workers:
                return
            workers.remove(worker)
            self._alive -= 1
        worker.kill()

    def close(self) -> None:
        """Stop every idle worker (busy ones stop when their run ends)."""
        with self._cond:
            workers = [w for ws in self._idle.values() for w in ws]
            self._idle.clear()
            self._alive -= len(workers)
        for worker in workers:
            worker.kill()

    def idle_count(self, program: Program | None = None) -> int:
        with self._cond:
            if program is None:
                return sum(len(ws) for ws in self._idle.values())
            return len(self._idle.get(program_key(program), []))

    def busy_count(self) -> int:
        """Workers scoring or starting (held by a run) right now."""
        with self._cond:
            return sum(self._held.values())

    def _after_fork(self) -> None:
        """In a forked child: the workers belong to the parent; forget them."""
        self._idle = {}
        self._held = {}
        self._alive = 0
        self._cond = threading.Condition()

    # -- scoring ----------------------------------------------------------------------------
    def run(self, program: Program, items: Sequence[str]) -> list[Raw]:
        """One raw answer per item (each item: an attempt as JSON text); never raises
        for what the snippet or its worker does."""
        return _Run(self, program, items).go()


_POOLS: list[SandboxPool] = []


def register(pool: SandboxPool) -> SandboxPool:
    """Track a pool so its workers stop at exit and are forgotten in forked children."""
    _POOLS.append(pool)
    return pool


def _forget_in_child() -> None:
    for pool in _POOLS:
        pool._after_fork()


os.register_at_fork(after_in_child=_forget_in_child)


@atexit.register
def _close_all() -> None:
    for pool in _POOLS:
        pool.close()
