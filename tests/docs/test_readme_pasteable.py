"""Issue 31: the README's commands can be pasted into a script: the superuser is made
without a terminal, the Python scorer's challenge is created from a file (no hand-escaped
JSON, no hard-coded id), and the lockout page names the README's python."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.template.loader import render_to_string
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
GUIDE = (ROOT / "docs" / "writing-scorers.md").read_text()  # the Python scorer moved here


@pytest.mark.django_db
def test_createsuperuser_line_needs_no_terminal(monkeypatch):
    line = re.search(
        r"^(DJANGO_SUPERUSER_PASSWORD=\S+) \.venv/bin/python manage\.py "
        r"createsuperuser \\\n\s+(.*)$",
        README,
        re.M,
    )
    assert line, "the README shows createsuperuser --noinput with its password"
    name, _, password = line.group(1).partition("=")
    monkeypatch.setenv(name, password.strip("'"))
    call_command("createsuperuser", *shlex.split(line.group(2)))
    user = get_user_model().objects.get(username="admin")
    assert user.is_superuser and user.check_password(password.strip("'"))


@pytest.mark.django_db
def test_python_scorer_example_pastes_as_written(tmp_path, admin):
    code = re.search(r"## Writing a Python scorer.*?```python\n(.*?)```", GUIDE, re.S).group(1)
    builder = re.search(r"<<'PY' > challenge\.json\n(.*?)\nPY\n", GUIDE, re.S).group(1)
    assert "--data @challenge.json" in GUIDE and "/api/challenges/5/" not in GUIDE
    (tmp_path / "completeness.py").write_text(code)
    body = subprocess.run(
        [sys.executable, "-"],
        input=builder,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=admin).key}")
    made = client.post("/api/challenges/", data=body, content_type="application/json")
    assert made.status_code == 201, made.content
    assert json.loads(body)["scoring_code"] == code
    metrics = client.get(f"/api/challenges/{made.json()['id']}/metrics/")
    assert metrics.status_code == 200


def test_lockout_page_names_the_readmes_python():
    html = render_to_string("registration/locked_out.html", {"failure_limit": 5})
    assert "<code>.venv/bin/python manage.py axes_reset_username USERNAME</code>" in html
