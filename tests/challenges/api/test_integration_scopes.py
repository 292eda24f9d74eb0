"""What an integration token may write (issue 28, finding 9; docs/words-and-data.md,
"Who may write what"): a token given IntegrationScope rows records attempts only to
those challenges (403 elsewhere), and the display names it sends rename only players who
have played nowhere else — a second integration cannot rename a player on every board.
A token with no scope records everywhere, as before."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from challenges.models import IntegrationScope, Player
from challenges.permissions import OUT_OF_SCOPE
from tests.factories import WEIGHTED_SEED, make_challenge
from tests.urls import attempts_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def boards():
    return make_challenge(**{**WEIGHTED_SEED, "name": "A"}), make_challenge(
        **{**WEIGHTED_SEED, "name": "B"}
    )


@pytest.fixture
def scoped(django_user_model, boards):
    """An integration token scoped to challenge B."""
    from django.contrib.auth.models import Group
    from rest_framework.authtoken.models import Token

    user = django_user_model.objects.create_user("second", password="x-long-Password-1")
    user.groups.add(Group.objects.get(name="Integrations"))
    IntegrationScope.objects.create(user=user, challenge=boards[1])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def post(api, challenge, player, name):
    body = {"player": player, "player_name": name, "succeeded": True}
    return api.post(attempts_url(challenge.pk), body, format="json")


def test_a_scoped_token_records_only_to_its_challenges(scoped, boards):
    a, b = boards
    refused = post(scoped, a, "p", "P")
    assert refused.status_code == 403
    assert refused.json() == {"detail": OUT_OF_SCOPE}
    assert post(scoped, b, "p", "P").status_code == 201


def test_an_unscoped_token_records_everywhere(integration_api, boards):
    for challenge in boards:
        assert post(integration_api, challenge, "p", "P").status_code == 201


def test_a_scoped_token_cannot_rename_a_player_of_other_boards(integration_api, scoped, boards):
    a, b = boards
    assert post(integration_api, a, "ada", "Ada").status_code == 201
    response = post(scoped, b, "ada", "Mallory")
    assert response.status_code == 201
    assert response.json()["display_name"] == "Ada"  # the name kept, as the answer says
    assert Player.objects.get(external_id="ada").display_name == "Ada"
    # A player of its own challenges only: renamed.
    assert post(scoped, b, "bob", "Bob").status_code == 201
    renamed = post(scoped, b, "bob", "Robert")
    assert renamed.json()["display_name"] == "Robert"


def test_staff_and_admins_are_never_scoped(admin_api, boards, admin):
    IntegrationScope.objects.create(user=admin, challenge=boards[1])
    assert post(admin_api, boards[0], "p", "P").status_code == 201
