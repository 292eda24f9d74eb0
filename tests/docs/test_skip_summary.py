"""`make test` without Chromium says in its last lines what was skipped, why, and how to
enable it (tests/conftest.py's terminal summary)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_skipped_browser_tests_are_named_with_reason_and_remedy():
    # Its own SQLite test database: the run around it may hold the PostgreSQL one.
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    env["PODIUM_CHROMIUM"] = "/nonexistent/chromium"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "tests/browser/test_admin_progress.py",
            "-p",
            "no:randomly",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    last = done.stdout.strip().splitlines()[-5:]
    text = "\n".join(last)
    assert "skipped" in last[-1]  # pytest's own count stays the last line
    assert "tests/browser/test_admin_progress.py" in text
    assert "browser tests need Chromium at /nonexistent/chromium" in text
    assert "apt-get install chromium" in text
