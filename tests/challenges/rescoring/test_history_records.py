"""History records (issue 30): every switch of the active version — a rescore, "make
active again", a batch run — writes one record that equals a brute force over the two
boards' entries, and records are append-only."""

from __future__ import annotations

import itertools

import pytest
from scipy.stats import kendalltau

from challenges.models import HistoryRecord, LeaderboardEntry
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from challenges.setup import versions
from tests.factories import attempt_input, make_challenge, record

pytestmark = pytest.mark.django_db


def board_of(version_id):
    """player external id → competition rank, by brute force over every pair."""
    rows = list(
        LeaderboardEntry.objects.filter(version_id=version_id).values_list(
            "player__external_id", "player__display_name", "sort_key", "created_at"
        )
    )
    ranks = {p: 1 + sum(1 for o in rows if (o[2], o[3]) < (k, t)) for p, _, k, t in rows}
    names = {p: name for p, name, _, _ in rows}
    return ranks, names


def expected_record(before_id, after_id):
    old, _ = board_of(before_id) if before_id else ({}, {})
    new, _ = board_of(after_id)
    both = sorted(p for p in new if p in old)
    pairs = [(old[p], new[p]) for p in both]
    tau = None
    if len(pairs) >= 2:
        tau = kendalltau([x for x, _ in pairs], [y for _, y in pairs]).statistic
    return {
        "players": (len(old), len(new)),
        "moved": sum(1 for p in both if old[p] != new[p]),
        "entered": {p for p in new if new[p] <= 10 and old.get(p, 11) > 10},
        "left": {p for p in old if old[p] <= 10 and new.get(p, 11) > 10},
        "moves": sorted((abs(old[p] - new[p]) for p in both if old[p] != new[p]), reverse=True)[
            :10
        ],
        "tau": None if tau is None or tau != tau else tau,
    }


def assert_matches(found: HistoryRecord, expected):
    assert (found.players_before, found.players_after) == expected["players"]
    assert found.moved == expected["moved"]
    assert {e["external_id"] for e in found.entered_top} == expected["entered"]
    assert {e["external_id"] for e in found.left_top} == expected["left"]
    moves = [abs(m["rank_after"] - m["rank_before"]) for m in found.largest_moves]
    assert moves == expected["moves"]
    if expected["tau"] is None:
        assert found.kendall_tau is None
    else:
        assert found.kendall_tau == pytest.approx(expected["tau"], abs=1e-12)


def seeded(n=30):
    """A fastest-success challenge whose tokens order the players differently."""
    challenge = make_challenge(scoring_strategy="fastest")
    inputs = [
        attempt_input(
            f"p{i:02d}",
            player_name=f"Player {i}",
            elapsed_ms=1000 + (i * 37) % 23 * 10,  # ties among some players
            tokens_total=(i * 53) % 31,
            created_at=i % 4,
            succeeded=i % 9 != 0,
        )
        for i in range(n)
    ]
    record(challenge, *inputs)
    return challenge


def rescore_to(challenge, strategy):
    update = setup_services.challenge_update(
        challenge=challenge, data={"scoring_strategy": strategy}
    )
    rescoring.job_run_inline(job=update.job)
    challenge.refresh_from_db()
    return update.new_version


def test_a_rescore_writes_a_record_equal_to_a_brute_force():
    challenge = seeded()
    v1 = challenge.active_version
    assert not HistoryRecord.objects.filter(challenge=challenge).exists()
    v2 = rescore_to(challenge, "fewest_tokens")

    found = HistoryRecord.objects.get(challenge=challenge)
    assert (found.version, found.previous_version, found.reason) == (v2, v1, "rescore")
    assert found.switched_at == challenge.updated_at
    assert_matches(found, expected_record(v1.pk, v2.pk))
    assert found.moved > 0 and found.kendall_tau is not None and found.kendall_tau < 1
    named = {e["external_id"]: e["display_name"] for e in found.entered_top}
    assert all(name == f"Player {int(p[1:])}" for p, name in named.items())


def test_make_active_again_writes_a_rollback_record():
    challenge = seeded()
    v1 = challenge.active_version
    v2 = rescore_to(challenge, "fewest_tokens")
    versions.version_activate(version=v1)

    newest = HistoryRecord.objects.filter(challenge=challenge).first()
    assert (newest.version, newest.previous_version, newest.reason) == (v1, v2, "rollback")
    assert_matches(newest, expected_record(v2.pk, v1.pk))
    older = HistoryRecord.objects.filter(challenge=challenge).last()
    # Going back undoes the move: the same players, the same tau, entered and left swapped.
    assert newest.kendall_tau == pytest.approx(older.kendall_tau, abs=1e-12)
    assert {e["external_id"] for e in newest.entered_top} == {
        e["external_id"] for e in older.left_top
    }


def test_records_are_append_only():
    challenge = seeded(5)
    rescore_to(challenge, "fewest_tokens")
    found = HistoryRecord.objects.get(challenge=challenge)
    found.moved = 999
    with pytest.raises(ValueError, match="append-only"):
        found.save()
    with pytest.raises(ValueError, match="append-only"):
        found.delete()
    assert HistoryRecord.objects.get(pk=found.pk).moved != 999


def test_a_switch_with_one_common_player_has_no_tau():
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, attempt_input("a", elapsed_ms=5), attempt_input("b", succeeded=False))
    v1 = challenge.active_version
    v2 = rescore_to(challenge, "first")
    found = HistoryRecord.objects.get(challenge=challenge)
    assert found.kendall_tau is None
    assert_matches(found, expected_record(v1.pk, v2.pk))


@pytest.mark.parametrize("n", [2, 12, 45])
def test_records_equal_a_brute_force_for_every_size(n):
    challenge = seeded(n)
    versions_seen = [challenge.active_version]
    for strategy in ("fewest_tokens", "first", "fastest"):
        versions_seen.append(rescore_to(challenge, strategy))
    records = list(HistoryRecord.objects.filter(challenge=challenge).order_by("switched_at", "id"))
    assert len(records) == 3
    for found, (before, after) in zip(records, itertools.pairwise(versions_seen), strict=True):
        assert_matches(found, expected_record(before.pk, after.pk))


def test_a_batch_run_writes_a_batch_record(admin_api, integration_api):
    from tests.challenges.rescoring.test_batch_scorers import BODY, post
    from tests.scoring.test_snippet import sandbox_or_skip

    sandbox_or_skip()
    from challenges.models import Challenge
    from challenges.rescoring import batch as batch_scoring
    from tests.urls import challenges_url

    response = admin_api.post(challenges_url(), BODY, format="json")
    challenge = Challenge.objects.get(pk=response.json()["id"])
    for i in range(14):
        post(integration_api, challenge, f"p{i:02d}", "x" * (i * 7 % 11), 1000 + i)
    batch_scoring.batch_run(challenge_id=challenge.pk)
    # More answers: the rank-normalised lengths of everyone change.
    for i in range(14, 25):
        post(integration_api, challenge, f"p{i:02d}", "x" * (i * 5 % 13), 1000 + i)
    version = challenge.active_version
    before, _ = board_of(version.pk)
    batch_scoring.batch_run(challenge_id=challenge.pk)

    newest = HistoryRecord.objects.filter(challenge=challenge, reason="batch").first()
    assert (newest.version, newest.previous_version) == (version, version)
    after, _ = board_of(version.pk)
    both = sorted(p for p in after if p in before)
    pairs = [(before[p], after[p]) for p in both]
    expected_tau = kendalltau([x for x, _ in pairs], [y for _, y in pairs]).statistic
    assert (newest.players_before, newest.players_after) == (len(before), len(after))
    assert newest.moved == sum(1 for p in both if before[p] != after[p])
    assert newest.kendall_tau == pytest.approx(expected_tau, abs=1e-12)
    assert {e["external_id"] for e in newest.entered_top} == {
        p for p in after if after[p] <= 10 and before.get(p, 11) > 10
    }


def test_make_active_again_through_a_rescore_is_a_rollback(monkeypatch):
    challenge = seeded(8)
    v1 = challenge.active_version
    monkeypatch.setattr(rescoring, "_send", lambda job: None)
    update = setup_services.challenge_update(
        challenge=challenge, data={"scoring_strategy": "fewest_tokens"}
    )
    rescoring.job_cancel(job=update.job)  # version 2 never fully scored
    monkeypatch.undo()
    activation = versions.version_activate(version=update.new_version)
    assert activation.job is not None
    rescoring.job_run_inline(job=activation.job)
    found = HistoryRecord.objects.get(challenge=challenge)
    assert (found.version, found.previous_version) == (update.new_version, v1)
    assert found.reason == "rollback"
    assert_matches(found, expected_record(v1.pk, update.new_version.pk))
