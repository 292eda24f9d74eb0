"""`manage.py serve`: the web server plus a Celery worker, for `make run`.

The server is uvicorn serving the ASGI application (config/asgi.py): the pages as
``runserver`` would (static files included, in development), and the event streams,
which a WSGI server cannot hold open without a thread each. The worker is a child
process; it stops when the server stops (Ctrl-C). It runs the periodic tasks too
(Celery beat, embedded: there is one worker here).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import textwrap
import threading

from django.conf import settings
from django.core.management.base import BaseCommand

from scoring import sandbox


def _die_with_parent() -> None:
    """In the worker (before exec): get SIGTERM when `serve` dies, however it dies."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass  # not Linux: the finally block below still stops the worker


def _raise_exit(signum: int, frame: object) -> None:
    raise SystemExit(0)


# Open streams end this long after Ctrl-C or SIGTERM (browsers then resume them).
GRACEFUL_S = 3


def serve_http(*, host: str, port: int) -> None:
    """Serve the site with uvicorn until stopped."""
    import uvicorn

    uvicorn.run(
        "config.asgi:application",
        host=host,
        port=port,
        lifespan="off",
        log_level="warning",
        timeout_graceful_shutdown=GRACEFUL_S,
    )


class Command(BaseCommand):
    help = "Serve the site on 127.0.0.1:PORT with a background Celery worker."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--no-worker", action="store_true", help="serve without a worker")

    def handle(self, *args, port: int, host: str, no_worker: bool, **options):
        signal.signal(signal.SIGTERM, _raise_exit)  # so the finally block stops the worker
        worker = None
        if not no_worker:
            worker = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "config", "--quiet", "worker",
                 "--loglevel=WARNING", "--concurrency=2",
                 # Embedded beat: the rescore watchdog (one worker, so one beat).
                 "--beat", f"--schedule={settings.CELERY_BEAT_SCHEDULE_FILENAME}"],
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )  # fmt: skip
            threading.Thread(target=self._watch, args=(worker,), daemon=True).start()
        snippets = sandbox.availability()  # probed once, here, before serving
        shown_snippets = f"sandboxed ({snippets.mode})" if snippets.available else "disabled"
        shown_host = "127.0.0.1" if host in ("0.0.0.0", "::") else host  # noqa: S104
        url = f"http://{shown_host}:{port}/"
        broker = settings.CELERY_BROKER_URL.split("@")[-1]  # never print a password
        self.stdout.write(
            "\n"
            f"  Podium is running at {url}\n"
            f"  API docs:   {url}api/docs/\n"
            f"  Admin:      {url}admin/\n"
            "              create a login: .venv/bin/python manage.py createsuperuser\n"
            f"  Worker:     {'Celery, broker ' + broker if worker else 'none'}\n"
            f"  Snippets:   {shown_snippets}\n"
            "  Stop with Ctrl-C.\n"
        )
        if not snippets.available:
            self.stderr.write(
                "\n  " + textwrap.fill(snippets.message, 86, subsequent_indent="  ") + "\n"
            )
        try:
            serve_http(host=host, port=port)
        finally:
            if worker is not None and worker.poll() is None:
                worker.terminate()  # the main process stops its pool children itself
                try:
                    worker.wait(timeout=20)  # a warm shutdown finishes the running task
                except subprocess.TimeoutExpired:
                    os.killpg(worker.pid, signal.SIGKILL)

    def _watch(self, worker: subprocess.Popen) -> None:
        code = worker.wait()
        self.stderr.write(
            f"\n  The Celery worker stopped (exit code {code}): rescoring waits until a "
            "worker runs again (.venv/bin/celery -A config worker).\n"
        )
