"""Production mode: `check --deploy` is clean, and missing or bad settings fail loudly.

Each case runs Django in a fresh interpreter with a production environment, exactly as
an operator would start it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.settings import env_rate, env_secret

ROOT = Path(__file__).resolve().parents[2]
SECRET = "s" * 20 + "-production-secret-key-for-tests-0123456789"


def production_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "PODIUM_", "SECRET_KEY", "ALLOWED_HOSTS", "DEBUG"))
        and k not in {"DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "STATIC_ROOT"}
    }
    env.update(
        PODIUM_ENV="production",
        SECRET_KEY=SECRET,
        ALLOWED_HOSTS="podium.example.com",
        PODIUM_VAR_DIR=str(tmp_path / "var"),
        STATIC_ROOT=str(tmp_path / "static"),
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    env.update(extra)
    return env


def manage(tmp_path: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=production_env(tmp_path, **extra),
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_check_deploy_is_clean_in_production(tmp_path):
    result = manage(tmp_path, "check", "--deploy", "--fail-level", "DEBUG")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout
    assert "WARNING" not in result.stderr + result.stdout


@pytest.mark.slow
def test_production_settings_values(tmp_path):
    code = (
        "from django.conf import settings as s; "
        "print(s.DEBUG, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_SSL_REDIRECT, "
        "s.SECURE_HSTS_SECONDS, s.X_FRAME_OPTIONS, getattr(s, 'SECURE_PROXY_SSL_HEADER', None))"
    )
    out = manage(tmp_path, "shell", "-v", "0", "-c", code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True", "True", "True", "31536000", "DENY", "None"]
    behind_proxy = manage(tmp_path, "shell", "-c", code, SECURE_PROXY_SSL_HEADER="true")
    assert "('HTTP_X_FORWARDED_PROTO', 'https')" in behind_proxy.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"SECRET_KEY": ""}, "SECRET_KEY (or SECRET_KEY_FILE) must be set"),
        ({"SECRET_KEY": "short"}, "at least 50 characters"),
        ({"ALLOWED_HOSTS": ""}, "ALLOWED_HOSTS must name"),
        ({"PODIUM_ENV": "staging"}, "PODIUM_ENV='staging' must be one of"),
        ({"PODIUM_ATTEMPTS_RATE": "lots"}, "PODIUM_ATTEMPTS_RATE='lots' is not a rate"),
        ({"CACHE_URL": "memcached://x"}, "CACHE_URL='memcached://x'"),
        ({"SECRET_KEY_FILE": "/nonexistent/secret"}, "Set SECRET_KEY or SECRET_KEY_FILE"),
    ],
)
def test_production_refuses_to_start_without_what_it_needs(tmp_path, extra, message):
    result = manage(tmp_path, "check", **extra)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert message in result.stderr


def test_secret_from_a_file(tmp_path, monkeypatch):
    path = tmp_path / "secret"
    path.write_text(SECRET + "\n")
    monkeypatch.delenv("X_SECRET", raising=False)
    monkeypatch.setenv("X_SECRET_FILE", str(path))
    assert env_secret("X_SECRET") == SECRET
    path.write_text("\n")
    with pytest.raises(Exception, match="is empty"):
        env_secret("X_SECRET")
    monkeypatch.setenv("X_SECRET_FILE", str(tmp_path / "missing"))
    with pytest.raises(Exception, match="cannot be read"):
        env_secret("X_SECRET")


def test_env_rate(monkeypatch):
    monkeypatch.setenv("X_RATE", "20/s")
    assert env_rate("X_RATE", "1/min") == "20/s"
    for bad in ("0/min", "20/fortnight", "x/min", "20"):
        monkeypatch.setenv("X_RATE", bad)
        with pytest.raises(Exception, match="X_RATE"):
            env_rate("X_RATE", "1/min")


def test_the_procfile_s_web_processes_are_threaded():
    """A sync worker serves one request at a time: a page read would wait behind the
    request recording attempts that its process is serving (issue 16, bench/load.py)."""
    procfile = Path(__file__).resolve().parents[2] / "Procfile"
    web = next(line for line in procfile.read_text().splitlines() if line.startswith("web:"))
    words = web.split()
    assert words[words.index("--worker-class") + 1] == "gthread"
    assert words[words.index("--threads") + 1].startswith("${WEB_THREADS:-")
