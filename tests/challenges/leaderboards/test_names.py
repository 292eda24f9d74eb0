"""A player's name as of a moment (leaderboards/names.py), against the history replayed:
the name after the last rename strictly before the moment (a rename at the moment is
after it, as an attempt recorded at ``freeze_at`` is), through every way it is read —
``names_as_of``, a board's rows and a board's name search."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from challenges.leaderboards import names, selectors, sql
from challenges.models import Player, PlayerRename
from tests.factories import T0, attempt_input, make_challenge, record

pytestmark = pytest.mark.django_db

NAMES = ["Ada", "Bo", "Cy", "ada", "Ångström", "Zoë"]


def _replayed(original: str, steps: list[tuple[int, str]], moment: int) -> str:
    """The name at ``moment``: each rename strictly before it applied in order."""
    name = original
    for offset, new in steps:
        if offset < moment:
            name = new
    return name


def _apply(player: Player, steps: list[tuple[int, str]]) -> None:
    """Rename ``player`` through ``steps`` (already in time order), keeping each."""
    for offset, new in steps:
        if new == player.display_name:
            continue
        names.renames_record(
            renames=[(player.pk, player.display_name, new)], at=T0 + timedelta(seconds=offset)
        )
        player.display_name = new
    player.save(update_fields=["display_name"])


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    steps=st.lists(st.tuples(st.integers(-3, 3), st.sampled_from(NAMES)), max_size=6),
    other=st.lists(st.tuples(st.integers(-3, 3), st.sampled_from(NAMES)), max_size=3),
    moment=st.integers(-4, 4),
)
def test_a_name_as_of_a_moment_is_the_history_replayed(steps, other, moment):
    steps = sorted(steps, key=lambda s: s[0])  # stable: equal times keep their order
    other = sorted(other, key=lambda s: s[0])
    with transaction.atomic():
        challenge = make_challenge(scoring_strategy="fastest")
        record(
            challenge,
            attempt_input("p", player_name="Orig", elapsed_ms=1),
            attempt_input("q", player_name="Other", elapsed_ms=2),
        )
        p, q = Player.objects.get(external_id="p"), Player.objects.get(external_id="q")
        _apply(p, steps)
        _apply(q, other)
        at = T0 + timedelta(seconds=moment)
        expected = {
            p.pk: _replayed("Orig", steps, moment),
            q.pk: _replayed("Other", other, moment),
        }
        assert names.names_as_of(player_ids=[p.pk, q.pk], at=at) == expected
        # The rows and the search of a board read the same rule in their own statement.
        rows = sql.entry_rows(challenge.active_version_id, "all", [], 10, names_at=at)
        by_id = {"p": expected[p.pk], "q": expected[q.pk]}
        assert {r[4]: r[5] for r in rows} == by_id
        for text in {by_id["p"], by_id["p"][1:], "zz"}:
            found = selectors._rows_named(challenge.active_version_id, text, 10, at)
            wanted = {ext for ext, name in by_id.items() if text.casefold() in name.casefold()}
            if text.isascii() or sql.postgres():  # SQLite's LIKE folds ASCII case only
                assert {r["player__external_id"] for r in found} == wanted
        transaction.set_rollback(True)


def test_renames_are_kept_by_ingestion_and_unchanged_names_are_not():
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, attempt_input("p", player_name="Ada", elapsed_ms=1))
    record(challenge, attempt_input("p", player_name="Ada", elapsed_ms=2))  # no change
    record(challenge, attempt_input("p", elapsed_ms=3))  # no name: no change
    assert not PlayerRename.objects.exists()
    record(
        challenge,
        attempt_input("p", player_name="Ada L.", elapsed_ms=4),
        attempt_input("p", player_name="Ada Lovelace", elapsed_ms=5),  # the last one wins
    )
    kept = list(PlayerRename.objects.values_list("old_name", "new_name"))
    assert kept == [("Ada", "Ada Lovelace")]


def test_names_as_of_reads_in_one_query(django_assert_num_queries):
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, *[attempt_input(f"p{i}", player_name=f"P{i}") for i in range(30)])
    ids = list(Player.objects.values_list("pk", flat=True))
    with django_assert_num_queries(1):
        found = names.names_as_of(player_ids=ids, at=T0)
    assert len(found) == 30
