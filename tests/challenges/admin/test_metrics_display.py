"""Metrics as people read them: the filter, and the panel on the admin change page."""

from __future__ import annotations

import pytest

from challenges.templatetags.podium_metrics import metric_text
from tests.challenges.admin.test_admin_try_python import field_completeness_challenge
from tests.urls import change_url


def test_metric_text():
    assert metric_text(1 / 3) == "0.3333"
    assert metric_text(None) == "no data"
    assert metric_text(12345678.9) == "12,345,679"
    assert metric_text(7) == "7"
    assert metric_text({"accuracy": 0.75, "tp": 3, "count": 4}) == "accuracy 0.75 · tp 3 · count 4"
    value = {"accuracy": 0.5, "classes": {"a": {"precision": 1.0, "support": 2}}}
    assert metric_text(value) == "accuracy 0.5 · class a: precision 1, support 2"


@pytest.mark.django_db
def test_admin_change_page_shows_the_metrics(admin_client):
    challenge = field_completeness_challenge()
    html = admin_client.get(change_url(challenge)).content.decode()
    row = html.split('data-metric="Field Completeness"')[1].split("</tr>")[0]
    assert "<td>mean</td>" in row and "<td>0.3333</td>" in row
