"""A chunk's new score rows are read once after it is done ("settled"), so that the
final leaderboard rebuild finds their commit recorded in them (PostgreSQL's hint bits).
That read works only after a commit that waited for the disk: a chunk scored in Python
ends with one, a chunk scored in SQL does not (its rows and done mark commit together,
without waiting), and is not read for nothing."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection

from challenges.leaderboards import sql
from challenges.rescoring import jobs as rescoring
from challenges.setup import services as setup_services
from tests.factories import WEIGHTED_SEED, attempt_input, make_challenge, record

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("setup", [{"scoring_strategy": "fastest"}, WEIGHTED_SEED])
def test_chunks_scored_in_sql_are_not_read_again(setup, monkeypatch):
    monkeypatch.setattr(rescoring, "_send", lambda job: None)
    settled: list[tuple[int, int, int]] = []
    monkeypatch.setattr(sql, "scores_settle", lambda *span: settled.append(span))
    challenge = make_challenge(**setup)
    record(challenge, *[attempt_input(f"p{i}", elapsed_ms=i + 1) for i in range(20)])
    job = setup_services.challenge_rescore(challenge=challenge)
    chunk = job.chunks.get()
    assert rescoring.chunk_run(chunk_id=chunk.pk, finalize=False)
    in_sql = sql.scored_in_sql(job.version)
    assert in_sql == (connection.vendor == "postgresql" and setup["scoring_strategy"] == "fastest")
    span = (job.version_id, chunk.first_attempt_id, chunk.last_attempt_id)
    assert settled == ([] if in_sql else [span])


def _hint_set(table: str) -> list[bool]:
    """Whether each row of the table's first page has its inserting commit recorded."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (t_infomask & 256) <> 0 FROM heap_page_items(get_raw_page(%s, 0))", [table]
        )
        return sorted({row[0] for row in cursor.fetchall()})


def test_a_read_right_after_a_commit_that_did_not_wait_records_nothing():
    """Why: the PostgreSQL behaviour the rule above rests on."""
    if connection.vendor != "postgresql":
        pytest.skip("hint bits are PostgreSQL's: this run uses sqlite")
    with connection.cursor() as cursor:
        try:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
        except DatabaseError:  # a server without the contrib modules
            pytest.skip("the server has no pageinspect extension (PostgreSQL's contrib)")
        for table, wait in (("settle_async", "off"), ("settle_sync", "on")):
            cursor.execute(f"CREATE TABLE {table} (x int)")
            cursor.execute("BEGIN")
            cursor.execute(f"SET LOCAL synchronous_commit = {wait}")
            cursor.execute(f"INSERT INTO {table} SELECT generate_series(1, 200000)")
            cursor.execute("COMMIT")
            cursor.execute(f"SELECT count(*) FROM {table}")  # noqa: S608 - the settling read
    try:
        assert _hint_set("settle_async") == [False]
        assert _hint_set("settle_sync") == [True]
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE settle_async, settle_sync")
