"""CSV export: a formula hidden behind invisible or look-alike characters is neutralised
too (issue 12, finding 8)."""

from __future__ import annotations

import csv
import io

import pytest

from challenges.boards.shapes import csv_cell
from tests.factories import attempt_input, make_challenge, record
from tests.urls import page_url

HIDDEN = [
    "\ufeff=1+1",  # byte order mark
    "\u200b=1+1",  # zero-width space
    "\u200c\u200d=1",  # zero-width (non-)joiners
    "\u2060@SUM(A1)",  # word joiner
    " =1+1",  # plain leading space
    "\u00a0=1",  # no-break space
    "\u3000+1",  # ideographic space
    "\n=cmd",
    "\uff1dHYPERLINK(1)",  # fullwidth equals
    "\uff0b1",  # fullwidth plus
    "\uff0d1",  # fullwidth minus
    "\uff20SUM(A1)",  # fullwidth commercial at
    "|calc",
    "\ufeff\uff5ccalc",  # fullwidth vertical line behind a BOM
    "\ufe66x",  # small equals sign
]


@pytest.mark.parametrize("risky", HIDDEN)
def test_hidden_formula_start_is_quoted(risky):
    assert csv_cell(risky) == "'" + risky


@pytest.mark.parametrize("plain", ["Ann = Bob", "\u200bAnn", " Pat", "", "Zoë|x", "１"])
def test_plain_text_is_left_alone(plain):
    assert csv_cell(plain) == plain


@pytest.mark.django_db
def test_export_quotes_hidden_formulas(client):
    challenge = make_challenge(slug="hidden", scoring_strategy="fastest")
    names = ["\ufeff=HYPERLINK(1)", "\uff1d1+1", "|calc"]
    record(
        challenge,
        *[attempt_input(f"p{i}", player_name=n, elapsed_ms=i) for i, n in enumerate(names)],
    )
    response = client.get(page_url("hidden", "export-csv"))
    text = b"".join(response.streaming_content).decode()
    cells = [row[2] for row in csv.reader(io.StringIO(text))][1:]
    assert cells == ["'" + n for n in names]
