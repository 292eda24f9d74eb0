"""One sandbox worker process, as the parent sees it: started by ``launch``, fed frames
without blocking, read into a ``FrameBuffer``, and killed. What its frames mean is
``run``'s business; nothing it sends is trusted there.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import subprocess
import time
from collections.abc import Callable

from scoring.engine.framing import FrameBuffer
from scoring.engine.snippet import Program

from . import launch, policy

MAX_RESULT_CHARS = 16_384  # one attempt's result, as JSON
MAX_PRINT_CHARS = 1024 * 1024  # what one attempt may print (to nowhere)
READ_CHUNK = 1 << 20
RETIRE_CPU_S = policy.CPU_SECONDS / 2
Popen = Callable[[str, launch.Interpreter], subprocess.Popen[bytes]]


def program_key(program: Program) -> tuple:
    digest = hashlib.sha256(program.code.encode("utf-8", "surrogatepass")).hexdigest()
    return (program.owner, digest, program.arity, program.is_async, program.timeout_ms)


def _died(code: int | None) -> str:
    if code is None:
        return "the sandbox worker stopped answering"
    if code < 0 or code > 128:
        signum = -code if code < 0 else code - 128
        return f"the sandbox worker died (signal {signum})"
    return f"the sandbox worker exited (code {code})"


class Worker:
    """One sandboxed process running one program."""

    def __init__(self, program: Program, mode: str, interp: launch.Interpreter, popen: Popen):
        self.program = program
        self.key = program_key(program)
        self.mode = mode
        self.state = "starting"
        self.started = time.monotonic()
        self.last_used = self.started
        self.cpu = 0.0
        self.pid_owner = os.getpid()
        self.proc: subprocess.Popen[bytes] = popen(mode, interp)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.out_fd = self.proc.stdout.fileno()
        self.in_fd = self.proc.stdin.fileno()
        os.set_blocking(self.in_fd, False)
        os.set_blocking(self.out_fd, False)
        self.frames = FrameBuffer()
        self.outbox = memoryview(b"")

    def queue(self, payload: bytes) -> None:
        """Queue one frame; ``flush`` writes it as the worker reads."""
        self.outbox = memoryview(struct.pack("!I", len(payload)) + payload)

    def flush(self) -> None:
        """Write what the pipe takes now. Raises EOFError when the worker is gone."""
        while self.outbox:
            try:
                written = os.write(self.in_fd, self.outbox)
            except BlockingIOError:
                return
            except OSError:
                raise EOFError from None
            self.outbox = self.outbox[written:]

    def receive(self) -> bool:
        """Read what is there into ``frames``; False at the end of the stream."""
        try:
            data = os.read(self.out_fd, READ_CHUNK)
        except BlockingIOError:
            return True
        except OSError:
            return False
        if not data:
            return False
        self.frames.feed(data)
        return True

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

    def exit_code(self, wait_s: float = 1.0) -> int | None:
        """Its exit status, if it exits within ``wait_s`` (it closed its end of the pipe)."""
        try:
            return self.proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            return None

    def reusable(self) -> bool:
        """Ready, under its CPU budget, alive, and with nothing unasked-for in the pipe."""
        return (
            self.state == "ready"
            and self.cpu <= RETIRE_CPU_S
            and not self.frames.pending()
            and self.proc.poll() is None
        )

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
