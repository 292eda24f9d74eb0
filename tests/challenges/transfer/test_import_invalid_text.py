"""import_challenge refuses text that cannot be stored everywhere (issue 12, finding 5):
a lone surrogate or NUL escape anywhere in a line names the line and the field, and
nothing is imported."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from challenges.models import Challenge
from tests.factories import WEIGHTED_SEED, attempt_input, counts, make_challenge, record

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("bad", ["\ud800", "\u0000"])
@pytest.mark.parametrize("field", ["sample", "messages", "output", "player_name"])
def test_bad_text_in_an_attempt_line_imports_nothing(tmp_path, bad, field):
    challenge = make_challenge(
        slug="src", **{k: v for k, v in WEIGHTED_SEED.items() if k != "name"}
    )
    record(challenge, attempt_input("a", rating=3, sample={"q": "ok"}, messages=[]))
    path = tmp_path / "src.jsonl"
    call_command("export_challenge", "src", "-o", str(path), stderr=open("/dev/null", "w"))
    lines = path.read_text(encoding="utf-8").splitlines()
    items = [json.loads(line) for line in lines]
    index = next(i for i, item in enumerate(items) if item["type"] == "attempt")
    value = {"sample": {"q": [bad]}, "messages": [{bad: 1}], "output": bad, "player_name": bad}
    items[index][field] = value[field]
    bad_path = tmp_path / "bad.jsonl"
    bad_path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    before = counts()
    with pytest.raises(CommandError) as info:
        call_command("import_challenge", str(bad_path), "--slug", "fresh")
    assert f"line {index + 1}: {field}" in str(info.value)
    assert counts() == before
    assert not Challenge.objects.filter(slug="fresh").exists()
