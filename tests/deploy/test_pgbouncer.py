"""deploy/pgbouncer.ini: Podium runs through PgBouncer in transaction pooling.

PgBouncer is started from the shipped file (only its port, paths and authentication
changed for a test) in front of this machine's PostgreSQL, with one server connection
per pool so that consecutive transactions of a client land on whatever connection is
free: any state Podium kept in a session (a server-side cursor, a prepared statement, a
session lock or setting) would fail here. Then the PostgreSQL-specific tests of
ingestion (COPY), rescoring (parts on their own connections, advisory locks, SET LOCAL)
and the boards run through it with PODIUM_DATABASE_POOLER=pgbouncer. It runs in the
suite's PostgreSQL pass (the CI's second run), once.

Needs the `pgbouncer` binary (.ci/run installs it) and PostgreSQL on 127.0.0.1:5432
with trust authentication (the CI machine's); skipped otherwise.
"""

from __future__ import annotations

import configparser
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "deploy" / "pgbouncer.ini"
PGBOUNCER = shutil.which("pgbouncer") or (
    "/usr/sbin/pgbouncer" if Path("/usr/sbin/pgbouncer").exists() else None
)
POSTGRES = ("127.0.0.1", 5432)
THROUGH_IT = [
    "tests/challenges/ingestion/test_attempts_copy.py",
    "tests/challenges/ingestion/test_idempotency.py",
    "tests/challenges/leaderboards/test_scores_copy.py",
    "tests/challenges/leaderboards/test_partitions.py",
    "tests/challenges/rescoring/test_rebuild_parts.py",
    "tests/challenges/rescoring/test_switch.py",
    "tests/challenges/rescoring/test_finalize.py",
    "tests/challenges/transfer",
]


def _reason() -> str | None:
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        return "runs in the PostgreSQL pass of the suite (DATABASE_URL=postgres://…)"
    if PGBOUNCER is None:
        return "needs pgbouncer (apt-get install pgbouncer; .ci/run installs it)"
    try:
        socket.create_connection(POSTGRES, timeout=0.5).close()
    except OSError:
        return "needs PostgreSQL on 127.0.0.1:5432 (the CI machine's)"
    return None


pytestmark = [pytest.mark.skipif(_reason() is not None, reason=_reason() or ""), pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_shipped_file_pools_by_transaction():
    ini = configparser.ConfigParser()
    ini.read(SHIPPED)
    assert ini["pgbouncer"]["pool_mode"] == "transaction"
    assert "extra_float_digits" in ini["pgbouncer"]["ignore_startup_parameters"]


@pytest.fixture
def pgbouncer() -> Iterator[int]:
    yield from _pgbouncer(pool_size=3)


@pytest.fixture
def one_connection_pgbouncer() -> Iterator[int]:
    yield from _pgbouncer(pool_size=1)


def _pgbouncer(*, pool_size: int) -> Iterator[int]:
    # PgBouncer refuses to run as root: as root (CI) it runs as postgres (-u), so its
    # files live in a directory that user may read and write.
    tmp_path = Path(tempfile.mkdtemp(prefix="podium-pgbouncer-"))
    tmp_path.chmod(0o777)
    ini = configparser.ConfigParser()
    ini.read(SHIPPED)
    port = _free_port()
    ini["databases"] = {"*": f"host={POSTGRES[0]} port={POSTGRES[1]}"}
    (tmp_path / "userlist.txt").write_text('"postgres" ""\n')
    ini["pgbouncer"].update(
        listen_port=str(port),
        auth_type="trust",
        auth_file=str(tmp_path / "userlist.txt"),
        logfile=str(tmp_path / "pgbouncer.log"),
        pidfile=str(tmp_path / "pgbouncer.pid"),
        # Few server connections for many clients: a client's next transaction may get
        # another connection. A finalizing rescore holds three at once (its claim and two
        # rebuild parts: challenges/leaderboards/scores.py), so no fewer.
        default_pool_size=str(pool_size),
        reserve_pool_size="0",
    )
    with open(tmp_path / "pgbouncer.ini", "w") as f:
        ini.write(f)
    as_user = ["-u", "postgres"] if os.geteuid() == 0 else []
    proc = subprocess.Popen(
        [str(PGBOUNCER), *as_user, str(tmp_path / "pgbouncer.ini")],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.1)
    else:
        log = (
            (tmp_path / "pgbouncer.log").read_text()
            if (tmp_path / "pgbouncer.log").exists()
            else ""
        )
        proc.kill()
        pytest.fail(f"PgBouncer did not start: {log[-2000:]}")
    try:
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(tmp_path, ignore_errors=True)


def test_postgres_parts_of_the_suite_pass_through_pgbouncer(pgbouncer):
    name = f"podium_pgbouncer_{uuid.uuid4().hex[:8]}"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PODIUM_", "PYTEST_", "DJANGO_")) and k != "CELERY_BROKER_URL"
    }
    env.update(
        DATABASE_URL=f"postgres://postgres@127.0.0.1:{pgbouncer}/{name}",
        PODIUM_DATABASE_POOLER="pgbouncer",
    )
    try:
        run = subprocess.run(
            # --reuse-db: pytest-django would drop its test database at the end, which
            # PostgreSQL refuses while PgBouncer keeps a connection to it; dropped below.
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
             "--reuse-db", "-x", *THROUGH_IT],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    finally:
        _drop(f"test_{name}")


def _drop(database: str) -> None:
    import psycopg

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def _django_database_settings(**env: str) -> dict:
    script = (
        "import json, config.settings as s; d = s.DATABASES['default']; "
        "print(json.dumps({'options': d.get('OPTIONS', {}), "
        "'no_server_cursors': d.get('DISABLE_SERVER_SIDE_CURSORS', False)}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env={**os.environ, **env},
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return json.loads(out)


def _two_clients_repeat_a_query(port: int, **options: object) -> None:
    """Two clients share PgBouncer's one server connection, each running the same query
    often enough for psycopg to prepare it (5 times by default)."""
    import psycopg

    url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    with psycopg.connect(url, autocommit=True, **options) as a:  # type: ignore[arg-type]
        with psycopg.connect(url, autocommit=True, **options) as b:  # type: ignore[arg-type]
            for client in (a, b, a, b):
                for _ in range(6):
                    client.execute("SELECT %s::int + 1", [1]).fetchone()


def test_the_pooler_setting_is_what_transaction_pooling_needs(one_connection_pgbouncer):
    import psycopg

    pooled = _django_database_settings(
        DATABASE_URL="postgres://postgres@127.0.0.1:5432/podium",
        PODIUM_DATABASE_POOLER="pgbouncer",
    )
    assert pooled["no_server_cursors"] is True
    _two_clients_repeat_a_query(one_connection_pgbouncer, **pooled["options"])
    # psycopg's default (what Django uses without the setting) fails through it:
    with pytest.raises(psycopg.errors.DuplicatePreparedStatement):
        _two_clients_repeat_a_query(one_connection_pgbouncer)
    direct = _django_database_settings(DATABASE_URL="postgres://postgres@127.0.0.1:5432/podium")
    assert "prepare_threshold" not in direct["options"] and not direct["no_server_cursors"]
