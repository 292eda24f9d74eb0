"""The recorded attempts' JSON is built without the serializer (a bulk request returns a
thousand); AttemptOutSerializer still documents it, and the two must stay equal."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from challenges.api.serializers import AttemptOutSerializer
from challenges.api.views import attempt_fields
from tests.factories import attempt_input, make_challenge, record

pytestmark = pytest.mark.django_db


def test_attempt_fields_equal_the_serializer():
    challenge = make_challenge(scoring_strategy="fastest")
    recorded = record(
        challenge,
        attempt_input("bare", succeeded=False),
        attempt_input(
            "full",
            player_name="Zoë «full»",
            tokens_total=2**40,
            elapsed_ms=0,
            rating=10,
            created_at=datetime(2026, 3, 4, 5, 6, 7, 891000, tzinfo=UTC),
            sample={"q": [1, 2.5, None, True], "nested": {"x": "y"}},
            output="line 1\nline 2",
            messages=[{"role": "user", "content": "hi"}],
        ),
    )
    for r in recorded:
        r.attempt.score_status = r.status  # as the attempts route sets it
        expected = dict(AttemptOutSerializer(r.attempt).data)
        assert attempt_fields(r.attempt) == expected
        assert list(attempt_fields(r.attempt)) == list(expected)  # same key order
