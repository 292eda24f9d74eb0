"""The probes' kept plans (leaderboards/sql.py, ``KeptPlan``): on PostgreSQL each probe
runs as a PL/pgSQL function made after every migrate, whose plan the database keeps; it
answers exactly what the plain statement answers, and code whose statement changed never
calls a function made for the old one."""

from __future__ import annotations

import pytest
from django.db import connection

from challenges.ingestion import moderation
from challenges.leaderboards import sql
from challenges.models import Player
from tests.challenges.leaderboards.conftest import two_player_board
from tests.factories import attempt_input, record

pytestmark = pytest.mark.django_db

PG = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="kept plans are PostgreSQL functions"
)


def _plain_probe(slug):
    return sql.fetch_one(sql._PROBE, [slug], datetimes=(1, 4), booleans=(3, 6, 7))


def _plain_board_probe(pk, include_inactive):
    params = [pk, include_inactive]
    return sql.fetch_one(sql._BOARD_PROBE, params, datetimes=(1,), booleans=(4, 5))


@PG
def test_the_probes_run_as_functions_and_answer_as_the_statements_do():
    board = two_player_board()
    sql._plans_found.clear()
    assert sql._kept_plan(sql._PROBE_PLAN, [board.slug])[0].startswith("SELECT * FROM podium_plan_")

    def same() -> None:
        assert sql.challenge_probe(board.slug) == _plain_probe(board.slug) is not None
        for include_inactive in (False, True):
            got = sql.board_probe(board.pk, include_inactive)
            assert got == _plain_board_probe(board.pk, include_inactive) is not None

    same()
    record(board, attempt_input("cat", tokens_total=5))  # a new #1: the board changed
    same()
    cat = Player.objects.get(external_id="cat")
    moderation.player_hide(player=cat, challenge=board, reason="t")
    same()
    assert sql.challenge_probe("no-such-challenge") is None
    assert sql.board_probe(10**9, True) is None


@PG
def test_a_missing_function_falls_back_to_the_statement():
    """Code deployed without its migrate (the function for its statement not made yet)
    runs the plain statement, with the same answer."""
    board = two_player_board()
    expected = _plain_probe(board.slug)
    with connection.cursor() as cursor:
        cursor.execute(f"DROP FUNCTION {sql._PROBE_PLAN.function}")
    sql._plans_found.clear()
    try:
        assert sql._kept_plan(sql._PROBE_PLAN, [board.slug])[0] == sql._PROBE
        assert sql.challenge_probe(board.slug) == expected
    finally:
        sql.plans_install(connection)
    assert sql.challenge_probe(board.slug) == expected


def test_a_changed_statement_is_another_function():
    plan = sql._PROBE_PLAN
    assert plan._replace(statement=plan.statement + " ").function != plan.function
    assert plan._replace(returns=plan.returns.replace("varchar", "text")).function != plan.function
    assert plan.function == plan._replace().function  # a digest, the same in every process


def test_sqlite_runs_the_statement_itself():
    if connection.vendor == "postgresql":
        pytest.skip("the SQLite behaviour: this run uses PostgreSQL")
    board = two_player_board()
    assert sql._kept_plan(sql._PROBE_PLAN, [board.slug]) == (sql._PROBE, [board.slug])
    assert sql.challenge_probe(board.slug) == _plain_probe(board.slug)


def test_a_statement_becomes_a_function_body_with_numbered_parameters():
    body = sql._numbered("a = %s AND b LIKE 'x%%s' AND c = %s", 2)
    assert body == "a = $1 AND b LIKE 'x%s' AND c = $2"  # a literal %%s stays text
    for declared in (1, 3):  # a plan whose types do not match its statement is refused
        with pytest.raises(ValueError, match="parameter"):
            sql._numbered("a = %s AND c = %s", declared)
    for plan in sql.KEPT_PLANS:
        sql._numbered(plan.statement, plan.arguments.count(",") + 1)
