"""config/negotiation.py answers exactly what DRF's own negotiation answers."""

from __future__ import annotations

import pytest
from django.http import Http404
from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from config.negotiation import ContentNegotiation

RENDERERS = [JSONRenderer(), BrowsableAPIRenderer()]


def _request(query: str = "", **headers: str) -> Request:
    return Request(APIRequestFactory().get(f"/api/challenges/{query}", **headers))


def _answer(negotiation, request, format_suffix=None):
    try:
        renderer, media_type = negotiation.select_renderer(request, RENDERERS, format_suffix)
    except NotAcceptable:
        return "406"
    except Http404:  # an unknown ?format=
        return "404"
    return type(renderer), media_type


@pytest.mark.parametrize(
    ("query", "headers", "suffix"),
    [
        ("", {}, None),  # no Accept header: a bot's poll
        ("", {"HTTP_ACCEPT": "*/*"}, None),
        ("", {"HTTP_ACCEPT": "text/html,application/xhtml+xml,*/*;q=0.8"}, None),  # a browser
        ("", {"HTTP_ACCEPT": "application/json; indent=4"}, None),
        ("", {"HTTP_ACCEPT": "image/png"}, None),
        ("?format=api", {}, None),
        ("?format=json", {"HTTP_ACCEPT": "*/*"}, None),
        ("?format=", {}, None),
        ("?format=xml", {}, None),
        ("", {}, "api"),
        ("", {"HTTP_ACCEPT": ""}, None),
    ],
)
def test_the_same_renderer_and_media_type_as_drf(query, headers, suffix):
    request = _request(query, **headers)
    assert _answer(ContentNegotiation(), request, suffix) == _answer(
        DefaultContentNegotiation(), request, suffix
    )


@pytest.mark.django_db
def test_the_api_answers_json_without_an_accept_header_and_html_to_a_browser(client):
    assert client.get("/api/challenges/")["Content-Type"] == "application/json"
    browser = client.get("/api/challenges/", HTTP_ACCEPT="text/html")
    assert browser["Content-Type"].startswith("text/html")
