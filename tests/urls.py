"""The URLs the tests visit, by route name (``django.urls.reverse``), so that a test
follows a route that moves. Not a URLconf: config/urls.py is the site's.

The API routes (challenges/urls.py's ``api_urlpatterns``, under ``api/``) have no
namespace: ``challenge-list``, ``challenge-detail``… from the router's basenames
``challenge`` and ``rescore-job``. The public pages are in the ``challenges`` namespace,
the admin's in ``admin`` (``admin:challenges_<model>_<view>``, the custom views of
challenges/admin/ included).

Tests whose point is a literal path keep it: the schema's path keys, ``/healthz``, and
ids that no route's converter would reverse (tests/challenges/api/test_huge_ids.py).
"""

from __future__ import annotations

from typing import Any

from django.urls import reverse


# --- the API ----------------------------------------------------------------------------
def challenges_url() -> str:
    return reverse("challenge-list")


def detail_url(pk: object) -> str:
    return reverse("challenge-detail", args=[pk])


def attempts_url(pk: object) -> str:
    return reverse("challenge-attempts", args=[pk])


def leaderboard_url(pk: object) -> str:
    return reverse("challenge-leaderboard", args=[pk])


def metrics_url(pk: object) -> str:
    return reverse("challenge-metrics", args=[pk])


def rescore_url(pk: object) -> str:
    return reverse("challenge-rescore", args=[pk])


def reveal_url(pk: object) -> str:
    return reverse("challenge-reveal", args=[pk])


def job_url(pk: object) -> str:
    return reverse("rescore-job-detail", args=[pk])


def job_cancel_url(pk: object) -> str:
    return reverse("rescore-job-cancel", args=[pk])


def schema_url() -> str:
    """The OpenAPI schema as JSON."""
    return reverse("schema") + "?format=json"


# --- the public pages -------------------------------------------------------------------
def page_url(slug: str, view: str = "detail") -> str:
    """A challenge's page; ``view`` is another of its routes: board, charts, export-csv,
    export-json."""
    return reverse(f"challenges:{view}", args=[slug])


def player_url(slug: str, external_id: str) -> str:
    return reverse("challenges:player", args=[slug, external_id])


# --- the admin --------------------------------------------------------------------------
def admin_url(model: str, view: str = "changelist", *args: object) -> str:
    """An admin page of one of the app's models: changelist, add, change, delete,
    history, and the custom views (challenge: rescore, try, preview, versions, activate;
    rescorejob: progress, cancel)."""
    return reverse(f"admin:challenges_{model}_{view}", args=args)


def change_url(challenge: Any) -> str:
    """A challenge's admin page."""
    return admin_url("challenge", "change", challenge.pk)


# --- scoring history (issue 30) ------------------------------------------------------------
def history_url(pk: object) -> str:
    return reverse("challenge-history", args=[pk])


def history_page_url(slug: str) -> str:
    return reverse("challenges:history", args=[slug])


def version_page_url(slug: str, number: int) -> str:
    return reverse("challenges:version", args=[slug, number])


# --- collections --------------------------------------------------------------------------
def collections_url() -> str:
    return reverse("collection-list")


def collection_url(pk: object) -> str:
    return reverse("collection-detail", args=[pk])


def collection_board_url(pk: object) -> str:
    return reverse("collection-leaderboard", args=[pk])


def collection_page_url(slug: str) -> str:
    return reverse("challenges:collection", args=[slug])


# --- red/blue ------------------------------------------------------------------------------
def team_join_url(pk: object) -> str:
    return reverse("team-join", args=[pk])


def submissions_url(pk: object) -> str:
    return reverse("submissions", args=[pk])


def pairings_url(pk: object) -> str:
    return reverse("pairings", args=[pk])


def standings_url(pk: object) -> str:
    return reverse("standings", args=[pk])


def judgement_url(pk: object) -> str:
    return reverse("judgement", args=[pk])
