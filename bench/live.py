"""Live boards: SUBSCRIBERS concurrent event streams (``GET /challenges/<slug>/events/``)
while attempts are recorded, on PostgreSQL, with a real Celery worker and uvicorn as
``make run`` and the Procfile's ``stream`` process run it.

1. A fresh database (BENCH_DATABASE_URL, dropped and recreated), a "fastest" challenge.
2. The ingest rate: one recorder's sequential rate in this process (single attempts
   through ``attempts_record``, each a new #1), measured first; the run records at half
   of it (``--rate`` overrides).
3. SUBSCRIBERS (default 1,000) streams opened against uvicorn (one process), then
   attempts recorded for SECONDS, each a new #1 (so each is on the next board.changed and
   record.beaten). For every attempt and every subscriber: the time from the attempt's
   commit to the first event at that subscriber that shows it (a board.changed or
   record.beaten naming that player or a later one). Looks are coalesced to one a second
   per challenge by design, so the wait includes up to a second of that.

Target: p99 <= 2 s from commit to every subscriber; no subscriber dropped (each gets the
last attempt's event). Exits non-zero when missed.

``--reads SECONDS``: then, the web read targets (the public page and the API leaderboard
at >= 0.6x ``/healthz``, measured side by side under gunicorn with wrk, as
bench/leaderboard.py does) while the streams stay open and attempts are still recorded.
wrk takes every cycle the reads can have: the latencies of attempts committed meanwhile
are shown apart, not judged (the target is the first SECONDS' window).

``--fanout``: instead, webhook fan-out: EVENTS events (default 1,000) to ENDPOINTS
endpoints (default 10) on a local receiver that fails 20 % of requests (a 500), the
retry schedule scaled by ``--retry-scale`` (default 0.01: 0.1 s, 0.6 s, 3 s, 9 s ...) so
that a run takes minutes; every delivery must succeed (none failed, none twice after a
2xx) within the retry budget (the real schedule's, about 5 hours) and ``--limit``
(600 s). Reports deliveries/s and the tries made.

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/podium_bench_live \\
    BENCH_REDIS_URL=redis://127.0.0.1:6379/14 \\
    .venv/bin/python bench/live.py [--subscribers 1000] [--seconds 20] [--rate N]
                                   [--reads 5 [--rounds 5]]
    .venv/bin/python bench/live.py --fanout [--events 1000] [--endpoints 10]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _http
import _pg
import _worker

ROOT = Path(__file__).resolve().parent.parent
URL = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/podium_bench_live")
REDIS = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
SLUG = "bench-live"
QUEUE = "bench-live"
# The new #1 an event shows: board.changed's top[0] or record.beaten's "new" holder.
# (PostgreSQL's jsonb orders an object's keys its own way: any key may come first.)
HOLDER = re.compile(rb'(?:"top":\[\{|"new":\{)[^}]*?"player":"p-(\d+)"')


def environment() -> dict[str, str]:
    return {
        "DATABASE_URL": URL,
        "CELERY_BROKER_URL": REDIS,
        "CELERY_TASK_DEFAULT_QUEUE": QUEUE,
        "CACHE_URL": REDIS,
        "LOG_LEVEL": "WARNING",
        "PODIUM_WEBHOOK_ALLOW_PRIVATE": "1",
    }


def record_one(challenge, i: int) -> float:
    """Record attempt ``i`` (faster than every earlier one: a new #1); its commit time."""
    from django.utils import timezone

    from challenges.ingestion import services

    services.attempts_record(
        challenge=challenge,
        inputs=[
            services.AttemptInput(
                player=f"p-{i:06d}",
                player_name=f"P {i}",
                succeeded=True,
                elapsed_ms=10_000_000 - i,
                tokens_total=None,
                rating=None,
                created_at=timezone.now(),
                sample={},
                output="",
                messages=None,
            )
        ],
    )
    return time.monotonic()


class Subscriber:
    def __init__(self) -> None:
        self.seen: list[tuple[float, int]] = []  # (arrival, newest attempt shown)
        self.closed_early = False


async def subscribe(port: int, sub: Subscriber, ready: asyncio.Event, stop: asyncio.Event):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        f"GET /challenges/{SLUG}/events/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Accept: text/event-stream\r\n\r\n".encode()
    )
    await writer.drain()
    buffer = b""
    while b": connected\n\n" not in buffer:
        chunk = await reader.read(4096)
        if not chunk:
            sub.closed_early = True
            return
        buffer += chunk
    buffer = buffer.partition(b": connected\n\n")[2]
    ready.set()
    while not stop.is_set():
        try:
            chunk = await asyncio.wait_for(reader.read(65536), timeout=0.5)
        except TimeoutError:
            continue
        if not chunk:
            sub.closed_early = not stop.is_set()
            break
        arrived = time.monotonic()
        buffer += chunk
        complete, _, buffer = buffer.rpartition(b"\n\n")  # whole messages only
        for found in HOLDER.finditer(complete):
            sub.seen.append((arrived, int(found.group(1))))
    writer.close()


async def streams(port: int, count: int, pipe) -> None:
    """The subscribers' process: open ``count`` streams, say so, read until told to
    stop, send back what each saw."""
    subs = [Subscriber() for _ in range(count)]
    stop = asyncio.Event()
    readies = [asyncio.Event() for _ in range(count)]
    tasks = []
    for start in range(0, count, 100):  # open them in batches of 100
        for k in range(start, min(count, start + 100)):
            tasks.append(asyncio.create_task(subscribe(port, subs[k], readies[k], stop)))
        await asyncio.gather(*(readies[k].wait() for k in range(start, min(count, start + 100))))
    pipe.send("open")
    await asyncio.to_thread(pipe.recv)  # "stop"
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    pipe.send([(sub.seen, sub.closed_early) for sub in subs])


def subscribers_process(port: int, count: int, pipe) -> None:
    asyncio.run(streams(port, count, pipe))


def reads_under_streams(challenge, *, seconds: float, rounds: int) -> bool:
    """The web read targets (reads >= 0.6x /healthz, bench/leaderboard.py's) while the
    streams are open and attempts recorded: gunicorn on the same database, cache and
    broker as uvicorn and the worker (so the worker builds the pages ahead, as deployed),
    wrk beside /healthz in the same rounds."""
    env = {
        **environment(),
        "DEBUG": "false",
        "SECRET_KEY": "bench-only-secret-key-not-for-production",
    }
    targets = [
        ("page", f"/challenges/{SLUG}/"),
        ("API leaderboard ?limit=50", f"/api/challenges/{challenge.pk}/leaderboard/?limit=50"),
    ]
    return _http.reads_beside_healthz(env, targets, seconds=seconds, rounds=rounds, connections=8)


def fanout(args: argparse.Namespace) -> int:
    """Webhook fan-out through the real worker to a receiver failing 20 % of requests."""
    import random
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    os.environ.update(environment())
    os.environ["PODIUM_WEBHOOK_RETRY_SCALE"] = str(args.retry_scale)
    _pg.setup_django(URL)
    from django.db import transaction

    from challenges.events import log, webhook_delivery
    from challenges.models import WebhookDelivery
    from challenges.setup import services as setup_services

    got: dict[str, int] = {}  # webhook-id + endpoint path → 2xx answers
    lock = threading.Lock()
    rng = random.Random(7)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with lock:
                fail = rng.random() < 0.2
                if not fail:
                    key = f"{self.headers['webhook-id']} {self.path}"
                    got[key] = got.get(key, 0) + 1
            self.send_response(500 if fail else 200)
            self.end_headers()

        def log_message(self, *a: object) -> None:
            pass

    receiver = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.daemon_threads = True
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{receiver.server_address[1]}"
    challenge = setup_services.challenge_create(data={"name": "Bench hooks", "slug": "hooks"})
    for k in range(args.endpoints):
        webhook_delivery.endpoint_create(challenge=challenge, url=f"{base}/e{k}")
    env = {**environment(), "PODIUM_WEBHOOK_RETRY_SCALE": str(args.retry_scale)}
    worker = _worker.Worker(env)
    try:
        worker.wait()
        # The retry budget is the real schedule's (about 5 hours): the scaled one only
        # shortens the waits between tries, not the time deliveries take to make.
        budget = sum(webhook_delivery.RETRY_AFTER_S) * 1.1
        started = time.monotonic()
        for start in range(0, args.events, 100):
            with transaction.atomic():
                log.live_locked(challenge=challenge)
                for n in range(start, min(args.events, start + 100)):
                    log.event_write(challenge=challenge, type="board.changed", data={"n": n})
        expected = args.events * args.endpoints
        pending = WebhookDelivery.objects.exclude(status="succeeded")
        while time.monotonic() - started < min(budget, args.limit):
            done = WebhookDelivery.objects.filter(status="succeeded").count()
            if done == expected:
                break
            time.sleep(0.5)
        took = time.monotonic() - started
    finally:
        worker.stop()
        receiver.shutdown()
    done = WebhookDelivery.objects.filter(status="succeeded").count()
    failed = WebhookDelivery.objects.filter(status="failed").count()
    tries = sum(WebhookDelivery.objects.values_list("tries", flat=True))
    twice = sum(1 for n in got.values() if n > 1)
    print(
        f"{args.events} events to {args.endpoints} endpoints, 20 % of answers 500: "
        f"{done}/{expected} delivered in {took:.1f} s ({done / took:.0f} deliveries/s), "
        f"{tries} tries, {failed} failed, {pending.count()} not delivered, "
        f"{twice} delivered twice after a 2xx (retry budget {budget:.0f} s)"
    )
    ok = done == expected and failed == 0 and twice == 0
    print("target (all delivered within the retry budget, none twice):", "met" if ok else "MISSED")
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--rate", type=float, default=0, help="attempts/s (0: half measured)")
    parser.add_argument("--fanout", action="store_true", help="webhook fan-out instead")
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--endpoints", type=int, default=10)
    parser.add_argument("--retry-scale", type=float, default=0.01)
    parser.add_argument("--limit", type=float, default=600, help="seconds to wait at most")
    parser.add_argument(
        "--reads", type=float, default=0,
        help="seconds per wrk round: the web read targets measured while the streams are open",
    )  # fmt: skip
    parser.add_argument("--rounds", type=int, default=5, help="--reads: wrk rounds")
    args = parser.parse_args()
    if args.fanout:
        return fanout(args)

    os.environ.update(environment())
    _pg.setup_django(URL)
    from challenges.setup import services as setup_services

    challenge = setup_services.challenge_create(
        data={"name": "Bench live", "slug": SLUG, "scoring_strategy": "fastest"}
    )
    worker = _worker.Worker(environment())
    port = _http.free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "config.asgi:application", "--port", str(port),
         "--log-level", "warning", "--no-access-log"],
        cwd=ROOT, env={**os.environ, **environment()},
    )  # fmt: skip
    try:
        worker.wait()
        deadline = time.monotonic() + 30
        while subprocess.run(
            [_http.curl_path(), "-sf", "-o", "/dev/null", f"http://127.0.0.1:{port}/healthz"],
            check=False,
        ).returncode:
            if time.monotonic() > deadline:
                raise SystemExit("uvicorn did not start")
            time.sleep(0.2)

        # The ingest rate: a sequential recorder's, then half of it.
        started = time.monotonic()
        for i in range(100):
            record_one(challenge, i)
        measured = 100 / (time.monotonic() - started)
        rate = args.rate or measured / 2
        print(f"sequential ingest: {measured:.0f} attempts/s; recording at {rate:.0f}/s")
        quiet = args.seconds  # the target's window: streams and recording, nothing else
        if args.reads:  # then record on for as long as the wrk rounds take (3 paths, warm-ups)
            args.seconds += 3 * (args.rounds * args.reads + 1) + 10
        first = 100
        total = int(rate * args.seconds)
        commits: dict[int, float] = {}

        def run() -> None:
            begin = time.monotonic()
            for n in range(total):
                due = begin + n / rate
                if (wait := due - time.monotonic()) > 0:
                    time.sleep(wait)
                commits[first + n] = record_one(challenge, first + n)

        peak = [0]
        sampling = threading.Event()

        def sample() -> None:  # the database connections the run holds, at most
            import psycopg

            with psycopg.connect(URL, autocommit=True) as conn:
                while not sampling.is_set():
                    (n,) = conn.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                    ).fetchone()
                    peak[0] = max(peak[0], n)
                    time.sleep(0.2)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        # The subscribers read in a process of their own (CLOCK_MONOTONIC is the same in
        # both): their parsing never delays the recorder, nor the recorder their reads.
        ours, theirs = multiprocessing.get_context("fork").Pipe()
        client = multiprocessing.get_context("fork").Process(
            target=subscribers_process, args=(port, args.subscribers, theirs)
        )
        client.start()
        assert ours.recv() == "open"
        print(f"{args.subscribers} streams open")
        reads_from = float("inf")  # when wrk began to saturate the machine, if it did
        if args.reads:  # the reads are measured while the streams are open and fed
            recorder = threading.Thread(target=run)
            recorder.start()
            time.sleep(quiet)
            reads_from = time.monotonic()
            reads_ok = reads_under_streams(challenge, seconds=args.reads, rounds=args.rounds)
            recorder.join()
        else:
            run()
        time.sleep(3)  # the last look and its events
        ours.send("stop")
        subs = []
        for seen, closed_early in ours.recv():
            sub = Subscriber()
            sub.seen, sub.closed_early = seen, closed_early
            subs.append(sub)
        client.join(30)
        sampling.set()
        print(f"database connections at most: {peak[0]} (this benchmark's sampler included)")
    finally:
        server.terminate()
        server.wait(30)
        worker.stop()

    last = first + total - 1
    dropped = sum(
        sub.closed_early or not sub.seen or max(k for _, k in sub.seen) < last for sub in subs
    )
    quiet_latencies = latencies_of(subs, commits, first, lambda at: at < reads_from)
    if not quiet_latencies:
        early = sum(sub.closed_early for sub in subs)
        seen = sum(len(sub.seen) for sub in subs)
        newest = max((k for sub in subs for _, k in sub.seen), default=None)
        print(
            f"no subscriber saw the last attempt ({early} closed early, {seen} events seen, "
            f"the newest shown: {newest}, the last recorded: {last})"
        )
        return 1
    p99 = report(f"{args.subscribers} subscribers, {rate:.0f} attempts/s", quiet_latencies)
    print(f"dropped subscribers: {dropped} (of {args.subscribers}; {total} attempts recorded)")
    ok = p99 <= 2.0 and dropped == 0
    print("target (p99 <= 2 s, none dropped):", "met" if ok else "MISSED")
    if args.reads:
        saturated = latencies_of(subs, commits, first, lambda at: at >= reads_from)
        if saturated:  # shown, not judged: wrk takes every cycle the reads can have
            report("  the same while wrk saturated the machine with reads", saturated)
        print("web read targets under the stream load:", "met" if reads_ok else "MISSED")
        ok = ok and reads_ok
    return 0 if ok else 1


def latencies_of(subs, commits: dict[int, float], first: int, when) -> list[float]:
    """Commit → arrival for every (attempt committed ``when``, subscriber that got it)."""
    latencies: list[float] = []
    for sub in subs:
        covered = first - 1
        for arrived, shown in sorted(sub.seen):
            for j in range(covered + 1, shown + 1):
                if j in commits and when(commits[j]):
                    latencies.append(arrived - commits[j])
            covered = max(covered, shown)
    return sorted(latencies)


def report(what: str, latencies: list[float]) -> float:
    p99 = latencies[int(len(latencies) * 0.99) - 1]
    print(
        f"{what}: commit → event p50 {statistics.median(latencies) * 1000:.0f} ms, "
        f"p99 {p99 * 1000:.0f} ms, max {latencies[-1] * 1000:.0f} ms over "
        f"{len(latencies)} (attempt, subscriber) pairs"
    )
    return p99


if __name__ == "__main__":
    raise SystemExit(main())
