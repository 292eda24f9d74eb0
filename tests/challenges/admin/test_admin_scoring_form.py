"""The challenge form's scoring section: every strategy's path, the weights form built
from a plugin's config_schema, every validation error on its own input (and nothing
saved), the confirmation on big challenges, and who may change what."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from challenges.admin import forms as admin_forms
from challenges.models import Challenge, RescoreJob, ScoringVersion
from scoring.project_registry import registry
from tests.challenges.admin.admin_pages import WEIGHTS, field_errors, page_data, page_form
from tests.factories import WEIGHTED_SEED, attempt_input, counts, make_challenge, record
from tests.urls import admin_url, change_url, detail_url

pytestmark = pytest.mark.django_db

SNIPPET = """def compute_scores(sample):
    return {"accuracy": float(sample["rating"] or 0) / << config.scale >>}
"""


@pytest.fixture
def weighted():
    challenge = make_challenge(**{k: v for k, v in WEIGHTED_SEED.items() if k != "name"})
    record(
        challenge,
        attempt_input("a", tokens_total=1000, elapsed_ms=10_000, rating=9),
        attempt_input("b", tokens_total=100, elapsed_ms=2_000, rating=4),
    )
    return challenge


@pytest.fixture
def python_challenge():
    """A snippet challenge, made directly in the database (so the tests below also run
    where the machine has no sandbox and setup_validate refuses snippets)."""
    return Challenge.objects.create(
        name="Snippet",
        slug="snippet",
        scoring_strategy="python",
        scoring_code=SNIPPET,
        scoring_config={"scale": 10},
        score_key="accuracy",
        metrics=[{"type": "mean", "field": "accuracy", "name": "mean_accuracy"}],
    )


def save(client, challenge, **changes):
    url = change_url(challenge)
    return client.post(url, page_data(client, url, **changes))


# --- what the form shows ----------------------------------------------------------------------
def test_custom_challenge_shows_plugin_dropdown_and_weights_form(admin_client, weighted):
    response = admin_client.get(change_url(weighted))
    html = response.content.decode()
    form = response.context["adminform"].form
    assert '<option value="builtin.weighted_scorer" selected>Weighted score' in html
    assert "A bonus for success plus points per rating point" in html  # the description
    entrypoint = form["scoring_entrypoint"]
    assert entrypoint.value() == "scoring.scorers.weighted:WeightedScorer"
    assert "readonly" in str(entrypoint)
    weight = form[f"{WEIGHTS}rating_weight"]
    assert weight.label == "Rating weight"
    assert weight.value() == 15.0  # the challenge's value, not the default
    assert weight.help_text == (
        "Points per rating point (0–10). Default: 10. From 0 to 1,000,000,000."
    )
    assert 'type="number"' in str(weight) and 'min="0"' in str(weight)
    # Every strategy-specific row says which strategies use it (the script hides the rest).
    assert 'data-strategies="custom"' in html and 'data-strategies="python"' in html
    assert 'id="scoring-plugins" type="application/json"' in html


def test_schema_less_plugin_has_no_weights_form(admin_client, weighted):
    with registry().temporarily("t.tokens", "tests.plugins:TokensScorer"):
        form = page_form(admin_client, change_url(weighted))
        assert form.plugin_data()["t.tokens"] == {
            "entrypoint": "tests.plugins:TokensScorer",
            "has_form": False,
        }
        assert not any(name.startswith("weights.t.tokens.") for name in form.fields)


def test_add_page_offers_every_strategy(admin_client):
    form = page_form(admin_client, admin_url("challenge", "add"))
    assert [value for value, _ in form.fields["scoring_strategy"].choices] == [
        "first",
        "fastest",
        "fewest_tokens",
        "highest_rating",
        "custom",
        "python",
    ]
    assert form[f"{WEIGHTS}success_bonus"].value() == 100.0  # the schema's default


# --- saving each strategy --------------------------------------------------------------------
def test_changing_a_weight_makes_a_version_and_rescores(
    admin_client, admin, weighted, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = save(admin_client, weighted, **{f"{WEIGHTS}rating_weight": "30"})
    assert response.status_code == 302, field_errors(response)
    weighted.refresh_from_db()
    assert weighted.scoring_config == {
        "success_bonus": 100.0,
        "rating_weight": 30.0,
        "time_penalty": 0.5,
        "token_penalty": 0.02,
    }
    version = weighted.active_version
    assert (version.number, version.created_by) == (2, admin)  # rescored (eager) and live
    assert RescoreJob.objects.get(version=version).status == RescoreJob.Status.SUCCEEDED


def test_saving_the_page_unchanged_makes_no_version(admin_client, weighted):
    response = save(admin_client, weighted)
    assert response.status_code == 302, field_errors(response)
    assert weighted.versions.count() == 1


def test_empty_weight_takes_the_schema_default(admin_client, weighted):
    response = save(admin_client, weighted, **{f"{WEIGHTS}time_penalty": ""})
    assert response.status_code == 302, field_errors(response)
    weighted.refresh_from_db()
    assert weighted.scoring_config["time_penalty"] == 1.0


@pytest.mark.parametrize("strategy", ["first", "fastest", "fewest_tokens", "highest_rating"])
def test_switching_to_a_builtin_clears_the_plugin_fields(admin_client, weighted, strategy):
    # Values of hidden sections (here a bad weight) are not the admin's concern.
    response = save(
        admin_client, weighted, scoring_strategy=strategy, **{f"{WEIGHTS}rating_weight": "x"}
    )
    assert response.status_code == 302, field_errors(response)
    weighted.refresh_from_db()
    assert weighted.scoring_strategy == strategy
    assert (weighted.scoring_plugin_id, weighted.scoring_config) == ("", {})
    assert weighted.versions.count() == 2


def test_switching_a_builtin_to_the_weighted_scorer(admin_client):
    challenge = make_challenge(scoring_strategy="fastest")
    response = save(
        admin_client,
        challenge,
        scoring_strategy="custom",
        scoring_plugin_id="builtin.weighted_scorer",
        **{f"{WEIGHTS}rating_weight": "12.5"},
    )
    assert response.status_code == 302, field_errors(response)
    challenge.refresh_from_db()
    assert challenge.scoring_entrypoint == "scoring.scorers.weighted:WeightedScorer"
    assert challenge.scoring_config["rating_weight"] == 12.5


def test_schema_less_plugin_is_configured_by_the_advanced_json(admin_client, weighted):
    with registry().temporarily("t.tokens", "tests.plugins:TokensScorer"):
        response = save(
            admin_client,
            weighted,
            scoring_plugin_id="t.tokens",
            scoring_entrypoint="tests.plugins:TokensScorer",
            scoring_config='{"anything": [1, 2]}',
        )
        assert response.status_code == 302, field_errors(response)
    weighted.refresh_from_db()
    assert (weighted.scoring_plugin_id, weighted.scoring_config) == (
        "t.tokens",
        {"anything": [1, 2]},
    )


def test_raw_json_replaces_the_weights_form_when_asked(admin_client, weighted):
    response = save(
        admin_client,
        weighted,
        config_as_json="on",
        scoring_config='{"rating_weight": 3}',
        **{f"{WEIGHTS}rating_weight": "999"},
    )
    assert response.status_code == 302, field_errors(response)
    weighted.refresh_from_db()
    assert weighted.scoring_config["rating_weight"] == 3
    assert weighted.scoring_config["success_bonus"] == 100.0  # default filled in


def test_add_page_creates_a_weighted_challenge(admin_client):
    data = page_data(
        admin_client,
        admin_url("challenge", "add"),
        name="Made Here",
        slug="made-here",
        scoring_strategy="custom",
        scoring_plugin_id="builtin.weighted_scorer",
        **{f"{WEIGHTS}token_penalty": "0.5"},
    )
    response = admin_client.post(admin_url("challenge", "add"), data)
    assert response.status_code == 302, field_errors(response)
    challenge = Challenge.objects.get(slug="made-here")
    assert challenge.scoring_config["token_penalty"] == 0.5
    assert challenge.active_version.number == 1


# --- validation: each error on its input, nothing saved --------------------------------------
@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        (
            {"scoring_plugin_id": "acme.nope"},
            "scoring_plugin_id",
            "Unknown scorer plugin 'acme.nope'",
        ),
        ({"scoring_plugin_id": ""}, "scoring_plugin_id", "Required with the 'custom' strategy"),
        ({"scoring_entrypoint": "os:system"}, "scoring_entrypoint", "not the one registered"),
        (
            {f"{WEIGHTS}rating_weight": "-0.5"},
            f"{WEIGHTS}rating_weight",
            "greater than or equal to 0",
        ),
        (
            {f"{WEIGHTS}rating_weight": "2e9"},
            f"{WEIGHTS}rating_weight",
            "less than or equal to 1000000000",
        ),
        ({f"{WEIGHTS}rating_weight": "lots"}, f"{WEIGHTS}rating_weight", "Enter a number"),
        (
            {"config_as_json": "on", "scoring_config": '{"rating_weight": "lots"}'},
            "scoring_config",
            "rating_weight: 'lots' is not of type 'number'",
        ),
        (
            {"config_as_json": "on", "scoring_config": '{"bogus": 1}'},
            "scoring_config",
            "bogus: unknown key",
        ),
        ({"config_as_json": "on", "scoring_config": "[1, 2]"}, "scoring_config", "JSON object"),
        ({"config_as_json": "on", "scoring_config": "{oops"}, "scoring_config", "valid JSON"),
        ({"timeout_ms": "0"}, "timeout_ms", "greater than or equal to 1"),
        ({"timeout_ms": "60001"}, "timeout_ms", "less than or equal to 60000"),
        ({"scoring_strategy": "fastest-ish"}, "scoring_strategy", "Select a valid choice"),
    ],
)
def test_bad_values_are_errors_on_their_field_and_save_nothing(
    admin_client, weighted, changes, field, message
):
    before = counts()
    setup = weighted.setup_dict()
    errors = field_errors(save(admin_client, weighted, **changes))
    assert field in errors, errors
    assert any(message in e for e in errors[field]), errors[field]
    assert counts() == before
    weighted.refresh_from_db()
    assert weighted.setup_dict() == setup


def test_schema_minimum_and_enum_errors_from_a_plugin_schema(admin_client, weighted):
    """Bounds the form cannot check itself (exclusiveMinimum) come from the schema."""

    class Strict:
        name = "Strict"
        config_schema = {
            "type": "object",
            "additionalProperties": False,
            "required": ["level"],
            "properties": {
                "factor": {"type": "number", "exclusiveMinimum": 0, "default": 1},
                "level": {"type": "string", "enum": ["low", "high"]},
                "strict": {"type": "boolean", "default": False},
                "rounds": {"type": "integer", "minimum": 1, "maximum": 5, "default": 2},
            },
        }

        def score(self, metrics, config, ctx):
            return {"score": 1.0}

    import tests.plugins as plugins

    plugins.Strict = Strict
    try:
        with registry().temporarily("t.strict", "tests.plugins:Strict"):
            prefix = "weights.t.strict."
            form = page_form(admin_client, change_url(weighted))
            assert form.fields[f"{prefix}level"].choices == [
                ("", "—"),
                ("low", "low"),
                ("high", "high"),
            ]
            errors = field_errors(
                save(
                    admin_client,
                    weighted,
                    scoring_plugin_id="t.strict",
                    scoring_entrypoint="",
                    **{f"{prefix}factor": "0", f"{prefix}level": "", f"{prefix}rounds": "2.5"},
                )
            )
            assert errors[f"{prefix}factor"] == ["0.0 is less than or equal to the minimum of 0"]
            assert errors[f"{prefix}rounds"] == ["Enter a whole number."]
            errors = field_errors(
                save(
                    admin_client,
                    weighted,
                    scoring_plugin_id="t.strict",
                    **{f"{prefix}factor": "0.5", f"{prefix}level": "", f"{prefix}rounds": "3"},
                )
            )
            assert errors == {f"{prefix}level": ["required"]}
            response = save(
                admin_client,
                weighted,
                scoring_plugin_id="t.strict",
                **{
                    f"{prefix}factor": "0.5",
                    f"{prefix}level": "high",
                    f"{prefix}rounds": "3",
                    f"{prefix}strict": "on",
                },
            )
            assert response.status_code == 302, field_errors(response)
            weighted.refresh_from_db()
            assert weighted.scoring_config == {
                "factor": 0.5,
                "level": "high",
                "rounds": 3,
                "strict": True,
            }
    finally:
        del plugins.Strict


# --- python snippets -------------------------------------------------------------------
def test_python_challenge_shows_editor_template_values_and_metrics(admin_client, python_challenge):
    response = admin_client.get(change_url(python_challenge))
    html = response.content.decode()
    form = response.context["adminform"].form
    assert 'class="code-editor__input"' in html and "data-code-gutter" in html
    assert form["scoring_code"].value() == SNIPPET
    assert form["template.scale"].value() == "10"
    assert form["score_key"].value() == "accuracy"
    assert [f.value() for f in form.metric_rows()[0]] == ["mean", "accuracy", None, "mean_accuracy"]
    assert 'name="_save"' in html  # admins may save


def test_python_setup_reports_the_sandbox_and_a_missing_template_value(
    admin_client, python_challenge
):
    before = counts()
    code = SNIPPET.replace("<< config.scale >>", "<< config.scale >> + << config.offset >>")
    errors = field_errors(save(admin_client, python_challenge, scoring_code=code))
    assert errors["template.offset"] == ["The code uses << config.offset >>: give it a value."]
    assert "template.scale" not in errors
    assert counts() == before


def test_python_setup_without_sandbox_is_refused_on_the_strategy(
    admin_client, python_challenge, monkeypatch
):
    from scoring import sandbox

    unavailable = sandbox.Availability(None, ("no namespaces here",))
    monkeypatch.setattr(sandbox, "availability", lambda **_: unavailable)
    before = counts()
    errors = field_errors(save(admin_client, python_challenge, **{"template.scale": "100"}))
    assert errors == {"scoring_strategy": [unavailable.message]}
    assert "no namespaces here" in unavailable.message
    assert counts() == before


def test_python_setup_with_the_sandbox_saves_a_version_and_rescores(admin_client, python_challenge):
    from scoring import sandbox

    if not sandbox.availability().available:
        pytest.skip(sandbox.availability().message)
    response = save(admin_client, python_challenge, **{"template.scale": "100"})
    assert response.status_code == 302, field_errors(response)
    python_challenge.refresh_from_db()
    assert python_challenge.scoring_config == {"scale": 100}
    version = python_challenge.versions.order_by("-number").first()
    assert version.scoring_strategy == "python" and version.scoring_config == {"scale": 100}
    assert RescoreJob.objects.filter(version=version).exists()


def test_python_metric_rows_are_checked(admin_client, python_challenge):
    errors = field_errors(
        save(
            admin_client,
            python_challenge,
            **{
                "metric.1.type": "",
                "metric.1.field": "accuracy",
                "metric.2.type": "f1",
                "metric.2.field": "predicted",
                "metric.2.label": "",
            },
        )
    )
    assert errors["metric.1.type"] == ["Choose a type for this metric."]
    assert errors["metric.2.label"] == ["Name the label field to compare with."]


def test_template_value_keeps_json_types():
    assert admin_forms.template_value("0.5") == 0.5
    assert admin_forms.template_value("true") is True
    assert admin_forms.template_value('"7"') == "7"
    assert admin_forms.template_value("hello world") == "hello world"
    assert admin_forms.template_value("[1]") == "[1]"
    assert admin_forms.placeholders("<<config.a>> << config.b >> <<  config.a>>") == ["a", "b"]


def test_python_setup_errors_from_validation_land_on_fields(
    admin_client, python_challenge, monkeypatch
):
    """Once snippets validate, their errors (a syntax error with its line, a template
    value) land on the code and template inputs."""
    from scoring.services import SetupInvalid

    def refuse(*, setup):
        raise SetupInvalid(
            {"scoring_code": "line 2: invalid syntax", "scoring_config": "scale: must be a number"}
        )

    monkeypatch.setattr(admin_forms, "setup_validate", refuse)
    errors = field_errors(save(admin_client, python_challenge))
    assert errors == {
        "scoring_code": ["line 2: invalid syntax"],
        "template.scale": ["scale: must be a number"],
    }


# --- confirmation on big challenges ----------------------------------------------------
def test_big_challenge_asks_to_confirm_a_rescore(admin_client, weighted, monkeypatch):
    monkeypatch.setattr(admin_forms, "CONFIRM_OVER", 1)  # the weighted fixture has 2 attempts
    html = admin_client.get(change_url(weighted)).content.decode()
    assert "Rescore all 2 attempts with the new setup" in html
    assert "rescores 2 attempts in the background" in html
    before = counts()
    errors = field_errors(save(admin_client, weighted, **{f"{WEIGHTS}rating_weight": "1"}))
    assert list(errors) == ["confirm_rescore"]
    assert "This challenge has 2 attempts" in errors["confirm_rescore"][0]
    assert counts() == before
    # A change that is not a scoring change needs no confirmation.
    assert save(admin_client, weighted, name="Renamed").status_code == 302
    response = save(
        admin_client, weighted, confirm_rescore="on", **{f"{WEIGHTS}rating_weight": "1"}
    )
    assert response.status_code == 302, field_errors(response)
    assert weighted.versions.count() == 2


def test_confirmation_threshold_is_a_thousand_attempts():
    assert admin_forms.CONFIRM_OVER == 1000


# --- roles ------------------------------------------------------------------------------
def test_staff_see_the_setup_read_only_without_a_save_button(
    scoring_staff_client, python_challenge
):
    response = scoring_staff_client.get(change_url(python_challenge))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'name="_save"' not in html and 'name="_continue"' not in html
    form = response.context["adminform"].form
    assert form.fields["scoring_code"].disabled
    assert all(form.fields[n].disabled for n in form.scoring_field_names)
    assert "only admins" in html
    assert "Try it" not in html and "Preview leaderboard" not in html
    assert "Rescore now" in html  # staff may rescore


def test_staff_cannot_post_a_change(scoring_staff_client, weighted):
    before = counts()
    response = scoring_staff_client.post(change_url(weighted), {"name": "x"})
    assert response.status_code == 403
    assert counts() == before


def test_model_editor_without_scoring_permission_changes_only_the_description(
    django_user_model, weighted
):
    """A staff user with the model's change permission but not change_scoring renames the
    challenge; the scoring inputs are disabled and what they post is ignored."""
    editor = django_user_model.objects.create_user("editor", password="pw", is_staff=True)
    editor.user_permissions.add(
        *Permission.objects.filter(codename__in=["change_challenge", "view_challenge"])
    )
    client = Client()
    client.force_login(editor)
    url = change_url(weighted)
    data = page_data(client, url, name="Renamed")
    data.update({"scoring_strategy": "fastest", f"{WEIGHTS}rating_weight": "99"})
    response = client.post(url, data)
    assert response.status_code == 302, field_errors(response)
    weighted.refresh_from_db()
    assert weighted.name == "Renamed"
    assert (
        weighted.scoring_strategy == "custom" and weighted.scoring_config["rating_weight"] == 15.0
    )
    assert weighted.versions.count() == 1


def test_scoring_permission_alone_lets_staff_edit_scoring(scorer_admin, weighted):
    scorer_admin.is_staff = True  # the admin site is for staff
    scorer_admin.save()
    client = Client()
    client.force_login(scorer_admin)
    assert client.get(reverse("admin:index")).status_code == 200
    response = save(client, weighted, **{f"{WEIGHTS}rating_weight": "2"})
    assert response.status_code == 302, field_errors(response)
    assert weighted.versions.count() == 2
    assert ScoringVersion.objects.get(challenge=weighted, number=2).created_by == scorer_admin


def test_the_api_refuses_scoring_changes_from_staff(staff_api, weighted):
    before = counts()
    response = staff_api.patch(
        detail_url(weighted.pk),
        {"scoring_config": {"rating_weight": 1}},
        format="json",
    )
    assert response.status_code == 403
    assert counts() == before


def test_missing_template_value_is_said_once(admin_client, python_challenge):
    # Issue 31: the error is on the template input only, not repeated on the page.
    code = SNIPPET.replace("<< config.scale >>", "<< config.scale >> + << config.offset >>")
    response = save(admin_client, python_challenge, scoring_code=code)
    errors = field_errors(response)
    assert sum(len(v) for v in errors.values()) == 1, errors
    assert response.content.decode().count("config.offset &gt;&gt;: give it a value") == 1
