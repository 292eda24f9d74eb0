"""A pool of long-lived sandbox workers that score attempts in batches.

A worker runs one program (one challenge version's code) for its whole life. ``run``
splits the attempts into batches of about ``BATCH_SIZE``, hands them to up to ``size``
workers of that program at once (spawning them as needed, evicting idle workers of other
programs), and gathers the answers with ``select``.

Timeouts: each worker notes in shared memory which attempt it is on and since when. The
worker's own SIGALRM ends most overruns; if an attempt is still running ``timeout_ms`` +
``GRACE_S`` after it started (a snippet that ignores SIGALRM, or is stuck in C code), the
worker is killed, that attempt is recorded as timed out, and the rest of its batch goes
to a fresh worker. A worker that dies does the same (that attempt: "died"). Every kill
settles at least one attempt, so a batch always finishes.

Nothing a worker sends is trusted: frames are size-capped, replies are decoded strictly
(no NaN, no Infinity) and checked for shape here; the contents are checked against the
snippet contract by ``scoring.engine.snippet``.
"""

from __future__ import annotations

import atexit
import hashlib
import itertools
import json
import mmap
import os
import select
import struct
import subprocess
import threading
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from scoring.engine.framing import FrameEOF, FrameReader, FrameTimeout
from scoring.engine.snippet import Program, Raw

from . import launch, policy

BATCH_SIZE = 1000
BATCH_BYTES = 4 * 1024 * 1024  # a batch of big samples is cut sooner
GRACE_S = 0.5  # past the worker's own alarm, before the parent kills it
START_TIMEOUT_S = 15.0  # bwrap and the interpreter starting, on a busy machine
START_POLL_S = 0.1
IDLE_S = 300.0  # an idle worker is stopped after this long
MAX_RESULT_CHARS = 16_384  # one attempt's result, as JSON
MAX_PRINT_CHARS = 1024 * 1024  # what one attempt may print (to nowhere)
RETIRE_CPU_S = policy.CPU_SECONDS / 2
_PROGRESS = struct.Struct("<qqq")  # batch seq, attempt index, monotonic ns it started
_SEQ = itertools.count(1)


def program_key(program: Program) -> tuple[Any, ...]:
    digest = hashlib.sha256(program.code.encode("utf-8", "surrogatepass")).hexdigest()
    return (program.owner, digest, program.arity, program.is_async, program.timeout_ms)


def _strict_loads(data: bytes) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not allowed")

    return json.loads(data, parse_constant=refuse)


def _died(code: int | None) -> str:
    if code is None:
        return "the sandbox worker stopped answering"
    if code < 0 or code > 128:
        signum = -code if code < 0 else code - 128
        return f"the sandbox worker died (signal {signum})"
    return f"the sandbox worker exited (code {code})"


class Worker:
    """One sandboxed process running one program."""

    def __init__(self, program: Program, mode: str, interp: launch.Interpreter, proc_factory):
        self.program = program
        self.key = program_key(program)
        self.mode = mode
        self.state = "starting"
        self.started = time.monotonic()
        self.last_used = self.started
        self.cpu = 0.0
        self.pid_owner = os.getpid()
        self._shm_fd = os.memfd_create("podium-sandbox-progress")
        try:
            os.ftruncate(self._shm_fd, _PROGRESS.size)
            self._shm = mmap.mmap(self._shm_fd, _PROGRESS.size)
            self.proc: subprocess.Popen[bytes] = proc_factory(mode, interp, self._shm_fd)
        except BaseException:
            os.close(self._shm_fd)
            raise
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.out_fd = self.proc.stdout.fileno()
        self.in_fd = self.proc.stdin.fileno()
        os.set_blocking(self.in_fd, False)
        self.reader = FrameReader(self.out_fd)

    def progress(self) -> tuple[int, int, float]:
        seq, index, started_ns = _PROGRESS.unpack_from(self._shm, 0)
        return seq, index, started_ns / 1e9

    def send(self, payload: bytes, deadline: float) -> None:
        """Write one frame; raises FrameTimeout when the worker does not read it in time
        and FrameEOF when it is gone."""
        view = memoryview(struct.pack("!I", len(payload)) + payload)
        while view:
            try:
                written = os.write(self.in_fd, view)
            except BlockingIOError:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise FrameTimeout from None
                select.select([], [self.in_fd], [], remaining)
                continue
            except (BrokenPipeError, OSError):
                raise FrameEOF from None
            view = view[written:]

    def setup_frame(self) -> bytes:
        landlock_mode = "require" if self.mode == launch.LANDLOCK else "try"
        interp = launch.interpreter()
        return json.dumps(
            {
                "code": self.program.code,
                "arity": self.program.arity,
                "async": self.program.is_async,
                "timeout_ms": self.program.timeout_ms,
                "max_result": MAX_RESULT_CHARS,
                "max_print": MAX_PRINT_CHARS,
                "limits": policy.limits(),
                "landlock": {
                    "mode": landlock_mode,
                    "paths": list(interp.read_paths) if interp else ["/usr"],
                },
                "seccomp": policy.seccomp_program().hex(),
            }
        ).encode("utf-8", "surrogatepass")

    def exit_code(self) -> int | None:
        try:
            return self.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        if self.pid_owner != os.getpid():
            return  # inherited across fork: the parent's to stop
        self.state = "dead"
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        self._shm.close()
        os.close(self._shm_fd)


@dataclass
class _Flight:
    """What a busy worker is doing: starting, or scoring a batch of item indices."""

    indices: list[int] = field(default_factory=list)
    sent: float = 0.0
    seq: int = 0
    starting: bool = False


class SandboxPool:
    """Long-lived workers, at most ``size`` alive at once, shared by threads."""

    def __init__(self, mode: str, interp: launch.Interpreter, size: int = 2):
        if mode not in launch.MODES:
            raise ValueError(f"unknown sandbox mode {mode!r}")
        self.mode = mode
        self.interp = interp
        self.size = max(1, size)
        self.restarts = 0  # workers killed for a timeout or found dead (for tests, stats)
        self.spawned = 0
        self._idle: dict[tuple[Any, ...], list[Worker]] = {}
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
        start = self._spawner.submit(Worker, program, self.mode, self.interp, launch.popen)
        worker = start.result()
        self.spawned += 1
        return worker

    def _checkout(self, program: Program, wait: bool) -> Worker | None:
        """An idle worker of ``program``, or a new one (room permitting); None when
        ``wait`` is False and neither is at hand. Raises OSError if a worker cannot start."""
        key = program_key(program)
        with self._cond:
            while True:
                self._reap_idle()
                idle = self._idle.get(key)
                if idle:
                    return idle.pop()
                if self._alive >= self.size:
                    victim = self._evict_one()
                    if victim is not None:
                        victim.kill()
                if self._alive < self.size:
                    self._alive += 1
                    break
                if not wait:
                    return None
                self._cond.wait(timeout=1.0)
        try:
            return self._spawn(program)
        except BaseException:
            with self._cond:
                self._alive -= 1
                self._cond.notify_all()
            raise

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

    def _release(self, worker: Worker) -> None:
        if worker.cpu > RETIRE_CPU_S or worker.state != "ready":
            self._discard(worker)
            return
        worker.last_used = time.monotonic()
        with self._cond:
            self._idle.setdefault(worker.key, []).append(worker)
            self._cond.notify_all()

    def _discard(self, worker: Worker) -> None:
        worker.kill()
        with self._cond:
            self._alive -= 1
            self._cond.notify_all()

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

    def _after_fork(self) -> None:
        """In a forked child: the workers belong to the parent; forget them."""
        self._idle = {}
        self._alive = 0
        self._cond = threading.Condition()

    # -- scoring ----------------------------------------------------------------------------
    def run(self, program: Program, items: Sequence[str]) -> list[Raw]:
        """One raw answer per item (each item: an attempt as JSON text); never raises
        for what the snippet does."""
        return _Run(self, program, items).go()


class _Run:
    """One call of ``SandboxPool.run``: batches in flight on up to ``pool.size`` workers."""

    def __init__(self, pool: SandboxPool, program: Program, items: Sequence[str]):
        self.pool = pool
        self.program = program
        self.items = items
        self.results: list[Raw | None] = [None] * len(items)
        self.pending: deque[list[int]] = deque(self._batches())
        self.busy: dict[Worker, _Flight] = {}
        self.timeout_s = program.timeout_ms / 1000.0

    def _batches(self) -> list[list[int]]:
        batches, current, size = [], [], 0
        for index, item in enumerate(self.items):
            if current and (len(current) >= BATCH_SIZE or size + len(item) > BATCH_BYTES):
                batches.append(current)
                current, size = [], 0
            current.append(index)
            size += len(item) + 1
        if current:
            batches.append(current)
        return batches

    def go(self) -> list[Raw]:
        try:
            parallel = min(self.pool.size, len(self.pending))
            while self.pending or self.busy:
                self._hand_out(parallel)
                if self.busy:
                    self._wait()
        finally:
            for worker in list(self.busy):  # only after an unexpected error
                self.pool._discard(worker)
        return [r if r is not None else (False, "not scored", None) for r in self.results]

    # -- handing out work -------------------------------------------------------------------
    def _hand_out(self, parallel: int) -> None:
        while self.pending and len(self.busy) < parallel:
            try:
                worker = self.pool._checkout(self.program, wait=not self.busy)
            except OSError as exc:
                self._fail_pending(f"the sandbox could not start a worker: {exc}")
                return
            if worker is None:
                return
            if worker.state == "starting":
                try:
                    worker.send(worker.setup_frame(), time.monotonic() + START_TIMEOUT_S)
                except (FrameTimeout, FrameEOF):
                    self._fail_pending(_died(worker.exit_code()) + " while starting")
                    self.pool._discard(worker)
                    return
                self.busy[worker] = _Flight(starting=True, sent=time.monotonic())
            else:
                self._dispatch(worker)

    def _dispatch(self, worker: Worker) -> None:
        if not self.pending:
            self.pool._release(worker)
            return
        indices = self.pending.popleft()
        seq = next(_SEQ)  # unique per process: a reused worker's old notes never match
        body = ",".join([self.items[i] for i in indices])
        payload = f"[{seq},[{body}]]".encode("utf-8", "surrogatepass")
        flight = _Flight(indices=indices, sent=time.monotonic(), seq=seq)
        self.busy[worker] = flight
        try:
            worker.send(payload, time.monotonic() + self.timeout_s + GRACE_S)
        except FrameTimeout:
            self._on_timeout(worker, flight)
        except FrameEOF:
            self._on_death(worker, flight)

    # -- waiting ------------------------------------------------------------------------------
    def _deadline(self, worker: Worker, flight: _Flight) -> float:
        seq, _, started = worker.progress()
        if flight.starting:
            if seq == -1:  # the module's top-level code is running
                return started + self.timeout_s + GRACE_S
            return flight.sent + START_TIMEOUT_S + self.timeout_s
        base = started if seq == flight.seq and started > flight.sent else flight.sent
        return base + self.timeout_s + GRACE_S

    def _wait(self) -> None:
        deadlines = {w: self._deadline(w, f) for w, f in self.busy.items()}
        timeout = max(0.0, min(deadlines.values()) - time.monotonic())
        if any(f.starting for f in self.busy.values()):
            timeout = min(timeout, START_POLL_S)  # its top-level code may begin any moment
        by_fd = {w.out_fd: w for w in self.busy}
        readable, _, _ = select.select(list(by_fd), [], [], timeout)
        for fd in readable:
            worker = by_fd[fd]
            self._on_readable(worker, self.busy[worker], deadlines[worker])
        now = time.monotonic()
        for worker, flight in list(self.busy.items()):
            if worker.out_fd in readable:
                continue
            if now >= self._deadline(worker, flight):
                self._on_timeout(worker, flight)

    def _on_readable(self, worker: Worker, flight: _Flight, deadline: float) -> None:
        # A reply that has begun arrives in full at once; a worker that stalls mid-frame
        # is treated like one that stalls mid-attempt.
        try:
            frame = worker.reader.read(max(deadline, time.monotonic() + 1.0))
        except FrameTimeout:
            self._on_timeout(worker, flight)
            return
        except FrameEOF:
            self._on_death(worker, flight)
            return
        if len(frame) > (MAX_RESULT_CHARS + 64) * max(1, len(flight.indices)) + 4096:
            self._on_invalid(worker, flight, "a reply over the size limit")
            return
        try:
            message = _strict_loads(frame)
        except (ValueError, RecursionError):
            self._on_invalid(worker, flight, "a reply that is not strict JSON")
            return
        if flight.starting:
            self._on_started(worker, message)
        else:
            self._on_results(worker, flight, message)

    def _on_started(self, worker: Worker, message: Any) -> None:
        del self.busy[worker]
        if message == ["ready"]:
            worker.state = "ready"
            self._dispatch(worker)
            return
        if isinstance(message, list) and len(message) == 2 and message[0] == "fatal":
            error = str(message[1])[:2000]
        else:
            error = "the sandbox worker sent an invalid greeting"
        self.pool._discard(worker)
        self._fail_pending(error)

    def _on_results(self, worker: Worker, flight: _Flight, message: Any) -> None:
        if not (
            type(message) is list
            and len(message) == 3
            and type(message[0]) is list
            and len(message[0]) <= len(flight.indices)
            and type(message[1]) in (int, float)
            and type(message[2]) is bool
        ):
            self._on_invalid(worker, flight, "a reply of the wrong shape")
            return
        del self.busy[worker]
        answers, worker.cpu, retire = message
        indices = flight.indices
        for index, answer in zip(indices, answers, strict=False):
            self.results[index] = _raw(answer)
        rest = indices[len(answers) :]
        if rest:
            if not answers:  # no progress at all: the first attempt takes the blame
                self.results[rest[0]] = (False, "the sandbox worker gave up on this attempt", None)
                rest = rest[1:]
            if rest:
                self.pending.appendleft(rest)
        if retire:
            self.pool._discard(worker)
        else:
            self._dispatch(worker)

    # -- failures ------------------------------------------------------------------------------
    def _blame(self, worker: Worker, flight: _Flight, error: str) -> None:
        """Settle the attempt the worker was on with ``error``; requeue the rest of the batch
        for a fresh worker."""
        seq, index, _ = worker.progress()
        indices = flight.indices
        if seq == flight.seq and index >= len(indices):  # stuck after scoring, sending
            for i in indices:
                self.results[i] = (False, error + " while sending its results", None)
            return
        at = index if seq == flight.seq else 0
        self.results[indices[at]] = (False, error, None)
        rest = indices[:at] + indices[at + 1 :]
        if rest:
            self.pending.appendleft(rest)

    def _on_timeout(self, worker: Worker, flight: _Flight) -> None:
        self.busy.pop(worker, None)
        self.pool.restarts += 1
        if flight.starting:
            seq, _, _ = worker.progress()
            self.pool._discard(worker)
            if seq == -1:
                self._fail_pending(
                    f"the module's top-level code ran past {self.program.timeout_ms} ms"
                )
            else:
                self._fail_pending(f"the sandbox worker did not start within {START_TIMEOUT_S} s")
            return
        self._blame(worker, flight, f"timed out after {self.program.timeout_ms} ms")
        self.pool._discard(worker)

    def _on_death(self, worker: Worker, flight: _Flight) -> None:
        self.busy.pop(worker, None)
        self.pool.restarts += 1
        code = worker.exit_code()
        if flight.starting:
            self.pool._discard(worker)
            self._fail_pending(_died(code) + " while starting")
            return
        self._blame(worker, flight, _died(code))
        self.pool._discard(worker)

    def _on_invalid(self, worker: Worker, flight: _Flight, what: str) -> None:
        self.busy.pop(worker, None)
        self.pool.restarts += 1
        self.pool._discard(worker)
        error = f"the sandbox worker sent {what}"
        if flight.starting:
            self._fail_pending(error)
            return
        for i in flight.indices:
            self.results[i] = (False, error, None)

    def _fail_pending(self, error: str) -> None:
        while self.pending:
            for i in self.pending.popleft():
                self.results[i] = (False, error, None)


def _raw(answer: Any) -> Raw:
    """One attempt's answer as the worker sent it: [0, dict, ms] or [1, text, ms]."""
    if type(answer) is list and len(answer) == 3 and type(answer[2]) in (int, float):
        kind, value, ms = answer
        if kind == 0 and type(value) is dict:
            return (True, value, float(ms))
        if kind == 1 and type(value) is str:
            return (False, value[:2000], float(ms))
    return (False, "the sandbox worker sent an invalid result", None)


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
