from pathlib import Path

from django.urls import include, path
from rest_framework.routers import DefaultRouter

from . import api, views

if not hasattr(api, "__path__"):  # until the layout move (issue 11) makes api a package
    api.__path__ = [str(Path(__file__).with_name("api"))]
from .api import scorers as scorer_api

router = DefaultRouter()
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
api_urlpatterns = [
    path("scorers/", scorer_api.ScorerCatalogueView.as_view(), name="scorer-catalogue"),
    path("", include(router.urls)),
]
