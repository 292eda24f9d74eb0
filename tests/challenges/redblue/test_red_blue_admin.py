"""The admin of red/blue challenges: the settings validated on the challenge's page,
the read-only lists of teams, submissions and pairings, and the pairing matrix."""

from __future__ import annotations

import re

import pytest

from challenges.models import Challenge
from tests.challenges.admin.test_admin import form
from tests.challenges.redblue.factories import judge, make_red_blue, submit
from tests.urls import admin_url

pytestmark = pytest.mark.django_db


def test_the_challenge_page_sets_and_checks_the_red_blue_fields(admin_client):
    bad = admin_client.post(
        admin_url("challenge", "add"), form(format="red_blue", judge_suite="[]")
    )
    assert bad.status_code == 200 and not Challenge.objects.exists()
    assert "1 to 20 category codes" in bad.content.decode()
    good = admin_client.post(
        admin_url("challenge", "add"),
        form(format="red_blue", judge_suite='["SA", "V"]', severity_divisor="2"),
    )
    assert good.status_code == 302, good.content.decode()[:2000]
    made = Challenge.objects.get()
    assert (made.format, made.judge_suite, made.severity_divisor) == ("red_blue", ["SA", "V"], 2)


def test_lists_and_the_pairing_matrix(admin_client):
    c = make_red_blue(judge_suite=["SA", "V"])
    submit(c, "r1", "red", "ATTACK-ONE")
    first = submit(c, "b1", "blue").pairings[0]
    submit(c, "r2", "red")
    judge(first, breached=["V"], rating=4)
    for model in ("teammember", "submission", "pairing"):
        assert admin_client.get(admin_url(model)).status_code == 200
    assert admin_client.get(admin_url("submission", "add")).status_code == 403
    matrix = admin_client.get(admin_url("pairing", "matrix", c.pk))
    assert matrix.status_code == 200
    cells = re.findall(r"<td>([^<]*)</td>", matrix.content.decode())
    assert cells == ["V", "pending"]  # r1 × b1 judged (V breached), r2 × b1 waiting


def test_the_matrix_is_for_staff_with_the_view_permission(client, staff):
    c = make_red_blue()
    assert client.get(admin_url("pairing", "matrix", c.pk)).status_code == 302  # login
    client.force_login(staff)
    assert client.get(admin_url("pairing", "matrix", c.pk)).status_code == 403
