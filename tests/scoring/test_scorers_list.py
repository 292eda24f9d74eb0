"""Several scorers in the sandbox (issue 14), engine only: every per-attempt scorer runs
under the same failure rules and one scorer's failure of any kind (an exception, a
timeout, a result the contract refuses, a module that will not load) leaves the others'
results intact; only a failing ranking scorer makes the attempt unranked."""

from __future__ import annotations

import pytest

from scoring.engine.protocol import AttemptMetrics, ScoringContext
from scoring.engine.scorers_list import ScorerList, ScorersInvalid, validate_scorers
from scoring.engine.snippet import AttemptPayload

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pool():
    from scoring import sandbox
    from tests.scoring.test_snippet import sandbox_or_skip

    sandbox_or_skip()
    return sandbox.shared_pool()


GOOD = "def compute_scores(sample):\n    return {'length': len(sample.get('answer', ''))}\n"
MUTATES = "def compute_scores(sample):\n    sample['answer'] = 'x' * 100\n    return {'ok': True}\n"


def scorers(*codes: str, qa: int | None = None) -> list[dict]:
    out = []
    for i, code in enumerate(codes):
        purpose = "qa" if i == qa else "score"
        out.append({"key": f"s{i}", "compute_scores_snippet": code, "purpose": purpose})
    return validate_scorers(out, "")[0]


def run(pool, specs, rank_by, answers, timeout_ms=1000):
    scorer = ScorerList(specs, rank_by, timeout_ms=timeout_ms, owner="test", sandbox=pool)
    items = [(AttemptMetrics(True), ScoringContext())] * len(answers)
    payloads = [AttemptPayload(f'{{"answer": "{a}"}}') for a in answers]
    return scorer.score_many(items, payloads)


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ("def compute_scores(sample):\n    raise KeyError('nope')\n", "KeyError"),
        ("def compute_scores(sample):\n    while True:\n        pass\n", "timed out"),
        ("def compute_scores(sample):\n    return {'s': {1, 2}}\n", "set"),
        ("def compute_scores(sample):\n    return {'x': 'y' * 20000}\n", "characters|str"),
        ("raise SystemExit(3)\ndef compute_scores(sample):\n    return {}\n", "SystemExit"),
        ("def compute_scores(sample):\n    return [1]\n", "list"),
    ],
)
def test_one_failing_scorer_leaves_the_others(pool, bad, reason):
    specs = scorers(GOOD, bad, GOOD.replace("length", "size"))
    outcomes = run(pool, specs, "s2.size", ["abc", "de"], timeout_ms=300)
    assert [o.score for o in outcomes] == [3.0, 2.0]
    for outcome in outcomes:
        assert outcome.error == ""
        assert outcome.details["scorers"]["s0"]["scores"] == {"length": outcome.score}
        failed = outcome.details["scorers"]["s1"]
        assert failed["scores"] == {}
        import re

        assert re.search(reason, failed["error"]), failed["error"]


def test_a_failing_ranking_scorer_makes_the_attempt_unranked(pool):
    bad = "def compute_scores(sample):\n    return {'n': None}\n"
    outcomes = run(pool, scorers(GOOD, bad), "s1.n", ["abc"])
    assert outcomes[0].score is None and "None" in outcomes[0].error
    assert outcomes[0].details["scorers"]["s0"]["scores"] == {"length": 3.0}


def test_a_scorer_that_changes_its_sample_changes_no_others(pool):
    outcomes = run(pool, scorers(MUTATES, GOOD), "s1.length", ["abc"])
    assert outcomes[0].score == 3.0


def test_qa_results_are_kept_apart(pool):
    qa = "def compute_scores(sample):\n    return {'short': len(sample['answer']) < 3}\n"
    outcomes = run(pool, scorers(GOOD, qa, qa=1), "s0.length", ["abc", "d"])
    assert outcomes[0].details["qa"]["s1"] == {
        "scores": {"short": 0.0},
        "metadata": {},
        "failed": ["short"],
    }
    assert outcomes[1].details["qa"]["s1"]["failed"] == []
    assert "scorers" not in outcomes[0].details


def test_async_scorers_mix_with_plain_ones(pool):
    async_good = GOOD.replace("def compute_scores", "async def compute_scores").replace(
        "length", "alen"
    )
    outcomes = run(pool, scorers(GOOD, async_good), "s1.alen", ["abcd"])
    assert outcomes[0].score == 4.0
    assert outcomes[0].details["scorers"]["s0"]["scores"] == {"length": 4.0}


def test_validation_names_each_field():
    with pytest.raises(ScorersInvalid) as caught:
        validate_scorers(
            [
                {"key": "a", "compute_scores_snippet": "def f(:"},
                {"key": "a", "compute_scores_snippet": GOOD, "purpose": "qa"},
            ],
            "a.x",
        )
    errors = caught.value.errors
    assert "scorers[0].compute_scores_snippet" in errors
    assert "scorers[1].key" in errors
