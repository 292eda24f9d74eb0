"""A real Celery worker process for the rescore reliability tests.

These tests need PostgreSQL and a Redis broker (the CI run sets DATABASE_URL and
CELERY_BROKER_URL); anywhere else they are skipped (``SKIP_REASON``).

One worker serves the whole session (a test may kill it and start it again): prefork
pool, concurrency 2, consuming a queue of its own (``QUEUE``) so that nothing else on the
broker can take or send its tasks. It talks to pytest-django's *test* database, so the
tests are ``transaction=True``: their data is committed and the worker sees it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
from django.conf import settings as django_settings
from django.db import connection

QUEUE = f"podium-realworker-{uuid.uuid4().hex[:12]}"
WORKER_NAME = f"{QUEUE}@{socket.gethostname()}"
CHUNK = 25  # small chunks: a job of a few hundred attempts spans many tasks
STALL_S = 3  # the watchdog resumes a job silent this long (60 s in production)
WATCHDOG_EVERY_S = 1
PLUGINS = {"t.slow": "tests.plugins:SlowTokens", "t.tokens": "tests.plugins:TokensScorer"}
START_TIMEOUT_S = 40.0
IDLE_TIMEOUT_S = 40.0
PROJECT_DIR = Path(__file__).resolve().parents[2]
LOG_TAIL_LINES = 150


def _skip_reason() -> str | None:
    if connection.vendor != "postgresql":
        return (
            f"real-worker tests need PostgreSQL (DATABASE_URL=postgres://…); "
            f"this run uses {connection.vendor}"
        )
    broker = str(django_settings.CELERY_BROKER_URL)
    if not broker.startswith("redis://"):
        return (
            f"real-worker tests need a Redis broker (CELERY_BROKER_URL=redis://…); "
            f"this run uses {broker.split('://')[0]}://"
        )
    return None


SKIP_REASON = _skip_reason()


def _celery_app():
    from config.celery import app

    return app


def _redis():
    import redis

    return redis.Redis.from_url(django_settings.CELERY_BROKER_URL)


def _database_url() -> str:
    """The URL of the database the tests use now (pytest-django's test database)."""
    db = connection.settings_dict
    user = quote(db.get("USER") or "", safe="")
    password = quote(str(db.get("PASSWORD") or ""), safe="")
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host = db.get("HOST") or "127.0.0.1"
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"postgres://{auth}{host}{port}/{quote(db['NAME'], safe='')}"


def queue_length() -> int:
    """Messages waiting in our queue (kombu's Redis transport keeps one list per
    priority step: QUEUE, QUEUE\\x06\\x163, …)."""
    client = _redis()
    return sum(client.llen(key) for key in client.scan_iter(match=f"{QUEUE}*"))


def purge_queue() -> None:
    with _celery_app().connection_for_write() as conn:
        conn.default_channel.queue_purge(QUEUE)


def _forget_unacked() -> None:
    """Drop the unacknowledged messages a killed worker left for our queue (kombu would
    restore them into it after the visibility timeout, an hour later, for no one)."""
    client = _redis()
    for tag, raw in client.hscan_iter("unacked"):
        try:
            _, _exchange, routing_key = json.loads(raw)
        except (ValueError, TypeError):
            continue
        if routing_key == QUEUE:
            client.hdel("unacked", tag)
            client.zrem("unacked_index", tag)
    for key in client.scan_iter(match="_kombu.binding*"):  # .EXCHANGE, _permanent.EXCHANGE
        if client.type(key) != b"set":
            continue
        for member in client.smembers(key):
            if QUEUE.encode() in member:
                client.srem(key, member)
    for key in client.scan_iter(match=f"{QUEUE}*"):
        client.delete(key)


class Worker:
    """One `celery worker` process (and its pool children, in their own session)."""

    def __init__(self, log_path: Path, env: dict[str, str]):
        self.log_path = log_path
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.paused = False  # a started worker consumes our queue

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        assert not self.alive, "the worker is running already"
        command = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--pool=prefork",
            "--concurrency=2",
            "-Q",
            QUEUE,
            "-n",
            WORKER_NAME,
            "--loglevel=INFO",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            # Embedded beat: the rescore watchdog, every WATCHDOG_EVERY_S here.
            "--beat",
            f"--schedule={self.log_path.parent / 'celerybeat-schedule'}",
        ]
        with open(self.log_path, "ab") as log:
            log.write(f"\n===== worker start #{self.starts + 1} =====\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                command,
                env=self.env,
                cwd=PROJECT_DIR,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.starts += 1
        self.paused = False
        self._wait_ready()

    def _wait_ready(self) -> None:
        app = _celery_app()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if not self.alive:
                raise RuntimeError(
                    f"the worker exited with {self.proc.returncode} while starting:\n"
                    f"{self.log_tail()}"
                )
            if app.control.ping(destination=[WORKER_NAME], timeout=0.5):
                return
        self.kill()
        raise RuntimeError(
            f"the worker was not ready after {START_TIMEOUT_S:.0f} s:\n{self.log_tail()}"
        )

    def kill(self) -> None:
        """SIGKILL the worker and every process it started (pool, scorer children)."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=10)

    def wait_idle(self, timeout: float = IDLE_TIMEOUT_S, *, queue: bool = True) -> None:
        """Wait until our queue is empty (unless ``queue`` is false) and the worker runs,
        holds and has scheduled no task (twice in a row, so a message between the queue
        and the pool is not missed). Scheduled tasks count: a task sent with a countdown
        waits in the worker, and would run into the next test."""
        deadline = time.monotonic() + timeout
        quiet = 0
        while quiet < 2:
            if time.monotonic() > deadline:
                raise AssertionError(f"the worker did not go idle within {timeout:.0f} s")
            assert self.alive, f"the worker died:\n{self.log_tail()}"
            busy = (queue and queue_length() > 0) or self._holds_tasks()
            quiet = 0 if busy else quiet + 1
            if busy:
                time.sleep(0.05)

    def _holds_tasks(self) -> bool:
        inspect = _celery_app().control.inspect(destination=[WORKER_NAME], timeout=1.0)
        held = [inspect.active(), inspect.reserved(), inspect.scheduled()]
        return any(not answer or any(answer.values()) for answer in held)

    def pause(self) -> None:
        """Stop taking tasks from our queue, then wait for the ones taken to end. Between
        tests: pytest-django empties the tables with one TRUNCATE, and a task of the
        embedded beat (the watchdog, every second) reading them meanwhile can deadlock
        with it and fail the flush."""
        _celery_app().control.cancel_consumer(QUEUE, destination=[WORKER_NAME], reply=True)
        self.paused = True
        self.wait_idle(queue=False)

    def resume(self) -> None:
        if self.paused:
            _celery_app().control.add_consumer(QUEUE, destination=[WORKER_NAME], reply=True)
            self.paused = False

    def log_text(self, start: int = 0) -> str:
        with open(self.log_path, "rb") as log:
            log.seek(start)
            return log.read().decode(errors="replace")

    def log_size(self) -> int:
        return self.log_path.stat().st_size if self.log_path.exists() else 0

    def log_tail(self, start: int = 0, lines: int = LOG_TAIL_LINES) -> str:
        return "\n".join(self.log_text(start).splitlines()[-lines:])


def _wait_for_db_sessions_to_end(timeout: float = 10.0) -> None:
    """A SIGKILLed worker's PostgreSQL sessions end when the server sees the sockets close;
    the test database can only be dropped after that."""
    deadline = time.monotonic() + timeout
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            if cursor.fetchone()[0] == 0:
                return
            time.sleep(0.1)


@pytest.fixture(scope="session")
def _realworker(django_db_setup, django_db_blocker):
    """The session's worker, started on first use; killed (with its children) at the end."""
    if SKIP_REASON:
        pytest.skip(SKIP_REASON)
    env = dict(os.environ)
    env.update(
        DATABASE_URL=_database_url(),
        CELERY_BROKER_URL=str(django_settings.CELERY_BROKER_URL),
        CELERY_TASK_ALWAYS_EAGER="false",
        CELERY_TASK_DEFAULT_QUEUE=QUEUE,
        SCORING_PLUGINS=json.dumps(PLUGINS),
        PODIUM_SCORING_CHUNK=str(CHUNK),
        PODIUM_RESCORE_STALL_S=str(STALL_S),
        PODIUM_WATCHDOG_EVERY_S=str(WATCHDOG_EVERY_S),
        PYTHONUNBUFFERED="1",
    )
    log_dir = Path(tempfile.mkdtemp(prefix="podium-realworker-"))
    worker = Worker(log_dir / "worker.log", env)
    app = _celery_app()
    saved = (app.conf.task_always_eager, app.conf.task_default_queue)
    app.conf.task_always_eager, app.conf.task_default_queue = False, QUEUE
    purge_queue()
    try:
        yield worker
    finally:
        worker.kill()
        app.conf.task_always_eager, app.conf.task_default_queue = saved
        purge_queue()
        _forget_unacked()
        with django_db_blocker.unblock():
            _wait_for_db_sessions_to_end()
        sys.stderr.write(f"\n[realworker] worker log: {worker.log_path}\n")


@pytest.fixture(autouse=True)
def _eager_celery(settings):
    """Overrides tests/conftest.py's fixture: here tasks go to the real worker's queue."""
    app = _celery_app()
    saved = (app.conf.task_always_eager, app.conf.task_default_queue)
    app.conf.task_always_eager, app.conf.task_default_queue = False, QUEUE
    settings.SCORING_PLUGINS = PLUGINS  # the test process validates and scores too
    settings.PODIUM_SCORING_CHUNK = CHUNK  # jobs are planned in the test process
    yield
    app.conf.task_always_eager, app.conf.task_default_queue = saved


@pytest.fixture
def worker(request, _realworker, transactional_db):
    """The running worker (started again if a previous test killed it). On teardown —
    before pytest-django empties the tables — wait until it is idle, so that no task of
    this test runs into the next one, then stop it taking tasks until the next test."""
    if not _realworker.alive:
        _realworker.start()
    _realworker.resume()
    request.node.realworker_log_start = _realworker.log_size()
    request.node.realworker = _realworker
    yield _realworker
    if _realworker.alive:
        _realworker.wait_idle()
        _realworker.pause()
    purge_queue()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    worker = getattr(item, "realworker", None)
    if report.failed and worker is not None:
        start = getattr(item, "realworker_log_start", 0)
        report.sections.append(
            (
                f"realworker log, this test (tail; whole log: {worker.log_path})",
                worker.log_tail(start),
            )
        )
