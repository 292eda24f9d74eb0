"""Try it results a person can read (issue 15): a snippet's scores as a table (never a
Python repr), its metadata labelled, the sample shown, detail values beside their labels
and dates that do not wrap."""

from __future__ import annotations

import pytest
from django.template.loader import render_to_string

from challenges.admin import preview
from challenges.admin.views import TRY_TEMPLATE
from scoring import sandbox
from tests.challenges.admin.test_admin_try_python import SETUP
from tests.factories import WEIGHTED_SEED, attempt_input, make_challenge, record

pytestmark = pytest.mark.django_db


def test_snippet_scores_are_a_table_and_the_sample_is_shown():
    if not sandbox.availability().available:
        pytest.skip(sandbox.availability().message)
    challenge = make_challenge(scoring_strategy="fastest")
    record(challenge, attempt_input("paris", elapsed_ms=3, sample={"answer": "Paris"}))
    result = preview.try_setup(challenge=challenge, setup=SETUP)
    html = render_to_string(TRY_TEMPLATE, {"result": result, "challenge": challenge})
    assert "{'" not in html and "&#x27;" not in html  # no Python repr
    assert '<table class="scoring-scores">' in html
    assert '<th scope="row">is_complete</th><td class="num">1.00</td>' in html
    assert "length" in html  # the metadata, labelled
    assert "&quot;answer&quot;: &quot;Paris&quot;" in html  # the sample, as JSON
    assert 'class="quiet nowrap"' in html  # the attempt's date stays on one line


def test_plugin_details_are_a_label_value_grid():
    challenge = make_challenge(**WEIGHTED_SEED)
    record(challenge, attempt_input("a", rating=5, elapsed_ms=12000, tokens_total=1200))
    result = preview.try_setup(challenge=challenge, setup=challenge.setup_dict())
    html = render_to_string(TRY_TEMPLATE, {"result": result, "challenge": challenge})
    assert '<dl class="scoring-details">' in html
    assert "<dt>rating_contribution</dt><dd>75.00</dd>" in html
