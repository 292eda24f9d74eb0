"""A real Celery worker for a benchmark: started on its own queue, waited for until it
answers a ping, stopped."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class Worker:
    """``celery -A config worker`` with this process's environment and ``env``, which
    between them name CELERY_BROKER_URL and CELERY_TASK_DEFAULT_QUEUE (the worker
    consumes that queue only)."""

    def __init__(self, env: dict[str, str], *, concurrency: int = 2):
        env = {**os.environ, **env}
        self.broker = env["CELERY_BROKER_URL"]
        queue = env["CELERY_TASK_DEFAULT_QUEUE"]
        self.name = f"{queue}@{socket.gethostname()}"
        celery = str(Path(sys.executable).parent / "celery")
        command = [celery, "-A", "config", "worker", "--loglevel", "WARNING"]
        command += ["--concurrency", str(concurrency), "-Q", queue, "--hostname", f"{queue}@%h"]
        self.process = subprocess.Popen(command, cwd=ROOT, env=env)

    def wait(self, seconds: float = 120) -> None:
        """Until the worker answers a ping. The ping goes through an app of its own,
        never made the current one: tasks this process queues go through Podium's app
        (its queue is this worker's), as in a deployed web process."""
        from celery import Celery

        control = Celery(broker=self.broker, set_as_current=False).control
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit("the Celery worker exited")
            if control.ping(destination=[self.name], timeout=0.5):
                return
        raise SystemExit("the Celery worker did not start")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(60)
