"""Red/blue under concurrent sessions (PostgreSQL): submissions racing each other are
paired one at a time (no pairing twice, round-robin stays fair, a waiting submission is
paired once), and two judges racing on one pairing judge it once."""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from challenges.models import AuditEvent, Pairing, Submission
from challenges.redblue import services
from tests.challenges.redblue.factories import SUITE, make_red_blue, submit
from tests.challenges.rescoring._jobs import postgres_only
from tests.challenges.rescoring._threads import Session

pytestmark = pytest.mark.django_db(transaction=True)


def test_racing_submissions_are_paired_one_at_a_time():
    postgres_only()
    c = make_red_blue(defense_selection_policy="round_robin")
    for i in range(4):
        submit(c, f"b{i}", "blue")
    start = threading.Barrier(8)

    def attacker(n: int):
        def run():
            start.wait()
            return [submit(c, f"r{n}-{k}", "red") for k in range(5)]

        return run

    sessions = [Session(attacker(n)) for n in range(8)]
    for s in sessions:
        s.start()
    for s in sessions:
        s.outcome(timeout=120)
    pairs = list(Pairing.objects.filter(challenge=c).values_list("attack_id", "defense_id"))
    assert len(pairs) == len(set(pairs))
    met = Counter(d for _, d in pairs)
    assert len(met) == 4 and max(met.values()) - min(met.values()) <= 1
    # Every attack met exactly one defence: the first took the 4 waiting ones.
    per_attack = Counter(a for a, _ in pairs)
    assert sorted(per_attack.values()) == [1] * 39 + [4]
    assert Submission.objects.filter(team="red").count() == 40


def test_two_judges_racing_judge_once():
    postgres_only()
    c = make_red_blue()
    submit(c, "r", "red")
    pairing = submit(c, "b", "blue").pairings[0]
    start = threading.Barrier(2)

    def judge(breached: bool):
        def run():
            start.wait()
            verdict = {"categories": dict.fromkeys(SUITE, breached), "rating": 5}
            try:
                return services.judgement_record(pairing=pairing, judgement=verdict)
            except services.AlreadyJudged:
                return "refused"

        return run

    sessions = [Session(judge(True)), Session(judge(False))]
    for s in sessions:
        s.start()
    outcomes = [s.outcome() for s in sessions]
    assert sorted(isinstance(o, Pairing) for o in outcomes) == [False, True]
    assert "refused" in outcomes
    assert AuditEvent.objects.filter(kind="pairing_judgement").count() == 1
