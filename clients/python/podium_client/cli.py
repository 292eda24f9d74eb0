"""``podium``: the command line of a Podium server (``podium --help``).

Exit codes (README.md): 0 done; 1 refused (by the server, or by the local checks) or a
rescore that failed or was cancelled; 2 a usage error; 3 the server could not be reached
(after the retries); 4 no such challenge, job or route; 130 interrupted.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from podium_client import upload
from podium_client.client import NotFound, PodiumClient, PodiumError, Unreachable, error_message

OK, REFUSED, USAGE, UNREACHABLE, NOT_FOUND, INTERRUPTED = 0, 1, 2, 3, 4, 130
BOARD_COLUMNS = ["rank", "player", "display_name", "score", "attempt_id", "created_at"]
AGGREGATE_COLUMNS = ["rank", "player", "display_name", "score", "n", "ci_low", "ci_high"]
AGGREGATE_COLUMNS += ["rank_low", "rank_high", "tier"]  # an evaluation board's rows


class Failed(Exception):
    def __init__(self, message: str, code: int = REFUSED):
        super().__init__(message)
        self.code = code


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help(sys.stderr)
        return USAGE
    try:
        return int(args.run(args) or OK)
    except Failed as exc:
        print(f"podium: {exc}", file=sys.stderr)
        return exc.code
    except NotFound as exc:
        print(f"podium: not found: {error_message(exc.body)}", file=sys.stderr)
        return NOT_FOUND
    except PodiumError as exc:
        print(
            f"podium: the server refused ({exc.status}): {error_message(exc.body)}", file=sys.stderr
        )
        return REFUSED
    except Unreachable as exc:
        print(f"podium: the server could not be reached: {exc}", file=sys.stderr)
        return UNREACHABLE
    except KeyboardInterrupt:
        print(
            "podium: interrupted (an upload run again continues where it stopped)", file=sys.stderr
        )
        return INTERRUPTED


# -- the commands ----------------------------------------------------------------
def cmd_challenges_list(args: argparse.Namespace) -> int:
    with _client(args) as client:
        challenges = client.challenges()
    if args.format == "json":
        _print_json(challenges)
        return OK
    rows = [{k: c.get(k, "") for k in ("id", "slug", "name", "is_active")} for c in challenges]
    _print_rows(rows, ["id", "slug", "name", "is_active"], args.format)
    return OK


def cmd_challenges_show(args: argparse.Namespace) -> int:
    with _client(args) as client:
        challenge = client.challenge_resolve(args.challenge)
    if args.format == "json":
        _print_json(challenge)
    else:
        width = max(len(k) for k in challenge)
        for key, value in challenge.items():
            shown = value if isinstance(value, str) else json.dumps(value)
            print(f"{key.ljust(width)}  {shown}")
    return OK


def cmd_attempts_record(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.is_file():
        raise Failed(f"{path}: no such file", USAGE)
    if args.batch < 1 or args.batch > 10_000:
        raise Failed("--batch takes 1 to 10000", USAGE)
    if args.from_line < 1:
        raise Failed("--from-line takes a line number, 1 or more", USAGE)
    checked = upload.file_check(path)
    for bad in checked.bad:
        print(f"{path}:{bad.line}: {'; '.join(bad.problems)}", file=sys.stderr)
    if checked.bad:
        raise Failed(f"{path}: line {checked.bad[0].line} is not a valid attempt; nothing sent")
    if args.dry_run:
        print(f"{path}: {checked.attempts} attempts in {checked.lines} lines, all valid")
        return OK
    with _client(args) as client:
        challenge = client.challenge_resolve(args.challenge)
        return _record(client, challenge["id"], path, checked, args)


def _record(
    client: PodiumClient, challenge_id: int, path: Path, checked: upload.Checked, args: Any
) -> int:
    total = checked.attempts
    progress = _Progress(total, sys.stderr)
    sent = replayed = 0
    started = time.monotonic()
    for batch in upload.file_batches(
        path, digest=checked.digest, size=args.batch, from_line=args.from_line
    ):
        try:
            count, again = client.attempts_record_raw(
                challenge_id, batch.body, idempotency_key=batch.key
            )
        except PodiumError as exc:
            progress.close()
            where = upload.offending_line(batch, exc.body) if exc.status == 400 else None
            named = f"line {where}" if where else f"lines {batch.first}-{batch.last}"
            detail = (
                exc.body.get(str(batch.lines.index(where)))
                if where and isinstance(exc.body, dict)
                else None
            )
            message = error_message(detail if detail is not None else exc.body)
            print(
                f"{path}:{where or batch.first}: the server refused {named} "
                f"({exc.status}): {message}",
                file=sys.stderr,
            )
            raise Failed(
                f"lines {batch.first}-{batch.last} were not recorded ({sent} attempts before "
                f"them were); after fixing the file, continue with --from-line {batch.first}",
                NOT_FOUND if exc.status == 404 else REFUSED,
            ) from None
        except Unreachable:
            progress.close()
            print(
                f"podium: stopped at lines {batch.first}-{batch.last}; run the same command "
                "again to continue (batches already recorded are not written twice)",
                file=sys.stderr,
            )
            raise
        sent += count
        replayed += count if again else 0
        progress.update(sent, batch, again)
    progress.close()
    elapsed = time.monotonic() - started
    rate = sent / elapsed if elapsed > 0 else 0.0
    print(
        f"Recorded {sent} attempts from {path} ({replayed} already recorded before) "
        f"in {elapsed:.1f} s, {rate:,.0f} attempts/s"
    )
    return OK


def cmd_board_show(args: argparse.Namespace) -> int:
    with _client(args) as client:
        challenge = client.challenge_resolve(args.challenge)
        if args.player is not None:
            board = client.leaderboard(challenge["id"], player=args.player)
            rows = board["results"]
        else:
            board = client.leaderboard(challenge["id"], limit=1)
            rows = list(client.leaderboard_rows(challenge["id"], limit=args.limit))
    if args.format == "json":
        _print_json({"version": board["version"], "count": board["count"], "results": rows})
    else:
        aggregate = board.get("board") == "aggregate"
        _print_rows(rows, AGGREGATE_COLUMNS if aggregate else BOARD_COLUMNS, args.format)
    return OK


def cmd_metrics(args: argparse.Namespace) -> int:
    with _client(args) as client:
        metrics = client.metrics(client.challenge_resolve(args.challenge)["id"])
    _print_json(metrics)
    return OK


def cmd_rescore(args: argparse.Namespace) -> int:
    with _client(args) as client:
        challenge = client.challenge_resolve(args.challenge)
        job_id = client.rescore(challenge["id"])
        print(f"Rescore job {job_id} queued for {challenge.get('slug') or challenge['id']}")
        if not args.wait:
            return OK
        bar = _Progress(None, sys.stderr, unit="attempts rescored")
        job = client.rescore_wait(job_id, every=args.every, on_progress=bar.job)
        bar.close()
    if job["status"] == "succeeded":
        done, failed = job["processed"], job["failed"]
        print(f"Rescore job {job_id} succeeded: {done} attempts, {failed} failed scorings")
        return OK
    reason = job.get("error") or "no reason given"
    raise Failed(f"rescore job {job_id} {job['status']}: {reason}")


def cmd_history(args: argparse.Namespace) -> int:
    with _client(args) as client:
        challenge = client.challenge_resolve(args.challenge)
        try:
            history = client.history(challenge["id"])
        except NotFound:
            raise Failed("this server has no scoring history route", NOT_FOUND) from None
    _print_json(history)
    return OK


# -- output ----------------------------------------------------------------------
def _print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list, bool)):
        return json.dumps(value)
    return str(value)


def _print_rows(rows: list[Any], columns: list[str], fmt: str) -> None:
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_cell(row.get(c)) for c in columns])
        sys.stdout.write(buffer.getvalue())
        return
    cells = [[_cell(row.get(c)) for c in columns] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
    for r in cells:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())


class _Progress:
    """A bar on a terminal (stderr), plain lines when piped."""

    def __init__(self, total: int | None, stream: TextIO, unit: str = "attempts"):
        self.total = total
        self.stream = stream
        self.unit = unit
        self.tty = stream.isatty()
        self.started = time.monotonic()
        self.drawn = False
        self.last_status = ""

    def _rate(self, done: int) -> float:
        elapsed = time.monotonic() - self.started
        return done / elapsed if elapsed > 0 else 0.0

    def update(self, done: int, batch: upload.Batch, replayed: bool) -> None:
        rate = self._rate(done)
        if self.tty:
            self._draw(done, self.total or 0, f"{rate:,.0f} attempts/s")
        else:
            what = "already recorded" if replayed else "recorded"
            print(
                f"lines {batch.first}-{batch.last}: {len(batch.lines)} attempts {what} "
                f"({done}/{self.total}, {rate:,.0f} attempts/s)",
                file=self.stream,
                flush=True,
            )

    def job(self, job: Any) -> None:
        status = f"{job['status']}"
        if self.tty:
            self._draw(job["processed"], job["total"], status)
        elif status != self.last_status or job["status"] == "running":
            print(
                f"job {job['id']}: {status} {job['processed']}/{job['total']}",
                file=self.stream,
                flush=True,
            )
        self.last_status = status

    def _draw(self, done: int, total: int, note: str) -> None:
        width = 30
        filled = int(width * done / total) if total else 0
        share = f"{100 * done / total:5.1f}%" if total else "  ...%"
        bar = "#" * filled + "-" * (width - filled)
        self.stream.write(f"\r[{bar}] {share} {done}/{total} {self.unit}  {note}   ")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.tty and self.drawn:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = False


# -- arguments -------------------------------------------------------------------
def _client(args: argparse.Namespace) -> PodiumClient:
    url = args.url or os.environ.get("PODIUM_URL")
    token = args.token or os.environ.get("PODIUM_TOKEN")
    if not url:
        raise Failed("no server: pass --url or set PODIUM_URL", USAGE)

    def notify(message: str) -> None:
        print(f"podium: {message}", file=sys.stderr, flush=True)

    return PodiumClient(url, token, max_retries=args.retries, on_retry=notify)


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", help="the server, e.g. https://podium.example (env PODIUM_URL)")
    common.add_argument("--token", help="an API token (env PODIUM_TOKEN)")
    common.add_argument(
        "--retries", type=int, default=8, metavar="N",
        help="retries of one request after a 503/429 or a connection error (default 8)",
    )  # fmt: skip
    parser = argparse.ArgumentParser(
        prog="podium",
        description="Podium's command line. CHALLENGE is a challenge's id or its slug.",
        epilog="Exit codes: 0 done, 1 refused or failed, 2 usage, 3 unreachable, "
        "4 not found, 130 interrupted.",
    )
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    challenges = commands.add_parser("challenges", help="list or show challenges")
    sub = challenges.add_subparsers(title="commands", metavar="COMMAND")
    p = sub.add_parser("list", parents=[common], help="the challenges you may see")
    p.add_argument("--format", choices=["table", "json", "csv"], default="table")
    p.set_defaults(run=cmd_challenges_list)
    p = sub.add_parser("show", parents=[common], help="one challenge")
    p.add_argument("challenge", metavar="CHALLENGE")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(run=cmd_challenges_show)

    attempts = commands.add_parser("attempts", help="record attempts")
    sub = attempts.add_subparsers(title="commands", metavar="COMMAND")
    p = sub.add_parser(
        "record", parents=[common],
        help="record a JSON Lines file, one attempt per line, safely re-runnable",
        description="Send FILE's attempts in batches, each with an Idempotency-Key made of "
        "the file's digest and the batch's lines: run it again after an interruption and "
        "nothing is written twice.",
    )  # fmt: skip
    p.add_argument("challenge", metavar="CHALLENGE")
    p.add_argument("file", metavar="FILE.jsonl")
    p.add_argument("--batch", type=int, default=500, help="lines per request (default 500)")
    p.add_argument("--dry-run", action="store_true", help="check the file locally, send nothing")
    p.add_argument(
        "--from-line", type=int, default=1, metavar="N",
        help="start at line N (after a refused batch was fixed)",
    )  # fmt: skip
    p.set_defaults(run=cmd_attempts_record)

    board = commands.add_parser("board", help="read a leaderboard")
    sub = board.add_subparsers(title="commands", metavar="COMMAND")
    p = sub.add_parser("show", parents=[common], help="a challenge's leaderboard in rank order")
    p.add_argument("challenge", metavar="CHALLENGE")
    p.add_argument("--limit", type=_positive, default=None, help="the first N rows (default all)")
    p.add_argument("--player", metavar="ID", help="only this player's row (an external id)")
    p.add_argument("--format", choices=["table", "json", "csv"], default="table")
    p.set_defaults(run=cmd_board_show)

    p = commands.add_parser("metrics", parents=[common], help="a challenge's aggregate metrics")
    p.add_argument("challenge", metavar="CHALLENGE")
    p.set_defaults(run=cmd_metrics)

    p = commands.add_parser(
        "rescore", parents=[common], help="rescore a challenge (scoring staff, admins)"
    )
    p.add_argument("challenge", metavar="CHALLENGE")
    p.add_argument("--wait", action="store_true", help="follow the job until it ends")
    p.add_argument("--every", type=float, default=0.5, help="seconds between polls")
    p.set_defaults(run=cmd_rescore)

    p = commands.add_parser("history", parents=[common], help="a challenge's scoring history")
    p.add_argument("challenge", metavar="CHALLENGE")
    p.set_defaults(run=cmd_history)
    return parser


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("a positive number")
    return value


if __name__ == "__main__":
    sys.exit(main())
