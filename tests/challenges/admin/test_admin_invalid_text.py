"""The admin refuses text that cannot be stored everywhere (issue 12, finding 5): a lone
surrogate or a NUL written as a JSON escape in the config is a form error on its field,
and nothing is saved."""

from __future__ import annotations

import pytest

from challenges.models import ScoringVersion
from scoring.project_registry import registry
from tests.challenges.admin.admin_pages import field_errors, page_data
from tests.factories import WEIGHTED_SEED, make_challenge
from tests.urls import change_url

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "config",
    ['{"anything": "\\ud800"}', '{"\\udfff": 1}', '{"a": [{"b": "x\\u0000"}]}'],
)
def test_config_json_with_bad_text_is_a_form_error(admin_client, config):
    challenge = make_challenge(**{k: v for k, v in WEIGHTED_SEED.items() if k != "name"})
    before = challenge.scoring_config
    with registry().temporarily("t.tokens", "tests.plugins:TokensScorer"):
        data = page_data(
            admin_client,
            change_url(challenge),
            scoring_plugin_id="t.tokens",
            scoring_entrypoint="tests.plugins:TokensScorer",
            scoring_config=config,
        )
        response = admin_client.post(change_url(challenge), data)
    errors = field_errors(response)
    assert "scoring_config" in errors, errors
    assert "valid Unicode" in " ".join(errors["scoring_config"])
    response.content.decode("utf-8")  # the page showing the error renders
    challenge.refresh_from_db()
    assert challenge.scoring_config == before
    assert ScoringVersion.objects.filter(challenge=challenge).count() == 1
