"""Upload throughput through the `podium` command beside a bare HTTP loop, one run.

The same JSON Lines file of attempts is recorded in batches of ``--batch`` lines, each
with its ``Idempotency-Key``, twice per round, into two fresh challenges: once by
``podium attempts record`` (the whole command, timed from its start: the process, the
local check of every line, the file's digest, the requests) and once by a bare loop in
the same virtualenv that posts the same, already-built bodies with the same headers on
one httpx connection (no checks, no retries, no progress). The two alternate which goes
first. Prints attempts/s of each, their medians and the ratio; the target is >= 0.8x.

The server is gunicorn (2 sync workers, bench/_http.py) on PostgreSQL
(BENCH_DATABASE_URL, default .../podium_bench_client, recreated). The client is
installed from clients/python into a virtualenv kept under var/bench-client-venv.
Exits non-zero when the target is missed.

    .venv/bin/python bench/client.py [--attempts 20000] [--batch 500] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _http
import _pg

ROOT = Path(__file__).resolve().parent.parent
URL = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/podium_bench_client")
VENV = ROOT / "var" / "bench-client-venv"
TARGET = 0.8

BARE_LOOP = """
import json, sys, time, httpx
url, token, key_prefix, path, batch = sys.argv[1:6]
batch = int(batch)
lines = [line.strip() for line in open(path, "rb")]
bodies = [
    (i + 1, min(i + batch, len(lines)), b"[" + b",".join(lines[i:i + batch]) + b"]")
    for i in range(0, len(lines), batch)
]
headers = {"Authorization": f"Token {token}", "Accept": "application/json",
           "Content-Type": "application/json"}
started = time.monotonic()
with httpx.Client(timeout=120) as client:
    for first, last, body in bodies:
        key = f"{key_prefix}/lines-{first}-{last}"
        response = client.post(url, content=body, headers={**headers, "Idempotency-Key": key})
        response.raise_for_status()
print(time.monotonic() - started)
"""


def client_venv() -> Path:
    """A virtualenv with the client installed from the checkout (made once, refreshed)."""
    python = VENV / "bin" / "python"
    if not python.exists():
        venv.create(VENV, with_pip=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         str(ROOT / "clients" / "python")],
        check=True,
    )  # fmt: skip
    return VENV / "bin"


def attempts_file(n: int, directory: Path) -> Path:
    path = directory / "attempts.jsonl"
    with path.open("w") as handle:
        for i in range(n):
            handle.write(json.dumps({
                "player": f"p{i % 2000}", "player_name": f"Player {i % 2000}",
                "succeeded": i % 5 != 0, "tokens_total": 100 + i % 900,
                "elapsed_ms": 50 + i % 3000, "rating": i % 11, "output": f"answer {i}",
            }) + "\n")  # fmt: skip
    return path


def setup() -> str:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from rest_framework.authtoken.models import Token

    user = get_user_model().objects.create_user("bench-client")
    user.groups.add(Group.objects.get(name="Integrations"))
    return Token.objects.create(user=user).key


def challenge_new(name: str) -> int:
    from challenges.setup import services as setup_services

    data = {"name": name, "slug": name, "scoring_strategy": "fastest"}
    return setup_services.challenge_create(data=data).pk


def attempts_count(challenge_id: int) -> int:
    from challenges.models import Attempt

    return Attempt.objects.filter(challenge_id=challenge_id).count()


def run_cli(bin_dir: Path, base: str, token: str, pk: int, path: Path, batch: int) -> float:
    started = time.monotonic()
    subprocess.run(
        [str(bin_dir / "podium"), "attempts", "record", str(pk), str(path), "--batch",
         str(batch), "--url", base, "--token", token],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    return time.monotonic() - started


def run_bare(bin_dir: Path, base: str, token: str, pk: int, path: Path, batch: int) -> float:
    url = f"{base}/api/challenges/{pk}/attempts/"
    done = subprocess.run(
        [str(bin_dir / "python"), "-c", BARE_LOOP, url, token, f"bare/{pk}", str(path),
         str(batch)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return float(done.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    bin_dir = client_venv()
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    _pg.setup_django(URL)
    token = setup()
    env = {
        "DATABASE_URL": URL,
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "PODIUM_ATTEMPTS_RATE": "100000000/min",
        "LOG_LEVEL": "WARNING",
    }
    rates: dict[str, list[float]] = {"cli": [], "bare": []}
    with tempfile.TemporaryDirectory() as tmp, _http.Server(env, workers=2) as server:
        path = attempts_file(args.attempts, Path(tmp))
        warm = challenge_new("client-warm")  # both workers warm, players created
        run_bare(bin_dir, server.base, token, warm, path, args.batch)
        for n in range(args.rounds):
            order = ["cli", "bare"] if n % 2 == 0 else ["bare", "cli"]
            for way in order:
                pk = challenge_new(f"client-{way}-{n}")
                run = run_cli if way == "cli" else run_bare
                seconds = run(bin_dir, server.base, token, pk, path, args.batch)
                assert attempts_count(pk) == args.attempts, (way, attempts_count(pk))
                rates[way].append(args.attempts / seconds)
    cli, bare = statistics.median(rates["cli"]), statistics.median(rates["bare"])
    ratio = cli / bare
    print(
        f"\n{args.attempts:,} attempts in batches of {args.batch} through gunicorn (2 sync "
        f"workers), {args.rounds} rounds, attempts/s:"
    )
    for way, label in (("cli", "podium attempts record"), ("bare", "bare httpx loop")):
        values = "/".join(f"{v:,.0f}" for v in rates[way])
        print(f"  {label:24s} median {statistics.median(rates[way]):8,.0f}   rounds {values}")
    verdict = "ok" if ratio >= TARGET else "UNDER"
    print(f"  ratio {ratio:.2f}x  {verdict} (target >= {TARGET}x)")
    sys.exit(0 if ratio >= TARGET else 1)


if __name__ == "__main__":
    main()
