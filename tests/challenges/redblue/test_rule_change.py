"""A change of a red/blue challenge's points rule is a rescore: every judged pairing's
points are recomputed and become current together with a new scoring version holding
the rule, in one transaction (readers see the old points or the new, never a mix), and
the switch has its history record like any rescore."""

from __future__ import annotations

import threading

import pytest

from challenges.models import Event, HistoryRecord, Pairing, ScoringVersion
from challenges.redblue import selectors
from challenges.redblue import standings_cache as red_blue_kept
from challenges.setup import services as setup_services
from scoring.project_registry import registry
from tests.challenges.redblue.factories import judge, make_red_blue, submit
from tests.challenges.rescoring._jobs import postgres_only
from tests.challenges.rescoring._threads import Session
from tests.urls import detail_url, standings_url


def judged_league(c, n=6) -> int:
    """``n`` attackers breaching SA against two defences, rating 9 (the first meets both
    waiting defences): how many pairings."""
    submit(c, "b0", "blue")
    submit(c, "b1", "blue")
    for i in range(n):
        for pairing in submit(c, f"r{i}", "red").pairings:
            judge(pairing, breached=["SA"], rating=9)
    return n + 1


def team_points(c) -> tuple[float, float]:
    found = selectors.standings(challenge=c)
    return found.red, found.blue


@pytest.mark.django_db
def test_a_rule_change_is_a_new_active_version_with_its_history(
    anon_api, admin_api, django_capture_on_commit_callbacks
):
    c = make_red_blue()
    judged = judged_league(c, n=3)
    assert anon_api.get(standings_url(c.pk)).json()["red"]["points"] == judged * 4.0  # 1 + 3
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_api.patch(detail_url(c.pk), {"severity_divisor": 9}, "json")
    assert response.status_code == 200, response.content
    assert response.json()["active_version"] == 2
    c.refresh_from_db()
    version = c.active_version
    assert (version.number, version.reason) == (2, "red/blue points rule change")
    assert version.scored_at is not None
    assert version.red_blue_rule["severity_divisor"] == 9
    assert ScoringVersion.objects.get(challenge=c, number=1).red_blue_rule["severity_divisor"] == 3
    assert anon_api.get(standings_url(c.pk)).json()["red"]["points"] == judged * 2.0  # 1 + 1
    record = HistoryRecord.objects.get(challenge=c)
    assert (record.version_id, record.reason) == (version.pk, "rescore")
    assert record.previous_version.number == 1
    assert Event.objects.filter(challenge=c, type="rescore.finished").count() == 1
    assert anon_api.get(f"/api/challenges/{c.pk}/history/").status_code == 200


@pytest.mark.django_db
def test_what_is_not_the_points_rule_makes_no_version(admin_api):
    c = make_red_blue()
    judged_league(c, n=1)
    for change in ({"instructions": "Be nice"}, {"severity_divisor": 3.0}, {"name": "Renamed"}):
        assert admin_api.patch(detail_url(c.pk), change, "json").status_code == 200
    assert ScoringVersion.objects.filter(challenge=c).count() == 1


@pytest.mark.django_db
def test_a_change_to_a_plugin_recomputes_with_it_and_keeps_its_failures():
    c = make_red_blue()
    judged_league(c, n=2)
    Pairing.objects.filter(challenge=c).update(rating=10)  # PairingWeird: red 5, blue 1
    failing = Pairing.objects.filter(challenge=c).order_by("pk").first()
    Pairing.objects.filter(pk=failing.pk).update(rating=0)  # PairingWeird raises on 0
    with registry().temporarily("t.pairing_weird", "tests.plugins:PairingWeird"):
        setup_services.challenge_update(
            challenge=c,
            data={"red_blue_scoring": "custom", "red_blue_plugin_id": "t.pairing_weird"},
        )
    points = dict(Pairing.objects.filter(challenge=c).values_list("pk", "red_points"))
    assert points.pop(failing.pk) is None
    assert set(points.values()) == {5.0}
    assert "no verdict for me" in Pairing.objects.get(pk=failing.pk).points_error
    c.refresh_from_db()
    assert c.active_version.number == 2
    assert c.active_version.red_blue_rule["red_blue_plugin_id"] == "t.pairing_weird"


@pytest.mark.django_db(transaction=True)
def test_readers_during_the_recompute_see_the_old_points_or_the_new(monkeypatch, anon_api):
    postgres_only()
    c = make_red_blue()
    judged = judged_league(c, n=12)
    old = team_points(c)
    old_api = anon_api.get(standings_url(c.pk)).json()
    seen: dict[str, object] = {}
    real_changed = red_blue_kept.changed
    reading = threading.Event()

    def changed_then_read(*, challenge_ids):
        real_changed(challenge_ids=challenge_ids)
        if challenge_ids == [c.pk] and not reading.is_set():
            reading.set()  # the pairings are rewritten, the transaction not committed

            def read():
                from challenges.models import Challenge

                fresh = Challenge.objects.get(pk=c.pk)
                seen["db"] = team_points(fresh)
                seen["version"] = fresh.active_version_id
                seen["api"] = anon_api.get(standings_url(c.pk)).json()

            session = Session(read)
            session.start()
            session.outcome()

    monkeypatch.setattr(red_blue_kept, "changed", changed_then_read)
    v1 = c.active_version_id
    setup_services.challenge_update(challenge=c, data={"severity_divisor": 9, "time_penalty": 1})
    assert reading.is_set()
    assert seen["db"] == old and seen["version"] == v1  # all old: not a mix
    assert seen["api"] == old_api
    new = team_points(c)
    assert new != old and new == (judged * 2.0, judged * 5.0)
    c.refresh_from_db()
    assert c.active_version_id != v1
    api = anon_api.get(standings_url(c.pk)).json()  # not the build kept during the change
    assert api["red"]["points"] == new[0]


@pytest.mark.django_db(transaction=True)
def test_a_judgement_racing_a_rule_change_ends_under_the_new_rule():
    postgres_only()
    c = make_red_blue()
    submit(c, "b", "blue")
    pairings = [submit(c, f"r{i}", "red").pairings[0] for i in range(20)]
    start = threading.Barrier(2)

    def judge_all():
        start.wait()
        for p in pairings:
            judge(p, breached=["SA"], rating=9)

    def change():
        start.wait()
        setup_services.challenge_update(challenge=c, data={"severity_divisor": 9})

    sessions = [Session(judge_all), Session(change)]
    for s in sessions:
        s.start()
    for s in sessions:
        s.outcome(timeout=120)
    assert set(Pairing.objects.filter(challenge=c).values_list("red_points", flat=True)) == {2.0}
