"""Submissions and pairings through the services: each policy, waiting submissions,
round-robin fairness over 100 submissions, no self-pairing, one team per player, the
window and the caps."""

from __future__ import annotations

import random
from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from challenges.ingestion import admission
from challenges.models import Pairing, Submission
from challenges.redblue import services
from challenges.setup import services as setup_services
from tests.challenges.redblue.factories import make_red_blue, submit

pytestmark = pytest.mark.django_db


def test_a_submission_waits_until_the_other_team_has_one():
    c = make_red_blue()
    first = submit(c, "r1", "red")
    second = submit(c, "r2", "red")
    assert first.pairings == [] and second.pairings == []
    defence = submit(c, "b1", "blue")
    # The defence is paired with every attack that waited, oldest first.
    assert [(p.attack_id, p.defense_id) for p in defence.pairings] == [
        (first.submission.pk, defence.submission.pk),
        (second.submission.pk, defence.submission.pk),
    ]
    later = submit(c, "r3", "red")
    assert [(p.attack_id, p.defense_id) for p in later.pairings] == [
        (later.submission.pk, defence.submission.pk)
    ]


def test_latest_best_meets_the_newest_active_submission():
    c = make_red_blue()
    submit(c, "b1", "blue")
    b2 = submit(c, "b2", "blue")
    submit(c, "r0", "red")  # takes the waiting ones
    assert submit(c, "r1", "red").pairings[0].defense_id == b2.submission.pk
    b1_again = submit(c, "b1", "blue")  # b1's earlier defence turns inactive
    assert Submission.objects.filter(player__external_id="b1", active=True).count() == 1
    assert submit(c, "r2", "red").pairings[0].defense_id == b1_again.submission.pk


@pytest.mark.parametrize("defences", [1, 3, 7])
def test_round_robin_is_fair_over_100_submissions(defences):
    c = make_red_blue(defense_selection_policy="round_robin")
    ids = [submit(c, f"b{i}", "blue").submission.pk for i in range(defences)]
    for i in range(100):
        submit(c, f"r{i}", "red")
    met = Counter(Pairing.objects.filter(challenge=c).values_list("defense_id", flat=True))
    assert set(met) == set(ids)
    # The first attack met every waiting defence; then the least paired first.
    assert max(met.values()) - min(met.values()) <= 1
    assert sum(met.values()) == 100 + defences - 1


def test_round_robin_ties_go_to_the_oldest():
    c = make_red_blue(attack_selection_policy="round_robin")
    a = [submit(c, f"r{i}", "red").submission.pk for i in range(3)]
    first = submit(c, "b0", "blue")  # takes all three waiting attacks
    assert len(first.pairings) == 3
    order = [submit(c, f"b{i}", "blue").pairings[0].attack_id for i in range(1, 7)]
    assert order == [a[0], a[1], a[2], a[0], a[1], a[2]]


def test_random_active_picks_among_the_active_ones_only():
    c = make_red_blue(defense_selection_policy="random_active")
    for i in range(4):
        submit(c, f"b{i}", "blue")
    submit(c, "b0", "blue")  # b0's first defence is inactive now
    submit(c, "r-first", "red")
    active = set(Submission.objects.filter(team="blue", active=True).values_list("pk", flat=True))
    rng = random.Random(7)
    picked = Counter(submit(c, f"r{i}", "red", rng=rng).pairings[0].defense_id for i in range(200))
    assert set(picked) == active  # every active one, no inactive one
    assert min(picked.values()) > 25  # uniform enough: 50 expected each


def test_request_new_if_none_waits_once_a_player_met_them_all():
    c = make_red_blue(defense_selection_policy="request_new_if_none")
    b1 = submit(c, "b1", "blue").submission
    submit(c, "r0", "red")  # the waiting defence is taken
    assert submit(c, "r1", "red").pairings[0].defense_id == b1.pk
    assert submit(c, "r1", "red").pairings == []  # r1 met b1: waits for a new one
    b2 = submit(c, "b2", "blue")
    assert [p.attack.player.external_id for p in b2.pairings] == ["r1"]


def test_a_player_never_changes_team_nor_meets_themselves():
    c = make_red_blue()
    submit(c, "p", "red")
    with pytest.raises(services.TeamConflict):
        submit(c, "p", "blue")
    with pytest.raises(services.TeamConflict):
        services.team_join(challenge=c, external_id="p", team="blue")
    assert services.team_join(challenge=c, external_id="p", team="red").team == "red"
    submit(c, "q", "blue")
    for p in Pairing.objects.select_related("attack", "defense"):
        assert p.attack.player_id != p.defense.player_id


def test_a_single_challenge_takes_no_submission():
    from tests.factories import make_challenge

    with pytest.raises(services.NotRedBlue):
        submit(make_challenge(), "p", "red")


def test_outside_the_window_and_over_a_cap_nothing_is_written():
    c = make_red_blue(attempts_total=2)
    submit(c, "p", "red")
    submit(c, "p", "red")
    with pytest.raises(admission.LimitExceeded):
        submit(c, "p", "red")
    assert Submission.objects.count() == 2
    setup_services.challenge_update(
        challenge=c, data={"closes_at": timezone.now() - timedelta(seconds=1)}
    )
    c.refresh_from_db()
    with pytest.raises(admission.ScheduleClosed):
        submit(c, "q", "blue")
    assert Submission.objects.count() == 2 and not Pairing.objects.exists()
