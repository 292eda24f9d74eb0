"""Issue 15 item 5: the README, the page legend and the API docs state the tie rule
exactly as the contract does (earlier created_at first; only a full tie shares a rank)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from challenges.leaderboards.tie_rule import TIE_RULE
from tests.factories import make_challenge
from tests.urls import page_url, schema_url

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[3]


def words(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_readme_states_the_rule_and_not_the_old_one():
    readme = words((ROOT / "README.md").read_text())
    assert TIE_RULE in readme
    assert "ties share a rank" not in readme


def test_challenge_page_legend_states_the_rule(client):
    challenge = make_challenge(name="Speed", scoring_strategy="fastest")
    html = client.get(page_url(challenge.slug)).content.decode()
    assert TIE_RULE in html


def test_api_schema_states_the_rule(client):
    schema = client.get(schema_url()).json()
    operation = schema["paths"]["/api/challenges/{id}/leaderboard/"]["get"]
    assert TIE_RULE in operation["description"]
