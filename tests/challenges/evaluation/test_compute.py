"""Evaluation boards computed from the database: the counted attempts are the public
board's (practice, hidden attempts and players, the freeze), slices equal a brute force,
a rescore's switch shows intervals of its own scores, readers are never blocked."""

from __future__ import annotations

import random
import threading
import time
from collections import defaultdict
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.utils import timezone

from challenges.ingestion import moderation
from challenges.leaderboards import evaluation, freeze
from challenges.models import Attempt, Challenge, EvaluationBoard, HistoryRecord, Player
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from scoring.engine.uncertainty import board_intervals
from tests.factories import attempt_input, make_challenge, record

pytestmark = pytest.mark.django_db

TOPICS = ("algebra", "geometry", "logic")


def _challenge(**fields) -> Challenge:
    fields.setdefault("board", "aggregate")
    fields.setdefault("bootstrap_samples", 200)
    fields.setdefault("slice_by", "topic")
    return make_challenge(scoring_strategy="highest_rating", **fields)


def _attempts(challenge, players, items=12, seed=1):
    rng = random.Random(seed)
    inputs = [
        attempt_input(
            player,
            rating=rng.randint(0, 10),
            created_at=rng.randint(0, 1000),
            sample={"id": f"q{item}", "topic": TOPICS[item % 3]},
        )
        for player in players
        for item in range(items)
        if rng.random() < 0.9
    ]
    record(challenge, *inputs)


def _view(challenge, user=None, slice=""):
    challenge.refresh_from_db()
    frozen = freeze.frozen_for(challenge, user)
    return evaluation.evaluation_board(challenge=challenge, frozen=frozen, slice=slice)


def _brute(challenge, *, slice="", exclude=()):
    """Every counted attempt by hand: rating of the scored, public attempts."""
    rows = []
    for a in Attempt.objects.filter(challenge=challenge, practice=False, hidden=False):
        if a.player.external_id in exclude or a.rating is None or not a.succeeded:
            continue
        if slice and a.sample.get("topic") != slice:
            continue
        rows.append((a.player_id, float(a.rating), a.sample["id"], a.created_at))
    return rows


def _expected(challenge, rows, slice=""):
    version = challenge.active_version
    return board_intervals(
        players=[r[0] for r in rows],
        values=[r[1] for r in rows],
        items=[r[2] for r in rows],
        reached=[r[3].timestamp() * 1000 for r in rows],
        setup=evaluation.interval_setup(challenge, version),
        salt=f"{challenge.pk}:{version.number}:{slice}",
    )


def _numbers(view_rows):
    return [
        (r.player_id, r.score, r.n, r.ci_low, r.ci_high, r.rank, r.rank_low, r.rank_high, r.tier)
        for r in view_rows
    ]


def _engine_numbers(result):
    return [
        (r.player, r.score, r.n, r.ci_low, r.ci_high, r.rank, r.rank_low, r.rank_high, r.tier)
        for r in result.rows
    ]


def test_whole_board_and_every_slice_equal_a_brute_force():
    challenge = _challenge()
    _attempts(challenge, [f"p{i}" for i in range(6)])
    first = _view(challenge)
    assert first.pending  # nothing computed before a reader asked (tests run tasks inline)
    view = _view(challenge)
    assert not view.pending and view.paired
    assert view.attempts == len(_brute(challenge))
    assert _numbers(view.rows) == _engine_numbers(_expected(challenge, _brute(challenge)))
    counts = defaultdict(int)
    for row in _brute(challenge):
        counts[Attempt.objects.get(player_id=row[0], sample__id=row[2]).sample["topic"]] += 1
    assert view.slices == dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    for topic in TOPICS:
        part = _view(challenge, slice=topic)
        rows = _brute(challenge, slice=topic)
        assert part.attempts == len(rows) == counts[topic]
        assert _numbers(part.rows) == _engine_numbers(_expected(challenge, rows, topic))
    assert _view(challenge, slice="unknown").rows == []


def test_mean_by_hand_and_reproducible_across_recomputes():
    challenge = _challenge(slice_by=None)
    record(
        challenge,
        attempt_input("a", rating=4, sample={"id": "1"}),
        attempt_input("a", rating=8, sample={"id": "2"}),
        attempt_input("b", rating=5, sample={"id": "1"}),
        attempt_input("c", rating=9, sample={"id": "1"}),
    )
    challenge.refresh_from_db()
    evaluation.evaluation_compute(challenge_id=challenge.pk)
    once = _numbers(_view(challenge).rows)
    evaluation.evaluation_compute(challenge_id=challenge.pk)
    assert _numbers(_view(challenge).rows) == once
    by = {r.external_id: r for r in _view(challenge).rows}
    assert (by["a"].score, by["a"].n, by["b"].score, by["c"].rank) == (6.0, 2, 5.0, 1)


def test_min_attempts_lists_a_player_as_not_ranked():
    challenge = _challenge(min_attempts=2, slice_by=None)
    record(
        challenge,
        attempt_input("a", rating=4, sample={"id": "1"}),
        attempt_input("a", rating=8, sample={"id": "2"}),
        attempt_input("b", rating=10, sample={"id": "1"}),
    )
    evaluation.evaluation_compute(challenge_id=challenge.pk)
    rows = _view(challenge).rows
    assert [(r.external_id, r.rank) for r in rows] == [("a", 1), ("b", None)]
    assert rows[1].ci_low is None and rows[1].tier is None


def test_practice_hidden_attempts_and_hidden_players_never_count():
    challenge = _challenge(slice_by=None)
    _attempts(challenge, ["a", "b", "c", "d"])
    hidden_attempt = Attempt.objects.filter(player__external_id="a").first()
    moderation.attempt_set_hidden(attempt=hidden_attempt, hidden=True, reason="copied")
    Attempt.objects.filter(player__external_id="b").update(practice=True)
    evaluation.evaluation_compute(challenge_id=challenge.pk)
    view = _view(challenge)
    assert {r.external_id for r in view.rows} == {"a", "c", "d"}
    assert _numbers(view.rows) == _engine_numbers(
        _expected(challenge, _brute(challenge, exclude={"b"}))
    )
    # A player hidden since the last computation leaves the board at once …
    moderation.player_hide(player=Player.objects.get(external_id="c"), challenge=None, reason="x")
    assert "c" not in {r.external_id for r in _view(challenge).rows}
    # … and the recomputation ranks without them.
    evaluation.evaluation_compute(challenge_id=challenge.pk)
    view = _view(challenge)
    assert _numbers(view.rows) == _engine_numbers(
        _expected(challenge, _brute(challenge, exclude={"b", "c"}))
    )


def test_nothing_recorded_after_a_freeze_reaches_the_public(staff):
    challenge = _challenge(slice_by=None)
    _attempts(challenge, ["a", "b"])
    before = _brute(challenge)
    setup_services.challenge_update(challenge=challenge, data={"freeze_at": timezone.now()})
    time.sleep(0.01)
    record(
        challenge,
        attempt_input("late", rating=10, sample={"id": "q1"}),
        attempt_input("a", rating=10, sample={"id": "q2"}),
    )
    challenge.refresh_from_db()
    evaluation.evaluation_compute(challenge_id=challenge.pk)
    public = _view(challenge)
    assert public.attempts == len(before)
    assert _numbers(public.rows) == _engine_numbers(_expected(challenge, before))
    live = _view(challenge, user=staff)
    assert "late" in {r.external_id for r in live.rows}
    assert live.attempts == len(before) + 2


def test_a_rescore_switch_shows_intervals_of_its_own_scores():
    challenge = _challenge(slice_by=None)
    rng = random.Random(5)
    record(
        challenge,
        *[
            attempt_input(
                p, rating=rng.randint(0, 10), elapsed_ms=rng.randint(1, 999), sample={"id": f"q{i}"}
            )
            for p in ("a", "b", "c")
            for i in range(10)
        ],
    )
    evaluation.evaluation_compute(challenge_id=challenge.pk)
    update = setup_services.challenge_update(
        challenge=challenge, data={"scoring_strategy": "fastest"}
    )
    rescoring.job_run_inline(job=update.job)
    challenge.refresh_from_db()
    assert challenge.active_version_id == update.new_version.pk
    stored = EvaluationBoard.objects.get(
        challenge=challenge, version=update.new_version, slice="", frozen=False
    )
    switched = HistoryRecord.objects.get(challenge=challenge, version=update.new_version)
    assert stored.computed_at <= switched.switched_at  # computed before the switch
    view = _view(challenge)
    by = {r.external_id: r for r in view.rows}
    for player in ("a", "b", "c"):
        times = Attempt.objects.filter(player__external_id=player).values_list(
            "elapsed_ms", flat=True
        )
        assert by[player].score == pytest.approx(sum(times) / len(times))
    assert [r.rank for r in sorted(view.rows, key=lambda r: r.score)] == [1, 2, 3]  # lower wins


def test_a_best_attempt_board_computes_nothing():
    challenge = make_challenge(scoring_strategy="highest_rating")
    record(challenge, attempt_input("a", rating=3, sample={"id": "1"}))
    assert evaluation.evaluation_compute(challenge_id=challenge.pk) == 0
    assert not EvaluationBoard.objects.exists()


def test_unpaired_without_a_sample_key():
    challenge = _challenge(sample_key="", slice_by=None)
    _attempts(challenge, ["a", "b"])
    evaluation.evaluation_compute(challenge_id=challenge.pk)
    view = _view(challenge)
    assert not view.paired and view.items == 0 and len(view.rows) == 2


def test_older_intervals_never_replace_newer_ones():
    challenge = _challenge(slice_by=None)
    _attempts(challenge, ["a", "b"])
    evaluation.evaluation_compute(challenge_id=challenge.pk)
    challenge.refresh_from_db()
    stored = EvaluationBoard.objects.get(challenge=challenge, slice="")
    late = EvaluationBoard(
        challenge=challenge,
        version_id=stored.version_id,
        frozen=False,
        slice="",
        stamp="older",
        computed_at=stored.computed_at - timedelta(seconds=5),
        attempts=1,
        rows=[],
    )
    written = evaluation.boards_write(
        [late], challenge=challenge, version_id=stored.version_id, as_of=late.computed_at
    )
    assert written is False
    assert EvaluationBoard.objects.get(challenge=challenge, slice="").stamp == stored.stamp
    newer = stored.computed_at + timedelta(seconds=5)
    late.computed_at = newer
    assert evaluation.boards_write(
        [late], challenge=challenge, version_id=stored.version_id, as_of=newer
    )
    assert EvaluationBoard.objects.get(challenge=challenge, slice="").stamp == "older"


@pytest.mark.django_db(transaction=True)
def test_parallel_workers_leave_one_set_of_boards():
    if connection.vendor != "postgresql":
        pytest.skip("row locks and parallel transactions: PostgreSQL")
    challenge = _challenge()
    _attempts(challenge, [f"p{i}" for i in range(5)])
    workers = 6
    barrier = threading.Barrier(workers)
    errors: list[BaseException] = []

    def compute() -> None:
        try:
            barrier.wait()
            evaluation.evaluation_compute(challenge_id=challenge.pk)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=compute) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    stored = EvaluationBoard.objects.filter(challenge=challenge)
    assert stored.count() == 1 + len(TOPICS)  # the whole board and each slice, once
    assert len({b.computed_at for b in stored}) == 1  # all from one computation


def test_hostile_slice_values_make_no_slice_and_no_error():
    challenge = _challenge()
    record(
        challenge,
        attempt_input("a", rating=5, sample={"id": "1", "topic": "x" * 300}),
        attempt_input("a", rating=6, sample={"id": "2", "topic": {"nested": [1, 2]}}),
        attempt_input("b", rating=7, sample={"id": "1", "topic": 3}),
        attempt_input("b", rating=8, sample={"id": "2"}),
        attempt_input("c", rating=9, sample=None),
    )
    evaluation.evaluation_compute(challenge_id=challenge.pk)
    view = _view(challenge)
    assert "x" * 300 not in view.slices
    assert view.slices.get("3") == 1  # a number is compared as text
    assert len(view.slices) == 2
    assert view.attempts == 5 and not view.paired  # c's attempt names no item


def test_numeric_item_ids_pair_players():
    challenge = _challenge(slice_by=None)
    record(
        challenge,
        *[attempt_input(p, rating=r, sample={"id": i}) for p, r in (("a", 4), ("b", 4))
          for i in range(1, 6)],
    )  # fmt: skip
    evaluation.evaluation_compute(challenge_id=challenge.pk)
    view = _view(challenge)
    assert view.paired and view.items == 5
    a, b = view.rows
    assert (a.ci_low, a.ci_high, a.rank) == (b.ci_low, b.ci_high, b.rank) == (4.0, 4.0, 1)


def test_a_change_of_the_board_fields_never_serves_numbers_made_with_the_old_ones(
    monkeypatch,
):
    challenge = _challenge(slice_by=None)
    record(
        challenge,
        attempt_input("a", rating=4, sample={"id": "1"}),
        attempt_input("a", rating=8, sample={"id": "2"}),
    )
    evaluation.evaluation_compute(challenge_id=challenge.pk)
    assert _view(challenge).rows[0].score == 6.0  # the mean
    setup_services.challenge_update(challenge=challenge, data={"aggregate": "sum"})
    asked = []
    monkeypatch.setattr(evaluation, "_refresh_request", asked.append)  # no worker yet
    stale = _view(challenge)
    assert stale.pending and stale.rows == [] and asked == [challenge.pk]
    evaluation.evaluation_compute(challenge_id=challenge.pk)  # the worker
    assert _view(challenge).rows[0].score == 12.0  # the sum


def test_a_costly_board_is_recomputed_at_most_a_third_of_the_time(settings, monkeypatch):
    """Under steady ingestion the intervals are asked for once per
    PODIUM_RANKING_MAX_AGE_MS, or once per three times the last computation's duration
    when that is longer: a board whose computation takes 4 s is asked for again only
    12 s after the last ask, however many reads find its data changed."""
    from django.core.cache import cache

    from challenges.leaderboards import evaluation as ev

    settings.PODIUM_RANKING_MAX_AGE_MS = 1000
    sent = []
    monkeypatch.setattr(ev.enqueue, "evaluation_refresh", lambda **kw: not sent.append(kw))
    cache.set(ev._cost_key(7), 4.0)
    assert ev._refresh_spacing_s(7) == 12
    ev._refresh_request(7)
    ev._refresh_request(7)
    assert len(sent) == 1
    cache.set(ev._cost_key(8), 0.05)  # a cheap board: the lag alone spaces the asks
    assert ev._refresh_spacing_s(8) == 1
    settings.PODIUM_RANKING_MAX_AGE_MS = 0  # no lag wanted: the cost does not space them
    assert ev._refresh_spacing_s(7) == 1


def test_a_computation_records_its_cost():
    from django.core.cache import cache

    from challenges.leaderboards import evaluation as ev

    challenge = make_challenge(scoring_strategy="highest_rating", board="aggregate")
    record(challenge, *[attempt_input(f"p{i % 3}", rating=i % 10) for i in range(12)])
    ev.evaluation_compute(challenge_id=challenge.pk)
    cost = cache.get(ev._cost_key(challenge.pk))
    assert isinstance(cost, float) and cost > 0
