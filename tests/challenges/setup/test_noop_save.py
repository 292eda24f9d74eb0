"""Issue 15 item 2: a save that changes only how the setup is written (line endings,
trailing blank lines) makes no new scoring version and no rescore."""

from __future__ import annotations

import pytest

from challenges.models import RescoreJob, ScoringVersion
from challenges.setup import services as setup_services
from challenges.setup import versions
from scoring import sandbox
from tests.challenges.admin.admin_pages import page_data
from tests.factories import make_challenge
from tests.urls import change_url

pytestmark = pytest.mark.django_db

CODE = 'def compute_scores(sample):\n    return {"ok": sample.get("x") == 1}\n'


@pytest.fixture
def snippet():
    if not sandbox.availability().available:
        pytest.skip(sandbox.availability().message)
    return make_challenge(
        name="Snippet", scoring_strategy="python", scoring_code=CODE, score_key="ok"
    )


@pytest.mark.parametrize(
    "written",
    [
        CODE.replace("\n", "\r\n"),  # a browser's textarea
        CODE.replace("\n", "\r"),
        CODE + "\n\n",
        CODE.rstrip("\n"),
    ],
)
def test_representation_only_change_makes_no_version(snippet, written):
    update = setup_services.challenge_update(challenge=snippet, data={"scoring_code": written})
    assert update.new_version is None and update.job is None
    assert ScoringVersion.objects.filter(challenge=snippet).count() == 1
    assert not RescoreJob.objects.filter(challenge=snippet).exists()


def test_a_real_change_still_makes_a_version(snippet):
    update = setup_services.challenge_update(
        challenge=snippet, data={"scoring_code": CODE.replace("== 1", "== 2")}
    )
    assert update.new_version is not None


def test_admin_textarea_crlf_save_makes_no_version(admin_client, snippet):
    url = change_url(snippet)
    data = page_data(admin_client, url)
    data["scoring_code"] = data["scoring_code"].replace("\n", "\r\n")
    response = admin_client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert ScoringVersion.objects.filter(challenge=snippet).count() == 1


def test_stored_code_uses_plain_newlines(snippet):
    challenge = make_challenge(
        name="Windows",
        scoring_strategy="python",
        scoring_code=CODE.replace("\n", "\r\n"),
        score_key="ok",
    )
    assert "\r" not in challenge.scoring_code


def test_diff_ignores_line_endings():
    before = {"scoring_strategy": "python", "scoring_code": CODE}
    after = {"scoring_strategy": "python", "scoring_code": CODE.replace("\n", "\r\n")}
    assert versions.version_diff(before, after) == []
