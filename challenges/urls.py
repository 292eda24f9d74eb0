from django.urls import include, path
from rest_framework import routers
from rest_framework.permissions import AllowAny
from rest_framework.routers import DefaultRouter

from . import api, views


class APIRootView(routers.APIRootView):
    """GET /api/: the list of routes, for anyone (the API denies by default)."""

    permission_classes = [AllowAny]


class Router(DefaultRouter):
    APIRootView = APIRootView


router = Router()
router.register("challenges", api.ChallengeViewSet, basename="challenge")
router.register("rescore-jobs", api.RescoreJobViewSet, basename="rescore-job")

app_name = "challenges"
urlpatterns = [
    path("", views.challenge_list, name="home"),
    path("challenges/", views.challenge_list, name="list"),
    path("challenges/<slug:slug>/", views.challenge_detail, name="detail"),
    path("challenges/<slug:slug>/board/", views.challenge_board, name="board"),
    path("challenges/<slug:slug>/charts.json", views.challenge_charts, name="charts"),
    path("challenges/<slug:slug>/leaderboard.csv", views.export_csv, name="export-csv"),
    path("challenges/<slug:slug>/leaderboard.json", views.export_json, name="export-json"),
]
api_urlpatterns = [path("", include(router.urls))]
