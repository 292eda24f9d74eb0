"""One call of ``SandboxPool.run``: batches in flight on the program's workers, the
answers gathered with ``poll``, reading and writing without ever blocking on one worker.

Deadlines belong to the parent, on its own monotonic clock; nothing a worker writes can
move a kill later. A batch of ``n`` attempts sent at ``t`` must be done by ``t + n ×
(timeout + 5% + 5 ms) + GRACE_S``: past that the worker is killed and every attempt of
the batch not yet answered is recorded as timed out. Within that, the worker reports the
attempts it has finished at least every ``FLUSH_S``, so the attempt under way started
less than ``FLUSH_S`` after the parent last heard from it; ``timeout + GRACE_S`` later
it is killed (the worker's own SIGALRM ends most overruns first). If the worker reported
each attempt (a "careful" batch), or one attempt was left, that attempt is the one timed
out (or "died" for a worker that exits or crashes); otherwise the unanswered attempts go
to a fresh worker as a careful batch, which finds the culprit. Frames can only settle
the snippet's own attempts, one each, so forging them gains nothing past the batch
deadline.

Every byte from a worker is hostile: frames are cut without blocking and size-capped from
their header; replies are decoded strictly (UTF-8, JSON without NaN or Infinity) and
checked for shape here. Any failure to read, decode or check one, of any exception type,
kills that worker, records its unanswered attempts with the reason, frees its slot and
goes no further; the contents are checked against the snippet contract by
``scoring.engine.snippet``.
"""

from __future__ import annotations

import json
import logging
import math
import select
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from scoring.engine.framing import FrameTooLarge
from scoring.engine.snippet import Program, Raw

from .process import MAX_RESULT_CHARS, Worker, _died

log = logging.getLogger(__name__)


class Workers(Protocol):
    """Where a run takes its workers from and gives them back (``pool.SandboxPool``):
    this module needs only that, not the pool."""

    cap: int  # the most workers one program may hold at once

    def checkout(self, program: Program, wait: bool) -> Worker | None: ...
    def release(self, worker: Worker) -> None: ...
    def discard(self, worker: Worker) -> None: ...
    def discard_if_idle(self, worker: Worker) -> None: ...


BATCH_SIZE = 1000
SPREAD_MIN = 4  # a run's attempts are split across the program's workers down to this
BATCH_BYTES = 4 * 1024 * 1024  # a batch of big samples is cut sooner
GRACE_S = 0.5  # past the worker's own alarm, before the parent kills it
SLACK = 0.05  # per attempt, in a batch's deadline: 5% of its timeout (a late alarm)...
SLACK_S = 0.005  # ...and 5 ms (the work between attempts, a busy machine)
FLUSH_S = 0.05  # the worker reports finished attempts at least this often
START_TIMEOUT_S = 15.0  # bwrap and the interpreter starting, on a busy machine
MAX_GREETING = 16_384  # "loading", "ready" or "fatal" with its text


class BadFrame(Exception):
    """A frame from a worker that is not what the protocol allows here."""


def _strict_loads(data: bytes) -> Any:
    def refuse(name: str) -> Any:
        raise BadFrame(f"{name} is not allowed")

    return json.loads(data.decode("utf-8"), parse_constant=refuse)


@dataclass
class _Batch:
    """Item indices to score; ``careful``: the worker reports after every attempt."""

    indices: list[int]
    careful: bool = False


@dataclass
class _Flight:
    """What a busy worker is doing, and the parent's own clock for it.

    ``phase``: "spawned" (setup sent, awaiting "loading"), "loading" (the module's top
    level runs), or "batch". ``hard``: the deadline nothing moves; ``mark``: when the
    worker last made progress (answers, one each, bounded by the batch)."""

    phase: str
    sent: float
    hard: float
    mark: float = 0.0
    indices: list[int] = field(default_factory=list)
    done: int = 0  # answers received: indices[done:] are unsettled
    careful: bool = False


class _Run:
    """One call of ``SandboxPool.run``: batches in flight on the workers the pool gives
    (at most its cap for one program)."""

    def __init__(self, pool: Workers, program: Program, items: Sequence[str]):
        self.pool = pool
        self.program = program
        self.items = items
        self.results: list[Raw | None] = [None] * len(items)
        self.pending: deque[_Batch] = deque(_Batch(b) for b in self._batches())
        self.busy: dict[Worker, _Flight] = {}
        self.timeout_s = program.timeout_ms / 1000.0
        self.timed_out = f"timed out after {program.timeout_ms} ms"

    def _batches(self) -> list[list[int]]:
        """Consecutive batches, split so that every worker the program may hold gets
        one (a run of 25 attempts on a cap of 2: 13 and 12, scored at once), but none
        under SPREAD_MIN attempts nor over BATCH_SIZE attempts or BATCH_BYTES."""
        spread = max(1, self.pool.cap)
        most = min(BATCH_SIZE, max(SPREAD_MIN, -(-len(self.items) // spread)))
        batches, current, size = [], [], 0
        for index, item in enumerate(self.items):
            if current and (len(current) >= most or size + len(item) > BATCH_BYTES):
                batches.append(current)
                current, size = [], 0
            current.append(index)
            size += len(item) + 1
        if current:
            batches.append(current)
        return batches

    def go(self) -> list[Raw]:
        unscored = "not scored"
        try:
            while self.pending or self.busy:
                self._hand_out()
                if self.busy:
                    self._wait()
        except Exception as exc:  # a fault here, not the snippet's: its attempts get a reason
            log.exception("sandbox run of %s failed", self.program.owner)
            unscored = f"the sandbox failed ({type(exc).__name__})"
        finally:
            for worker in list(self.busy):  # only after an unexpected error
                self.pool.discard(worker)
        return [r if r is not None else (False, unscored, None) for r in self.results]

    # -- handing out work -------------------------------------------------------------------
    def _hand_out(self) -> None:
        while self.pending:
            if sum(1 for f in self.busy.values() if f.phase != "batch") >= len(self.pending):
                return  # the workers starting will take what is left
            try:
                worker = self.pool.checkout(self.program, wait=not self.busy)
            except OSError as exc:
                self._fail_pending(f"the sandbox could not start a worker: {exc}")
                return
            if worker is None:
                return
            if worker.state == "starting":
                now = time.monotonic()
                hard = now + START_TIMEOUT_S + self.timeout_s + GRACE_S
                flight = _Flight("spawned", sent=now, hard=hard)
                self.busy[worker] = flight
                worker.queue(worker.setup_frame())
                self._flush(worker, flight)
            else:
                self._dispatch(worker)

    def _dispatch(self, worker: Worker) -> None:
        if not self.pending:
            self.busy.pop(worker, None)
            self.pool.release(worker)
            return
        batch = self.pending.popleft()
        flush_ms = 0 if batch.careful else round(FLUSH_S * 1000)
        body = ",".join([self.items[i] for i in batch.indices])
        now = time.monotonic()
        span = len(batch.indices) * (self.timeout_s * (1 + SLACK) + SLACK_S) + GRACE_S
        flight = _Flight(
            "batch", sent=now, hard=now + span, mark=now, indices=batch.indices,
            careful=batch.careful,
        )  # fmt: skip
        self.busy[worker] = flight
        worker.queue(f"[{flush_ms},[{body}]]".encode("utf-8", "surrogatepass"))
        self._flush(worker, flight)

    def _flush(self, worker: Worker, flight: _Flight) -> None:
        try:
            worker.flush()
        except EOFError:
            self._on_death(worker, flight)

    # -- waiting ------------------------------------------------------------------------------
    def _deadline(self, flight: _Flight) -> float:
        """When the parent kills the worker: never later than ``flight.hard``."""
        if flight.phase == "spawned":
            soft = flight.sent + START_TIMEOUT_S
        elif flight.phase == "loading":
            soft = flight.mark + self.timeout_s + GRACE_S
        else:
            flush = 0.0 if flight.careful else FLUSH_S
            soft = flight.mark + flush + self.timeout_s + GRACE_S
        return min(soft, flight.hard)

    def _wait(self) -> None:
        now = time.monotonic()
        timeout = max(0.0, min(self._deadline(f) for f in self.busy.values()) - now)
        poller = select.poll()  # not select(): a busy web process may hold fds past 1024
        by_fd: dict[int, Worker] = {}
        for worker in self.busy:
            poller.register(worker.out_fd, select.POLLIN)
            by_fd[worker.out_fd] = worker
            if worker.outbox:
                poller.register(worker.in_fd, select.POLLOUT)
                by_fd[worker.in_fd] = worker
        for fd, _ in poller.poll(math.ceil(timeout * 1000)):
            worker = by_fd[fd]
            if worker not in self.busy:
                continue  # settled by an earlier event of this round
            if fd == worker.in_fd:
                self._flush(worker, self.busy[worker])
            else:
                self._on_readable(worker)  # data, or the end of the stream (POLLHUP)
        now = time.monotonic()
        for worker, flight in list(self.busy.items()):
            if now >= self._deadline(flight):
                self._on_timeout(worker, flight, now)

    def _on_readable(self, worker: Worker) -> None:
        """Take in what the worker sent. Whatever it is, this never raises: a frame that
        cannot be read, decoded or checked ends the worker and settles its attempts."""
        flight = self.busy[worker]
        try:
            if not worker.receive():
                self._on_death(worker, flight)
                return
            while self.busy.get(worker) is flight:
                limit = self._limit(flight)
                frame = worker.frames.next(limit)
                if frame is None:
                    return
                self._on_frame(worker, flight, _strict_loads(frame))
                flight = self.busy.get(worker, flight)
        except Exception as exc:  # every byte from a worker is hostile: any error at all
            what = "an invalid reply (not strict JSON)"
            if isinstance(exc, FrameTooLarge):
                what = "an invalid reply (over the size limit)"
            elif isinstance(exc, BadFrame):
                what = f"an invalid reply ({exc})"
            if worker in self.busy:
                self._on_invalid(worker, self.busy[worker], what)
            else:  # already settled and handed back (or out): it cannot be trusted again
                self.pool.discard_if_idle(worker)

    def _limit(self, flight: _Flight) -> int:
        if flight.phase != "batch":
            return MAX_GREETING
        return (MAX_RESULT_CHARS + 64) * max(1, len(flight.indices) - flight.done) + 4096

    def _on_frame(self, worker: Worker, flight: _Flight, message: Any) -> None:
        if flight.phase == "spawned":
            if message == ["loading"]:
                flight.phase, flight.mark = "loading", time.monotonic()
                return
            self._on_greeting(worker, message, "a greeting out of order")
        elif flight.phase == "loading":
            if message == ["ready"]:
                del self.busy[worker]
                worker.state = "ready"
                self._dispatch(worker)
                return
            self._on_greeting(worker, message, "a greeting out of order")
        elif type(message) is list and message and message[0] == "part":
            self._on_part(flight, message)
        elif type(message) is list and message and message[0] == "done":
            self._on_done(worker, flight, message)
        else:
            raise BadFrame("the wrong shape")

    def _on_greeting(self, worker: Worker, message: Any, what: str) -> None:
        if type(message) is list and len(message) == 2 and message[0] == "fatal":
            if type(message[1]) is not str:
                raise BadFrame("a fatal error that is not text")
            del self.busy[worker]
            self.pool.discard(worker)
            self._fail_pending(message[1][:2000])
            return
        raise BadFrame(what)

    def _on_part(self, flight: _Flight, message: Any) -> None:
        """Answers for the next attempts of the batch, at least one, never the last."""
        if len(message) != 2 or type(message[1]) is not list:
            raise BadFrame("a progress report of the wrong shape")
        answers = message[1]
        if not 1 <= len(answers) < len(flight.indices) - flight.done:
            raise BadFrame("a progress report with the wrong number of answers")
        self._settle(flight, [_answer(a) for a in answers])
        flight.mark = time.monotonic()

    def _on_done(self, worker: Worker, flight: _Flight, message: Any) -> None:
        if len(message) != 4 or type(message[1]) is not list or type(message[3]) is not bool:
            raise BadFrame("the wrong shape")
        answers, cpu, retire = message[1], _number(message[2], "cpu"), message[3]
        if len(answers) > len(flight.indices) - flight.done:
            raise BadFrame("more answers than attempts")
        self._settle(flight, [_answer(a) for a in answers])
        del self.busy[worker]
        worker.cpu = cpu
        rest = flight.indices[flight.done :]
        if rest:  # the worker stopped early (it retires)
            if not flight.done:  # no progress at all: the first attempt takes the blame
                self.results[rest[0]] = (False, "the sandbox worker gave up on this attempt", None)
                rest = rest[1:]
            if rest:
                self.pending.appendleft(_Batch(rest, flight.careful))
        if retire or not worker.reusable():
            self.pool.discard(worker)
        else:
            self._dispatch(worker)

    def _settle(self, flight: _Flight, raws: list[Raw]) -> None:
        for offset, raw in enumerate(raws):
            self.results[flight.indices[flight.done + offset]] = raw
        flight.done += len(raws)

    # -- failures ------------------------------------------------------------------------------
    def _blame(self, flight: _Flight, error: str) -> None:
        """The worker stopped mid-batch: settle the attempt it was on with ``error`` when
        that attempt is known (a careful batch, or one left); otherwise hand the rest to a
        fresh worker as a careful batch, which will know."""
        rest = flight.indices[flight.done :]
        if not rest:
            return
        if flight.careful or len(rest) == 1:
            self.results[rest[0]] = (False, error, None)
            rest = rest[1:]
            if rest:
                self.pending.appendleft(_Batch(rest))
            return
        self.pending.appendleft(_Batch(rest, careful=True))

    def _on_timeout(self, worker: Worker, flight: _Flight, now: float) -> None:
        self.busy.pop(worker, None)
        self.pool.discard(worker)
        if flight.phase == "spawned":
            self._fail_pending(f"the sandbox worker did not start within {START_TIMEOUT_S:g} s")
        elif flight.phase == "loading":
            self._fail_pending(f"the module's top-level code ran past {self.program.timeout_ms} ms")
        elif now >= flight.hard:
            error = f"{self.timed_out} (its batch ran past the deadline)"
            for index in flight.indices[flight.done :]:
                self.results[index] = (False, error, None)
        else:
            self._blame(flight, self.timed_out)

    def _on_death(self, worker: Worker, flight: _Flight) -> None:
        self.busy.pop(worker, None)
        # Wait for its exit status (for the reason) no longer than the next deadline of
        # this run's other workers: a worker that closes its pipe and lives on delays no kill.
        now = time.monotonic()
        nearest = min((self._deadline(f) for f in self.busy.values()), default=now + 1.0)
        code = worker.exit_code(max(0.05, min(1.0, nearest - now)))
        self.pool.discard(worker)
        if flight.phase != "batch":
            self._fail_pending(_died(code) + " while starting")
            return
        self._blame(flight, _died(code))

    def _on_invalid(self, worker: Worker, flight: _Flight, what: str) -> None:
        self.busy.pop(worker, None)
        self.pool.discard(worker)
        error = f"the sandbox worker sent {what}"
        if flight.phase != "batch":
            self._fail_pending(error)
            return
        for index in flight.indices[flight.done :]:
            self.results[index] = (False, error, None)

    def _fail_pending(self, error: str) -> None:
        while self.pending:
            for i in self.pending.popleft().indices:
                self.results[i] = (False, error, None)


def _number(value: Any, what: str) -> float:
    """A finite, non-negative number below 1e9 (an int of any size is refused, not
    converted: ``float`` of 9 repeated 400 times raises OverflowError)."""
    if type(value) is int and 0 <= value < 10**9:
        return float(value)
    if type(value) is float and 0.0 <= value < 1e9:
        return value
    raise BadFrame(f"{what} is not a number in range")


def _answer(answer: Any) -> Raw:
    """One attempt's answer as the worker sent it: [0, dict, ms] or [1, text, ms]."""
    if type(answer) is list and len(answer) == 3 and type(answer[0]) is int:
        kind, value, ms = answer
        if kind == 0 and type(value) is dict:
            return (True, value, _number(ms, "a time"))
        if kind == 1 and type(value) is str:
            return (False, value[:2000], _number(ms, "a time"))
    raise BadFrame("an answer of the wrong shape")
