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
from challenges.boards.read import BoardQuery
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
