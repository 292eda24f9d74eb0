"""Issue 15 item 8: the lockout page says for how long and offers a way back; the API docs
page has no inline style (the CSP would refuse it and log an error)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_lockout_page_gives_the_duration_and_a_way_back(django_user_model, settings):
    settings.AXES_COOLOFF_TIME = 20 / 60  # hours
    django_user_model.objects.create_superuser("root", "root@example.com", "right-password-1")
    client = Client()
    url = reverse("admin:login")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post(url, {"username": "root", "password": "wrong"})
    locked = client.post(url, {"username": "root", "password": "right-password-1"})
    assert locked.status_code == 429
    html = locked.content.decode()
    assert "20 minutes" in html
    assert f'href="{url}"' in html  # back to the sign-in form
    assert f'href="{reverse("challenges:home")}"' in html  # back to the public site


def test_api_docs_page_has_no_inline_style(client):
    """The CSP allows no inline style: the Swagger page must not carry one."""
    html = client.get(reverse("api-explorer")).content.decode()
    assert "<style" not in html and " style=" not in html
    assert "/static/css/api-docs.css" in html


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1", 1),
        (7, 7),
        (str(2**63 - 1), 2**63 - 1),
        (str(2**63), None),
        ("0", None),
        ("-1", None),
        ("+1", None),
        (" 1", None),
        ("١٢", None),  # digits, but not ASCII
        ("1e3", None),
        (True, None),
        (1.0, None),
        (None, None),
    ],
)
def test_the_one_id_parser(raw, expected):
    """Issue 27: one id parser for the admin, the API and the selectors."""
    from challenges.text import row_id

    assert row_id(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, 1),
        ("", 1),
        ("3", 3),
        ("0", 1),
        ("-4", 1),
        ("abc", 1),
        ("9" * 5000, 1),  # past Python's digit limit: not a number
        (str(10**12), 10**6),  # past any board's last page: the page answers 404
    ],
)
def test_one_page_number_parser(raw, expected):
    from challenges.text import page_number

    assert page_number(raw) == expected
