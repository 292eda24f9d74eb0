"""Record a JSON Lines file of attempts, in batches that are safe to send again.

Each batch covers a fixed range of the file's lines and is posted with the
``Idempotency-Key`` ``podium-cli/<file digest>/lines-<first>-<last>``: the digest is the
SHA-256 of the file's bytes, so re-running the same file sends the same batches under
the same keys, and the server answers the batches it already recorded with their first
response and writes nothing. The file is read and checked (JSON, then the attempt's
fields) before anything is sent; a batch's body is its lines joined as they are, not
re-encoded.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from podium_client.types import attempt_problems

KEY_PREFIX = "podium-cli"


@dataclass(frozen=True)
class Batch:
    first: int  # line numbers, 1-based, inclusive
    last: int
    lines: list[int]  # the line number of each attempt in ``body``
    body: bytes  # a JSON list of the lines' objects
    key: str


@dataclass(frozen=True)
class BadLine:
    line: int
    problems: list[str]


@dataclass(frozen=True)
class Checked:
    digest: str
    lines: int  # lines in the file
    attempts: int  # non-blank lines
    bad: list[BadLine]


def file_check(path: Path, *, max_bad: int = 20) -> Checked:
    """Hash the file and check every line locally (what ``--dry-run`` reports)."""
    sha = hashlib.sha256()
    bad: list[BadLine] = []
    attempts = 0
    number = 0
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            sha.update(raw)
            if not raw.strip():
                continue
            attempts += 1
            if len(bad) >= max_bad:
                continue
            try:
                item = json.loads(raw)
            except ValueError as exc:
                bad.append(BadLine(number, [f"not JSON: {exc}"]))
                continue
            problems = attempt_problems(item)
            if problems:
                bad.append(BadLine(number, problems))
    return Checked(sha.hexdigest(), number, attempts, bad)


def file_batches(path: Path, *, digest: str, size: int, from_line: int = 1) -> Iterator[Batch]:
    """The file's batches: ``size`` lines each (blank lines count, and are skipped),
    counted from ``from_line``; a batch's key names the file's digest and its lines."""
    bodies: list[bytes] = []
    numbers: list[int] = []
    first = from_line
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if number < from_line:
                continue
            line = raw.strip()
            if line:
                bodies.append(line)
                numbers.append(number)
            if number - first + 1 == size:
                if numbers:
                    yield _batch(digest, first, number, numbers, bodies)
                bodies, numbers, first = [], [], number + 1
    if numbers:
        yield _batch(digest, first, numbers[-1], numbers, bodies)


def batch_key(digest: str, first: int, last: int) -> str:
    return f"{KEY_PREFIX}/{digest[:32]}/lines-{first}-{last}"


def _batch(digest: str, first: int, last: int, numbers: list[int], bodies: list[bytes]) -> Batch:
    body = b"[" + b",".join(bodies) + b"]"
    return Batch(first, last, numbers, body, batch_key(digest, first, last))


def offending_line(batch: Batch, error: object) -> int | None:
    """The line of the item a 400 names (the server keys a list's errors by index)."""
    if isinstance(error, dict):
        for key in error:
            if isinstance(key, str) and key.isdigit() and int(key) < len(batch.lines):
                return batch.lines[int(key)]
    if len(batch.lines) == 1:
        return batch.lines[0]
    return None
