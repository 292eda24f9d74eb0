"""Metrics agree on SQLite and PostgreSQL for None, booleans, strings and numbers
(issue 20, finding 10: on SQLite a None score counted as 0.0).

The same data set is scored on the database this run uses, and — in a child pytest run
each — on SQLite and on PostgreSQL; every metric type is compared with the others and
with a plain-Python reference. The PostgreSQL run needs a server: DATABASE_URL (when it
is postgres://…) or PODIUM_TEST_POSTGRES_URL; without one it is skipped, saying so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from challenges.leaderboards import precision
from challenges.leaderboards.metric_counts import challenge_metrics
from challenges.models import Attempt, AttemptScore, Challenge, Player, ScoringVersion
from scoring.engine import metrics as M

ROOT = Path(__file__).resolve().parents[3]
DUMP = "PODIUM_METRICS_DUMP"
MISSING = object()
# (v, p, t, lp, lt) per attempt: v for the single-column metrics, (p, t) a binary pair,
# (lp, lt) a multiclass pair; MISSING: the attempt has no such score.
ROWS = [
    (1.0, 1.0, 1.0, "cat", "cat"),
    (None, True, 1.0, "dog", "cat"),
    (3.0, 0.0, False, "cat", "dog"),
    (True, False, True, 1.0, "1"),
    ("cat", None, 0.0, None, "dog"),
    ("1.5", 1.0, "1", "dog", "dog"),
    (MISSING, 0.0, 0.0, MISSING, "cat"),
    (0.0, 1.0, 0.0, "cat", None),
    (-2.5, 1, 1, "bird", "bird"),
]
METRICS = [
    *({"type": t, "field": "v", "name": t} for t in M.SINGLE),
    *({"type": t, "prediction": "p", "label": "t", "name": t} for t in M.BINARY),
    {"type": "multiclass_classification", "prediction": "lp", "label": "lt", "name": "mc"},
]


def _challenge() -> Challenge:
    challenge = Challenge.objects.create(
        name="Metrics", slug="metrics", scoring_strategy="python", metrics=METRICS
    )
    version = ScoringVersion.objects.create(challenge=challenge, number=1, **challenge.setup_dict())
    Challenge.objects.filter(pk=challenge.pk).update(active_version=version)
    at = datetime(2026, 1, 1, tzinfo=UTC)
    for i, row in enumerate(ROWS):
        player = Player.objects.create(external_id=f"p{i}", display_name=f"p{i}")
        attempt = Attempt.objects.create(challenge=challenge, player=player, created_at=at)
        scores = {
            k: v for k, v in zip(("v", "p", "t", "lp", "lt"), row, strict=True) if v is not MISSING
        }
        AttemptScore.objects.create(
            version=version,
            attempt=attempt,
            player=player,
            created_at=at,
            score=1.0,
            sort_key=-1.0,
            details={"scores": scores, "metadata": {}},
        )
    return Challenge.objects.get(pk=challenge.pk)


def _plain(value):
    """A stored score as the metrics read it (None: not counted)."""
    if value is MISSING or value is None:
        return None
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    return float(value) if isinstance(value, int | float) else value


def _reference() -> list[dict]:
    columns = dict(zip(("v", "p", "t", "lp", "lt"), zip(*ROWS, strict=True), strict=True))
    out = []
    for metric in M.validate_metrics(METRICS):
        counts: dict = {}
        if M.is_paired(metric):
            pairs = zip(columns[metric["prediction"]], columns[metric["label"]], strict=True)
            keys = [(_plain(a), _plain(b)) for a, b in pairs]
            keys = [k for k in keys if None not in k]
        else:
            keys = [k for k in map(_plain, columns[metric["field"]]) if k is not None]
        for key in keys:
            counts[key] = counts.get(key, 0) + 1
        out.append(
            {"name": metric["name"], "type": metric["type"], "value": M.compute(metric, counts)}
        )
    # served as every metric is: rounded by the precision policy (leaderboards/precision.py)
    return json.loads(json.dumps(precision.served_json(out)))


def _computed() -> list[dict]:
    return json.loads(json.dumps(challenge_metrics(challenge=_challenge())))


def test_dump_for_comparison(db):
    """Run by the test below in a child process, once per database."""
    path = os.environ.get(DUMP)
    if not path:
        pytest.skip(f"helper of test_metrics_agree_on_sqlite_and_postgresql (needs {DUMP})")
    Path(path).write_text(json.dumps(_computed()))


def _run_on(database_url: str, tmp_path: Path, name: str) -> list[dict]:
    out = tmp_path / f"{name}.json"
    env = {**os.environ, "DATABASE_URL": database_url, DUMP: str(out)}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
         f"{Path(__file__).relative_to(ROOT)}::test_dump_for_comparison"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0 and out.exists(), result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads(out.read_text())


def _postgres_url() -> str | None:
    """The server to compare on, under a database name of this test's own: the child's
    test database (test_<name>_metrics) never meets the one this run may be using."""
    for candidate in (os.environ.get("PODIUM_TEST_POSTGRES_URL"), os.environ.get("DATABASE_URL")):
        if candidate and candidate.startswith(("postgres://", "postgresql://")):
            parts = urlsplit(candidate)
            name = parts.path.strip("/").split("/")[0] or "podium"
            return urlunsplit(parts._replace(path=f"/{name}_metrics"))
    return None


def _assert_same(found: list[dict], expected: list[dict]) -> None:
    assert [m["name"] for m in found] == [m["name"] for m in expected]
    for got, want in zip(found, expected, strict=True):
        assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True), got["name"]


def test_metrics_on_this_database_match_the_reference(db):
    _assert_same(_computed(), _reference())


@pytest.mark.slow
def test_metrics_agree_on_sqlite_and_postgresql(tmp_path):
    postgres = _postgres_url()
    if postgres is None:
        pytest.skip(
            "PostgreSQL part skipped: set DATABASE_URL or PODIUM_TEST_POSTGRES_URL to "
            "postgres://… to compare the metrics on both databases"
        )
    on_sqlite = _run_on(f"sqlite:///{tmp_path / 'metrics.sqlite3'}", tmp_path, "sqlite")
    on_postgres = _run_on(postgres, tmp_path, "postgres")
    reference = _reference()
    _assert_same(on_sqlite, reference)
    _assert_same(on_postgres, reference)
    _assert_same(on_sqlite, on_postgres)
    # The figures of finding 10: 1, None, 3 … give the mean of the numbers only.
    mean = next(m for m in on_sqlite if m["name"] == "mean")["value"]
    assert mean == pytest.approx((1.0 + 3.0 + 1.0 + 0.0 - 2.5) / 5)
