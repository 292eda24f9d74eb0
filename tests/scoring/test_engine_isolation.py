"""The scoring engine is plain Python: importing it loads no Django."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]
NO_DJANGO = (
    "assert not any(m == 'django' or m.startswith('django.') for m in sys.modules), "
    "sorted(m for m in sys.modules if m.split('.')[0] == 'django')[:5]; "
    "print('engine-ok')"
)


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"},
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "modules",
    [
        "scoring.engine.runner, scoring.scorers.weighted",
        # every module of the folder, found on disk: a new module is checked at once
        ", ".join(
            ["scoring.engine"]
            + [
                f"scoring.engine.{path.stem}"
                for path in sorted((PROJECT / "scoring" / "engine").glob("*.py"))
                if path.stem != "__init__"
            ]
        ),
    ],
    ids=["runner-and-weighted", "every-engine-module"],
)
def test_engine_imports_no_django(modules):
    result = run(f"import {modules}, sys; {NO_DJANGO}")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "engine-ok"


@pytest.mark.slow
def test_the_check_would_catch_django():
    # The same check fails once Django is imported: the test above can fail.
    result = run(f"import scoring.engine.runner, django.conf, sys; {NO_DJANGO}")
    assert result.returncode != 0
    assert "AssertionError" in result.stderr
    assert "django" in result.stderr
