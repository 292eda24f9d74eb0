"""The ``podium`` command, installed from the checkout into a fresh virtualenv, against
a live server (conftest.py): an upload survives the server being killed mid-way, a bad
line is named, the board reads as the API does, rescores are followed to their end."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import threading
import time
import urllib.error
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("DATABASE_URL", "").startswith("postgres"),
        reason="the client runs against a server of its own on SQLite: the suite's SQLite "
        "pass ran it (the same server)",
    ),
]
ATTEMPTS = 20_000
PLAYERS = 2_000
SLUG = "client-upload"


def run(podium_bin, *args, env=None, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(podium_bin), *args], capture_output=True, text=True, timeout=timeout,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def as_integration(server) -> dict[str, str]:
    return {"PODIUM_URL": server.url, "PODIUM_TOKEN": server.integration_token}


def as_admin(server) -> dict[str, str]:
    return {"PODIUM_URL": server.url, "PODIUM_TOKEN": server.admin_token}


@pytest.fixture(scope="module")
def challenge(podium_server) -> dict:
    return podium_server.api(
        "POST", "/api/challenges/",
        {"name": "Client upload", "slug": SLUG, "scoring_strategy": "highest_rating"},
    )  # fmt: skip


@pytest.fixture(scope="module")
def uploaded(podium_server, podium_bin, challenge, tmp_path_factory) -> dict:
    """20,000 attempts uploaded through a server killed mid-way and restarted."""
    path = tmp_path_factory.mktemp("upload") / "attempts.jsonl"
    with path.open("w") as handle:
        for n in range(ATTEMPTS):
            player = n % PLAYERS
            item = {
                "player": f"p{player}",
                "player_name": f"player-{player}",
                "succeeded": n % 7 != 0,
                "rating": n % 11,
                "output": f"line-{n + 1}",
            }
            handle.write(json.dumps(item) + "\n")
    env = as_integration(podium_server)
    first = subprocess.Popen(
        [str(podium_bin), "attempts", "record", SLUG, str(path), "--batch", "500",
         "--retries", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **env},
    )  # fmt: skip
    progress = []
    assert first.stderr is not None
    for line in first.stderr:
        progress.append(line)
        if sum(1 for p in progress if p.startswith("lines ")) == 10:
            podium_server.kill()  # mid-way: the 11th batch is on its way or about to be
            break
    rest = first.stderr.read()
    first.wait(timeout=60)
    recorded_before = podium_server.sql("SELECT count(*) FROM challenges_attempt")[0][0]
    podium_server.start()
    again = run(podium_bin, "attempts", "record", SLUG, str(path), "--batch", "500", env=env)
    return {
        "first_code": first.returncode,
        "first_err": "".join(progress) + rest,
        "recorded_before": recorded_before,
        "again": again,
    }


def test_an_upload_interrupted_by_a_killed_server_resumes_writing_nothing_twice(
    podium_server, uploaded
):
    assert uploaded["first_code"] == 3, uploaded["first_err"]  # unreachable after retries
    assert "run the same command again" in uploaded["first_err"]
    assert 5_000 <= uploaded["recorded_before"] < ATTEMPTS
    again = uploaded["again"]
    assert again.returncode == 0, again.stderr
    assert "already recorded" in again.stderr  # the first batches were replayed
    assert f"Recorded {ATTEMPTS} attempts" in again.stdout
    total, distinct = podium_server.sql(
        "SELECT count(*), count(DISTINCT output) FROM challenges_attempt"
    )[0]
    assert (total, distinct) == (ATTEMPTS, ATTEMPTS)


def test_a_bad_line_stops_the_upload_naming_the_line(podium_server, podium_bin, uploaded, tmp_path):
    env = as_integration(podium_server)
    local = tmp_path / "local.jsonl"
    local.write_text(
        '{"player": "x", "succeeded": true}\n\n{"player": "y", "succeeded": true, "rating": 11}\n'
    )
    done = run(podium_bin, "attempts", "record", SLUG, str(local), env=env)
    assert done.returncode == 1
    assert f"{local}:3: rating: at most 10" in done.stderr
    assert "nothing sent" in done.stderr
    # What only the server can tell: it refuses the batch, the line is named, nothing written.
    remote = tmp_path / "remote.jsonl"
    lines = [{"player": "z", "succeeded": True, "output": "bad-batch"}] * 3
    lines[1] = {**lines[1], "created_at": "the day before yesterday"}
    remote.write_text("".join(json.dumps(item) + "\n" for item in lines))
    done = run(podium_bin, "attempts", "record", SLUG, str(remote), env=env)
    assert done.returncode == 1, done.stderr
    assert re.search(
        rf"{re.escape(str(remote))}:2: the server refused line 2 \(400\): created_at", done.stderr
    )
    assert "--from-line 1" in done.stderr
    assert podium_server.sql(
        "SELECT count(*) FROM challenges_attempt WHERE output='bad-batch'"
    ) == [(0,)]
    dry = run(podium_bin, "attempts", "record", SLUG, str(remote), "--dry-run", env=env)
    assert dry.returncode == 0 and "3 attempts in 3 lines, all valid" in dry.stdout


RESCORED = "client-rescore"
SMALL = 200


@pytest.fixture(scope="module")
def small(podium_server) -> dict:
    """A challenge of a few attempts, quick to rescore."""
    made = podium_server.api(
        "POST", "/api/challenges/",
        {"name": "Client rescore", "slug": RESCORED, "scoring_strategy": "fastest"},
    )  # fmt: skip
    items = [{"player": f"r{n % 20}", "succeeded": True, "elapsed_ms": n} for n in range(SMALL)]
    podium_server.api("POST", f"/api/challenges/{made['id']}/attempts/", items)
    return made


def _api_rows(server, challenge_id: int, limit: int) -> dict:
    first = server.api("GET", f"/api/challenges/{challenge_id}/leaderboard/?limit=500")
    second = server.api(
        "GET", f"/api/challenges/{challenge_id}/leaderboard/?limit={limit - 500}&offset=500"
    )
    return {**first, "results": first["results"] + second["results"]}


def test_board_show_reads_as_the_api_in_every_format(
    podium_server, podium_bin, challenge, uploaded
):
    env = {"PODIUM_URL": podium_server.url}  # public: no token
    api = _api_rows(podium_server, challenge["id"], 600)
    assert len(api["results"]) == 600 and api["count"] == PLAYERS
    shown = run(podium_bin, "board", "show", SLUG, "--limit", "600", "--format", "json", env=env)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == api
    columns = ["rank", "player", "display_name", "score", "attempt_id", "created_at"]
    expected = [[str(row[c]) for c in columns] for row in api["results"]]
    shown = run(
        podium_bin,
        "board",
        "show",
        str(challenge["id"]),
        "--limit",
        "600",
        "--format",
        "csv",
        env=env,
    )
    assert list(csv.reader(io.StringIO(shown.stdout))) == [columns, *expected]
    shown = run(podium_bin, "board", "show", SLUG, "--limit", "600", env=env)
    assert [line.split() for line in shown.stdout.splitlines()] == [columns, *expected]
    one = podium_server.api("GET", f"/api/challenges/{challenge['id']}/leaderboard/?player=p7")
    shown = run(podium_bin, "board", "show", SLUG, "--player", "p7", "--format", "json", env=env)
    assert json.loads(shown.stdout) == one


def test_rescore_wait_exits_1_with_the_reason_when_the_job_is_cancelled(
    podium_server, podium_bin, small
):
    podium_server.kill()
    podium_server.start(worker=False)  # the job stays queued until it is cancelled
    waiting = subprocess.Popen(
        [str(podium_bin), "rescore", RESCORED, "--wait", "--every", "0.2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **as_admin(podium_server)},
    )  # fmt: skip
    assert waiting.stdout is not None
    job = int(re.match(r"Rescore job (\d+) queued", waiting.stdout.readline()).group(1))
    podium_server.api("POST", f"/api/rescore-jobs/{job}/cancel/")
    _, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 1, err
    assert f"rescore job {job} cancelled: Cancelled." in err
    podium_server.kill()
    podium_server.start()


def test_rescore_wait_exits_0_when_the_job_succeeds(podium_server, podium_bin, small):
    done = run(podium_bin, "rescore", RESCORED, "--wait", "--every", "0.2",
               "--url", podium_server.url, "--token", podium_server.admin_token)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert re.search(rf"succeeded: {SMALL} attempts", done.stdout)
    refused = run(podium_bin, "rescore", RESCORED, env=as_integration(podium_server))
    assert refused.returncode == 1 and "the server refused (403)" in refused.stderr


def test_challenges_history_and_help(podium_server, podium_bin, challenge):
    env = {"PODIUM_URL": podium_server.url}
    listed = run(podium_bin, "challenges", "list", "--format", "json", env=as_admin(podium_server))
    assert json.loads(listed.stdout) == podium_server.api("GET", "/api/challenges/")
    shown = run(podium_bin, "challenges", "show", SLUG, "--format", "json", env=env)
    assert json.loads(shown.stdout)["id"] == challenge["id"]
    missing = run(podium_bin, "challenges", "show", "no-such-slug", env=env)
    assert missing.returncode == 4 and "no-such-slug" in missing.stderr
    history = run(podium_bin, "history", SLUG, env=as_admin(podium_server))
    try:
        route = podium_server.api("GET", f"/api/challenges/{challenge['id']}/history/")
    except urllib.error.HTTPError as exc:
        assert exc.code == 404
        assert history.returncode == 4
        assert "this server has no scoring history route" in history.stderr
    else:
        assert history.returncode == 0 and json.loads(history.stdout) == route
    for command in ([], ["attempts", "record"], ["board", "show"], ["challenges", "list"],
                    ["challenges", "show"], ["rescore"], ["history"], ["metrics"]):  # fmt: skip
        helped = run(podium_bin, *command, "--help")
        assert helped.returncode == 0 and "usage: podium" in helped.stdout
    assert run(podium_bin, "board", "show", SLUG).returncode == 2  # no --url, no PODIUM_URL


class _Flaky(BaseHTTPRequestHandler):
    """A server that answers 503, then 429, then records: the client waits both out."""

    answers: list[tuple[int, dict[str, str]]] = []
    posts: list[str] = []

    def log_message(self, *args):
        pass

    def _send(self, status: int, body: object, headers: dict[str, str] | None = None):
        data = json.dumps(body).encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._send(200, {"id": 1, "slug": "flaky", "name": "Flaky"})

    def do_POST(self):
        size = int(self.headers["Content-Length"])
        items = json.loads(self.rfile.read(size))
        self.posts.append(self.headers["Idempotency-Key"])
        if self.answers:
            status, headers = self.answers.pop(0)
            return self._send(status, {"detail": "busy"}, headers)
        return self._send(201, [{"id": n} for n, _ in enumerate(items)])


def test_503_and_429_are_retried_after_retry_after_with_the_same_key(podium_bin, tmp_path):
    _Flaky.answers = [(503, {"Retry-After": "1"}), (429, {"Retry-After": "1"})]
    _Flaky.posts = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    path = tmp_path / "two.jsonl"
    path.write_text('{"player": "a", "succeeded": true}\n{"player": "b", "succeeded": false}\n')
    try:
        started = time.monotonic()
        done = run(podium_bin, "attempts", "record", "1", str(path),
                   "--url", f"http://127.0.0.1:{server.server_port}")  # fmt: skip
        elapsed = time.monotonic() - started
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stderr
    assert "503, Retry-After 1 s" in done.stderr and "429, Retry-After 1 s" in done.stderr
    assert elapsed >= 2
    assert len(_Flaky.posts) == 3 and len(set(_Flaky.posts)) == 1
    assert _Flaky.posts[0].endswith("/lines-1-2")


def test_board_show_lists_an_evaluation_boards_columns(podium_server, podium_bin):
    """An aggregate board through a real server and its worker: the CLI shows n, the
    interval, the rank range and the tier, as the API serves them once computed."""
    made = podium_server.api(
        "POST",
        "/api/challenges/",
        {"name": "CLI evals", "slug": "cli-evals", "scoring_strategy": "highest_rating",
         "board": "aggregate", "bootstrap_samples": 100},
    )  # fmt: skip
    attempts = [
        {"player": p, "succeeded": True, "rating": (i * k) % 11, "sample": {"id": f"q{i}"}}
        for k, p in enumerate(("m1", "m2", "m3"), start=3)
        for i in range(12)
    ]
    podium_server.api("POST", f"/api/challenges/{made['id']}/attempts/", attempts)
    path = f"/api/challenges/{made['id']}/leaderboard/"
    deadline = time.monotonic() + 60
    board = podium_server.api("GET", path)
    while board["pending"] or board["attempts"] < len(attempts):  # the worker computes
        assert time.monotonic() < deadline, board
        time.sleep(0.3)
        board = podium_server.api("GET", path)
    shown = run(podium_bin, "board", "show", "cli-evals", "--format", "csv",
                env={"PODIUM_URL": podium_server.url})  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    lines = list(csv.reader(io.StringIO(shown.stdout)))
    columns = ["rank", "player", "display_name", "score", "n", "ci_low", "ci_high"]
    assert lines[0] == [*columns, "rank_low", "rank_high", "tier"]
    assert [line[1] for line in lines[1:]] == [r["player"] for r in board["results"]]
    assert lines[1][9] == str(board["results"][0]["tier"]) == "1"
