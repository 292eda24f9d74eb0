"""The documented deployment under faults: supervisord (deploy/supervisord.conf) running
2 web processes, 1 ingest process (the recording routes, as the proxy sends them), 3
Celery workers, beat and the stream server, PgBouncer (the shipped
deploy/pgbouncer.ini, transaction pooling) in front of PostgreSQL, Redis behind a relay
this script owns; a fresh database with --attempts attempts loaded by COPY.

The scenario: the ingest capacity through the ingest process is measured (writers as
fast as they can, a few seconds), then writers record attempts at half of it (open loop,
each batch with an Idempotency-Key, retried with the same key until acknowledged) and
one reader reads the public page and the API leaderboard throughout; a rescore of every
attempt starts (the weighted scorer), and during it: a random web or ingest process and
a random worker killed with SIGKILL every --every seconds, beat killed once, Redis cut for 30 s,
PgBouncer restarted once. Checks:
- every acknowledged attempt is stored exactly once (count and checksum);
- every attempt is scored under the new version when the job ends, the sum of its
  scores equals the weighted formula computed in SQL, and every player's board entry
  holds their best score (the brute force, in SQL);
- the job succeeds within 5 minutes of the last fault;
- reads answer: no 5xx outside the broker cut, and inside it only 503 with Retry-After
  (never a 500).
Prints the figures; exits non-zero on a miss. Needs supervisord, pgbouncer, PostgreSQL on
127.0.0.1:5432 (BENCH_DATABASE_URL, default .../podium_bench_cluster: dropped and
recreated) and Redis on 127.0.0.1:6379 (db 10 and 11 flushed).

    .venv/bin/python bench/cluster.py [--attempts 1000000] [--players 100000]
"""

from __future__ import annotations

import argparse
import configparser
import os
import random
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _http import free_port
from _pg import ROOT, checksum, load, setup_django
from load import WEIGHTED, weighted_sums

sys.path.insert(0, str(ROOT))
from tests.relay import Relay

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/podium_bench_cluster"
CONF = ROOT / "deploy" / "supervisord.conf"
WITH_ENV = ROOT / "deploy" / "with-env"
REDIS = ("127.0.0.1", 6379)
CUT_S = 30.0
AFTER_LAST_FAULT_S = 300.0
BATCH = 5


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


# --- the processes ------------------------------------------------------------------------
class PgBouncer:
    """The shipped configuration with this machine's port, paths and trust auth."""

    def __init__(self, workdir: Path):
        self.dir = workdir
        self.dir.mkdir(exist_ok=True)
        self.dir.chmod(0o777)  # PgBouncer runs as postgres when this runs as root
        self.port = free_port()
        ini = configparser.ConfigParser()
        ini.read(ROOT / "deploy" / "pgbouncer.ini")
        ini["databases"] = {"*": "host=127.0.0.1 port=5432"}
        (self.dir / "userlist.txt").write_text('"postgres" ""\n')
        ini["pgbouncer"].update(
            listen_port=str(self.port),
            auth_type="trust",
            auth_file=str(self.dir / "userlist.txt"),
            logfile=str(self.dir / "pgbouncer.log"),
            pidfile=str(self.dir / "pgbouncer.pid"),
        )
        with open(self.dir / "pgbouncer.ini", "w") as f:
            ini.write(f)
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        binary = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
        as_user = ["-u", "postgres"] if os.geteuid() == 0 else []
        self.proc = subprocess.Popen(
            [binary, *as_user, str(self.dir / "pgbouncer.ini")],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
        )  # fmt: skip
        wait_for(lambda: port_open(self.port), 10, "PgBouncer")

    def restart(self) -> None:
        assert self.proc is not None
        self.proc.terminate()
        self.proc.wait(10)
        self.start()

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)


def port_open(port: int) -> bool:
    import socket

    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def healthy(base: str) -> bool:
    try:
        return requests.get(f"{base}/healthz", timeout=2).ok
    except requests.RequestException:
        return False


def wait_for(what, timeout: float, name: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = what()
        if found:
            return found
        time.sleep(0.2)
    raise SystemExit(f"{name} did not come up within {timeout:.0f}s")


class Supervisor:
    def __init__(self, env: dict[str, str]):
        self.env = env
        self.proc = subprocess.Popen(
            [str(WITH_ENV), shutil.which("supervisord") or "supervisord", "-n", "-c", str(CONF)],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip

    def status(self) -> dict[str, tuple[str, int | None]]:
        out = subprocess.run(
            [str(WITH_ENV), "supervisorctl", "-c", str(CONF), "status"],
            env=self.env, capture_output=True, text=True, timeout=30,
        ).stdout  # fmt: skip
        shown = {}
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 2:
                pid = int(parts[3].rstrip(",")) if len(parts) > 3 and parts[2] == "pid" else None
                shown[parts[0].split(":")[-1]] = (parts[1], pid)
        return shown

    def pid(self, name: str) -> int | None:
        return self.status().get(name, ("", None))[1]

    def stop(self) -> None:
        subprocess.run(
            [str(WITH_ENV), "supervisorctl", "-c", str(CONF), "shutdown"],
            env=self.env, capture_output=True, timeout=120,
        )  # fmt: skip
        try:
            self.proc.wait(120)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)


def children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


# --- the clients ----------------------------------------------------------------------------
class Writer(threading.Thread):
    """Batches of checkable attempts at a given rate; each batch is retried with its
    Idempotency-Key until it is acknowledged (201), so every batch sent is stored once."""

    def __init__(self, n: int, of: int, base: str, token: str, challenge_id: int):
        super().__init__(daemon=True)
        self.n, self.of = n, of
        self.url = f"{base}/api/challenges/{challenge_id}/attempts/"
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Token {token}"
        self.period = 0.0
        self.stop = threading.Event()
        self.sent: list[tuple] = []
        self.retries: dict[str, int] = {}
        self.seq = 0

    def batch(self) -> list[dict]:
        out = []
        for _ in range(BATCH):
            self.seq += 1
            k = self.n * 1_000_003 + self.seq
            out.append(
                {
                    "player": f"live-{self.n}-{self.seq % 700}",
                    "succeeded": k % 3 != 0,
                    "tokens_total": k % 4000,
                    "elapsed_ms": k % 90_000,
                    "rating": k % 11,
                    "created_at": 1_790_000_000_000 + k,
                    "sample": {"writer": self.n, "seq": self.seq},
                }
            )
        return out

    def run(self) -> None:
        due = None
        while not self.stop.is_set():
            if self.period:
                if due is None:
                    due = time.monotonic() + self.period * self.n / self.of
                due = max(due + self.period, time.monotonic())
                self.stop.wait(due - time.monotonic())
            body, key = self.batch(), uuid.uuid4().hex
            while True:  # until acknowledged, with the same key
                try:
                    resp = self.session.post(
                        self.url, json=body, headers={"Idempotency-Key": key}, timeout=60
                    )
                    outcome = str(resp.status_code)
                    if resp.status_code == 201:
                        break
                except requests.RequestException as exc:
                    outcome = type(exc).__name__
                self.retries[outcome] = self.retries.get(outcome, 0) + 1
                time.sleep(0.5)
            self.sent.extend(
                (a["player"], a["succeeded"], a["tokens_total"], a["elapsed_ms"], a["rating"],
                 a["sample"]["writer"], a["sample"]["seq"])
                for a in body
            )  # fmt: skip


class ReadLog(threading.Thread):
    """One sequential reader of the page and the API leaderboard: (time, path, outcome,
    Retry-After, ms) of every read."""

    def __init__(self, base: str, slug: str, challenge_id: int):
        super().__init__(daemon=True)
        self.paths = [
            f"{base}/challenges/{slug}/",
            f"{base}/api/challenges/{challenge_id}/leaderboard/",
        ]
        self.session = requests.Session()
        self.stop = threading.Event()
        self.reads: list[tuple[float, str, str, str | None, float]] = []

    def run(self) -> None:
        i = 0
        while not self.stop.is_set():
            path = self.paths[i % 2]
            i += 1
            start = time.monotonic()
            for _ in range(2):  # a connection reset is retried once, as a proxy retries a GET
                try:
                    resp = self.session.get(path, timeout=30)
                    outcome, retry = str(resp.status_code), resp.headers.get("Retry-After")
                    break
                except requests.RequestException as exc:
                    outcome, retry = type(exc).__name__, None
                    self.session = requests.Session()
            self.reads.append((start, path, outcome, retry, 1000 * (time.monotonic() - start)))
            time.sleep(0.02)


# --- the run ---------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=1_000_000)
    parser.add_argument("--players", type=int, default=100_000)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--every", type=float, default=20.0, help="seconds between kills")
    parser.add_argument("--seed", type=int, default=35)
    args = parser.parse_args()
    for tool in ("supervisord", "supervisorctl"):
        if shutil.which(tool) is None:
            raise SystemExit(f"needs {tool} (apt-get install supervisor)")
    rng = random.Random(args.seed)
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL)
    name = url.rsplit("/", 1)[1]
    import redis

    for db in (10, 11):
        redis.Redis(*REDIS, db=db).flushdb()
    setup_django(url)  # fresh, migrated
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.db import connection
    from rest_framework.authtoken.models import Token

    from challenges.models import Attempt, AttemptScore, Challenge, LeaderboardEntry, RescoreJob

    challenge = load(
        players=args.players, attempts=args.attempts, setup={"scoring_strategy": "fastest"}
    )
    users = get_user_model().objects
    admin = users.create_superuser("bench-admin", "a@example.com", secrets.token_urlsafe())
    grader = users.create_user("bench-grader")
    grader.groups.add(Group.objects.get(name="Integrations"))
    admin_token = Token.objects.create(user=admin).key
    grader_token = Token.objects.create(user=grader).key
    connection.close()

    work = Path(tempfile.mkdtemp(prefix="podium-cluster-"))
    for sub in ("var", "log", "run"):
        (work / sub).mkdir()
    bouncer = PgBouncer(Path(tempfile.mkdtemp(prefix="podium-cluster-pgbouncer-")))
    relay = Relay(REDIS)
    relay.up()
    web_port, stream_port, ingest_port = free_port(), free_port(), free_port()
    settings = {
        "PODIUM_ENV": "development",
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:{bouncer.port}/{name}",
        "PODIUM_DATABASE_POOLER": "pgbouncer",
        "CELERY_BROKER_URL": f"redis://127.0.0.1:{relay.port}/10",
        "CACHE_URL": f"redis://127.0.0.1:{relay.port}/11",
        "PODIUM_ATTEMPTS_RATE": "1000000/min",
        "LOG_LEVEL": "WARNING",
        "PODIUM_BIND": f"127.0.0.1:{web_port}",
        "PODIUM_WEB_PROCESSES": "2",
        "PODIUM_STREAM_HOST": "127.0.0.1",
        "PODIUM_STREAM_PORT": str(stream_port),
        "WEB_THREADS": "4",
        "PODIUM_INGEST_BIND": f"127.0.0.1:{ingest_port}",
        "PODIUM_INGEST_PROCESSES": "1",
        "INGEST_THREADS": "2",
        "PODIUM_INGEST_NICE": "10",
        "FORWARDED_ALLOW_IPS": "127.0.0.1",
        "PODIUM_WORKER_PROCESSES": "3",
        "WORKER_CONCURRENCY": "1",
        "PODIUM_VAR_DIR": str(work / "var"),
        "PODIUM_LOG_DIR": str(work / "log"),
        "PODIUM_RUN_DIR": str(work / "run"),
    }
    env_file = work / "podium.env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PODIUM_", "DATABASE_"))}
    env = {k: v for k, v in env.items() if k not in {"CELERY_BROKER_URL", "CACHE_URL"}}
    env["PODIUM_ENV_FILE"] = str(env_file)
    base = f"http://127.0.0.1:{web_port}"
    writes = f"http://127.0.0.1:{ingest_port}"  # the proxy's route for recording

    bouncer.start()
    supervisor = Supervisor(env)
    writers: list[Writer] = []
    reader = ReadLog(base, challenge.slug, challenge.pk)
    faults: list[tuple[float, str]] = []
    cut: tuple[float, float] | None = None
    job_id = None
    try:
        wait_for(lambda: healthy(base), 120, "the web processes")
        wait_for(lambda: healthy(writes), 120, "the ingest processes")
        programs = {"web", "ingest", "stream", "beat", "worker-0", "worker-1", "worker-2"}

        def running() -> bool:
            return {
                n for n, (state, _) in supervisor.status().items() if state == "RUNNING"
            } >= programs

        wait_for(running, 120, "every program")
        log(f"deployment up: web {base}, PgBouncer :{bouncer.port}, Redis relay :{relay.port}")
        reader.start()

        writers = [
            Writer(n, args.writers, writes, grader_token, challenge.pk) for n in range(args.writers)
        ]
        for w in writers:
            w.start()
        time.sleep(8)
        capacity = sum(len(w.sent) for w in writers) / BATCH / 8
        rate = capacity / 2
        for w in writers:
            w.period = args.writers / rate
        log(
            f"capacity {capacity * BATCH:,.0f} attempts/s; steady at {rate * BATCH:,.0f} attempts/s"
        )
        time.sleep(5)

        resp = requests.patch(
            f"{base}/api/challenges/{challenge.pk}/", json=WEIGHTED,
            headers={"Authorization": f"Token {admin_token}"}, timeout=120,
        )  # fmt: skip
        resp.raise_for_status()
        job = RescoreJob.objects.filter(challenge_id=challenge.pk).latest("created_at")
        job_id = job.pk
        started = time.monotonic()
        log(f"rescore job {job_id} started ({job.total:,} attempts)")

        plan = {"beat": 15.0, "cut": 40.0, "pgbouncer": 90.0}
        next_kill = started + args.every
        last_fault = started
        while True:
            now = time.monotonic()
            job.refresh_from_db()
            connection.close()
            if not job.is_active:
                break
            if now - last_fault > AFTER_LAST_FAULT_S and not plan:
                break
            if now >= next_kill:
                victims = [  # a gunicorn worker of either pool
                    child
                    for pool in ("web", "ingest")
                    if (master := supervisor.pid(pool))
                    for child in children(master)
                ]
                if victims:
                    victim = rng.choice(victims)
                    os.kill(victim, signal.SIGKILL)
                    faults.append((now, f"web process {victim}"))
                worker = rng.choice(["worker-0", "worker-1", "worker-2"])
                pid = supervisor.pid(worker)
                if pid:
                    os.kill(pid, signal.SIGKILL)
                    faults.append((now, f"{worker} {pid}"))
                next_kill = now + args.every
                last_fault = now
            for what, at in list(plan.items()):
                if now - started < at:
                    continue
                del plan[what]
                last_fault = now
                if what == "beat" and (pid := supervisor.pid("beat")):
                    os.kill(pid, signal.SIGKILL)
                    faults.append((now, f"beat {pid}"))
                elif what == "cut":
                    relay.down()
                    faults.append((now, "Redis cut"))
                    time.sleep(CUT_S)
                    relay.up()
                    cut = (now, time.monotonic())
                    faults.append((time.monotonic(), "Redis back"))
                    last_fault = time.monotonic()
                elif what == "pgbouncer":
                    bouncer.restart()
                    faults.append((now, "PgBouncer restarted"))
            for at, what in faults[-3:]:
                if at >= now - 1:
                    log(f"fault: {what}")
            time.sleep(1)
        ended = time.monotonic()
        job.refresh_from_db()
        log(f"rescore job {job.status} after {ended - started:.0f}s ({job.processed:,} processed)")
        time.sleep(3)
    finally:
        for w in writers:
            w.stop.set()
        for w in writers:
            w.join(120)
        reader.stop.set()
        reader.join(60)
        supervisor.stop()
        bouncer.stop()
        relay.down()

    # --- checks ----------------------------------------------------------------------------
    job = RescoreJob.objects.get(pk=job_id)
    sent = [key for w in writers for key in w.sent]
    rows = Attempt.objects.filter(
        challenge_id=challenge.pk, player__external_id__startswith="live-"
    ).values_list(
        "player__external_id", "succeeded", "tokens_total", "elapsed_ms", "rating", "sample"
    )
    stored = [(p, s, t, e, r, sample["writer"], sample["seq"]) for p, s, t, e, r, sample in rows]
    total = Attempt.objects.filter(challenge_id=challenge.pk).count()
    scored = AttemptScore.objects.filter(version_id=job.version_id).count()
    expected, got = weighted_sums(challenge.pk, job.version_id)
    with connection.cursor() as cursor:
        # The board's brute force: each player's entry holds their best score of the version.
        cursor.execute(
            "SELECT count(*) FROM (SELECT player_id, max(score) AS best"
            " FROM challenges_attemptscore"
            " WHERE version_id = %s AND sort_key IS NOT NULL GROUP BY player_id) b"
            " FULL JOIN (SELECT player_id, score FROM challenges_leaderboardentry"
            " WHERE version_id = %s) e USING (player_id)"
            " WHERE e.score IS DISTINCT FROM b.best",
            [job.version_id, job.version_id],
        )  # fmt: skip
        board_misses = cursor.fetchone()[0]
    entries = LeaderboardEntry.objects.filter(version_id=job.version_id).count()
    challenge = Challenge.objects.get(pk=challenge.pk)
    last_fault = max((at for at, _ in faults), default=started)

    def in_cut(read: tuple) -> bool:  # a read that overlaps the cut (and 5 s after it)
        start, end = read[0], read[0] + read[4] / 1000
        return cut is not None and start <= cut[1] + 5 and end >= cut[0]

    outside = [r for r in reader.reads if not in_cut(r)]
    inside = [r for r in reader.reads if in_cut(r)]
    bad_outside = [r for r in outside if r[2].startswith("5")]
    bad_inside = [r for r in inside if r[2].startswith("5") and not (r[2] == "503" and r[3])]
    dropped = [r for r in reader.reads if not r[2].isdigit()]
    times = [r[4] for r in outside if r[2] == "200"]
    retries = {}
    for w in writers:
        for k, v in w.retries.items():
            retries[k] = retries.get(k, 0) + v

    print(f"\n{args.attempts:,} attempts loaded, {len(sent):,} recorded during the run "
          f"(retried: {retries or 'none'})")  # fmt: skip
    print(f"faults: {len(faults)} — " + ", ".join(what for _, what in faults))
    after = ended - last_fault
    print(f"job: {job.status}, {ended - started:.0f}s, ended {after:.0f}s after the last fault")
    if times:
        print(f"reads outside the cut: {len(outside)}, p50 {statistics.median(times):.1f} ms, "
              f"p99 {sorted(times)[int(0.99 * (len(times) - 1))]:.1f} ms; inside: {len(inside)} "
              f"({sum(1 for r in inside if r[2] == '503')} answered 503)")  # fmt: skip
    sums_equal = abs(got - expected) <= 1e-6 * max(1.0, abs(expected))
    in_time = ended - last_fault <= AFTER_LAST_FAULT_S
    unanswered = sorted({r[2] for r in dropped})
    kinds = {"web process", "worker-", "beat", "Redis cut", "Redis back", "PgBouncer restarted"}
    missing = sorted(k for k in kinds if not any(what.startswith(k) for _, what in faults))
    checks = {
        f"every fault happened during the rescore (missing: {missing or 'none'})": not missing,
        "every acknowledged attempt stored once (count, checksum)": (
            checksum(sent) == checksum(stored)
        ),
        f"every attempt scored under the new version ({scored:,} of {total:,})": scored == total,
        f"sum of scores equals the formula in SQL ({got:,.3f} vs {expected:,.3f})": sums_equal,
        f"every player's entry holds their best ({entries:,} entries, {board_misses} off)": (
            board_misses == 0
        ),
        "the new version is active": challenge.active_version_id == job.version_id,
        "job succeeded": job.status == RescoreJob.Status.SUCCEEDED,
        f"job ended within {AFTER_LAST_FAULT_S:.0f}s of the last fault": in_time,
        f"no 5xx outside the broker cut ({len(bad_outside)})": not bad_outside,
        f"inside the cut only 503 with Retry-After ({len(bad_inside)} others)": not bad_inside,
        f"no read left unanswered ({len(dropped)}: {unanswered})": not dropped,
    }
    for label, ok in checks.items():
        print(f"  [{'ok' if ok else 'FAIL'}] {label}")
    for at, path, outcome, _, ms in (bad_outside + bad_inside + dropped)[:10]:
        print(f"  bad read at {at - started:+.1f}s: {outcome} in {ms:.0f} ms, {path}")
    print("  faults at: " + ", ".join(f"{at - started:+.0f}s {what}" for at, what in faults))
    print(f"logs: {work / 'log'}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
