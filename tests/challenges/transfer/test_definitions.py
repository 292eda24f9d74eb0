"""Challenge definitions as files: challenge_apply / challenge_dump (issue 14)."""

from __future__ import annotations

import textwrap
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from challenges.models import Challenge, RescoreJob, ScoringVersion
from challenges.transfer.definitions import DefinitionInvalid, challenge_apply, challenge_dump

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

# The scorer guide's example, verbatim.
COMPLETENESS = """\
from __future__ import annotations

from typing import Any


def compute_scores(sample: dict[str, Any]) -> dict[str, Any]:
    field_name = "<< config.field >>"

    field_value = sample.get(field_name, None)
    has_field = field_name in sample and not isinstance(field_value, float)

    empty_field = isinstance(field_value, float) or (
        isinstance(field_value, str) and len(field_value) == 0
    )

    is_complete = has_field and not empty_field
    return {
        "is_complete": is_complete,
        "has_field": has_field,
        "empty_field": empty_field,
    }
"""
YAML = """\
name: Field completeness
slug: field-completeness
description: |
  Is the **answer** field there and filled in?
definition:
  rank_by: completeness.is_complete
  scorers:
    - type: "python"
      key: "completeness"
      display_name: "Completeness"
      purpose: "score"
      compute_scores_snippet: !include "completeness_scorer.py"
      config:
        field: answer
      metrics:
        - type: "mean"
          field: "is_complete"
          name: "Field Completeness"
"""


@pytest.fixture(autouse=True)
def _needs_the_sandbox():
    from tests.scoring.test_snippet import sandbox_or_skip

    sandbox_or_skip()


def write(folder: Path, yaml_text: str = YAML, code: str = COMPLETENESS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "completeness_scorer.py").write_text(code)
    path = folder / "challenge.yaml"
    path.write_text(yaml_text)
    return path


def test_apply_creates_then_identical_file_changes_nothing(tmp_path):
    path = write(tmp_path)
    out = StringIO()
    call_command("challenge_apply", str(path), stdout=out)
    assert "Created challenge 'field-completeness'" in out.getvalue()
    challenge = Challenge.objects.get(slug="field-completeness")
    assert challenge.scoring_strategy == "python"
    assert challenge.rank_by == "completeness.is_complete"
    (scorer,) = challenge.scorers
    assert scorer["compute_scores_snippet"] == COMPLETENESS
    assert scorer["config"] == {"field": "answer"}
    assert challenge.scoring_code == ""  # the list holds everything
    updated = challenge.updated_at

    out = StringIO()
    call_command("challenge_apply", str(path), stdout=out)
    assert "unchanged" in out.getvalue()
    challenge.refresh_from_db()
    assert challenge.updated_at == updated
    assert ScoringVersion.objects.filter(challenge=challenge).count() == 1
    assert not RescoreJob.objects.exists()


def test_scoring_change_makes_a_version_and_a_rescore(tmp_path):
    path = write(tmp_path)
    challenge_apply(path=path)
    write(tmp_path, YAML.replace("field: answer", "field: reply"))
    result = challenge_apply(path=path)
    assert result.new_version is not None and result.new_version.number == 2
    assert result.job is not None
    challenge = Challenge.objects.get(slug="field-completeness")
    assert challenge.scorers[0]["config"] == {"field": "reply"}
    # A description-only change: no version.
    write(tmp_path, YAML.replace("field: answer", "field: reply").replace("**answer**", "it"))
    result = challenge_apply(path=path)
    assert result.changed and result.new_version is None


def test_dump_then_apply_round_trips(tmp_path):
    challenge_apply(path=write(tmp_path / "in"))
    challenge = Challenge.objects.get(slug="field-completeness")
    out = StringIO()
    call_command("challenge_dump", challenge.slug, str(tmp_path / "out"), stdout=out)
    dumped = tmp_path / "out" / "field-completeness.yaml"
    assert dumped.exists()
    assert (tmp_path / "out" / "completeness.py").read_text() == COMPLETENESS
    assert '!include "completeness.py"' in dumped.read_text()
    result = challenge_apply(path=dumped)
    assert not result.changed
    assert ScoringVersion.objects.filter(challenge=challenge).count() == 1


def test_single_scorer_challenge_round_trips(tmp_path, admin):
    from challenges.setup import services
    from tests.challenges.api.test_api_metrics import SETUP

    challenge = services.challenge_create(data={"name": "Legacy", "slug": "legacy", **SETUP})
    files = challenge_dump(challenge=challenge, directory=tmp_path)
    assert [p.name for p in files] == ["legacy.yaml", "scorer.py"]
    text = files[0].read_text()
    assert "rank_by: is_complete" in text
    result = challenge_apply(path=files[0])
    assert not result.changed, text
    # The guide's own keyless example is the single-scorer form.
    yaml_text = textwrap.dedent("""\
        name: Keyless
        slug: keyless
        definition:
          scorers:
            - type: "python"
              compute_scores_snippet: !include "completeness_scorer.py"
              config: {field: answer}
              metrics:
                - type: "mean"
                  field: "is_complete"
                  name: "Field Completeness"
          rank_by: is_complete
        """)
    challenge_apply(path=write(tmp_path / "keyless", yaml_text))
    keyless = Challenge.objects.get(slug="keyless")
    assert keyless.scorers == [] and keyless.score_key == "is_complete"
    assert keyless.scoring_code == COMPLETENESS


@pytest.mark.parametrize("target", ["../secret", "/etc/passwd", "sub/../../secret"])
def test_include_outside_the_folder_is_refused(tmp_path, target):
    (tmp_path / "secret").write_text("def compute_scores(sample):\n    return {'x': 1}\n")
    folder = tmp_path / "def"
    path = write(folder, YAML.replace('"completeness_scorer.py"', f'"{target}"'))
    with pytest.raises(DefinitionInvalid) as caught:
        challenge_apply(path=path)
    message = str(caught.value)
    assert message.startswith("challenge.yaml, line 12:")
    assert "outside" in message or "relative" in message
    assert not Challenge.objects.exists()


def test_include_through_a_symlink_out_of_the_folder_is_refused(tmp_path):
    (tmp_path / "secret.py").write_text("def compute_scores(sample):\n    return {'x': 1}\n")
    folder = tmp_path / "def"
    folder.mkdir()
    (folder / "link.py").symlink_to(tmp_path / "secret.py")
    path = write(folder, YAML.replace('"completeness_scorer.py"', '"link.py"'))
    with pytest.raises(DefinitionInvalid, match="outside the definition's folder"):
        challenge_apply(path=path)


def test_errors_name_the_file_line_and_field(tmp_path):
    bad = YAML.replace("        field: answer\n", "        field: answer\n        other: [1, {}]\n")
    bad = bad.replace('name: "Field Completeness"', 'name: "Field Completeness"\n          n: 3')
    with pytest.raises(DefinitionInvalid) as caught:
        challenge_apply(path=write(tmp_path, bad))
    assert "challenge.yaml, line 16, definition.scorers[0].metrics" in str(caught.value)

    code = COMPLETENESS.replace("return {", "return {{")
    with pytest.raises(DefinitionInvalid) as caught:
        challenge_apply(path=write(tmp_path, YAML, code))
    message = str(caught.value)
    assert "challenge.yaml, line 12, definition.scorers[0].compute_scores_snippet" in message
    assert "(from completeness_scorer.py)" in message and "Line " in message

    with pytest.raises(DefinitionInvalid, match=r"challenge.yaml, line 6, definition.rank_by"):
        challenge_apply(path=write(tmp_path, YAML.replace("completeness.is_", "nope.is_")))
    with pytest.raises(
        DefinitionInvalid, match=r"challenge.yaml, line 6, definition.colour: unknown field"
    ):
        challenge_apply(
            path=write(tmp_path, YAML.replace("definition:\n", "definition:\n  colour: 1\n"))
        )
    assert not Challenge.objects.exists()


def test_yaml_is_loaded_safely(tmp_path):
    evil = "name: !!python/object/apply:os.system ['touch pwned']\nslug: x\n"
    with pytest.raises(DefinitionInvalid, match=r"challenge.yaml, line 1"):
        challenge_apply(path=write(tmp_path, evil))
    assert not (tmp_path / "pwned").exists()
    with pytest.raises(DefinitionInvalid, match=r"flow sequence, from line 2"):
        challenge_apply(path=write(tmp_path, "name: a\nslug: [unclosed\n"))


def test_command_reports_errors_without_a_traceback(tmp_path):
    with pytest.raises(CommandError, match=r"no such file|cannot be read"):
        call_command("challenge_apply", str(tmp_path / "missing.yaml"))
    with pytest.raises(CommandError, match="No challenge"):
        call_command("challenge_dump", "nope", str(tmp_path))


def test_aliases_and_deep_nesting_are_refused(tmp_path):
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    with pytest.raises(DefinitionInvalid, match=r"challenge.yaml, line 2: aliases"):
        challenge_apply(path=write(tmp_path, bomb))
    deep = "name: x\nslug: x\ndefinition: " + "[" * 5000 + "]" * 5000 + "\n"
    with pytest.raises(DefinitionInvalid, match=r"nested too deeply|definition"):
        challenge_apply(path=write(tmp_path, deep))


def test_python_metric_snippets_are_dumped_as_files_and_round_trip(tmp_path):
    metric = "def compute_metric(scores):\n    return len(scores)\n"
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "count.py").write_text(metric)
    yaml_text = YAML.replace(
        '          name: "Field Completeness"\n',
        '          name: "Field Completeness"\n'
        '        - type: "python"\n'
        '          name: "Count"\n'
        '          compute_metric_snippet: !include "count.py"\n',
    )
    challenge_apply(path=write(tmp_path / "in", yaml_text))
    challenge = Challenge.objects.get(slug="field-completeness")
    assert challenge.scorers[0]["metrics"][1]["compute_metric_snippet"] == metric
    files = challenge_dump(challenge=challenge, directory=tmp_path / "out")
    assert (tmp_path / "out" / "completeness_metric_2.py").read_text() == metric
    assert not challenge_apply(path=files[0]).changed


def test_lower_is_better_round_trips(tmp_path):
    from challenges.setup import services
    from tests.challenges.api.test_api_metrics import SETUP

    challenge = services.challenge_create(
        data={"name": "Loss", "slug": "loss", **SETUP, "lower_is_better": True}
    )
    files = challenge_dump(challenge=challenge, directory=tmp_path)
    assert "lower_is_better: true" in files[0].read_text()
    assert not challenge_apply(path=files[0]).changed
