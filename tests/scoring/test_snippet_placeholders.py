"""Placeholders are data (issue 12, finding 6): a ``<< config.KEY >>`` value never becomes
code. Inside a plain string literal it becomes that literal's text; as a bare expression,
a Python literal of the value; in an f-string, a format template, a raw or bytes literal,
or straddling tokens, the code is refused on save with the line. Offsets come from the
tokenizer's own lines, so form feeds or other odd line breaks in a comment shift nothing.
No sandbox needed: these run the rendered code in this process on purpose, to see
whether anything but an assignment happened."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.engine import placeholders
from scoring.engine.snippet import SnippetInvalid, prepare, render

SIDE_EFFECT = "globals().__setitem__('x', 1)"
ENTRY = "\ndef compute_scores(sample):\n    return {'s': 1}\n"


def _run(code: str) -> dict:
    namespace: dict = {}
    exec(code, namespace)  # noqa: S102 - our own test text, checked for side effects
    namespace.pop("__builtins__", None)
    return namespace


def _refused(code: str, config: dict) -> str:
    with pytest.raises(SnippetInvalid) as caught:
        prepare(code + ENTRY, config)
    return caught.value.errors["scoring_code"]


def test_the_issue_shape_an_f_string_is_refused_with_the_line():
    code = 'a = 1\nv = f"<< config.field >>"'
    message = _refused(code, {"field": "{" + SIDE_EFFECT + "}"})
    assert message.startswith("Line 2:"), message
    assert "f-string" in message


@pytest.mark.parametrize(
    "code",
    [
        'v = f"<< config.v >>"',
        "v = F'<< config.v >>'",
        'v = rf"<< config.v >>"',
        'v = f"""\n<< config.v >>"""',
        'v = f"{<< config.v >>}"',
        'v = f"{1}" "<< config.v >>" f"{2}"',  # a plain piece joined to f-strings
        'v = "<< config.v >>".format(1)',
        'v = "a" "<< config.v >>".format(1)',
        'v = "<< config.v >>".format_map({})',
        'v = "%s << config.v >>" % 1',
        'v = str.format("<< config.v >>", 1)',
        'v = r"<< config.v >>"',
        'v = eval("<< config.v >>")',
        'v = exec("x = " + "<< config.v >>")',
        'v = b"<< config.v >>"',
        "v = (1 # <<\n config.v >> 2)",  # straddling a comment and code
    ],
    ids=[
        "f",
        "F",
        "rf",
        "f-triple",
        "f-expression",
        "joined-to-f",
        "format",
        "joined-format",
        "format_map",
        "percent",
        "str.format",
        "raw",
        "eval",
        "exec",
        "bytes",
        "straddling",
    ],
)
def test_placeholders_outside_plain_literals_are_refused(code):
    message = _refused(code, {"v": "{" + SIDE_EFFECT + "}"})
    assert message.startswith("Line "), message
    assert "<< config.v >>" in message or "placeholder" in message


@pytest.mark.parametrize("breaker", ["\x0c", "\x0b", "\x1c", "\x1d", "\x1e", "\x85", "\u2028"])
@pytest.mark.parametrize(
    ("line", "value"),
    [
        ('v = "<< config.a >>"', '" + str(' + SIDE_EFFECT + ') + "'),
        ("v = '<< config.a >>'", "' + str(" + SIDE_EFFECT + ") + '"),
        ('w = ""; v = << config.a >>', SIDE_EFFECT),
    ],
    ids=["double", "single", "bare"],
)
def test_odd_line_breaks_in_a_comment_shift_no_offset(breaker, line, value):
    """The issue's shape: a form feed in a comment made the computed string offsets
    wrong, so a value could close its string literal (or run as bare code)."""
    code = f"# comment {breaker}{'y' * 60}\n{line}\n"
    namespace = _run(render(code, {"a": value}))
    assert "x" not in namespace
    assert namespace["v"] == value


def test_form_feeds_and_carriage_returns_in_code_keep_substitution_exact():
    code = "\x0c# \x0c\rv = '<< config.a >>'\r\n\x0cw = << config.b >>\n"
    namespace = _run(render(code, {"a": "it's \x0c", "b": [1, "two"]}))
    assert (namespace["v"], namespace["w"]) == ("it's \x0c", [1, "two"])


def test_a_placeholder_in_a_comment_stays_a_comment():
    code = "v = 1  # << config.a >>\n"
    assert render(code, {"a": "\n" + SIDE_EFFECT}) == code


@pytest.mark.parametrize(
    "value",
    [float("nan"), float("inf"), {1: "x"}, {"k": object()}, b"bytes", (1, 2)],
    ids=["nan", "inf", "int-key", "object", "bytes", "tuple"],
)
def test_a_bare_placeholder_takes_only_plain_json_values(value):
    message = _refused("v = << config.a >>", {"a": value})
    assert message.startswith("Line 1:"), message


def test_a_lone_surrogate_in_a_value_is_escaped_not_pasted():
    rendered = render("v = '<< config.a >>'\n", {"a": "\ud800"})
    rendered.encode("utf-8")  # the code itself stays valid text
    assert _run(rendered)["v"] == "\ud800"


PLAIN_QUOTES = ['"', "'", '"""', "'''", 'u"', "U'"]


@settings(max_examples=300, deadline=None)
@given(
    value=st.text(),
    quote=st.sampled_from(PLAIN_QUOTES),
    comment=st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00\n\r")),
)
def test_any_text_in_any_plain_literal_stays_data(value, quote, comment):
    closing = quote.lstrip("uU")
    code = f"# {comment}\nv = {quote}<< config.a >>{closing}\n"
    namespace = _run(render(code, {"a": value}))
    assert namespace == {"v": value}


@settings(max_examples=200, deadline=None)
@given(
    value=st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(),
        lambda children: (
            st.lists(children, max_size=3)
            | st.dictionaries(st.text(max_size=5), children, max_size=3)
        ),
        max_leaves=8,
    )
)
def test_any_json_value_as_a_bare_placeholder_is_that_value(value):
    namespace = _run(render("v = << config.a >>\n", {"a": value}))
    assert namespace == {"v": value}


@pytest.mark.parametrize(
    ("code", "value"),
    [
        ('v = "<< config.a >>"\n', '" + str(globals().__setitem__(chr(120), 1)) + "'),
        ("v = << config.a >>\n", "globals().__setitem__(chr(120), 1)"),
    ],
    ids=["literal-taken-for-standing", "standing-taken-for-literal"],
)
def test_a_tokenizer_mistake_is_caught_by_the_shape_check(monkeypatch, code, value):
    """Defence in depth: were the tokenizer ever to disagree with the compiler about
    where a placeholder stands, the rendered program would not have the code's shape."""
    real_sites = placeholders._sites

    def mistaken(text):
        return [site._replace(in_string=not site.in_string) for site in real_sites(text)]

    monkeypatch.setattr(placeholders, "_sites", mistaken)
    with pytest.raises(SnippetInvalid):
        prepare(code + ENTRY, {"a": value})


def test_a_standing_placeholder_may_be_any_expression_position():
    code = (
        "limits = {'low': << config.low >>, 'all': [<< config.low >>, << config.high >>]}\n"
        "def f(x=<< config.high >>):\n    return x * << config.low >>\n"
        "y = f() if << config.flag >> else -<< config.low >>\n"
    )
    namespace = _run(render(code, {"low": 2, "high": 0.5, "flag": True}))
    assert namespace["limits"] == {"low": 2, "all": [2, 0.5]}
    assert namespace["y"] == 1.0
