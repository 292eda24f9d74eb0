"""export_challenge / import_challenge: JSON lines that round-trip exactly, all or nothing."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from challenges.leaderboards import selectors
from challenges.models import Challenge
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from tests.factories import T0, WEIGHTED_SEED, attempt_input, counts, make_challenge, record

pytestmark = pytest.mark.django_db


def board(challenge):
    challenge.refresh_from_db()
    page = selectors.leaderboard_page(challenge=challenge, limit=100, offset=0)
    return page.version.number, [
        (r.rank, r.player_external_id, r.display_name, r.score) for r in page.rows
    ]


@pytest.fixture
def challenge(admin):
    setup = {k: v for k, v in WEIGHTED_SEED.items() if k != "name"}
    c = make_challenge(name="Round trip ✓", description="# Hi\n*markdown*", **setup)
    record(
        c,
        attempt_input(
            "ada",
            player_name="Ada",
            tokens_total=1200,
            elapsed_ms=12000,
            rating=5,
            sample={"q": "2+2", "nested": {"x": [1, None, "é"]}},
            output="4\n",
            messages=[{"role": "user", "content": "2+2?"}],
            created_at=1,
        ),
        attempt_input("bob", player_name="Bob", succeeded=False, rating=None, created_at=2),
        attempt_input("ada", tokens_total=0, elapsed_ms=0, rating=10, created_at=3),
        attempt_input(
            "cy",
            player_name="Cy 🚀",
            tokens_total=2**53 - 1,
            elapsed_ms=1,
            rating=0,
            created_at=T0 + timedelta(seconds=4, milliseconds=987),
        ),
    )
    update = setup_services.challenge_update(
        challenge=c, data={"scoring_config": {"rating_weight": 3.0}}, by=admin
    )
    rescoring.job_run_inline(job=update.job)
    c.refresh_from_db()
    return c


ATTEMPT_FIELDS = (
    "player__external_id",
    "player__display_name",
    "succeeded",
    "tokens_total",
    "elapsed_ms",
    "rating",
    "created_at",
    "sample",
    "output",
    "messages",
)


def attempts_of(challenge):
    return list(challenge.attempts.order_by("pk").values_list(*ATTEMPT_FIELDS))


def export(slug, tmp_path, name="out.jsonl"):
    path = tmp_path / name
    call_command("export_challenge", slug, "-o", str(path), stderr=open("/dev/null", "w"))
    return path


def test_export_then_import_round_trips_exactly(challenge, tmp_path):
    before_board = board(challenge)
    before_attempts = attempts_of(challenge)
    first = export(challenge.slug, tmp_path, "first.jsonl")
    lines = [json.loads(line) for line in first.read_text().splitlines()]
    assert [line["type"] for line in lines] == ["challenge", "version", "version"] + ["attempt"] * 4
    assert lines[0]["active_version"] == 2
    assert lines[2]["created_by"] == "admin" and lines[2]["scoring_config"]["rating_weight"] == 3.0

    Challenge.objects.filter(pk=challenge.pk).delete()
    call_command("import_challenge", str(first), stdout=open("/dev/null", "w"))

    imported = Challenge.objects.get(slug=challenge.slug)
    assert board(imported) == before_board
    assert attempts_of(imported) == before_attempts  # to the millisecond, nulls and all
    assert imported.versions.count() == 2
    second = export(challenge.slug, tmp_path, "second.jsonl")
    assert second.read_text() == first.read_text()


def test_import_beside_the_original_under_another_slug(challenge, tmp_path):
    path = export(challenge.slug, tmp_path)
    call_command("import_challenge", str(path), "--slug", "copy", stdout=open("/dev/null", "w"))
    copy = Challenge.objects.get(slug="copy")
    assert board(copy) == board(challenge)
    original_lines = path.read_text().splitlines()
    copy_lines = export("copy", tmp_path, "copy.jsonl").read_text().splitlines()
    assert copy_lines[1:] == original_lines[1:]
    assert json.loads(copy_lines[0]) == {
        **json.loads(original_lines[0]),
        "slug": "copy",
        "created_at": json.loads(copy_lines[0])["created_at"],
    }


@pytest.mark.parametrize(
    ("line_no", "change", "message"),
    [
        (1, lambda d: {**d, "format": "other/9"}, 'line 1: "format" must be'),
        (1, lambda d: {**d, "scoring_strategy": "best"}, "line 1: scoring_strategy"),
        (2, lambda d: {**d, "scoring_plugin_id": "acme.nope"}, "line 2: scoring_plugin_id"),
        (3, lambda d: {**d, "number": 7}, "line 3: number: expected 2"),
        (3, lambda d: {**d, "colour": "red"}, "line 3: unknown field(s): colour"),
        (5, lambda d: {**d, "rating": 11}, "line 5: rating"),
        (5, lambda d: {**d, "succeeded": "yes"}, "line 5: succeeded"),
        (6, lambda d: {k: v for k, v in d.items() if k != "created_at"}, "line 6: created_at"),
        (7, lambda d: {**d, "type": "score"}, "line 7: unknown type 'score'"),
    ],
)
def test_a_bad_line_imports_nothing_and_names_line_and_field(
    challenge, tmp_path, line_no, change, message
):
    lines = export(challenge.slug, tmp_path).read_text().splitlines()
    lines[line_no - 1] = json.dumps(change(json.loads(lines[line_no - 1])))
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    before = counts()
    with pytest.raises(CommandError, match="Nothing imported") as info:
        call_command("import_challenge", str(bad), "--slug", "fresh")
    assert message in str(info.value)
    assert counts() == before
    assert not Challenge.objects.filter(slug="fresh").exists()


def test_import_refuses_a_taken_slug_and_garbage(challenge, tmp_path):
    path = export(challenge.slug, tmp_path)
    with pytest.raises(CommandError, match="slug: A challenge with this slug already exists"):
        call_command("import_challenge", str(path))
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text('{"type": "challenge"\n')
    with pytest.raises(CommandError, match="line 1: not valid JSON"):
        call_command("import_challenge", str(garbage))
    with pytest.raises(CommandError, match="Cannot read"):
        call_command("import_challenge", str(tmp_path / "missing.jsonl"))


def test_export_of_an_unknown_slug_is_a_clear_error():
    with pytest.raises(CommandError, match="No challenge with the slug 'nope'"):
        call_command("export_challenge", "nope")


def test_export_to_stdout_streams_json_lines(capsys):
    c = make_challenge(name="Tiny")
    record(c, attempt_input("p1"))
    call_command("export_challenge", c.slug)
    out = capsys.readouterr().out.splitlines()
    assert [json.loads(line)["type"] for line in out] == ["challenge", "version", "attempt"]


@pytest.mark.parametrize("revealed", [False, True], ids=["frozen", "revealed"])
def test_a_frozen_or_revealed_challenge_round_trips(challenge, tmp_path, anon_api, revealed):
    """Issue 28, finding 4: recording times became the import's time (every attempt
    after the freeze: an empty frozen board) and revealed_at was not carried."""
    from django.utils import timezone

    from challenges.models import Attempt
    from tests.urls import leaderboard_url

    late = timezone.now() + timedelta(seconds=5)
    Challenge.objects.filter(pk=challenge.pk).update(
        freeze_at=timezone.now(), revealed_at=late if revealed else None
    )
    recorded = list(challenge.attempts.order_by("pk").values_list("recorded_at", flat=True))
    public = anon_api.get(leaderboard_url(challenge.pk)).json()
    assert public["count"] == 3
    path = export(challenge.slug, tmp_path)
    Challenge.objects.filter(pk=challenge.pk).delete()
    call_command("import_challenge", str(path), stdout=open("/dev/null", "w"))
    imported = Challenge.objects.get(slug=challenge.slug)
    assert imported.revealed_at == (late if revealed else None)
    assert [
        a.recorded_at for a in Attempt.objects.filter(challenge=imported).order_by("pk")
    ] == recorded
    again = anon_api.get(leaderboard_url(imported.pk)).json()
    assert [(r["player"], r["score"]) for r in again["results"]] == [
        (r["player"], r["score"]) for r in public["results"]
    ]
