"""Security headers, /healthz, request size limits, API rate limits, login lockout."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from tests.factories import counts, make_challenge
from tests.urls import attempts_url, detail_url, schema_url

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("route", ["challenges:home", "admin:login", "challenge-list", "api-docs"])
def test_security_headers_on_every_kind_of_page(client, route):
    resp = client.get(reverse(route))
    assert resp.status_code == 200
    csp = resp["Content-Security-Policy"]
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";") if d.strip())
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    assert directives["default-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    assert directives["object-src"] == "'none'"
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert resp["X-Content-Type-Options"] == "nosniff"
    assert resp["Referrer-Policy"] == "same-origin"
    assert resp["X-Frame-Options"] == "DENY"


def test_healthz_reports_database_and_broker(client):
    resp = client.get("/healthz")
    assert resp.status_code == 200
    body = resp.json()
    assert body["status"] == "ok"
    assert set(body["checks"]) == {"database", "broker"}
    assert all(c["ok"] and c["ms"] >= 0 for c in body["checks"].values())
    assert "no-cache" in resp["Cache-Control"] or "max-age=0" in resp["Cache-Control"]


def test_healthz_is_503_naming_the_failed_check_without_leaking(client, monkeypatch):
    from config import health

    def broken():
        raise ConnectionRefusedError("redis://:hunter2@10.0.0.5:6379 refused")

    monkeypatch.setitem(health.CHECKS, "broker", broken)
    resp = client.get("/healthz")
    assert resp.status_code == 503
    body = resp.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["broker"] == {
        "ok": False,
        "error": "ConnectionRefusedError",
        "ms": body["checks"]["broker"]["ms"],
    }
    assert body["checks"]["database"]["ok"] is True
    assert "hunter2" not in resp.content.decode()


def test_healthz_only_answers_get(client):
    assert client.post("/healthz").status_code == 405


def test_body_over_the_limit_is_413_and_writes_nothing(integration_api, settings):
    settings.PODIUM_MAX_BODY_BYTES = 4096
    challenge = make_challenge()
    before = counts()
    body = json.dumps({"player": "p1", "succeeded": True, "output": "x" * 5000})
    resp = integration_api.post(attempts_url(challenge.pk), body, content_type="application/json")
    assert resp.status_code == 413
    assert resp.json() == {
        "detail": "The request body is larger than the limit of 4096 bytes.",
        "limit_bytes": 4096,
    }
    assert counts() == before
    small = json.dumps({"player": "p1", "succeeded": True, "output": "x" * 100})
    ok = integration_api.post(attempts_url(challenge.pk), small, content_type="application/json")
    assert ok.status_code == 201


def test_body_over_the_limit_outside_the_api_is_413_too(client, settings):
    settings.PODIUM_MAX_BODY_BYTES = 2048
    resp = client.post(reverse("admin:login"), {"username": "x" * 3000, "password": "y"})
    assert resp.status_code == 413
    assert b"larger than the limit of 2048 bytes" in resp.content


def test_bulk_request_over_the_count_limit_names_the_limit(integration_api, settings):
    settings.PODIUM_MAX_ATTEMPTS_PER_REQUEST = 3
    challenge = make_challenge()
    before = counts()
    body = [{"player": f"p{i}", "succeeded": True} for i in range(4)]
    resp = integration_api.post(attempts_url(challenge.pk), body, format="json")
    assert resp.status_code == 400
    assert "3" in json.dumps(resp.json())
    assert counts() == before


def test_attempts_are_rate_limited_per_token(integration_api, admin_api, settings):
    from rest_framework.settings import api_settings

    challenge = make_challenge()
    rates = dict(api_settings.DEFAULT_THROTTLE_RATES)
    monkey = {**rates, "attempts": "3/min"}
    from challenges.api.throttles import AttemptsThrottle

    original = AttemptsThrottle.THROTTLE_RATES
    AttemptsThrottle.THROTTLE_RATES = monkey
    try:
        body = {"player": "p1", "succeeded": True}
        codes = [
            integration_api.post(attempts_url(challenge.pk), body, format="json").status_code
            for _ in range(4)
        ]
        assert codes == [201, 201, 201, 429]
        limited = integration_api.post(attempts_url(challenge.pk), body, format="json")
        assert limited.status_code == 429
        assert 1 <= int(limited["Retry-After"]) <= 60
        assert "throttled" in limited.json()["detail"].lower()
        # Another token has its own budget; reads are not limited by it.
        assert admin_api.post(attempts_url(challenge.pk), body, format="json").status_code == 201
        assert integration_api.get(detail_url(challenge.pk)).status_code == 200
    finally:
        AttemptsThrottle.THROTTLE_RATES = original
    assert challenge.attempts.count() == 4


def test_login_is_locked_after_repeated_failures(django_user_model, settings):
    django_user_model.objects.create_superuser("root", "root@example.com", "right-password-1")
    client = Client()
    url = reverse("admin:login")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        resp = client.post(url, {"username": "root", "password": "wrong"})
        assert resp.status_code == 200  # the form again, with its error
    last_try = client.post(url, {"username": "root", "password": "wrong"})
    assert last_try.status_code == 429  # the failure that reaches the limit locks
    locked = client.post(url, {"username": "root", "password": "right-password-1"})
    assert locked.status_code == 429
    assert b"Too many failed sign-in attempts" in locked.content
    assert "_auth_user_id" not in client.session
    # Another account from the same address is not locked out by it.
    django_user_model.objects.create_superuser("other", "o@example.com", "right-password-2")
    ok = Client().post(url, {"username": "other", "password": "right-password-2"})
    assert ok.status_code == 302


def test_unknown_api_url_is_a_json_404_and_pages_stay_html(client):
    api = client.get("/api/challenges/not.a.number/")
    assert api.status_code == 404
    assert api["Content-Type"] == "application/json"
    assert api.json() == {"detail": "Not found."}
    page = client.get("/no-such-page/")
    assert page.status_code == 404
    assert page["Content-Type"].startswith("text/html")


def test_schema_documents_the_error_responses(anon_api):
    schema = anon_api.get(schema_url()).json()
    attempts = schema["paths"]["/api/challenges/{id}/attempts/"]["post"]["responses"]
    assert {"201", "400", "401", "403", "404", "413", "415", "429"} <= set(attempts)
    assert "Retry-After" in attempts["429"]["headers"]
    listing = schema["paths"]["/api/challenges/"]["get"]["responses"]
    assert "404" not in listing and "413" not in listing
    assert schema["components"]["schemas"]["Error"]["type"] == "object"
