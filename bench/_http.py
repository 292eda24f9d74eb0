"""Shared HTTP load for the benchmarks: gunicorn serving Podium, driven by wrk.

The load generator is wrk (C, one thread, epoll): Debian's package, never a download
(`apt-get install wrk`). Python clients would share the two cores with the server they
measure, so their requests/s would say as much about the client as about Podium. Where
the machine has more than one CPU, wrk is pinned to the last one and gunicorn to the
others (taskset), so they do not trade places on a core; PostgreSQL is shared and not
pinned. A sequential reader whose every request is timed (``Reader``) is curl, also C.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def wrk_path() -> str:
    found = shutil.which("wrk")
    if found is None:
        raise SystemExit("wrk is not installed: apt-get install wrk (Debian's package)")
    return found


def curl_path() -> str:
    found = shutil.which("curl")
    if found is None:
        raise SystemExit("curl is not installed: apt-get install curl (Debian's package)")
    return found


def _cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def _pinned(command: list[str], cpus: list[int]) -> list[str]:
    if shutil.which("taskset") is None or len(_cpus()) < 2:
        return command
    return ["taskset", "-c", ",".join(map(str, cpus)), *command]


def client_cpus() -> list[int]:
    return _cpus()[-1:]


def server_cpus() -> list[int]:
    cpus = _cpus()
    return cpus[:-1] if len(cpus) > 1 else cpus


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """gunicorn serving config.wsgi on a free loopback port, pinned apart from wrk."""

    def __init__(self, env: dict[str, str], *, workers: int = 2, worker_class: str = "sync"):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        command = [
            str(Path(sys.executable).with_name("gunicorn")),
            "config.wsgi:application",
            "--workers",
            str(workers),
            "--worker-class",
            worker_class,
            "--bind",
            f"127.0.0.1:{self.port}",
            "--log-level",
            "warning",
            "--timeout",
            "120",
        ]
        env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
        self.process = subprocess.Popen(_pinned(command, server_cpus()), cwd=ROOT, env=env)

    def __enter__(self) -> Server:
        for _ in range(150):
            try:
                with urllib.request.urlopen(f"{self.base}/healthz", timeout=2) as resp:  # noqa: S310 (http://127.0.0.1)
                    if resp.status == 200:
                        return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise SystemExit("gunicorn did not start")

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)


@dataclass(frozen=True)
class Result:
    rate: float  # requests/s
    latency_ms: float  # mean
    p99_ms: float
    requests: int
    errors: int  # non-2xx/3xx answers, socket errors and timeouts


_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}


def _ms(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()
    return float(number) * _UNITS[unit]


# A POST body for wrk (its Lua script sends the same request on every connection).
_POST_LUA = """
wrk.method = "POST"
wrk.body = {body}
wrk.headers["Content-Type"] = "application/json"
{headers}
"""


def wrk(
    url: str,
    *,
    seconds: float,
    connections: int = 8,
    body: object | None = None,
    headers: dict[str, str] | None = None,
) -> Result:
    """Drive ``url`` for ``seconds`` (GET, or POST of ``body`` as JSON) and parse wrk's
    summary."""
    command = [
        wrk_path(),
        "-t1",
        f"-c{connections}",
        f"-d{max(1, round(seconds))}s",
        "--timeout",
        "60s",
        "--latency",
    ]
    script = None
    if body is not None:
        lines = "\n".join(
            f"wrk.headers[{json.dumps(k)}] = {json.dumps(v)}" for k, v in (headers or {}).items()
        )
        lua = _POST_LUA.format(body=_lua_string(json.dumps(body)), headers=lines)
        script = tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False)
        script.write(lua)
        script.close()
        command += ["-s", script.name]
    try:
        done = subprocess.run(
            _pinned([*command, url], client_cpus()),
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        if script is not None:
            os.unlink(script.name)
    return _summary(done.stdout, done.stderr)


class Reader:
    """One sequential reader of ``url`` (GET) until ``stop()``: curl (C) on one kept-alive
    connection, one request at a time, each request's own time (curl's monotonic
    ``time_total``) and status kept with the moment it ended, so that the phases of a
    benchmark are slices of one reader. Not wrk: with one kept-alive connection its
    latency distribution disagrees with its own count (here a mean of 4.56 ms over 2,439
    requests in 5 s, where one connection allows 2.05 ms)."""

    def __init__(self, url: str, *, requests: int = 200_000):
        curl = curl_path()
        self._config = tempfile.NamedTemporaryFile("w", suffix=".curl", delete=False)
        entry = f'url = {json.dumps(url)}\noutput = "/dev/null"\n'
        self._config.write(entry * requests)
        self._config.close()
        command = [curl, "--silent", "--config", self._config.name]
        command += ["--write-out", "%{time_total} %{http_code}\\n"]
        # stdbuf: a line per request as it ends, not when curl's buffer fills
        self.process = subprocess.Popen(
            ["stdbuf", "-oL", *command], stdout=subprocess.PIPE, text=True
        )
        self.samples: list[tuple[float, float, str]] = []  # (ended, ms, status)
        self._thread = threading.Thread(target=self._collect, daemon=True)
        self._thread.start()

    def _collect(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            seconds, _, status = line.strip().partition(" ")
            self.samples.append((time.monotonic(), float(seconds) * 1000, status))

    def between(self, start: float, end: float) -> list[tuple[float, str]]:
        """(ms, status) of the requests that ended between two ``time.monotonic()``s."""
        return [(ms, status) for ended, ms, status in self.samples if start <= ended < end]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        self._thread.join(timeout=30)
        os.unlink(self._config.name)


def _summary(out: str, err: str) -> Result:
    """wrk's summary, parsed."""
    if err.strip():  # e.g. a script error: wrk would go on sending GETs
        raise RuntimeError(f"wrk: {err.strip()}")
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    latency = _ms(re.search(r"Latency\s+(\S+)", out).group(1))
    p99 = _ms(re.search(r"\s99%\s+(\S+)", out).group(1))
    errors = 0
    found = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors += int(found.group(1)) if found else 0
    found = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    errors += sum(map(int, found.groups())) if found else 0
    return Result(rate, latency, p99, requests, errors)


def _lua_string(text: str) -> str:
    """A Lua long string holding ``text`` exactly (no escapes are processed in it)."""
    level = 1
    while f"]{'=' * level}]" in text + "]":  # (the text's last "]" meets the closing)
        level += 1
    return f"[{'=' * level}[{text}]{'=' * level}]"


READ_TARGET = 0.6  # a read's requests/s over /healthz's, measured in the same rounds


def reads_beside_healthz(
    env: dict[str, str],
    targets: list[tuple[str, str]],
    *,
    seconds: float,
    rounds: int,
    connections: int,
) -> bool:
    """Requests/s of each read under gunicorn (2 sync workers) driven by wrk, beside
    /healthz (a trivial view touching the database and the broker) in the same rounds.
    Each round measures every target between two windows of /healthz (H T1 H T2 H ...,
    forwards and backwards in turn), and a target's ratio is its median over the rounds
    of its rate over the mean of the two /healthz windows either side of it: a machine
    whose speed drifts within a run (the reference alone swung by 45-70 % within a
    minute on two machines) moves both sides of each ratio, and a steady drift cancels
    out of the mean of the two sides.
    Printed, and True when every target is at least READ_TARGET and no request failed."""
    rates: dict[str, list[float]] = {}
    beside: dict[str, list[float]] = {}  # each target's reference, round by round
    errors = 0
    with Server(env, workers=2) as server:

        def measured(path: str) -> float:
            nonlocal errors
            result = wrk(server.base + path, seconds=seconds, connections=connections)
            errors += result.errors
            return result.rate

        for path in ["/healthz", *(path for _, path in targets)]:  # warm both workers
            wrk(server.base + path, seconds=1, connections=2)
        for number in range(rounds):
            before = measured("/healthz")
            rates.setdefault("/healthz", []).append(before)
            for name, path in targets if number % 2 == 0 else targets[::-1]:
                rates.setdefault(name, []).append(measured(path))
                after = measured("/healthz")
                rates["/healthz"].append(after)
                beside.setdefault(name, []).append((before + after) / 2)
                before = after
    reference = rates["/healthz"]
    print(
        f"\ngunicorn, 2 sync workers (CPUs {server_cpus()}), wrk 1 thread "
        f"{connections} connections (CPU {client_cpus()}), {rounds} rounds of "
        f"{seconds:.0f}s windows, median requests/s (ratio: median over the rounds of "
        "the round's, over the mean of the /healthz windows either side):"
    )
    print(
        f"  {'/healthz (reference)':32s} {statistics.median(reference):8,.0f}   "
        f"windows {_rounds(reference)}"
    )
    ok = errors == 0
    for name, _ in targets:
        ratios = [rate / ref for rate, ref in zip(rates[name], beside[name], strict=True)]
        ratio = statistics.median(ratios)
        ok &= ratio >= READ_TARGET
        print(
            f"  {name:32s} {statistics.median(rates[name]):8,.0f}   {ratio:4.2f}x /healthz  "
            f"{'ok' if ratio >= READ_TARGET else 'UNDER'} (target >= {READ_TARGET}x)   "
            f"rounds {_rounds(rates[name])} = {'/'.join(f'{r:.2f}' for r in ratios)}x"
        )
    if errors:
        print(f"  {errors} failed requests (non-2xx, socket errors or timeouts)")
    return ok


def _rounds(values: list[float]) -> str:
    return "/".join(f"{v:,.0f}" for v in values)
