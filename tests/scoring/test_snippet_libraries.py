"""A snippet may import jsonschema (the Python scorer reference's JSON-schema use case),
with the same confinement; nothing else of the virtualenv (issue 20, finding 12)."""

from __future__ import annotations

from scoring.engine.protocol import AttemptMetrics, ScoringContext
from scoring.engine.snippet import AttemptPayload, SnippetScorer, SnippetSetup
from scoring.sandbox import launch
from tests.scoring.test_snippet import sandbox_pool  # noqa: F401 - a fixture

VALIDATES = """
import jsonschema

SCHEMA = {"type": "object", "required": ["answer"],
          "properties": {"answer": {"type": "string", "minLength": 1}}}

def compute_scores(sample, solver_output):
    import json
    try:
        jsonschema.validate(json.loads(solver_output.output), SCHEMA)
    except (ValueError, jsonschema.ValidationError) as exc:
        return {"scores": {"valid": False}, "metadata": {"why": type(exc).__name__}}
    return {"valid": True}
"""


def _run(pool, code, outputs, owner):
    scorer = SnippetScorer(SnippetSetup(code, {}, "", 5000, owner), pool)
    items = [(AttemptMetrics(), ScoringContext())] * len(outputs)
    payloads = [AttemptPayload("null", out, "null") for out in outputs]
    return scorer.results(items, payloads)


def test_a_snippet_validates_json_with_jsonschema(sandbox_pool):  # noqa: F811
    outputs = ['{"answer": "Paris"}', '{"answer": ""}', "not json"]
    results = _run(sandbox_pool, VALIDATES, outputs, "jsonschema")
    assert [r.outcome.error for r in results] == ["", "", ""]
    assert [r.outcome.score for r in results] == [1.0, 0.0, 0.0]
    assert results[1].metadata == {"why": "ValidationError"}


def test_the_rest_of_the_virtualenv_stays_out_of_reach(sandbox_pool):  # noqa: F811
    code = (
        "def compute_scores(sample):\n"
        "    found = {}\n"
        "    for name in ('django', 'psycopg', 'jsonschema'):\n"
        "        try:\n"
        "            __import__(name)\n"
        "            found[name] = 1\n"
        "        except ImportError:\n"
        "            found[name] = 0\n"
        "    return found\n"
    )
    [result] = _run(sandbox_pool, code, [""], "venv-probe")
    assert result.scores == {"django": 0.0, "psycopg": 0.0, "jsonschema": 1.0}


def test_the_allowed_libraries_are_exactly_jsonschema_and_its_dependencies():
    assert set(launch.libraries()) <= set(launch.LIBRARIES)
    assert "jsonschema" in launch.libraries()
