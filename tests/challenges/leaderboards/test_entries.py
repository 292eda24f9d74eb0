"""Leaderboard entries are a cache keyed by (version, player), with no foreign-key
constraints: every way rows disappear keeps them right."""

from __future__ import annotations

import pytest

from challenges.ingestion import services
from challenges.leaderboards import selectors
from challenges.models import Attempt, AttemptScore, Challenge, LeaderboardEntry, Player
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from tests.factories import attempt_input, make_challenge, record

pytestmark = pytest.mark.django_db


def board(challenge):
    challenge.refresh_from_db()
    page = selectors.leaderboard_page(challenge=challenge, limit=100, offset=0)
    return [(r.player_external_id, r.score, r.attempt_id) for r in page.rows]


@pytest.fixture
def fastest():
    c = make_challenge(scoring_strategy="fastest")
    record(
        c,
        attempt_input("a", elapsed_ms=100, created_at=1),
        attempt_input("a", elapsed_ms=300, created_at=2),
        attempt_input("b", elapsed_ms=200, created_at=3),
        attempt_input("c", elapsed_ms=50, created_at=4),
    )
    return c


def ids(challenge, player, elapsed):
    return Attempt.objects.get(challenge=challenge, player__external_id=player, elapsed_ms=elapsed)


def test_deleting_a_best_attempt_promotes_the_next_best(fastest):
    a100, a300 = ids(fastest, "a", 100), ids(fastest, "a", 300)
    b200, c50 = ids(fastest, "b", 200), ids(fastest, "c", 50)
    assert board(fastest) == [("c", 50.0, c50.pk), ("a", 100.0, a100.pk), ("b", 200.0, b200.pk)]

    deleted = services.attempts_delete(attempts=Attempt.objects.filter(pk__in=[a100.pk, c50.pk]))

    assert deleted == 2
    assert board(fastest) == [("b", 200.0, b200.pk), ("a", 300.0, a300.pk)]
    assert not AttemptScore.objects.filter(attempt_id__in=[a100.pk, c50.pk]).exists()


def test_deleting_attempts_repairs_every_version_that_has_entries(fastest):
    old_version = fastest.active_version
    update = setup_services.challenge_update(challenge=fastest, data={"scoring_strategy": "first"})
    rescoring.job_run_inline(job=update.job)
    a100 = ids(fastest, "a", 100)
    services.attempts_delete(attempts=Attempt.objects.filter(pk=a100.pk))
    for version in (old_version, update.new_version):
        entries = LeaderboardEntry.objects.filter(version=version)
        assert not entries.filter(attempt_id=a100.pk).exists()
        a_entry = entries.get(player__external_id="a")
        assert a_entry.attempt_id == ids(fastest, "a", 300).pk
    assert board(fastest)[0][0] == "a"  # "first": a's 300 ms attempt came before b's


def test_deleting_a_players_only_attempt_drops_the_player(fastest):
    services.attempts_delete(attempts=Attempt.objects.filter(player__external_id="b"))
    assert [row[0] for row in board(fastest)] == ["c", "a"]


def test_deleting_a_player_or_a_challenge_removes_their_entries(fastest):
    Player.objects.get(external_id="c").delete()
    assert [row[0] for row in board(fastest)] == ["a", "b"]
    other = make_challenge(scoring_strategy="fastest")
    record(other, attempt_input("a", elapsed_ms=1))
    Challenge.objects.filter(pk=fastest.pk).delete()
    assert set(LeaderboardEntry.objects.values_list("version__challenge", flat=True)) == {other.pk}
    assert board(other) == [("a", 1.0, Attempt.objects.get(challenge=other).pk)]


def test_entry_key_is_version_and_player(fastest):
    entry = LeaderboardEntry.objects.filter(version=fastest.active_version).first()
    assert entry.pk == (entry.version_id, entry.player_id)
    assert [f.name for f in LeaderboardEntry._meta.pk_fields] == ["version", "player"]
