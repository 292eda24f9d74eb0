"""The read path of a board (issue 27): every reader reaches one builder,
``boards.read.board_read``, with one ``BoardQuery``; and what it keeps is keyed by what it
shows, so nothing a page shows can go stale without a key being touched."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from challenges import tasks
from challenges.boards import read
from challenges.boards.query import BoardQuery
from challenges.leaderboards import kept, selectors
from challenges.models import Challenge
from tests.challenges.leaderboards.conftest import two_player_board
from tests.challenges.leaderboards.reads import page, settle
from tests.urls import leaderboard_url, page_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def asked(monkeypatch):
    """The queries ``board_read`` is called with (it still builds)."""
    calls: list[BoardQuery] = []
    real = read.board_read

    def spy(query, **kwargs):
        calls.append(query)
        return real(query, **kwargs)

    monkeypatch.setattr(read, "board_read", spy)
    return calls


def test_a_page_an_api_read_an_export_and_a_build_ahead_reach_one_builder(client, settings, asked):
    board = two_player_board()
    page(client, board)
    assert client.get(leaderboard_url(board.pk)).status_code == 200
    assert b"Ann" in b"".join(client.get(page_url(board.slug, "export-csv")).streaming_content)
    settings.PODIUM_RANKING_MAX_AGE_MS = 0  # past the age: the worker recomputes
    tasks.ranking_refresh(board.active_version_id)  # and builds the page and fragment ahead
    shapes = [q.shape for q in asked]
    assert shapes == ["page", "json", "csv", "page", "board"]
    reader, api, export, worker, _ = asked
    # The reader's question and the worker's are one query, field for field; the API's
    # and the export's differ in their shape alone (offset 0 and 50 rows: the defaults).
    assert worker == reader == BoardQuery(reader.challenge, "page")
    assert replace(api, shape="page") == reader and replace(export, shape="page") == reader
    assert {q.challenge.pk for q in asked} == {board.pk}


def test_a_field_of_the_challenge_changed_without_a_save_is_shown(client, monkeypatch):
    board = two_player_board()
    settle(client, board)
    assert "A second paragraph" not in page(client, board)
    # A field a template reads, changed without touching updated_at (no save() ran),
    # read by a new process (the process copies of challenges are keyed by updated_at).
    Challenge.objects.filter(pk=board.pk).update(description="A second paragraph")
    monkeypatch.setattr(selectors, "_challenges", {})
    kept.local_clear()
    assert "A second paragraph" in page(client, board)


def test_a_new_template_is_served_at_once_after_a_deploy(client, settings, monkeypatch, tmp_path):
    board = two_player_board()
    settle(client, board)
    assert "new-field" not in page(client, board, "board")
    # A deploy adds a field to the board's template and touches no key: the new process
    # reads its templates at start; what the old one kept in the cache is still there.
    root = Path(django_settings.BASE_DIR) / "templates"
    shutil.copytree(root, tmp_path, dirs_exist_ok=True)
    fragment = tmp_path / "challenges" / "_board.html"
    fragment.write_text(fragment.read_text() + '\n<p class="new-field">{{ challenge.slug }}</p>')
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": [tmp_path]}]
    kept.local_clear()
    monkeypatch.setattr(read, "RENDERER", read.code_digest())
    assert "new-field" in page(client, board, "board")
    assert "new-field" in page(client, board)


def test_the_in_process_layer_has_one_switch(client, settings):
    settings.PODIUM_KEPT_LOCAL = False  # what a benchmark without it sets
    board = two_player_board()
    settle(client, board)
    assert page(client, board) == page(client, board)
    assert not kept._local.builds and not kept._plain.builds


def test_an_aggregate_boards_readers_reach_the_same_builder(client, asked):
    """An aggregate board (intervals, tiers) is read the same way: its page, fragment and
    exports, and the worker's build after new intervals, each hand ``board_read`` a
    ``BoardQuery`` (its slice and metric included); no HttpRequest reaches a worker."""
    from tests.factories import attempt_input, make_challenge, record

    board = make_challenge(
        name="Evals", scoring_strategy="highest_rating", board="aggregate", slice_by="topic"
    )
    record(
        board,
        *[
            attempt_input(p, rating=r, sample={"id": f"q{i}", "topic": "math"})
            for i in range(3)
            for p, r in (("ann", 9), ("bob", 4))
        ],
    )
    tasks.evaluation_refresh(board.pk)  # the worker: intervals, then the page and fragment
    assert client.get(page_url(board.slug), {"slice": "math", "metric": "x"}).status_code == 200
    assert client.get(page_url(board.slug, "board")).status_code == 200
    assert b"ann" in b"".join(client.get(page_url(board.slug, "export-csv")).streaming_content)
    assert client.get(page_url(board.slug, "export-json")).json()["board"] == "aggregate"
    worker_page, worker_board, page_read, fragment, csv_export, json_export = asked
    assert [q.shape for q in asked] == ["page", "board", "page", "board", "csv", "export"]
    api = client.get(leaderboard_url(board.pk), {"slice": "math", "limit": 5}).json()
    assert api["board"] == "aggregate" and api["slice"] == "math"
    assert asked[-1] == BoardQuery(asked[-1].challenge, "json", limit=5, slice="math")
    assert page_read == BoardQuery(page_read.challenge, "page", slice="math", metric="x")
    assert worker_page == BoardQuery(worker_page.challenge, "page")
    assert replace(fragment, shape="page") == replace(worker_board, shape="page") == worker_page
    assert replace(csv_export, shape="page") == replace(json_export, shape="page") == worker_page
