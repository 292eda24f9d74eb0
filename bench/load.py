"""Load while rescoring: attempts recorded through the API by concurrent clients, and the
public leaderboard page read, while a real Celery worker rescores 200,000 attempts on
PostgreSQL + Redis. Then it checks that nothing was lost.

    .venv/bin/python bench/load.py [--attempts 200000] [--writers 4] [--batch 5]
                                   [--board aggregate]

One sequential reader of the page throughout, and four phases: idle (--idle-seconds,
once the worker answers and the loaded tables are vacuumed); saturated (the writers as
fast as they can, each posting as soon as its last request ended: the server's ingest
capacity, measured in this run); steady ingestion (the writers at --load of that
capacity, open loop: requests at a constant rate, a late one not made up; or at --rate
requests/s); steady ingestion during the rescore.
Prints the capacity, the steady rate, the page's p50/p99 in each phase beside the idle
p99 of the same run (target: steady ingestion within 3x idle; the saturated phase is
shown, not judged, with one pool: with the writers taking every cycle of both cores, a
read waits for one), and the checks: every attempt sent is stored once (count and
checksum) and scored under the new version (count, and the sum of scores against the
weighted formula computed in SQL). Exits non-zero if any check or the target fails. The writers are
Python clients (the checks need every accepted body); the reader is curl, one request
at a time on one connection (bench/_http.Reader: C, so that the latency it measures is
the server's, not that of a Python client sharing its GIL with the writers).
``--ingest-processes N`` runs the documented deployment's split (deploy/supervisord.conf,
docs/deploy.md "Reads and writes"): the writers post to an ingest pool of N gunicorn
processes x --ingest-threads, niced, and the reader reads the web pool; the saturated
phase is then judged too (page p99 within 5x idle), and the capacity printed is the
write rate the split leaves (compare a run without it for the rate given up).
Needs PostgreSQL (BENCH_DATABASE_URL, default .../podium_bench_load, recreated) and Redis
(BENCH_REDIS_URL, default redis://127.0.0.1:6379/14, flushed; the cache in
BENCH_CACHE_URL, default db 13).
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _http
import _worker
from _pg import ROOT, checksum, load, setup_django

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/podium_bench_load"
WEIGHTS = {"success_bonus": 50.0, "rating_weight": 7.0, "time_penalty": 0.1, "token_penalty": 0.003}
WEIGHTED = {
    "scoring_strategy": "custom",
    "scoring_plugin_id": "builtin.weighted_scorer",
    "scoring_entrypoint": "scoring.scorers.weighted:WeightedScorer",
    "scoring_config": WEIGHTS,
}


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:  # no read answered in that phase: a miss, shown as such
        return float("nan")
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


class Writer(threading.Thread):
    """Posts batches of attempts with unique, checkable contents until told to stop."""

    def __init__(
        self, n: int, of: int, base: str, token: str, challenge_id: int, batch: int, players: int
    ):
        super().__init__(daemon=True)
        self.players = players  # this writer's players
        self.of = of  # writers in all
        self.period = 0.0  # seconds between requests; 0: each as soon as the last ends
        self.n, self.url, self.batch = n, f"{base}/api/challenges/{challenge_id}/attempts/", batch
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Token {token}"
        self.stop = threading.Event()
        self.sent: list[dict] = []  # accepted (201) attempts
        self.refused: list[str] = []
        self.seq = 0

    def make(self) -> dict:
        self.seq += 1
        k = self.n * 1_000_003 + self.seq
        return {
            "player": f"load-{self.n}-{self.seq % self.players}",
            "succeeded": k % 3 != 0,
            "tokens_total": k % 4000,
            "elapsed_ms": k % 90_000,
            "rating": k % 11,
            "created_at": 1_790_000_000_000 + k,
            "sample": {"writer": self.n, "seq": self.seq},
        }

    def run(self) -> None:
        due = None
        while not self.stop.is_set():
            if self.period:  # open loop: one request per period, late ones not made up
                if due is None:  # the writers spread over the period, not in step
                    due = time.monotonic() + self.period * self.n / self.of
                due = max(due + self.period, time.monotonic())
                self.stop.wait(due - time.monotonic())
            body = [self.make() for _ in range(self.batch)]
            try:
                resp = self.session.post(self.url, json=body, timeout=60)
            except requests.RequestException as exc:
                self.refused.append(f"{type(exc).__name__}")
                continue
            if resp.status_code == 201:
                self.sent.extend(body)
            else:
                self.refused.append(f"{resp.status_code} {resp.text[:200]}")


def weighted_sums(challenge_id: int, version_id: int) -> tuple[float, float]:
    """The sum of every attempt's score by the weighted formula, computed in SQL, and the
    sum of the version's stored scores: equal when every attempt was scored once."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT sum(GREATEST(0, CASE WHEN succeeded THEN %s ELSE 0 END"
            " + coalesce(rating, 0) * %s - coalesce(elapsed_ms, 0) / 1000.0 * %s"
            " - coalesce(tokens_total, 0) * %s))"
            " FROM challenges_attempt WHERE challenge_id = %s",
            [
                WEIGHTS["success_bonus"],
                WEIGHTS["rating_weight"],
                WEIGHTS["time_penalty"],
                WEIGHTS["token_penalty"],
                challenge_id,
            ],
        )
        expected = float(cursor.fetchone()[0] or 0)
        cursor.execute(
            "SELECT sum(score) FROM challenges_attemptscore WHERE version_id = %s", [version_id]
        )
        return expected, float(cursor.fetchone()[0] or 0)


def gunicorn(
    port: int, env: dict[str, str], *, processes: int, threads: int, nice: int = 0
) -> subprocess.Popen:
    command = [
        str(Path(sys.executable).parent / "gunicorn"),
        "config.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(processes),
        "--worker-class",
        "gthread",
        "--threads",
        str(threads),
        "--log-level",
        "warning",
    ]
    if nice:
        command = ["nice", "-n", str(nice), *command]
    return subprocess.Popen(command, cwd=ROOT, env=env)


def wait_healthy(base: str) -> None:
    for _ in range(100):
        try:
            if requests.get(f"{base}/healthz", timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    raise SystemExit(f"the server at {base} did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=200_000)
    parser.add_argument("--players", type=int, default=20_000)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=5, help="attempts per request")
    parser.add_argument(
        "--writer-players",
        type=int,
        default=500,
        help="players each writer records for (an aggregate board ranks models: say 25)",
    )
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument(
        "--ingest-processes",
        type=int,
        default=0,
        help="the documented deployment's read/write split: the writers post to an ingest "
        "pool of this many gunicorn processes (INGEST_THREADS threads, niced), the reader "
        "reads the web pool; 0: one pool for both",
    )
    parser.add_argument("--ingest-threads", type=int, default=2)
    parser.add_argument("--ingest-nice", type=int, default=10)
    parser.add_argument("--worker-concurrency", type=int, default=2)
    parser.add_argument(
        "--load",
        type=float,
        default=0.5,
        help="steady ingestion's rate, as a fraction of the capacity measured saturated",
    )
    parser.add_argument(
        "--rate", type=float, default=0, help="steady ingestion's requests/s (instead of --load)"
    )
    parser.add_argument("--idle-seconds", type=float, default=10.0, help="reads alone, first")
    parser.add_argument(
        "--board",
        choices=("best_attempt", "aggregate"),
        default="best_attempt",
        help="the board read: aggregate ranks by the mean over each player's attempts, with "
        "intervals recomputed by the worker as attempts arrive",
    )
    parser.add_argument(
        "--saturate-seconds", type=float, default=10.0, help="the writers as fast as they can"
    )
    parser.add_argument(
        "--ingest-seconds", type=float, default=15.0, help="steady ingestion, before the rescore"
    )
    args = parser.parse_args()
    _http.curl_path()  # fail before loading the attempts

    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL)
    redis_url = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
    setup_django(url)
    import redis
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.db import connection
    from rest_framework.authtoken.models import Token

    from challenges.models import Attempt, AttemptScore, Challenge, RescoreJob
    from challenges.rescoring import jobs as rescoring

    redis.Redis.from_url(redis_url).flushdb()
    challenge = load(
        players=args.players,
        attempts=args.attempts,
        setup={"scoring_strategy": "fastest", "board": args.board},
    )
    from challenges.setup import services as setup_services

    rescoring.job_run_inline(job=setup_services.challenge_rescore(challenge=challenge))  # scores v2
    users = get_user_model().objects
    admin = users.create_superuser("bench-admin", "a@example.com", secrets.token_urlsafe())
    grader = users.create_user("bench-grader")
    grader.groups.add(Group.objects.get(name="Integrations"))
    admin_token = Token.objects.create(user=admin).key
    grader_tokens = [Token.objects.get_or_create(user=grader)[0].key]

    port = _http.free_port()
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "CELERY_BROKER_URL": redis_url,
        "CACHE_URL": os.environ.get("BENCH_CACHE_URL", redis_url.rsplit("/", 1)[0] + "/13"),
        "CELERY_TASK_DEFAULT_QUEUE": f"bench-load-{os.getpid()}",
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1",
        "PODIUM_ATTEMPTS_RATE": "1000000/min",
        "LOG_LEVEL": "WARNING",
    }
    web = gunicorn(port, env, processes=args.web_workers, threads=4)
    servers = [web]
    base = writes = f"http://127.0.0.1:{port}"
    if args.ingest_processes:  # deploy/supervisord.conf's [program:ingest]
        ingest_port = _http.free_port()
        servers.append(
            gunicorn(
                ingest_port,
                env,
                processes=args.ingest_processes,
                threads=args.ingest_threads,
                nice=args.ingest_nice,
            )
        )
        writes = f"http://127.0.0.1:{ingest_port}"
        print(
            f"reads: {args.web_workers} web processes × 4 threads; writes: "
            f"{args.ingest_processes} ingest processes × {args.ingest_threads} threads, "
            f"nice {args.ingest_nice}"
        )
    worker = _worker.Worker(env, concurrency=args.worker_concurrency)
    try:
        for address in {base, writes}:
            wait_healthy(address)
        # The idle phase is idle: the worker has started (it imports Django and queues
        # its start-up tasks while it does) and the tables loaded above are vacuumed.
        worker.wait()
        with connection.cursor() as cursor:
            for table in (
                "challenges_attempt",
                "challenges_attemptscore",
                "challenges_leaderboardentry",
            ):
                cursor.execute(f"VACUUM ANALYZE {table}")
        page = f"{base}/challenges/{challenge.slug}/"
        requests.get(page, timeout=60).raise_for_status()  # the first read builds the page
        reader = _http.Reader(page)
        marks = [time.monotonic()]
        time.sleep(args.idle_seconds)

        # Saturated: the writers as fast as they can (the capacity), then steady ingestion
        # at --load of it (or --rate), alone, then during the rescore.
        writers = [
            Writer(
                n,
                args.writers,
                writes,
                grader_tokens[0],
                challenge.pk,
                args.batch,
                args.writer_players,
            )
            for n in range(args.writers)
        ]
        marks.append(time.monotonic())
        for thread in writers:
            thread.start()
        time.sleep(args.saturate_seconds)
        capacity = sum(len(w.sent) for w in writers) / args.batch / args.saturate_seconds
        rate = args.rate or args.load * capacity
        marks.append(time.monotonic())
        for thread in writers:
            thread.period = args.writers / rate
        time.sleep(2)  # the requests already under way end
        sent_before_steady = sum(len(w.sent) for w in writers)
        started = time.perf_counter()
        marks.append(time.monotonic())
        time.sleep(args.ingest_seconds)
        sent_before_rescore = sum(len(w.sent) for w in writers)
        ingest_only_s = time.perf_counter() - started
        steady_rate = (sent_before_rescore - sent_before_steady) / args.batch / ingest_only_s

        before = Attempt.objects.filter(challenge=challenge).count()
        resp = requests.patch(
            f"{base}/api/challenges/{challenge.pk}/",
            json=WEIGHTED,
            headers={"Authorization": f"Token {admin_token}"},
            timeout=60,
        )
        resp.raise_for_status()
        job = RescoreJob.objects.filter(challenge=challenge).latest("created_at")
        rescore_started = time.perf_counter()
        marks.append(time.monotonic())
        while True:
            job.refresh_from_db()
            if not job.is_active:
                break
            time.sleep(0.2)
        marks.append(time.monotonic())
        reader.stop()
        rescore_s = time.perf_counter() - rescore_started
        for thread in writers:
            thread.stop.set()
        for thread in writers:
            thread.join()
        ingest_s = time.perf_counter() - started
        sent_steady = sum(len(w.sent) for w in writers) - sent_before_steady
    finally:
        for server in servers:
            server.terminate()
            server.wait(30)
        worker.stop()

    sent = [a for w in writers for a in w.sent]
    refused = [r for w in writers for r in w.refused]
    challenge = Challenge.objects.get(pk=challenge.pk)
    print(
        f"\nrescore of {before:,} attempts (weighted, {args.worker_concurrency} worker processes) "
        f"with {args.writers} writers x {args.batch} attempts/request and 1 page reader:"
    )
    print(
        f"  job: {job.status}, {rescore_s:.1f}s, processed {job.processed:,}, failed {job.failed}"
    )
    print(
        f"  capacity (saturated, {args.saturate_seconds:.0f}s): {capacity:,.1f} requests/s"
        f" = {capacity * args.batch:,.0f} attempts/s"
    )
    print(
        f"  steady ingestion: asked {rate:,.1f} requests/s"
        f" ({rate / capacity:.2f}x capacity), got {steady_rate:,.1f} alone;"
        f" {sent_steady:,} attempts in {ingest_s:.1f}s with the rescore"
        f" = {sent_steady / ingest_s:,.0f} attempts/s; refused: {len(refused)}"
    )
    # marks: idle, saturated, (2 s to settle), ingesting, ingesting + rescore, end
    spans = {"idle": 0, "saturated": 1, "ingesting": 3, "ingesting + rescore": 4}
    phases = {name: reader.between(*marks[i : i + 2]) for name, i in spans.items()}
    idle_p99 = percentile([ms for ms, _ in phases["idle"]], 99)
    print("  leaderboard page (curl, one sequential reader), milliseconds:")
    for name, samples in phases.items():
        times = [ms for ms, _ in samples] or [float("nan")]
        p99 = percentile(times, 99)
        print(
            f"    {name:20s} p50 {statistics.median(times):6.1f}  p99 {p99:6.1f}"
            f"  ({p99 / idle_p99:4.1f}x idle p99)  over {len(samples)} requests"
        )
    read_errors = [
        status for samples in phases.values() for _, status in samples if status != "200"
    ]
    print(f"    errors: {len(read_errors)} {read_errors[:5]}")
    ingest_ratio = percentile([ms for ms, _ in phases["ingesting"]], 99) / idle_p99
    saturated_ratio = percentile([ms for ms, _ in phases["saturated"]], 99) / idle_p99

    stored = Attempt.objects.filter(challenge=challenge, player__external_id__startswith="load-")
    rows = stored.values_list(
        "player__external_id", "succeeded", "tokens_total", "elapsed_ms", "rating", "sample"
    )
    stored_keys = [
        (p, s, t, e, r, sample["writer"], sample["seq"]) for p, s, t, e, r, sample in rows
    ]
    sent_keys = [
        (
            a["player"],
            a["succeeded"],
            a["tokens_total"],
            a["elapsed_ms"],
            a["rating"],
            a["sample"]["writer"],
            a["sample"]["seq"],
        )
        for a in sent
    ]
    total = Attempt.objects.filter(challenge=challenge).count()
    version = job.version
    scored = AttemptScore.objects.filter(version=version).count()
    expected, got = weighted_sums(challenge.pk, version.pk)
    checks = {
        f"page p99 while ingesting within 3x idle ({ingest_ratio:.1f}x)": ingest_ratio <= 3,
        f"steady ingestion kept its rate ({steady_rate:,.1f} of {rate:,.1f} requests/s)": (
            steady_rate >= 0.95 * rate
        ),
        "every accepted attempt stored once (count, checksum)": checksum(sent_keys)
        == checksum(stored_keys),
        "no request refused": not refused,
        "no read failed": not read_errors,
        "the new version is active": challenge.active_version_id == version.pk,
        f"every attempt scored under the new version ({scored:,} of {total:,})": scored == total,
        f"sum of scores matches the formula in SQL ({got:,.3f} vs {expected:,.3f})": abs(
            got - expected
        )
        <= 1e-6 * max(1.0, abs(expected)),
        "job succeeded": job.status == RescoreJob.Status.SUCCEEDED,
    }
    if args.ingest_processes:  # the split's promise: reads keep their speed under a flood
        checks[f"page p99 saturated within 5x idle ({saturated_ratio:.1f}x)"] = saturated_ratio <= 5
    print(f"  sent {checksum(sent_keys)}, stored {checksum(stored_keys)}")
    for name, ok in checks.items():
        print(f"  [{'ok' if ok else 'FAIL'}] {name}")
    if refused:
        print("  refused, first:", refused[:3])
    sys.exit(0 if all(checks.values()) else 1)


if __name__ == "__main__":
    main()
