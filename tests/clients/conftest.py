"""A fresh virtualenv with the client installed from the checkout, and a live server.

The virtualenv is made once per session in a temporary directory (``pip install
./clients/python``, which fetches httpx from the index; the tests are skipped, saying so,
when pip cannot reach one). The server is ``manage.py serve`` (runserver and a Celery
worker on the embedded filesystem broker) on a free port, on a SQLite database of its
own in a temporary directory, whatever database the suite itself runs on: the tests kill
it and start it again on the same data.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
import venv
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT_DIR = ROOT / "clients" / "python"
START_TIMEOUT_S = 60.0


@pytest.fixture(scope="session")
def podium_bin(tmp_path_factory) -> Path:
    """The ``podium`` command of a fresh virtualenv holding only the client."""
    home = tmp_path_factory.mktemp("client-venv")
    venv.create(home, with_pip=True)
    python = home / "bin" / "python"
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         str(CLIENT_DIR)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if done.returncode != 0:
        unreachable = (
            "Could not find a version",
            "NewConnectionError",
            "Network is unreachable",
            "Temporary failure in name resolution",
            "No matching distribution",
        )
        if any(s in done.stderr for s in unreachable):
            pytest.skip(
                f"pip could not reach a package index to install httpx: {done.stderr[-300:]}"
            )
        raise AssertionError(f"pip install ./clients/python failed:\n{done.stderr}")
    leaked = subprocess.run(
        [str(python), "-c", "import importlib.util as u; print(bool(u.find_spec('django')))"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert leaked.stdout.strip() == "False", "the client's venv must not hold Django"
    return home / "bin" / "podium"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LiveServer:
    var: Path
    port: int
    process: subprocess.Popen | None = None
    admin_token: str = ""
    integration_token: str = ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "PODIUM_VAR_DIR": str(self.var),
            "DATABASE_URL": f"sqlite:///{self.var / 'podium.sqlite3'}",
            "CELERY_BROKER_URL": "filesystem://localhost//",
            "CELERY_BEAT_SCHEDULE_FILENAME": str(self.var / "celerybeat-schedule"),
            "PODIUM_ATTEMPTS_RATE": "100000/min",
            # as `make run` has it (the suite's conftest makes tasks eager for itself)
            "CELERY_TASK_ALWAYS_EAGER": "false",
        }

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env,
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    def start(self, *, worker: bool = True) -> None:
        self.log = (self.var / "server.log").open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(self.port),
             *([] if worker else ["--no-worker"])],
            cwd=ROOT, env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self.process.poll() is None, (self.var / "server.log").read_text()[-3000:]
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as resp:  # noqa: S310
                    if resp.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        raise AssertionError("the server did not start")

    def kill(self) -> None:
        """SIGKILL the server and its worker (its process group): no clean shutdown."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        self.process = None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self.process = None

    def api(self, method: str, path: str, body: object = None, token: str | None = None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.url}{path}", data=data, method=method)  # noqa: S310
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        request.add_header("Authorization", f"Token {token or self.admin_token}")
        with urllib.request.urlopen(request, timeout=60) as resp:  # noqa: S310
            return json.loads(resp.read() or b"null")

    def sql(self, query: str, *params: object) -> list[tuple]:
        with sqlite3.connect(self.var / "podium.sqlite3", timeout=30) as db:
            return db.execute(query, params).fetchall()


TOKENS = """
from django.contrib.auth import get_user_model
from django.core.management import call_command
from rest_framework.authtoken.models import Token
user = get_user_model().objects.create_superuser("client-admin", "admin@example.com", None)
print(Token.objects.create(user=user).key)
call_command("create_integration_token", "client-bot")
"""


@pytest.fixture(scope="module")
def podium_server(tmp_path_factory, request):
    server = LiveServer(var=tmp_path_factory.mktemp("client-server"), port=_free_port())
    migrate = subprocess.Popen(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v0"],
        cwd=ROOT, env=server.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    request.getfixturevalue("podium_bin")  # the virtualenv is made meanwhile
    _, err = migrate.communicate(timeout=120)
    assert migrate.returncode == 0, err
    server.admin_token, server.integration_token = (
        server.manage("shell", "-c", TOKENS).strip().splitlines()[-2:]
    )
    server.start()
    try:
        yield server
    finally:
        server.kill()  # a temporary database: nothing to shut down cleanly
