"""deploy/supervisord.conf: it parses with supervisord's own parser, every program's
command exists, and under supervisord every program starts, and one killed with SIGKILL
is back within 5 s.

The deployment runs here on the embedded defaults (SQLite, filesystem broker) in a
temporary directory, through deploy/with-env as an operator starts it. Needs Debian's
`supervisor` package (.ci/run installs it); skipped without it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "deploy" / "supervisord.conf"
WITH_ENV = ROOT / "deploy" / "with-env"
SUPERVISORD = shutil.which("supervisord")
SYSTEM_PYTHON = "/usr/bin/python3"  # the interpreter Debian's supervisor runs on
BACK_WITHIN_S = 5.0

pytestmark = [
    pytest.mark.skipif(
        SUPERVISORD is None,
        reason="needs supervisord (apt-get install supervisor; .ci/run installs it)",
    ),
    pytest.mark.slow,
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def env_file(tmp_path: Path) -> Path:
    """The example environment file with this machine's paths and embedded defaults."""
    values = {
        "PODIUM_ENV": "development",
        "DEBUG": "false",
        "SECRET_KEY": "t" * 60,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'podium.sqlite3'}",
        "PODIUM_BIND": f"127.0.0.1:{_free_port()}",
        "PODIUM_WEB_PROCESSES": "1",
        "PODIUM_STREAM_HOST": "127.0.0.1",
        "PODIUM_STREAM_PORT": str(_free_port()),
        "WEB_THREADS": "2",
        "PODIUM_INGEST_BIND": f"127.0.0.1:{_free_port()}",
        "PODIUM_INGEST_PROCESSES": "1",
        "INGEST_THREADS": "2",
        "PODIUM_INGEST_NICE": "10",
        "FORWARDED_ALLOW_IPS": "127.0.0.1",
        "PODIUM_WORKER_PROCESSES": "2",
        "WORKER_CONCURRENCY": "1",
        "PODIUM_VAR_DIR": str(tmp_path / "var"),
        "PODIUM_LOG_DIR": str(tmp_path / "log"),
        "PODIUM_RUN_DIR": str(tmp_path / "run"),
    }
    for name in ("var", "log", "run"):
        (tmp_path / name).mkdir()
    path = tmp_path / "podium.env"
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    return path


def _clean_env(env_file: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("PODIUM_", "DATABASE_"))}
    keep = {k: v for k, v in keep.items() if k not in {"CELERY_BROKER_URL", "CACHE_URL"}}
    return {**keep, "PODIUM_ENV_FILE": str(env_file)}


def _settings(env_file: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in env_file.read_text().splitlines() if "=" in line)


def test_the_example_environment_file_names_every_variable_the_configuration_uses():
    import re

    used = set(re.findall(r"%\(ENV_([A-Z_]+)\)s", CONF.read_text()))
    example = _settings(ROOT / "deploy" / "podium.env.example")
    assert used <= set(example), used - set(example)


def test_the_configuration_parses_and_every_command_exists(env_file):
    script = (
        "import json, sys\n"
        "from supervisor.options import ServerOptions\n"
        "o = ServerOptions()\n"
        "o.realize(['-c', sys.argv[1]])\n"
        "print(json.dumps({p.name: p.command for g in o.process_group_configs"
        " for p in g.process_configs}))\n"
    )
    out = subprocess.run(
        [str(WITH_ENV), SYSTEM_PYTHON, "-c", script, str(CONF)],
        env=_clean_env(env_file),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    commands = json.loads(out.strip().splitlines()[-1])
    assert set(commands) == {"web", "ingest", "stream", "worker-0", "worker-1", "beat"}
    for name, command in commands.items():
        executable = Path(command.split()[0])
        assert executable.is_file() and os.access(executable, os.X_OK), (name, command)
    assert "--workers 1" in " ".join(commands["web"].split())
    ingest = " ".join(commands["ingest"].split())
    assert ingest.startswith("/usr/bin/nice -n 10 ") and "--threads 2" in ingest


@pytest.fixture
def supervised(env_file: Path) -> Iterator[dict[str, str]]:
    env = _clean_env(env_file)
    subprocess.run(
        [str(WITH_ENV), sys.executable, "manage.py", "migrate", "--noinput", "-v0"],
        cwd=ROOT, env=env, check=True,
    )  # fmt: skip
    proc = subprocess.Popen(
        [str(WITH_ENV), str(SUPERVISORD), "-n", "-c", str(CONF)],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    try:
        yield env
    finally:
        subprocess.run([str(WITH_ENV), "supervisorctl", "-c", str(CONF), "shutdown"],
                       env=env, capture_output=True, timeout=90)  # fmt: skip
        try:
            proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _status(env: dict[str, str]) -> dict[str, tuple[str, int | None]]:
    """program → (state, pid) as supervisorctl shows them."""
    out = subprocess.run(
        [str(WITH_ENV), "supervisorctl", "-c", str(CONF), "status"],
        env=env, capture_output=True, text=True, timeout=30,
    ).stdout  # fmt: skip
    shown: dict[str, tuple[str, int | None]] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            pid = int(parts[3].rstrip(",")) if len(parts) > 3 and parts[2] == "pid" else None
            shown[parts[0].split(":")[-1]] = (parts[1], pid)
    return shown


def _wait(what, timeout: float, every: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = what()
        if found:
            return found
        time.sleep(every)
    return what()


def _healthy(address: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://{address}/healthz", timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


@pytest.mark.skipif(
    os.environ.get("DATABASE_URL", "").startswith("postgres"),
    reason="the supervised programs run on a SQLite database of their own: the suite's "
    "SQLite pass ran them (the same programs)",
)
def test_every_program_runs_and_one_killed_is_back_within_5_s(supervised, env_file):
    env = supervised
    programs = {"web", "ingest", "stream", "worker-0", "worker-1", "beat"}

    def all_running():
        status = _status(env)
        running = {n for n, (state, _) in status.items() if state == "RUNNING"}
        return status if running >= programs else None

    status = _wait(all_running, timeout=90, every=0.5)
    assert status, f"not every program runs: {_status(env)}"
    settings = _settings(env_file)
    bind = settings["PODIUM_BIND"]
    stream = f"{settings['PODIUM_STREAM_HOST']}:{settings['PODIUM_STREAM_PORT']}"
    # RUNNING means alive for startsecs; on a busy machine the server may still be
    # loading Django then: each answers within a while.
    ingest = settings["PODIUM_INGEST_BIND"]
    assert _wait(lambda: _healthy(bind), timeout=60, every=0.5), f"web on {bind}"
    assert _wait(lambda: _healthy(ingest), timeout=60, every=0.5), f"ingest on {ingest}"
    assert _wait(lambda: _healthy(stream), timeout=60, every=0.5), f"stream on {stream}"
    # The ingest processes run behind the web ones for the CPU (nice), the web ones not.
    assert os.getpriority(os.PRIO_PROCESS, status["ingest"][1]) == 10
    assert os.getpriority(os.PRIO_PROCESS, status["web"][1]) == os.getpriority(os.PRIO_PROCESS, 0)

    for name in ("worker-1", "beat", "web", "ingest", "stream"):
        before = status[name][1]
        assert before
        os.kill(before, signal.SIGKILL)
        killed_at = time.monotonic()

        def replaced(name=name, before=before):
            state, pid = _status(env).get(name, ("", None))
            return pid if pid and pid != before and state in ("STARTING", "RUNNING") else None

        assert _wait(replaced, timeout=BACK_WITHIN_S, every=0.1), (name, _status(env))
        assert time.monotonic() - killed_at <= BACK_WITHIN_S + 0.5
        status = _wait(all_running, timeout=30, every=0.5)
        assert status, f"{name} did not run again: {_status(env)}"
    for address in (bind, ingest, stream):
        assert _wait(lambda address=address: _healthy(address), timeout=60, every=0.5), address
