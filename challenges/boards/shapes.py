"""The shapes a board is served in, built from its rows: the public page and its live
fragment (HTML), the API's leaderboard (JSON bytes) and the exports (CSV and JSON,
streamed). ``boards.read.board_read`` chooses one for a ``BoardQuery`` and keeps it."""

from __future__ import annotations

import csv
import json
import unicodedata
from collections.abc import Iterator
from datetime import datetime
from typing import Any
from urllib.parse import quote

from django.template.loader import render_to_string
from django.utils import timezone

from challenges.boards import display, schedule
from challenges.boards.markdown import render_markdown
from challenges.leaderboards import freeze, precision, score_columns, selectors
from challenges.leaderboards.metric_counts import challenge_metrics, public_metrics
from challenges.leaderboards.score_columns import row_scores
from challenges.leaderboards.tie_rule import TIE_RULE
from challenges.models import Challenge
from challenges.rescoring.batch import batch_coverage
from challenges.text import iso_z


def board_rows(
    board: selectors.Board,
    setup: Any,
    breakdowns: dict[int, selectors.Breakdown],
    now: datetime,
    slug: str,
) -> list[dict[str, Any]]:
    """Every cell of the table, formatted once; ``setup``: the version the board ranks
    by (or the challenge)."""
    strategy = setup.scoring_strategy
    rows = []
    players_url = f"/challenges/{slug}/players/"
    for row in board.rows:
        why = breakdowns.get(row.attempt_id)
        rows.append(
            {
                "rank": row.rank,
                "shared": False,
                "medal": display.medal(row.rank, row.score, setup),
                "name": row.display_name,
                "url": players_url + quote(row.player_external_id, safe="") + "/",
                "value": display.format_value(row.score, strategy),
                "when": display.relative_time(row.created_at, now),
                "when_exact": display.exact_time(row.created_at),
                "when_iso": row.created_at.isoformat(),
                "terms": [
                    *(display.breakdown(why.details, why.metrics) if why else []),
                    ("Attempt time", display.exact_time(row.created_at)),
                ],
                "attempt": row.attempt_id,
                "highlight": bool(board.player) and row.player_external_id == board.player,
            }
        )
    for i, r in enumerate(rows):  # "=" before a rank shared with a neighbour
        r["shared"] = any(
            0 <= i + d < len(rows) and rows[i + d]["rank"] == r["rank"] for d in (-1, 1)
        )
    return rows


def board_html(challenge: Challenge, shape: str, board: selectors.Board, shown: Any) -> str:
    """The fragment (``shape`` "board") or the whole page around it ("page"). ``shown``:
    what the read decided besides the rows (the minute, the freeze, the URLs)."""
    now = shown["minute"]
    setup = board.version or challenge
    breakdowns = (
        selectors.leaderboard_breakdowns(
            version_id=board.version.pk, attempt_ids=[r.attempt_id for r in board.rows]
        )
        if board.version and board.rows
        else {}
    )
    updated = challenge.last_activity or (board.version.scored_at if board.version else None)
    if shown["frozen"] and updated:
        updated = freeze.last_activity(challenge, updated)
    rows = board_rows(board, setup, breakdowns, now, challenge.slug)
    context = {
        "challenge": challenge,
        "board": board,
        "rows": rows,
        "score_header": score_columns.page_columns(board.version, rows, breakdowns),
        "numbers": selectors.page_numbers(board.page, board.pages) if board.page else [],
        "detail_url": shown["detail_url"],
        "refresh_url": shown["refresh_url"],
        "updated": display.relative_time(updated, now) if updated else "",
        "updated_exact": display.exact_time(updated) if updated else "",
        "updated_iso": updated.isoformat() if updated else "",
        "frozen": shown["frozen"],
        "frozen_live": shown["frozen_live"],
        "frozen_exact": display.exact_time(challenge.freeze_at) if challenge.freeze_at else "",
        "frozen_iso": challenge.freeze_at.isoformat() if challenge.freeze_at else "",
    }
    html = render_to_string("challenges/_board.html", context)
    if shape == "board":
        return html
    context.update(page_context(challenge, setup, frozen=shown["frozen"]), board_html=html)
    return render_to_string("challenges/detail.html", context)


def page_context(challenge: Challenge, setup: Any, *, frozen: bool) -> dict[str, Any]:
    """What a challenge's page shows around its board (an aggregate board's too)."""
    return {
        "description": render_markdown(challenge.description),
        "strategy_words": display.strategy_words(setup),
        "scoring_sentence": display.scoring_sentence(setup),
        "charts_url": f"/challenges/{challenge.slug}/charts.json",
        "tie_rule": TIE_RULE,
        "metrics": public_metrics(
            challenge_metrics(challenge=challenge, before=challenge.freeze_at if frozen else None)
        ),
        "batch_coverage": batch_coverage(challenge=challenge),
        # The time left is worded for the minute, as the relative times are.
        "schedule": schedule.banner(challenge=challenge, now=timezone.now()),
    }


# --- the API's leaderboard -----------------------------------------------------------------
def leaderboard_body(challenge: Any, *, board_id: Any, version: Any = None, **asked: Any) -> Any:
    """The API leaderboard's body: a page of rows or a player's row (LeaderboardSerializer
    documents the shape), with every score of the ranking scorer for python setups."""
    if asked["player"]:
        found = {"challenge": challenge, "external_id": asked["player"], "board_id": board_id}
        page = selectors.leaderboard_player(**found)
    else:
        window = {"limit": asked["limit"], "offset": asked["offset"], "board_id": board_id}
        page = selectors.leaderboard_page(challenge=challenge, **window)
    zone = timezone.get_current_timezone()
    body = {
        "version": page.version.number if page.version else None,
        "count": page.count,
        "results": [
            {
                "rank": row.rank,
                "player": row.player_external_id,
                "display_name": row.display_name,
                "score": precision.served(float(row.score)),
                "attempt_id": row.attempt_id,
                "created_at": iso_z(row.created_at, zone),
            }
            for row in page.rows
        ],
    }
    version = version or page.version
    if version is not None and version.scoring_strategy == "python":
        found = row_scores(version=version, attempt_ids=[r.attempt_id for r in page.rows])
        for item in body["results"]:  # every score of the ranking scorer, ranking first
            item["scores"] = precision.served_json(found.get(item["attempt_id"], {}))
    return body


# --- export ------------------------------------------------------------------------------
EXPORT_COLUMNS = (
    "rank",
    "player",
    "display_name",
    "score",
    "score_unit",  # the score's unit (display.score_unit): "ms" under fastest, …
    "attempt_id",
    "created_at",
)
CSV_FORMULA_START = ("=", "+", "-", "@", "|", "\t", "\r")


def _formula_lead(value: str) -> str:
    """The character a spreadsheet would read first: leading whitespace and invisible
    format characters (BOM, zero-width, joiners) skipped, look-alikes folded (the
    full-width and small forms of = + - @ | become their ASCII selves)."""
    for char in value:
        if char.isspace() or unicodedata.category(char) == "Cf":
            continue
        return unicodedata.normalize("NFKC", char)[:1]
    return ""


def csv_cell(value: Any) -> Any:
    """A cell a spreadsheet will not run: text starting like a formula (even behind
    spaces, invisible characters or a look-alike) gets a quote."""
    if isinstance(value, str) and (
        value.startswith(CSV_FORMULA_START) or _formula_lead(value) in CSV_FORMULA_START[:5]
    ):
        return "'" + value
    return value


class Echo:
    def write(self, value: str) -> str:
        return value


def _export_rows(challenge: Challenge, board_id: int | None) -> Iterator[tuple[Any, ...]]:
    """(the row's cells..., its scores or None): scores for python versions only (a
    frozen board's rows are the active version's attempts: their scores are its)."""
    if board_id is None:
        return
    rows = selectors.leaderboard_stream(
        version_id=board_id, names_at=freeze.names_at(challenge, board_id)
    )
    unit = display.score_unit((challenge.active_version or challenge).scoring_strategy)
    for row, scores in score_columns.with_scores(rows, challenge.active_version):
        yield (
            row.rank,
            row.player_external_id,
            row.display_name,
            precision.served(row.score),
            unit,
            row.attempt_id,
            iso_z(row.created_at),
            precision.served_json(scores),
        )


def export_csv(challenge: Challenge, board_id: int | None) -> Iterator[str]:
    writer = csv.writer(Echo())
    rows = _export_rows(challenge, board_id)
    names, rows = score_columns.csv_names(rows)
    yield writer.writerow([*EXPORT_COLUMNS, *(f"scores.{n}" for n in names)])
    for *row, scores in rows:
        extra = [(scores or {}).get(n) for n in names]
        yield writer.writerow([csv_cell(v) for v in (*row, *extra)])


def export_json(challenge: Challenge, board_id: int | None) -> Iterator[str]:
    version = challenge.active_version
    head = {
        "challenge": challenge.slug,
        "version": version.number if version else None,
        "score_unit": display.score_unit((version or challenge).scoring_strategy),
    }
    yield json.dumps(head)[:-1] + ', "results": ['
    first = True
    for *row, scores in _export_rows(challenge, board_id):
        item = dict(zip(EXPORT_COLUMNS, row, strict=True))
        if scores is not None:
            item["scores"] = scores
        text = json.dumps(item)
        yield text if first else ", " + text
        first = False
    yield "]}"
