"""Helpers for the admin tests: post a challenge page the way a browser would."""

from __future__ import annotations

from typing import Any

from django import forms

WEIGHTS = "weights.builtin.weighted_scorer."


def page_form(client: Any, url: str) -> Any:
    response = client.get(url)
    assert response.status_code == 200, response.status_code
    return response.context["adminform"].form


def page_data(client: Any, url: str, **changes: Any) -> dict[str, Any]:
    """What submitting the page unchanged would post, then ``changes`` (a value None
    leaves the input out, as an unticked checkbox)."""
    form = page_form(client, url)
    data: dict[str, Any] = {}
    for field in form:
        if field.field.disabled:
            continue
        value = field.value()
        if isinstance(field.field.widget, forms.CheckboxInput):
            if value:
                data[field.html_name] = "on"
            continue
        data[field.html_name] = "" if value is None else str(value)  # value() is prepared
    for name, value in changes.items():
        if value is None:
            data.pop(name, None)
        else:
            data[name] = value
    return data


def field_errors(response: Any) -> dict[str, list[str]]:
    assert response.status_code == 200, (response.status_code, response.get("Location"))
    return {k: list(v) for k, v in response.context["adminform"].form.errors.items()}
