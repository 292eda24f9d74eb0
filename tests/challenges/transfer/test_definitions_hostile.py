"""Definition files that used to end in a traceback or write where they should not
(issue 28, findings 6 and 12): NUL, lone surrogates and YAML dates name the file, line
and field; `!include` is bounded in total; `challenge_dump` keeps U+0085 and friends,
and writes nothing through a planted symlink."""

from __future__ import annotations

import pytest
import yaml

from challenges.models import Challenge
from challenges.transfer.definitions import DefinitionInvalid, challenge_apply, challenge_dump
from tests.factories import WEIGHTED_SEED, make_challenge

pytestmark = pytest.mark.django_db

BASE = "name: Hostile\nslug: hostile\n"


def write(tmp_path, text):
    path = tmp_path / "challenge.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "field", "line"),
    [
        (BASE + 'description: "a\\0b"\n', "description", 3),
        (BASE + 'description: "a\\ud800b"\n', "description", 3),
        (
            BASE + 'definition:\n  scoring_strategy: custom\n  scoring_config:\n    x: "\\0"\n',
            "definition.scoring_config",
            6,
        ),
    ],
    ids=["nul", "surrogate", "nul-in-config"],
)
def test_invalid_text_names_the_file_line_and_field(tmp_path, text, field, line):
    with pytest.raises(DefinitionInvalid) as caught:
        challenge_apply(path=write(tmp_path, text))
    message = str(caught.value)
    assert message.startswith(f"challenge.yaml, line {line}, {field}"), message
    assert "NUL" in message or "surrogate" in message
    assert not Challenge.objects.exists()


def test_a_yaml_date_is_text(tmp_path):
    """A date-looking value stays the text it is (JSON has no dates)."""
    text = BASE + "description: 2026-11-27\n"
    result = challenge_apply(path=write(tmp_path, text))
    assert result.challenge.description == "2026-11-27"


def test_includes_are_bounded_in_total(tmp_path, settings):
    settings.PODIUM_MAX_BODY_BYTES = 50_000
    (tmp_path / "big.txt").write_text("x" * 20_000)
    items = "".join(f'    k{i}: !include "big.txt"\n' for i in range(5))
    text = BASE + "definition:\n  scoring_strategy: custom\n  scoring_config:\n" + items
    text += "  scoring_plugin_id: builtin.weighted_scorer\n"
    with pytest.raises(DefinitionInvalid) as caught:
        challenge_apply(path=write(tmp_path, text))
    assert "challenge.yaml, line" in str(caught.value)
    assert "50,000" in str(caught.value)
    assert not Challenge.objects.exists()


@pytest.mark.parametrize("char", ["\x85", "\u2028", "\u2029", "\r", "\x0b", "\t"])
def test_dump_keeps_every_character(tmp_path, char):
    challenge = make_challenge(**WEIGHTED_SEED)
    # Stored as is (a CR from an older version: input is normalised to LF now).
    Challenge.objects.filter(pk=challenge.pk).update(description=f"one{char}two\nthree")
    challenge.refresh_from_db()
    challenge_dump(challenge=challenge, directory=tmp_path)
    loaded = yaml.safe_load((tmp_path / f"{challenge.slug}.yaml").read_text(encoding="utf-8"))
    assert loaded["description"] == f"one{char}two\nthree"


def test_dump_writes_nothing_through_a_planted_symlink(tmp_path):
    challenge = make_challenge(**WEIGHTED_SEED)
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    folder = tmp_path / "dump"
    folder.mkdir()
    (folder / f"{challenge.slug}.yaml.partial").symlink_to(outside)
    written = challenge_dump(challenge=challenge, directory=folder)
    assert outside.read_text() == "keep me"
    assert written[0].read_text(encoding="utf-8").startswith("name:")
    assert not [p for p in folder.iterdir() if p.name.endswith(".partial") and not p.is_symlink()]
