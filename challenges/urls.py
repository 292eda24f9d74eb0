from django.urls import include, path, re_path, register_converter
from rest_framework import routers
from rest_framework.permissions import AllowAny
from rest_framework.routers import DefaultRouter

from challenges.api import collections_api as api_collections
from challenges.api import competition_api as api_competition
from challenges.api import redblue_api as api_redblue
from challenges.api import scorers_api as scorer_api
from challenges.api import views as api
from challenges.api import webhooks_api as api_webhooks
from challenges.public import views
from challenges.public.collections_pages import collection_detail
from challenges.public.feeds import ctftime_feed
from challenges.public.player_pages import player_detail
from challenges.public.stream import challenge_events
from challenges.public.switches import history_page, version_page


class APIRootView(routers.APIRootView):
    """GET /api/: the list of routes, for anyone (the API denies by default)."""

    permission_classes = [AllowAny]


class Router(DefaultRouter):
    APIRootView = APIRootView


class ExternalIdConverter:
    """A player's external id in a path: any text it may hold (docs/words-and-data.md),
    slashes and line breaks included (``path:`` stops at a newline)."""

    regex = r"[\s\S]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(ExternalIdConverter, "external_id")
EXTERNAL_ID = r"(?P<external_id>[\s\S]+)"
# A challenge's API routes: ASCII digits only, as the router's (api.views.ID_PATTERN).
CHALLENGE = r"^challenges/(?P<pk>[0-9]+)/"

router = Router()
router.register("challenges", api.ChallengeViewSet, basename="challenge")
router.register("rescore-jobs", api.RescoreJobViewSet, basename="rescore-job")
router.register("collections", api_collections.CollectionViewSet, basename="collection")

app_name = "challenges"
urlpatterns = [
    path("", views.challenge_list, name="home"),
    path("challenges/", views.challenge_list, name="list"),
    path("challenges/<slug:slug>/", views.challenge_detail, name="detail"),
    path("challenges/<slug:slug>/board/", views.challenge_board, name="board"),
    path("challenges/<slug:slug>/charts.json", views.challenge_charts, name="charts"),
    path("challenges/<slug:slug>/leaderboard.csv", views.export_csv, name="export-csv"),
    path("challenges/<slug:slug>/leaderboard.json", views.export_json, name="export-json"),
    path("challenges/<slug:slug>/history/", history_page, name="history"),
    path("challenges/<slug:slug>/events/", challenge_events, name="events"),
    path("challenges/<slug:slug>/ctftime.json", ctftime_feed, name="ctftime"),
    path("challenges/<slug:slug>/versions/<int:number>/", version_page, name="version"),
    path("collections/<slug:slug>/", collection_detail, name="collection"),
    path(
        "challenges/<slug:slug>/players/<external_id:external_id>/",
        player_detail,
        name="player",
    ),
]
api_urlpatterns = [
    # The router's routes first: the leaderboard, which bots poll, then resolves without
    # trying every route below (none of which the router's patterns match).
    path("", include(router.urls)),
    # Moderation and the audit trail (challenges/api/competition_api.py).
    re_path(
        rf"{CHALLENGE}players/{EXTERNAL_ID}/hide/$",
        api_competition.PlayerModeration.as_view(hidden=True),
        name="player-hide",
    ),
    re_path(
        rf"{CHALLENGE}players/{EXTERNAL_ID}/unhide/$",
        api_competition.PlayerModeration.as_view(hidden=False),
        name="player-unhide",
    ),
    path(
        "attempts/<int:pk>/hide/",
        api_competition.AttemptModeration.as_view(hidden=True),
        name="attempt-hide",
    ),
    path(
        "attempts/<int:pk>/unhide/",
        api_competition.AttemptModeration.as_view(hidden=False),
        name="attempt-unhide",
    ),
    path("audit/", api_competition.AuditList.as_view(), name="audit"),
    # Red/blue challenges (challenges/api/redblue_api.py).
    re_path(rf"{CHALLENGE}teams/join/$", api_redblue.TeamJoin.as_view(), name="team-join"),
    re_path(
        rf"{CHALLENGE}submissions/$", api_redblue.SubmissionCreate.as_view(), name="submissions"
    ),
    re_path(rf"{CHALLENGE}pairings/$", api_redblue.PairingList.as_view(), name="pairings"),
    re_path(rf"{CHALLENGE}standings/$", api_redblue.StandingsView.as_view(), name="standings"),
    re_path(
        r"^pairings/(?P<pk>[0-9]+)/judgement/$",
        api_redblue.JudgementCreate.as_view(),
        name="judgement",
    ),
    # Webhooks (challenges/api/webhooks_api.py).
    re_path(rf"{CHALLENGE}webhooks/$", api_webhooks.EndpointList.as_view(), name="webhook-list"),
    re_path(
        rf"{CHALLENGE}webhooks/(?P<wid>[0-9]+)/deliveries/$",
        api_webhooks.DeliveryList.as_view(),
        name="webhook-deliveries",
    ),
    re_path(
        rf"{CHALLENGE}webhooks/(?P<wid>[0-9]+)/deliveries/(?P<did>[0-9]+)/redeliver/$",
        api_webhooks.Redeliver.as_view(),
        name="webhook-redeliver",
    ),
    path("scorers/", scorer_api.ScorerCatalogueView.as_view(), name="scorer-catalogue"),
]
