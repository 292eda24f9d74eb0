"""API: the OpenAPI schema at /api/schema/, the reference at /api/docs/ (the schema as a
page, no script) and the explorer at /api/docs/explorer/ (no CDN)."""

from __future__ import annotations

import re

import pytest
import yaml
from django.conf import settings
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.urls import reverse

# A reference to a CDN is a URL naming one (a bare substring matched a random CSRF token
# holding "cdN" once: the pages' tokens are random text).
CDN = re.compile(
    r"(?:https?:)?//[^\s\"'<>]*(?:cdn|jsdelivr|unpkg|cloudflare|googleapis)", re.IGNORECASE
)


@pytest.fixture
def schema(anon_api) -> dict:
    resp = anon_api.get(reverse("schema"), {"format": "json"})
    assert resp.status_code == 200, resp.content
    return resp.json()


def test_schema_is_public_openapi_3(anon_api):
    resp = anon_api.get(reverse("schema"))

    assert resp.status_code == 200
    assert "openapi" in resp["Content-Type"]
    doc = yaml.safe_load(resp.content)
    assert str(doc["openapi"]).startswith("3.")
    assert doc["info"]["title"] == "Podium API"


def test_schema_lists_the_api_routes(schema):
    paths = schema["paths"]

    assert {"get", "post"} <= set(paths["/api/challenges/"])
    assert {"get", "patch", "delete"} <= set(paths["/api/challenges/{id}/"])
    assert "post" in paths["/api/challenges/{id}/attempts/"]
    assert "get" in paths["/api/challenges/{id}/leaderboard/"]


def test_schema_documents_leaderboard_query_and_response(schema):
    operation = schema["paths"]["/api/challenges/{id}/leaderboard/"]["get"]
    query = {p["name"]: p for p in operation["parameters"] if p["in"] == "query"}
    components = schema["components"]["schemas"]

    assert {"limit", "offset", "player", "slice"} <= set(query)
    assert query["limit"]["schema"]["type"] == "integer"
    ref = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    board = components[ref.rsplit("/", 1)[-1]]
    assert {"version", "count", "results"} <= set(board["properties"])
    row_ref = board["properties"]["results"]["items"]["$ref"]
    row = components[row_ref.rsplit("/", 1)[-1]]
    assert set(row["properties"]) == {
        "rank",
        "player",
        "display_name",
        "score",
        "attempt_id",
        "created_at",
        "scores",  # python scorers only (issue 14): so not required
        # aggregate boards (issue 29), which have no attempt_id nor created_at
        "n",
        "ci_low",
        "ci_high",
        "rank_low",
        "rank_high",
        "tier",
    }
    assert set(row.get("required", [])) == {"rank", "player", "display_name", "score"}


def test_schema_documents_attempt_fields(schema):
    operation = schema["paths"]["/api/challenges/{id}/attempts/"]["post"]
    components = schema["components"]["schemas"]
    ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    one_of = components[ref.rsplit("/", 1)[-1]]["oneOf"]  # an object or a list of them
    [single] = [s["$ref"] for s in one_of if "$ref" in s]
    [many] = [s["items"]["$ref"] for s in one_of if s.get("type") == "array"]
    assert single == many
    attempt_in = components[single.rsplit("/", 1)[-1]]

    assert {
        "player",
        "player_name",
        "succeeded",
        "tokens_total",
        "elapsed_ms",
        "rating",
        "created_at",
        "sample",
        "output",
        "messages",
    } <= set(attempt_in["properties"])
    assert {"player", "succeeded"} <= set(attempt_in["required"])
    assert attempt_in["properties"]["rating"]["maximum"] == 10
    assert attempt_in["properties"]["tokens_total"]["maximum"] == 2**53 - 1
    assert "201" in operation["responses"]


def test_schema_declares_token_auth(schema):
    schemes = schema["components"]["securitySchemes"]

    assert any(
        s.get("type") == "apiKey" and s.get("name") == "Authorization" for s in schemes.values()
    )


def test_schema_generates_without_warnings(tmp_path):
    out = tmp_path / "schema.yml"

    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))

    assert "/api/challenges/{id}/leaderboard/" in out.read_text()


def test_explorer_page_references_no_cdn_and_only_local_assets(anon_api):
    resp = anon_api.get(reverse("api-explorer"))

    assert resp.status_code == 200
    assert resp["Content-Type"].startswith("text/html")
    html = resp.content.decode()
    assert CDN.search(html) is None, CDN.search(html)
    # No inline script (the Content-Security-Policy forbids it): the start-up code is a
    # script file served by the docs view itself, and it points at our schema.
    assert re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html) is None
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert any(a.endswith("swagger-ui-bundle.js") for a in assets)
    (init,) = [a for a in assets if not a.startswith(settings.STATIC_URL)]
    assert init.startswith(reverse("api-explorer"))
    script = anon_api.get(init.replace("&amp;", "&"))
    assert script.status_code == 200
    assert "javascript" in script["Content-Type"]
    assert reverse("schema") in script.content.decode()
    assert CDN.search(script.content.decode()) is None
    for asset in assets:
        if asset == init:
            continue
        assert asset.startswith(settings.STATIC_URL), asset
        assert finders.find(asset[len(settings.STATIC_URL) :]) is not None, (
            f"{asset} is not served locally"
        )


def test_the_reference_lists_every_operation_of_the_schema_without_a_script(anon_api, schema):
    resp = anon_api.get(reverse("api-docs"))
    assert resp.status_code == 200 and resp["Content-Type"].startswith("text/html")
    html = resp.content.decode()
    assert "<script" not in html and "<style" not in html and " style=" not in html
    assert CDN.search(html) is None
    for path, item in schema["paths"].items():
        for method in ("get", "post", "put", "patch", "delete"):
            if method in item:
                assert f"<code>{method.upper()} {path}</code>" in html, (method, path)
                assert f'id="{item[method]["operationId"]}"' in html
    # A body field, a header and a response of the attempts route are spelled out.
    assert "<code>Idempotency-Key</code>" in html and "<code>player</code>" in html
    assert "Outside the challenge&#x27;s window" in html
    assert 'href="/api/docs/explorer/"' in html and 'href="/api/schema/"' in html
    assert len(resp.content) < 200_000
